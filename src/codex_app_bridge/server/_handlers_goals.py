"""The ``thread/goal/*`` handlers: ``thread/goal/get``, ``thread/goal/set``, ``thread/goal/clear``.

Rules (probed from the 0.163.0 binary):

* The thread must be known (loaded, or stored in the home): ``thread not found: <id>``; an
  ephemeral thread has no goals: ``ephemeral thread does not support goals: <id>``.
* ``get`` answers ``{goal}`` (``null`` without one).
* ``set`` with an ``objective`` replaces the goal (trimmed; ``active`` unless a ``status`` is
  given; usage from zero); without one it changes the current goal's ``status`` and
  ``tokenBudget`` (``null`` clears it) and needs a goal (``cannot update goal for thread <id>:
  no goal exists``). ``goal objective must not be empty``; ``goal budgets must be positive when
  provided``. The answer is ``{goal}``; every connection then gets ``thread/goal/updated``
  (``turnId: null``), and an active goal of an idle thread starts a goal-continuation turn
  (``_goal_turns``).
* A loaded thread's rollout records the goal set as a turnless ``thread_goal_updated`` line
  (``turnId`` absent), as 0.163.0 writes it; ``clear`` writes nothing.
* ``clear`` answers ``{cleared}`` (whether there was a goal); when there was, every connection
  gets ``thread/goal/cleared``.

The goals themselves are ``ThreadGoals``' (``sources._goals``), the one owner.

Boundary: what a request means and answers.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from codex_app_bridge.protocol.core import EventEnvelope, ThreadGoalUpdatedEvent
from codex_app_bridge.protocol.core import ThreadGoal as CoreThreadGoal
from codex_app_bridge.protocol.v2 import (
    ThreadGoal,
    ThreadGoalClearedNotification,
    ThreadGoalClearParams,
    ThreadGoalClearResponse,
    ThreadGoalGetParams,
    ThreadGoalGetResponse,
    ThreadGoalSetParams,
    ThreadGoalSetResponse,
    ThreadGoalUpdatedNotification,
)
from codex_app_bridge.rpc import RequestContext, invalid_request
from codex_app_bridge.server._errors import thread_not_found
from codex_app_bridge.server._ids import parse_thread_id
from codex_app_bridge.sources import UNSET, GoalError

if TYPE_CHECKING:
    from codex_app_bridge.server._services import ServerServices

__all__ = ["GoalHandlers", "goal_updated", "wire_goal"]


def wire_goal(goal: CoreThreadGoal) -> ThreadGoal:
    """A stored goal as the wire's ``ThreadGoal`` (``tokenBudget`` always present)."""
    return ThreadGoal.model_validate(
        {**goal.model_dump(mode="json", by_alias=True), "tokenBudget": goal.token_budget}
    )


def goal_updated(goal: CoreThreadGoal, turn_id: str | None = None) -> ThreadGoalUpdatedNotification:
    return ThreadGoalUpdatedNotification(
        thread_id=goal.thread_id, turn_id=turn_id, goal=wire_goal(goal)
    )


class GoalHandlers:
    """``thread/goal/*`` over one server's goals."""

    def __init__(self, server: ServerServices) -> None:
        self.server = server

    async def _thread(self, raw_id: str) -> str:
        """The canonical id of a thread that may have a goal (see the module docstring)."""
        thread_id = parse_thread_id(raw_id)
        threads = self.server.threads
        record = threads.get(thread_id)
        if record is None:
            stored = await threads.find_stored(thread_id)
            if stored is None:
                raise thread_not_found(thread_id)
        elif record.ephemeral:
            raise invalid_request(f"ephemeral thread does not support goals: {thread_id}")
        return thread_id

    async def thread_goal_get(
        self, ctx: RequestContext, params: ThreadGoalGetParams
    ) -> ThreadGoalGetResponse:
        thread_id = await self._thread(params.thread_id)
        goal = self.server.goals.get(thread_id)
        return ThreadGoalGetResponse(goal=None if goal is None else wire_goal(goal))

    async def thread_goal_set(
        self, ctx: RequestContext, params: ThreadGoalSetParams
    ) -> ThreadGoalSetResponse:
        thread_id = await self._thread(params.thread_id)
        budget = params.token_budget if "token_budget" in params.model_fields_set else UNSET
        try:
            goal = self.server.goals.set(
                thread_id, objective=params.objective, status=params.status, token_budget=budget
            )
        except GoalError as exc:
            raise invalid_request(exc.message) from None
        threads = self.server.threads
        record = threads.get(thread_id)
        if record is not None and threads.storage is not None:
            # 0.163.0 records the goal set in the rollout, as a turnless thread_goal_updated
            event = ThreadGoalUpdatedEvent.model_construct(thread_id=thread_id, goal=goal)
            threads.storage.persist(record, EventEnvelope.trusted("", event))
        hub = self.server.hub
        ctx.after_response(partial(hub.broadcast, "thread/goal/updated", goal_updated(goal)))
        ctx.after_response(partial(self.server.goal_turns.continue_goal, thread_id))
        return ThreadGoalSetResponse(goal=wire_goal(goal))

    async def thread_goal_clear(
        self, ctx: RequestContext, params: ThreadGoalClearParams
    ) -> ThreadGoalClearResponse:
        thread_id = await self._thread(params.thread_id)
        cleared = self.server.goals.clear(thread_id)
        if cleared:
            notification = ThreadGoalClearedNotification(thread_id=thread_id)
            hub = self.server.hub
            ctx.after_response(partial(hub.broadcast, "thread/goal/cleared", notification))
        return ThreadGoalClearResponse(cleared=cleared)
