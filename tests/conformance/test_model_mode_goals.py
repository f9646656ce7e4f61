"""Thread goals in model mode, on their own (the whole suite is ``test_model_mode_bridge``): the
bridge's goal-continuation turns against the real binary's recorded ones, same mock.

``goal``: ``thread/goal/set`` starts goal turns at once, each opened by a hidden message, until
the model's ``update_goal`` completes the goal; ``goal_budget``: a 150-token budget ends them
(``budgetLimited``) at a turn's end; ``goal_budget_mid_turn``: a 100-token budget spent by a
response that calls ``get_goal``: the goal is ``budgetLimited`` at that tool boundary, the model
is told in a hidden message before the follow-up request, the rest of the turn is still charged
and no goal turn follows; ``goal_failed_turn``: the second goal turn fails (``response.failed``)
and the goal is ``blocked`` with that turn's id before its error; ``goal_interrupted_turn``: the
second goal turn is interrupted while it streams: the goal stays active, unannounced, and no goal
turn follows; ``goal_after_turn``: a user turn, then a goal, a restart, ``thread/resume``
(which announces the goal) and ``thread/goal/clear``. The notifications, the requests the mock
got (inputs masked: the continuation message's prose is the project's own) and the final reads
must equal the real binary's but for the rows of ``test_model_mode_bridge.KNOWN``.
"""

from __future__ import annotations

import pytest

from codex_app_bridge.conformance._model_mode import ModelResult, scenario_named
from tests.conformance.conftest import BridgeModelRuns
from tests.conformance.test_model_mode_bridge import known

GOAL_SCENARIOS = [
    "goal",
    "goal_budget",
    "goal_budget_mid_turn",
    "goal_failed_turn",
    "goal_interrupted_turn",
    "goal_after_turn",
]


@pytest.fixture(scope="module")
def results(bridge_model_runs: BridgeModelRuns) -> dict[str, ModelResult]:
    return bridge_model_runs.results(GOAL_SCENARIOS)


@pytest.mark.parametrize("name", GOAL_SCENARIOS)
def test_goal_turns_match_the_real_binarys(results: dict[str, ModelResult], name: str) -> None:
    result = results[name]
    assert result.notes == []
    real, bridge = result.request_counts
    assert bridge == real
    parts = (result.stream, result.reads, result.inputs, result.fields)
    assert [d for part in parts for d in part.differences if not known(name, d)] == []
    assert result.stream.compared > 20


def test_the_goal_runs_notifications_are_all_equal(results: dict[str, ModelResult]) -> None:
    """Every notification equal but the text streamed before an interrupt lands, which timing
    decides (``goal_interrupted_turn``'s volatile delta: a busy machine streams a word more)."""
    for name in GOAL_SCENARIOS[:-1]:
        stream = results[name].stream
        volatile = scenario_named(name).volatile
        timing = [d for d in stream.differences if d.kind == "changed" and d.label in volatile]
        assert stream.equal + len(timing) == stream.compared, (name, stream.differences)
