"""The offline commands stream their input: what they hold does not grow with the number of lines
that do not change their output (deltas), and they show progress only on a terminal.

Memory is measured in process with ``tracemalloc`` (deterministic, unlike RSS): the same command
over a turn of 500 deltas and over the same turn with 5,000 deltas must peak about the same. The
bench (``bench/offline_memory.py``) measures RSS on a 1,000,000-line rollout.
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
import tracemalloc
from pathlib import Path

import orjson
import pytest

from codex_app_bridge.cli import main
from tests.conftest import bridge_command, bridge_env

THREAD = "01a2cccc-0000-7000-8000-000000000001"
TURN = "01a2dddd-0000-7000-8000-000000000001"


def _line(kind: str, payload: dict[str, object], ordinal: int) -> bytes:
    stamp = "2026-11-30T00:54:51.103Z"
    record = {"timestamp": stamp, "ordinal": ordinal, "type": kind, "payload": payload}
    return orjson.dumps(record) + b"\n"


def write_rollout(path: Path, deltas: int) -> Path:
    """A paginated rollout of one turn: user message, ``deltas`` deltas, the answer."""
    common = {"thread_id": THREAD, "turn_id": TURN}
    user = {"type": "UserMessage", "id": "u1", "content": [{"type": "text", "text": "hi"}]}
    agent = {"type": "AgentMessage", "id": "m1", "content": [{"type": "Text", "text": "hello"}]}
    rows: list[tuple[str, dict[str, object]]] = [
        (
            "session_meta",
            {
                "id": THREAD,
                "timestamp": "2026-11-30T00:54:51.082Z",
                "cwd": "/",
                "originator": "test",
                "cli_version": "0.163.0",
                "history_mode": "paginated",
            },
        ),
        ("event_msg", {"type": "task_started", "turn_id": TURN}),
        (
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        ),
        ("event_msg", {"type": "item_completed", **common, "item": user}),
    ]
    delta = {"type": "agent_message_content_delta", **common, "item_id": "m1"}
    # Ten distinct texts: pydantic-core caches short strings it parses (a bounded cache, but
    # unique texts would fill it and blur the measure).
    rows += [("event_msg", {**delta, "delta": f"w{k % 10} "}) for k in range(deltas)]
    rows += [
        (
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "id": "m1",
                "content": [{"type": "output_text", "text": "hello"}],
            },
        ),
        ("event_msg", {"type": "item_completed", **common, "item": agent}),
        ("event_msg", {"type": "task_complete", "turn_id": TURN, "last_agent_message": "hello"}),
    ]
    with path.open("wb") as out:
        out.writelines(_line(kind, payload, n) for n, (kind, payload) in enumerate(rows))
    return path


def traced_peak(argv: list[str], monkeypatch: pytest.MonkeyPatch, status: int = 0) -> int:
    """Peak bytes allocated while ``codex-app-bridge ARGV`` runs in process (exiting with
    ``status``), output discarded."""
    with open(os.devnull, "w") as devnull:
        monkeypatch.setattr(sys, "stdout", devnull)
        tracemalloc.start()
        try:
            assert main(argv) == status
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


COMMANDS = {
    "history": ["history"],
    "history summary": ["history", "--items-view", "summary"],
    "map": ["map", "--no-timestamps"],
    "map stateless": ["map", "--stateless"],
    "inspect user-positions": ["inspect", "user-positions"],
    "inspect truncate --before-user": ["inspect", "truncate", "--before-user", "1"],
    "inspect truncate --last-fork-turns": ["inspect", "truncate", "--last-fork-turns", "1"],
    "inspect turn-items": ["inspect", "turn-items"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_ten_times_the_deltas_do_not_grow_what_the_command_holds(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home"))
    small = write_rollout(tmp_path / "small.jsonl", 500)
    large = write_rollout(tmp_path / "large.jsonl", 5_000)
    argv = COMMANDS[name]
    # turn-items reads a rollout's response items and says the input is a rollout (status 1)
    status = 1 if name == "inspect turn-items" else 0
    traced_peak([*argv, str(small)], monkeypatch, status)  # imports and first-use model builds
    small_peak = traced_peak([*argv, str(small)], monkeypatch, status)
    large_peak = traced_peak([*argv, str(large)], monkeypatch, status)
    # Holding the lines would add well over 1 KB per delta line: 4.5 MB here.
    assert large_peak < small_peak + 128 * 1024, (small_peak, large_peak)


def _read_terminal(master: int, proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    """Everything the child wrote to the terminal, until it exits (``timeout`` s at most)."""
    deadline = time.monotonic() + timeout
    shown = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            shown += chunk
        elif proc.poll() is not None:
            break
    return shown


def _run(argv: list[str], *, terminal: bool, cwd: Path) -> tuple[bytes, bytes, int]:
    """(stdout, stderr, exit status) of the CLI, stderr a pty when ``terminal`` (stdout a pipe)."""
    if not terminal:
        result = subprocess.run(
            [*bridge_command(), *argv],
            capture_output=True,
            env=bridge_env({"CODEX_HOME": str(cwd / "home")}),
            timeout=60,
            check=False,
        )
        return result.stdout, result.stderr, result.returncode
    master, slave = os.openpty()
    # A new pty is 0 columns wide; a terminal has a size (rows, columns, pixels).
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    try:
        with subprocess.Popen(
            [*bridge_command(), *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave,
            # a bar at once: these readings end before the default second
            env=bridge_env(
                {"CODEX_HOME": str(cwd / "home"), "CODEX_APP_BRIDGE_PROGRESS_AFTER": "0"}
            ),
        ) as proc:
            os.close(slave)
            slave = -1
            assert proc.stdout is not None
            shown = _read_terminal(master, proc, timeout=60)
            out = proc.stdout.read()
            status = proc.wait(timeout=60)
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    return out, shown, status


@pytest.mark.parametrize(
    ("argv", "label"),
    [
        (["history"], b"history: rollout.jsonl: 100%"),
        (["map", "--no-timestamps"], b"map: 100%"),
        (["inspect", "truncate", "--before-user", "1"], b"inspect truncate: 100%"),
    ],
)
def test_progress_is_shown_on_a_terminal_and_never_on_a_pipe(
    argv: list[str], label: bytes, tmp_path: Path
) -> None:
    rollout = write_rollout(tmp_path / "rollout.jsonl", 200)
    size = rollout.stat().st_size
    piped_out, piped_err, piped_status = _run([*argv, str(rollout)], terminal=False, cwd=tmp_path)
    assert (piped_err, piped_status) == (b"", 0)
    out, shown, status = _run([*argv, str(rollout)], terminal=True, cwd=tmp_path)
    assert status == 0
    assert out == piped_out  # the output itself does not change
    assert label in shown
    assert f"/{size / 1024:.1f}k".encode() in shown  # bytes read of the file's size
