"""The benchmark scripts keep running: each is started with tiny parameters and must print its
figures and exit 0 (the figures themselves are not asserted: speed goals live in the scripts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import bridge_env

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.mark.parametrize(
    ("script", "args", "expected"),
    [
        ("core_throughput.py", ["--seconds", "0.05", "--subscribers", "2"], "parse_turn_item"),
        ("rpc_throughput.py", ["--requests", "200", "--notifications", "200"], "/s"),
        ("serve_turns.py", ["--turns", "2", "--words", "5"], "ms"),
        ("serve_script.py", ["--lines", "40", "--turns", "2"], "initialize"),
        ("serve_script.py", ["--lines", "40", "--turns", "2", "--kind", "rollout"], "peak RSS"),
    ],
)
def test_benchmark_script_runs_and_prints_figures(
    script: str, args: list[str], expected: str
) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=bridge_env(),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert expected in proc.stdout
