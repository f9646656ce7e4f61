"""The pytest plugin, used as a client developer would: the README's example test runs green,
alone and under pytest-xdist, and two runs of it receive the same bytes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import orjson
import pytest

from codex_app_bridge.testing import in_process_bridge, subprocess_bridge

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "test_with_codex_app_bridge.py"
SCENARIO = '{"match": "hi", "reply": "hello"}\n{"default": true, "approval": "ls", "reply": "ok"}\n'


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "anyio", "-q", "-p", "no:cacheprovider", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("xdist", [False, True])
def test_the_readme_example_passes(xdist: bool, tmp_path: Path) -> None:
    test = tmp_path / "test_example.py"
    test.write_text(EXAMPLE.read_text())
    proc = _pytest(tmp_path, *(["-n", "2"] if xdist else []), str(test))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


@pytest.mark.anyio
async def test_two_runs_of_a_test_receive_the_same_bytes() -> None:
    async def run(process: bool) -> list[bytes]:
        bridge = subprocess_bridge if process else in_process_bridge
        async with bridge(SCENARIO, seed=3) as client:
            thread = await client.start_thread()
            (await client.run_turn(thread, "hi")).assert_completed("hello")
            other = await client.run_turn(thread, "what")
            other.assert_approval_requested("ls")
            other.assert_completed("ok")
            return [orjson.dumps(m) for m in client.received]

    with anyio.fail_after(180):
        first, second = await run(False), await run(False)
        piped = await run(True)
    assert first == second
    strip = [m for m in first if b'"emittedAtMs"' not in m]
    assert len(strip) < len(first)  # notifications carry the standing time, the same each run
    assert piped == first  # a process and the in-process bridge say the same thing
