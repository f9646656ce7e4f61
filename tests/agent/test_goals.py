"""End-to-end: the model's goal tools over stdio, against the mock model (``goal_tools``: each
tool once, and core's refusals), answered as 0.163.0 answers them (probed from the binary): the
output JSON ``{goal, remainingTokens, completionBudgetReport}``, the refusal texts, the
``thread/goal/updated`` events of the turn, and no goal turn after the model paused the goal."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.agent._harness import run_turns

pytestmark = pytest.mark.anyio


def _outputs(request: dict[str, Any]) -> list[str]:
    return [i["output"] for i in request["body"]["input"] if i["type"] == "function_call_output"]


async def test_the_goal_tools_answer_as_core_and_a_paused_goal_starts_no_goal_turn() -> None:
    run = await run_turns("goal_tools", ["Make a goal"])
    assert len(run.requests) == 6  # five calls, then the closing message
    tools = {t.get("name") for t in run.requests[0]["body"]["tools"]}
    assert {"get_goal", "create_goal", "update_goal"} <= tools
    created, got, again, active, paused = _outputs(run.requests[5])
    goal = json.loads(created)["goal"]
    assert goal["threadId"] == run.thread_id
    assert (goal["objective"], goal["status"], goal["tokenBudget"], goal["tokensUsed"]) == (
        "Write a poem",
        "active",
        1000,
        0,
    )
    assert json.loads(created)["remainingTokens"] == 1000
    assert json.loads(created)["completionBudgetReport"] is None
    # get_goal reads the goal as it is: the creating response is not charged to it
    assert json.loads(got)["goal"]["tokensUsed"] == 0
    assert again == (
        "cannot create a new goal because this thread has an unfinished goal; complete the "
        "existing goal first"
    )
    assert active.startswith("update_goal can only mark the existing goal complete, blocked, or ")
    last = json.loads(paused)
    # the four responses of 120 tokens after create_goal's are charged, the pausing one too
    # (0.163.0 charges that one before or after the call, depending on timing)
    assert (last["goal"]["status"], last["goal"]["tokensUsed"]) == ("paused", 480)
    assert last["remainingTokens"] == 520

    updates = [m["params"] for m in run.received if m.get("method") == "thread/goal/updated"]
    turn_ids = {u["turnId"] for u in updates}
    assert len(turn_ids) == 1
    assert None not in turn_ids  # all from the model's turn
    assert updates[0]["goal"]["status"] == "active"
    assert updates[-1]["goal"]["status"] == "paused"
    assert [u["goal"]["tokensUsed"] for u in updates] == sorted(
        u["goal"]["tokensUsed"] for u in updates
    )
    # the goal is paused: the turn that paused it is the thread's last
    started = [m for m in run.received if m.get("method") == "turn/started"]
    assert len(started) == 1
