"""The real binary's recorded model-mode outcomes (``tests/data/model_mode``) are still what the
real binary does: every scenario runs again on the real ``codex app-server`` 0.163.0 against the
mock, and must equal its reference (same requests, same masked inputs and fields, same
notifications), apart from what timing decides (``ModelScenario.volatile``: the text streamed
before an interrupt lands; ``ModelScenario.raced``: a scenario the binary ends one of two ways,
both recorded, and a run must equal one of them; where in its turn a goal update lands,
``goal_updates_last_in_turn``).

The 20 MiB event takes the real binary about ten minutes (its SSE parsing is quadratic in the
event's size); it runs with ``CODEX_BRIDGE_SLOW=1``.

Re-record after a deliberate change: ``python -m codex_app_bridge.conformance --model-mode
--servers real --record tests/data/model_mode``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codex_app_bridge.conformance._model_mode import (
    MODEL_SCENARIOS,
    SLOW_SCENARIOS,
    ModelResult,
    compare_runs,
    load_reference,
    recheck_real,
    run_model_suite_sync,
    scenario_named,
    unexplained,
)
from tests.conformance.conftest import RACED_RUN, REAL_WORKERS, REFERENCE, report_raced
from tests.conftest import bridge_env

pytestmark = [pytest.mark.conformance, pytest.mark.filterwarnings(f"default:{RACED_RUN}")]

SLOW = os.environ.get("CODEX_BRIDGE_SLOW") == "1"
FAST = [s.name for s in MODEL_SCENARIOS if s.name not in SLOW_SCENARIOS]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModelResult]:
    """Every fast scenario run on the real binary, compared with its reference; one that
    differed run once more (``recheck_real``), the first run's difference shown as a
    ``RacedRun`` warning with where the stream differed."""
    scratch = tmp_path_factory.mktemp("model-mode-real")
    results, raced = recheck_real(FAST, REFERENCE, scratch, concurrency=REAL_WORKERS)
    for name, first in raced.items():
        found = [(d.kind, d.label) for d in unexplained(scenario_named(name), first)]
        report_raced(name, "\n".join([str(found), *first.where]))
    return results


@pytest.mark.parametrize("name", FAST)
def test_the_real_binary_still_does_what_its_reference_says(
    fresh: dict[str, ModelResult], name: str
) -> None:
    result = fresh[name]
    assert result.notes == []
    assert result.request_counts[0] == result.request_counts[1]
    # where in the stream, for a unit that moved (a race of the binary's tasks)
    assert unexplained(scenario_named(name), result) == [], "\n".join(result.where)


@pytest.mark.skipif(not SLOW, reason="about ten minutes on the real binary: CODEX_BRIDGE_SLOW=1")
@pytest.mark.parametrize("name", sorted(SLOW_SCENARIOS))
def test_slow_scenarios_still_match_their_reference(tmp_path: Path, name: str) -> None:
    record = tmp_path / "record"
    run_model_suite_sync([name], tmp_path, record=record, servers=("real",))
    spec = scenario_named(name)
    result = compare_runs(spec, load_reference(REFERENCE, name), load_reference(record, name))
    assert result.notes == []
    assert unexplained(spec, result) == [], "\n".join(result.where)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "codex_app_bridge.conformance", "--model-mode", *args]
    return subprocess.run(
        argv, env=bridge_env(), capture_output=True, text=True, timeout=300, check=False
    )


def test_the_command_line_records_the_real_side(tmp_path: Path) -> None:
    done = run_cli("--scenario", "plain", "--servers", "real", "--record", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "nothing to compare" in done.stdout
    spec = scenario_named("plain")
    result = compare_runs(
        spec, load_reference(REFERENCE, "plain"), load_reference(tmp_path, "plain")
    )
    assert unexplained(spec, result) == [], "\n".join(result.where)


def test_the_command_line_refuses_a_bridge_run_without_a_reference() -> None:
    done = run_cli("--servers", "bridge")
    assert done.returncode == 2
    assert "--reference" in done.stderr
