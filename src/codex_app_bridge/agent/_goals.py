"""The goal side of a model session: the model's goal tools and the tokens a goal turn uses.

Role: one :class:`GoalSession` per model session whose server keeps goals
(``SessionConfig.goals``, the one owner: ``sources.ThreadGoals``). It does what 0.163.0 core
does for a goal within a turn (probed from the binary against a mock model):

* **the tools** ``get_goal``, ``create_goal`` and ``update_goal`` (offered in every request,
  ``_tools``) are answered once the response that called them has ended, when its usage is
  known: the output is ``{goal, remainingTokens, completionBudgetReport}`` (JSON, the goal as the
  wire shows it), or core's refusal text. ``create_goal`` refuses while a goal is unfinished;
  ``update_goal`` only sets ``complete``, ``blocked`` or ``paused``. A change is a
  ``thread_goal_updated`` event of the turn;
* **accounting**: the tokens of an active goal's turns (input not served from cache, plus
  output, as core counts them) and their wall-clock seconds are added to the goal at every
  tool boundary and at the end of the turn, each change a ``thread_goal_updated`` event (a budget reached makes the goal
  ``budgetLimited``; the rest of that turn is still charged, and when it was spent at a tool
  boundary the session records a hidden budget-limit message before the next request:
  ``sources.goal_budget_limit_text``). Usage before the goal existed, or after the model
  completed it in this turn, is not counted.

The continuation turns themselves are started by the server (``server._goal_turns``); their
input is ``sources.goal_continuation_input``, a hidden user message that this session records
for the model without showing a ``userMessage`` item (:func:`is_goal_context`).

Boundary: no HTTP, no JSON-RPC; the session calls in, events go out through ``emit``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import orjson

from codex_app_bridge.protocol.core import (
    EventMsg,
    TextUserInput,
    ThreadGoal,
    ThreadGoalUpdatedEvent,
    TokenUsage,
    UserInput,
)
from codex_app_bridge.sources import GOAL_CONTEXT_OPEN, GoalError

if TYPE_CHECKING:
    from codex_app_bridge.agent._tools import ToolCall, ToolOutput
    from codex_app_bridge.sources import ThreadGoals

__all__ = ["GOAL_TOOL_NAMES", "GoalSession", "is_goal_context"]

GOAL_TOOL_NAMES: Final = frozenset({"get_goal", "create_goal", "update_goal"})

_UNFINISHED: Final = (
    "cannot create a new goal because this thread has an unfinished goal; complete the existing "
    "goal first"
)
_UPDATE_ONLY: Final = (
    "update_goal can only mark the existing goal complete, blocked, or paused at the user's "
    "explicit request; resume, budget-limited, and usage-limited status changes are controlled "
    "by the user or system"
)
_MODEL_STATUSES: Final = frozenset({"complete", "blocked", "paused"})
_COMPLETION_REPORT: Final = (
    "The goal is complete. Tell the user what it used, from this result's goal: the tokens "
    "(goal.tokensUsed, out of goal.tokenBudget when there is one) and, when goal.timeUsedSeconds "
    "is above 0, the time it took, briefly and in the user's language."
)


def is_goal_context(inputs: Sequence[UserInput]) -> bool:
    """Whether a turn's input is a goal continuation's hidden message."""
    return (
        len(inputs) == 1
        and isinstance(inputs[0], TextUserInput)
        and inputs[0].text.startswith(GOAL_CONTEXT_OPEN)
    )


def goal_tokens(usage: TokenUsage) -> int:
    """What a goal is charged for ``usage``: input not served from cache, plus output."""
    return max(0, usage.input_tokens - usage.cached_input_tokens) + max(0, usage.output_tokens)


def _wire(goal: ThreadGoal) -> dict[str, Any]:
    """The goal as core serializes it for the model (no ``tokenBudget`` when it has none)."""
    return goal.model_dump(mode="json", by_alias=True)


def _arguments(call: ToolCall) -> Mapping[str, Any]:
    try:
        value = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError as exc:
        raise GoalError(f"failed to parse function arguments: {exc}") from None
    if not isinstance(value, dict):
        raise GoalError("failed to parse function arguments: expected an object")
    return value  # pyright: ignore[reportUnknownVariableType]


class GoalSession:
    """One thread's goal as its model session sees it (see the module docstring)."""

    def __init__(self, goals: ThreadGoals, thread_id: str) -> None:
        self.goals = goals
        self.thread_id = thread_id
        self._charged = 0
        """``goal_tokens`` of the session's usage already charged (or not to be charged)."""
        self._clock = time.monotonic()
        """When the goal's time was last charged (whole seconds; the fraction carries over)."""
        self._completed = False
        """The model completed the goal in this turn: the rest of the turn is not charged."""
        self.goal_turn_id: str | None = None
        """The turn opened by a goal continuation's hidden message."""
        self._active_at_start = False
        """The goal was active when the turn opened: the turn is charged to its end, past a
        spent budget (0.163.0)."""
        self._limited: ThreadGoal | None = None
        """The goal as a charge of this turn left it, when that charge spent its budget."""

    def trigger(self, turn_id: str) -> str | None:
        """``turn_trigger`` of the turn's requests (``goal`` for a goal-continuation turn)."""
        return "goal" if turn_id == self.goal_turn_id else None

    def turn_started(self, totals: TokenUsage) -> None:
        """A turn opens: what was used before it is never charged to a goal."""
        self._charged = goal_tokens(totals)
        self._clock = time.monotonic()
        self._completed = False
        goal = self.goals.get(self.thread_id)
        self._active_at_start = goal is not None and goal.status == "active"
        self._limited = None

    def turn_failed(self, turn_id: str, emit: Callable[[EventMsg], None]) -> None:
        """A turn failed while the goal was active: 0.163.0 marks the goal ``blocked`` (with the
        turn's id, before the turn's error), so no goal turn follows."""
        goal = self.goals.get(self.thread_id)
        if goal is None or goal.status != "active":
            return
        emit(self._updated(turn_id, self.goals.set(self.thread_id, status="blocked")))

    def take_budget_limit(self) -> ThreadGoal | None:
        """The goal, if a charge of this turn just spent its budget (once)."""
        goal, self._limited = self._limited, None
        return goal

    def account(self, turn_id: str, totals: TokenUsage, emit: Callable[[EventMsg], None]) -> None:
        """Charge an active goal what was used since the last charge (a tool boundary or the
        end of the turn); a change is emitted."""
        used = goal_tokens(totals)
        delta, self._charged = used - self._charged, used
        seconds = int(time.monotonic() - self._clock)
        self._clock += seconds
        if self._completed or (delta <= 0 and seconds <= 0):
            return
        before = self.goals.get(self.thread_id)
        goal = self.goals.account(self.thread_id, delta, seconds, limited=self._active_at_start)
        if goal is not None:
            if goal.status == "budgetLimited" and before is not None and before.status == "active":
                self._limited = goal
            emit(self._updated(turn_id, goal))

    def answer(
        self,
        call: ToolCall,
        turn_id: str,
        totals: TokenUsage,
        emit: Callable[[EventMsg], None],
    ) -> ToolOutput:
        """The output of one goal tool call (its changes emitted), once its response ended."""
        from codex_app_bridge.agent._tools import ToolOutput

        try:
            if call.name == "get_goal":
                goal = self.goals.get(self.thread_id)
                return ToolOutput(output=self._result(goal), success=True)
            arguments = _arguments(call)
            self.account(turn_id, totals, emit)
            if call.name == "create_goal":
                goal = self._create(arguments, totals)
            else:
                goal = self._update(arguments)
        except GoalError as exc:
            return ToolOutput(output=exc.message, success=False)
        emit(self._updated(turn_id, goal))
        return ToolOutput(output=self._result(goal), success=True)

    def _create(self, arguments: Mapping[str, Any], totals: TokenUsage) -> ThreadGoal:
        current = self.goals.get(self.thread_id)
        if current is not None and current.status != "complete":
            raise GoalError(_UNFINISHED)
        objective = arguments.get("objective")
        if not isinstance(objective, str):
            raise GoalError("failed to parse function arguments: missing field `objective`")
        budget = arguments.get("token_budget")
        if budget is not None and not isinstance(budget, int):
            raise GoalError("failed to parse function arguments: token_budget is not an integer")
        goal = self.goals.set(self.thread_id, objective=objective, token_budget=budget)
        self._charged = goal_tokens(totals)  # the goal starts now
        self._clock = time.monotonic()
        self._completed = False
        return goal

    def _update(self, arguments: Mapping[str, Any]) -> ThreadGoal:
        status = arguments.get("status")
        if status not in _MODEL_STATUSES:
            raise GoalError(_UPDATE_ONLY)
        goal = self.goals.set(self.thread_id, status=str(status))
        if status == "complete":
            self._completed = True
        return goal

    def _result(self, goal: ThreadGoal | None) -> str:
        remaining: int | None = None
        report: str | None = None
        if goal is not None:
            if goal.token_budget is not None:
                remaining = max(0, goal.token_budget - goal.tokens_used)
            if goal.status == "complete":
                report = _COMPLETION_REPORT
        result = {
            "goal": None if goal is None else _wire(goal),
            "remainingTokens": remaining,
            "completionBudgetReport": report,
        }
        return orjson.dumps(result).decode()

    def _updated(self, turn_id: str, goal: ThreadGoal) -> ThreadGoalUpdatedEvent:
        return ThreadGoalUpdatedEvent.model_validate(
            {"threadId": self.thread_id, "turnId": turn_id, "goal": goal}
        )
