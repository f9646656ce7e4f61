"""``ThreadGoals``, the one owner of every thread's goal: 0.163.0's rules for a goal change
(probed from the binary), the budget, and goals kept in ``CODEX_HOME/goals`` across processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_app_bridge.sources import (
    GOAL_CONTEXT_OPEN,
    GoalError,
    ThreadGoals,
    goal_continuation_text,
)

THREAD = "01a237a5-e352-7953-8558-4e84b6de7e5e"


def test_a_new_objective_replaces_the_goal_and_the_rest_only_changes_it() -> None:
    goals = ThreadGoals()
    assert goals.get(THREAD) is None
    with pytest.raises(GoalError, match=f"cannot update goal for thread {THREAD}: no goal exists"):
        goals.set(THREAD, status="paused")
    goal = goals.set(THREAD, objective="  Write a haiku  ", token_budget=500)
    assert (goal.objective, goal.status, goal.token_budget, goal.tokens_used) == (
        "Write a haiku",
        "active",
        500,
        0,
    )
    assert goals.is_active(THREAD)
    paused = goals.set(THREAD, status="paused")
    assert (paused.objective, paused.status, paused.token_budget) == (
        "Write a haiku",
        "paused",
        500,
    )
    assert goals.set(THREAD, token_budget=None).token_budget is None
    assert goals.set(THREAD, status="complete").token_budget is None
    replaced = goals.set(THREAD, objective="Another", status="paused")
    assert (replaced.objective, replaced.status, replaced.token_budget) == (
        "Another",
        "paused",
        None,
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"objective": ""}, "goal objective must not be empty"),
        ({"objective": " \n "}, "goal objective must not be empty"),
        ({"objective": "x", "token_budget": 0}, "goal budgets must be positive when provided"),
        ({"token_budget": -5}, "goal budgets must be positive when provided"),
    ],
)
def test_refusals_carry_the_binarys_texts(change: dict[str, object], message: str) -> None:
    goals = ThreadGoals()
    goals.set(THREAD, objective="Keep")
    with pytest.raises(GoalError) as raised:
        goals.set(THREAD, **change)  # type: ignore[arg-type]
    assert raised.value.message == message
    kept = goals.get(THREAD)
    assert kept is not None
    assert kept.objective == "Keep"


def test_usage_is_charged_to_an_active_goal_only_and_a_spent_budget_limits_it() -> None:
    goals = ThreadGoals()
    assert goals.account(THREAD, 100) is None  # no goal
    goals.set(THREAD, objective="Write", token_budget=150)
    first = goals.account(THREAD, 120, 2)
    assert first is not None
    assert (first.tokens_used, first.time_used_seconds, first.status) == (120, 2, "active")
    assert goals.account(THREAD, 0) is None  # nothing to charge: no change
    second = goals.account(THREAD, 120)
    assert second is not None
    assert (second.tokens_used, second.status) == (240, "budgetLimited")
    assert goals.account(THREAD, 120) is None  # no longer active
    assert goals.get(THREAD) == second


def test_goals_outlive_the_process_and_a_clear_removes_them(tmp_path: Path) -> None:
    first = ThreadGoals(tmp_path)
    goal = first.set(THREAD, objective="Ship it", token_budget=9000)
    first.account(THREAD, 10)
    assert (tmp_path / "goals" / f"{THREAD}.json").is_file()
    again = ThreadGoals(tmp_path)
    kept = again.get(THREAD)
    assert kept is not None
    assert kept == goal.model_copy(update={"tokens_used": 10})
    assert again.clear(THREAD) is True
    assert again.clear(THREAD) is False
    assert not (tmp_path / "goals" / f"{THREAD}.json").exists()
    assert ThreadGoals(tmp_path).get(THREAD) is None


def test_a_goal_file_that_is_not_a_goal_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "goals").mkdir()
    (tmp_path / "goals" / f"{THREAD}.json").write_text("{not json", encoding="utf-8")
    goals = ThreadGoals(tmp_path)
    assert goals.get(THREAD) is None
    assert goals.set(THREAD, objective="Fresh").objective == "Fresh"


def test_the_continuation_message_is_hidden_context_with_the_objective_and_budget() -> None:
    goal = ThreadGoals().set(THREAD, objective="Write a haiku", token_budget=1000)
    text = goal_continuation_text(goal)
    assert text.startswith(GOAL_CONTEXT_OPEN + "\n")
    assert text.endswith("</codex_internal_context>")
    assert "<objective>\nWrite a haiku\n</objective>" in text
    assert "- Tokens used: 0\n- Token budget: 1000\n- Tokens remaining: 1000" in text
    unbounded = goal_continuation_text(ThreadGoals().set(THREAD, objective="x"))
    assert "- Token budget: none\n- Tokens remaining: unbounded" in unbounded
