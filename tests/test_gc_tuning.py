"""The collector tuning of ``_gc``: the process's own command applies it, an embedding caller of
``main(argv)`` (the tests, a library user) keeps its own settings; ``release_memory`` collects
and trims."""

from __future__ import annotations

import gc
import platform
import subprocess
import sys
import weakref
from pathlib import Path

from codex_app_bridge._gc import YOUNG_THRESHOLD, release_memory

# history needs a rollout (an empty input is refused)
_ROLLOUT = Path(__file__).resolve().parent / "data" / "captures" / "plain" / "rollout.jsonl"

_PROBE = """
import gc, sys
sys.argv = ["codex-app-bridge", {command}]
from codex_app_bridge.cli import main
before = gc.get_threshold()[0]
code = main({argv})
print(code, before, gc.get_threshold()[0], gc.get_freeze_count() > 0)
"""


def _probe(command: str, argv: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(command=command, argv=argv)],
        input=b"",
        capture_output=True,
        timeout=60,
        check=True,
    )
    return done.stdout.decode().splitlines()[-1].split()  # after what the command printed


def test_the_process_command_tunes_the_collector() -> None:
    code, before, after, frozen = _probe(f'"history", "{_ROLLOUT}"', "")
    assert code == "0"
    assert int(before) < YOUNG_THRESHOLD
    assert int(after) == YOUNG_THRESHOLD
    assert frozen == "True"


def test_an_embedding_caller_keeps_its_settings() -> None:
    code, before, after, frozen = _probe('"history"', f'["history", "{_ROLLOUT}"]')
    assert code == "0"
    assert after == before
    assert frozen == "False"


class _Node:
    next: object = None


def test_release_memory_collects_cycles_and_trims_glibc() -> None:
    freed: list[str] = []
    cycle = _Node()
    cycle.next = cycle
    weakref.finalize(cycle, freed.append, "cycle")
    del cycle
    collecting = gc.isenabled()
    gc.disable()
    try:
        trimmed = release_memory()
    finally:
        if collecting:
            gc.enable()
    assert freed == ["cycle"]
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert trimmed is glibc
