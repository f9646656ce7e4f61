"""Scripts and rollouts stream: indexing and playing a file keeps memory flat in its length, and
``load_script(lazy=True)`` (what ``serve`` does before answering ``initialize``) does not read
past the first line."""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import anyio
import pytest

from codex_app_bridge.protocol.core import TextUserInput
from codex_app_bridge.sources import RolloutSource, ScriptSource, TurnRequest, load_script

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from serve_script import write_rollout, write_script  # pyright: ignore[reportMissingImports, reportUnknownVariableType]

SMALL, LARGE = 5_000, 50_000


def _play_all(source: ScriptSource | RolloutSource, turns: int) -> int:
    async def run() -> int:
        count = 0
        for index in range(turns):
            request = TurnRequest(
                thread_id="live-thread",
                turn_id=f"live-{index}",
                input=[TextUserInput(text="go")],
                user_message_id="u",
                turn_index=index,
                model="m",
                cwd="/",
            )
            async for _ in source.turn(request):
                count += 1
        return count

    return anyio.run(run)


def _peak(path: Path, turns: int) -> tuple[int, int]:
    """(events played, peak traced bytes) for loading and playing every turn of ``path``."""
    tracemalloc.start()
    try:
        source = load_script(path)
        count = _play_all(source, turns)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return count, peak


@pytest.mark.parametrize("kind", ["script", "rollout"])
def test_memory_is_flat_in_the_files_length(tmp_path: Path, kind: str) -> None:
    write = write_script if kind == "script" else write_rollout
    warm_up = tmp_path / f"{kind}-warm-up.jsonl"
    write(warm_up, 20, 2)
    _peak(warm_up, 2)  # models and adapters are built on first use: not part of the figures
    peaks: dict[int, int] = {}
    for lines in (SMALL, LARGE):
        path = tmp_path / f"{kind}-{lines}.jsonl"
        write(path, lines, 2)
        count, peaks[lines] = _peak(path, 2)
        assert count >= lines - 4
    # ten times the lines, about the same peak (a loaded file would take ~10x)
    assert peaks[LARGE] < 2 * peaks[SMALL] + 256_000, peaks


def _bytes_read() -> int:
    """What this process has read so far (``rchar`` of ``/proc/self/io``: every read call)."""
    with open("/proc/self/io", "rb") as f:
        return int(f.read().split(b"rchar:")[1].split()[0])


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts reads in /proc/self/io")
def test_lazy_loading_reads_only_the_first_line(tmp_path: Path) -> None:
    """Counted in bytes read, not timed: the same on a busy machine."""
    large = tmp_path / "large.jsonl"
    write_script(large, 40_000, 2)
    size = large.stat().st_size
    before = _bytes_read()
    load_script(large, lazy=True)
    lazy = _bytes_read() - before
    before = _bytes_read()
    load_script(large)  # the index pass reads it all: what the count would show
    whole = _bytes_read() - before
    assert lazy < 256 * 1024 < size <= whole, (lazy, size, whole)
