"""Goal-continuation turns: an active goal keeps its thread working, as 0.163.0 core does.

Rules (probed from the binary against a mock model):

* A thread whose goal is ``active`` and which is idle starts a turn of its own at once when the
  goal is set (after the ``thread/goal/set`` answer and its ``thread/goal/updated``), and again
  after every turn that ends while the goal is still active: a goal-continuation turn. Its input
  is one hidden user message (``sources.goal_continuation_text``, the
  ``<codex_internal_context source="goal">`` tag): clients see the turn and what the model does
  in it, never a ``userMessage`` item; a thread without a preview takes the objective as its
  preview. Each such turn gets the model-catalogue ``warning`` a ``turn/start`` gets, and
  only the turn that ends the goal's run counts as unread activity (``thread/readState``).
* It stops when the goal is no longer active: the model's ``update_goal`` (``complete``,
  ``blocked``, ``paused``), a budget reached (``budgetLimited``, from the source's accounting),
  ``thread/goal/set`` or ``clear``. A failed turn leaves the goal ``blocked`` (the model source
  marks it, with the turn's id, before the turn's error, as 0.163.0: model-mode
  ``goal_failed_turn``); should a source end a turn failed with the goal still active, it is
  paused here. After an interrupted turn the goal stays ``active`` with no update and no goal
  turn follows (0.163.0, model-mode ``goal_interrupted_turn``; here a later turn's end
  continues the run: not probed). Plan mode runs no goal turns.
* Only a source that runs goals (``continues_goals``: the model source) gets them; the others
  keep goals as data.

Boundary: when to start a turn; the turn itself is the thread runtime's and the source's.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from codex_app_bridge.config import collaboration_mode_kind
from codex_app_bridge.protocol.core import EventEnvelope, TextUserInput, WarningEvent
from codex_app_bridge.server._handlers_goals import goal_updated
from codex_app_bridge.server._ids import new_uuid7
from codex_app_bridge.server._runtime import TurnOrder
from codex_app_bridge.sources import goal_continuation_text

if TYPE_CHECKING:
    from codex_app_bridge.server._services import ServerServices
    from codex_app_bridge.server._threads import ThreadRecord

__all__ = ["GoalTurns"]


class GoalTurns:
    """Starts one server's goal-continuation turns (see the module docstring)."""

    def __init__(self, server: ServerServices) -> None:
        self.server = server

    def _runs_goals(self) -> bool:
        return bool(getattr(self.server.source, "continues_goals", False))

    def turn_ended(self, record: ThreadRecord, terminal: EventEnvelope) -> None:
        """A turn of ``record`` ended with ``terminal``: continue its goal, or pause it."""
        if not self._runs_goals() or not self.server.goals.is_active(record.id):
            return
        msg = terminal.msg
        if msg.type == "turn_aborted":
            return  # the goal stays active and no goal turn follows (0.163.0)
        if getattr(msg, "error", None) is not None:
            paused = self.server.goals.set(record.id, status="paused")
            notify = partial(self.server.hub.broadcast, "thread/goal/updated", goal_updated(paused))
            self.server.start_task(notify)
            return
        self.server.start_task(partial(self.continue_goal, record.id))

    async def continue_goal(self, thread_id: str) -> None:
        """Start the thread's goal turn if its goal is active and nothing runs."""
        if not self._runs_goals():
            return
        record = self.server.threads.loaded(thread_id)
        runtime = None if record is None else record.runtime
        if record is None or runtime is None or runtime.active_turn_id is not None:
            return
        goal = self.server.goals.get(thread_id)
        settings = record.settings
        if goal is None or goal.status != "active":
            return
        if collaboration_mode_kind(settings.collaboration_mode) == "plan":
            return
        turn_id = new_uuid7()
        if record.config is not None:
            from codex_app_bridge.config import apply_turn_overrides

            for message in apply_turn_overrides(record.config).warnings:
                warning = EventEnvelope.trusted(turn_id, WarningEvent(message=message))
                await record.listener.handle(warning)
        if runtime.active_turn_id is not None:  # a turn/start got in while we warned
            return
        record.turns_started += 1
        if not record.preview:
            record.preview = goal.objective
        record.touch()
        runtime.start_turn(
            TurnOrder(
                turn_id=turn_id,
                items=[TextUserInput(text=goal_continuation_text(goal))],
                cwd=settings.cwd,
                model=settings.model,
                approval_policy=settings.approval_policy,
                sandbox_policy=settings.sandbox,
                effort=settings.reasoning_effort,
                service_tier=settings.service_tier,
                collaboration_mode=settings.collaboration_mode,
            )
        )
