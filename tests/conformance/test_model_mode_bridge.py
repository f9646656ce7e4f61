"""The bridge's real model turns against the real binary's recorded ones (issue 20's acceptance).

Every model-mode scenario runs on ``codex-app-bridge serve`` started with no flags on a
``CODEX_HOME`` whose ``config.toml`` names the mock Responses server; the mock answers as it
answered the real binary (``tests/data/model_mode`` holds the real outcome). Compared: the
client's notifications and answers and the final ``thread/read``s (at least 95 % equal over all
scenarios), the number of requests the mock got (equal in every scenario) and each request's
masked ``input`` and fields. Every difference must be one of :data:`KNOWN` (each is a row of
``KNOWN_DIFFERENCES.md``, "Model mode") or timing (``ModelScenario.volatile``: the text
streamed before an interrupt lands); a known difference that goes away is fine, a new one
fails.
"""

from __future__ import annotations

import errno
import re
import socket
from pathlib import Path

import pytest

from codex_app_bridge.conformance._compare import Difference
from codex_app_bridge.conformance._model_mode import (
    MODEL_SCENARIOS,
    ModelResult,
    load_reference,
    refusing_port,
    run_model_suite_sync,
    scenario_named,
    total_notifications,
)
from tests.conformance.conftest import REFERENCE, BridgeModelRuns

THRESHOLD = 95.0

Known = tuple[str, str, str | None]
"""(kind, label pattern, detail pattern): a difference is known when its kind is equal, its
label matches, and every detail line matches the pattern of some row with that kind and label
(``None``: a difference without details)."""

COMMON: list[Known] = []
KNOWN: dict[str, list[Known]] = {}
"""Empty since the bridge writes 0.163.0's ``thread_settings_applied`` and goal lines: the resume
cursors' rollout ordinals (``resume_after_restart``, ``goal_after_turn``) are the binary's."""


def known(name: str, difference: Difference) -> bool:
    if difference.kind == "changed" and difference.label in scenario_named(name).volatile:
        return True  # the text streamed before an interrupt lands: timing
    rows = [
        row
        for row in [*COMMON, *KNOWN.get(name, [])]
        if row[0] == difference.kind and re.fullmatch(row[1], difference.label)
    ]
    if not difference.details:
        return any(row[2] is None for row in rows)
    return all(
        any(row[2] is not None and re.fullmatch(row[2], line) for row in rows)
        for line in difference.details
    )


@pytest.fixture(scope="module")
def results(bridge_model_runs: BridgeModelRuns) -> dict[str, ModelResult]:
    return bridge_model_runs.results(s.name for s in MODEL_SCENARIOS)


def test_every_scenario_ran_on_the_bridge(results: dict[str, ModelResult]) -> None:
    assert set(results) == {s.name for s in MODEL_SCENARIOS}
    for result in results.values():
        assert result.notes == [], (result.name, result.notes)


def test_the_notifications_match_the_real_binarys_at_least_95_percent(
    results: dict[str, ModelResult],
) -> None:
    total = total_notifications(results.values())
    assert total.compared > 500
    assert total.percent >= THRESHOLD


@pytest.mark.parametrize("name", [s.name for s in MODEL_SCENARIOS])
def test_the_bridge_sends_the_mock_as_many_requests_as_the_real_binary(
    results: dict[str, ModelResult], name: str
) -> None:
    real, bridge = results[name].request_counts
    assert bridge == real


@pytest.mark.parametrize("name", [s.name for s in MODEL_SCENARIOS])
def test_every_difference_is_a_known_one(results: dict[str, ModelResult], name: str) -> None:
    result = results[name]
    parts = (result.stream, result.reads, result.inputs, result.fields)
    unknown = [d for part in parts for d in part.differences if not known(name, d)]
    assert unknown == [], "\n".join(result.where)


@pytest.mark.parametrize("run", [1, 2])
def test_a_scenario_played_again_in_the_same_process_waits_for_its_own_deltas(
    tmp_path: Path, run: int
) -> None:
    # the interrupt scenario counts deltas before it interrupts: the count starts afresh each
    # time it is played (it once carried over, so the second play in a test session interrupted
    # before the turn had started and got "no active turn to interrupt")
    run_model_suite_sync(["interrupt"], tmp_path, reference=REFERENCE, servers=("bridge",))
    record = load_reference(tmp_path / "interrupt" / "bridge", "interrupt")
    order = [u.get("response") or u.get("method") for u in record.stream]
    answer = record.stream[order.index("turn/interrupt")]
    assert "error" not in answer, answer
    assert order.index("item/agentMessage/delta") < order.index("turn/interrupt"), order
    assert record.notes["turn_status"] == "interrupted"


def test_the_unreachable_provider_s_port_stays_refused_and_untaken_for_the_whole_run() -> None:
    """``unreachable`` names a port nobody listens on. It used to be bound and closed again
    before the run: free, so a mock started meanwhile (another scenario's, or the other
    pytest-xdist worker's, on port 0) could get it and answer the server meant to wait for
    the network. Held bound without listening, it refuses connections and cannot be taken,
    even by a listener asking for ``SO_REUSEADDR`` (as ``http.server``'s and asyncio's do)."""
    with refusing_port() as port:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=30).close()
        with socket.socket() as other:
            other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            with pytest.raises(OSError, match="in use") as taken:
                other.bind(("127.0.0.1", port))
        assert taken.value.errno == errno.EADDRINUSE
