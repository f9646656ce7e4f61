"""The reducer's turn lifecycle: a turn's start and end, errors, and the thread's shutdown.

Role: ``task_started`` -> ``turn/started``; ``task_complete`` / ``turn_aborted`` ->
``turn/completed`` (completed, failed or interrupted); ``error`` / ``stream_error`` -> ``error``
(the first also records the turn's error); ``shutdown_complete`` -> ``notLoaded``. This module
owns ``ThreadState.watch`` (the facts the thread status is derived from; ``_requests``
moves only its pending-request counters) and ``ThreadState.turn``'s lifecycle facts (id, root,
start time, last error): a turn's start and end replace the whole ``TurnSummary``, which
resets the item ledger with it.

Rules (0.163.0; ``spec/event-mapping.md`` §2, ``spec/app-server-runtime.md`` §2.6):

* Thread status is derived from a watch ``{loaded, running, system_error}``: ``notLoaded`` when
  unloaded, ``active {activeFlags: []}`` while running, ``systemError`` after a failing error,
  else ``idle``. ``thread/status/changed`` (to every connection) is emitted only when the
  derived value changes, at the point the real server changes the watch: before ``turn/started``
  on ``task_started``, before ``turn/completed`` on ``task_complete`` / ``turn_aborted``, before
  the ``error`` notification on ``error`` (every ``error`` event marks ``systemError``, as the
  real router does before it looks at the error kind), and on ``shutdown_complete``. A turn's
  start and end clear the pending-request counters.
* ``task_complete`` fails the turn with the error recorded by an earlier ``error`` event; when no
  ``error`` event was seen but the payload itself carries ``error`` (a rollout replay, where
  ``error`` events are not persisted) that error is used and the thread is marked
  ``systemError``. The summary item is the one the item ledger kept
  (``TurnSummary.last_agent_message``, ``_items``).

Boundary: pure; builds on ``_state`` only; ``_reducer`` dispatches to the handlers here.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from codex_app_bridge.listener import _convert as convert
from codex_app_bridge.listener._read_state import READ_STATE_CHANGED, is_activity
from codex_app_bridge.listener._state import (
    Emission,
    ReduceContext,
    Reduction,
    ThreadState,
    TurnSummary,
    emit,
    status_change,
)
from codex_app_bridge.protocol._base import WireModel
from codex_app_bridge.protocol.core import (
    ErrorEvent,
    EventEnvelope,
    ShutdownCompleteEvent,
    StreamErrorEvent,
    TaskCompleteEvent,
    TaskStartedEvent,
    TurnAbortedEvent,
)
from codex_app_bridge.protocol.v2 import (
    ErrorNotification,
    Turn,
    TurnCompletedNotification,
    TurnError,
    TurnStartedNotification,
)

__all__ = [
    "error_event",
    "revert_read_state",
    "shutdown_complete",
    "stream_error",
    "task_complete",
    "task_started",
    "turn_aborted",
]


def _turn(
    turn_id: str,
    *,
    root_turn_id: str | None,
    status: str,
    started_at: int | None,
    completed_at: int | None = None,
    duration_ms: int | None = None,
    error: TurnError | None = None,
    summary: WireModel | None = None,
) -> Turn:
    return Turn.model_validate(
        {
            "id": turn_id,
            "rootTurnId": root_turn_id,
            "items": [summary] if summary is not None else [],
            "itemsView": "summary" if summary is not None else "notLoaded",
            "status": status,
            "error": error,
            "startedAt": started_at,
            "completedAt": completed_at,
            "durationMs": duration_ms,
        }
    )


def task_started(
    state: ThreadState, envelope: EventEnvelope, msg: TaskStartedEvent, ctx: ReduceContext
) -> Reduction:
    watch = replace(
        state.watch,
        loaded=True,
        running=True,
        system_error=False,
        pending_approvals=0,
        pending_user_inputs=0,
    )
    root = msg.root_turn_id
    if root is None and msg.turn_attribution is not None:
        root = msg.turn_attribution.root_turn_id
    turn = TurnSummary(turn_id=msg.turn_id, root_turn_id=root, started_at=msg.started_at)
    started = TurnStartedNotification(
        thread_id=ctx.thread_id,
        turn=_turn(msg.turn_id, root_turn_id=root, status="inProgress", started_at=msg.started_at),
    )
    emissions = (*status_change(state.watch, watch, ctx.thread_id), emit("turn/started", started))
    new_state = replace(state, watch=watch, turn=turn)
    return Reduction(new_state, emissions)


def _turn_end(
    state: ThreadState,
    envelope: EventEnvelope,
    ctx: ReduceContext,
    *,
    status: str,
    error: TurnError | None,
    summary: WireModel | None,
    root_turn_id: str | None,
    started_at: int | None,
    completed_at: int | None,
    duration_ms: int | None,
    system_error: bool,
    final_text: str | None = None,
) -> Reduction:
    """``final_text``: the ``task_complete``'s ``last_agent_message`` (the read state's rule
    takes the turn's summary item first, as 0.163.0's ``TurnSummary``)."""
    watch = replace(
        state.watch,
        running=False,
        system_error=state.watch.system_error or system_error,
        pending_approvals=0,
        pending_user_inputs=0,
    )
    completed = TurnCompletedNotification(
        thread_id=ctx.thread_id,
        turn=_turn(
            envelope.id,
            root_turn_id=root_turn_id if root_turn_id is not None else state.turn.root_turn_id,
            status=status,
            started_at=state.turn.started_at if state.turn.started_at is not None else started_at,
            completed_at=completed_at,
            duration_ms=duration_ms,
            error=error,
            summary=summary,
        ),
    )
    read_state = state.read_state
    read: tuple[Emission, ...] = ()
    if is_activity(
        interrupted=status == "interrupted",
        failed=error is not None or state.turn.last_error is not None,
        final_text=_final_text(state.turn.last_agent_message, final_text),
        goal_continues=state.turn.goal_continues,
    ):
        read_state = read_state.after_turn(ctx.thread_id, envelope.id)
        read = (emit(READ_STATE_CHANGED, read_state.changed(ctx.thread_id)),)
    emissions = (
        *read,
        *status_change(state.watch, watch, ctx.thread_id),
        emit("turn/completed", completed),
    )
    new_state = replace(state, watch=watch, turn=TurnSummary(), read_state=read_state)
    return Reduction(new_state, emissions, turn_ended=True)


def _final_text(summary: WireModel | None, fallback: str | None) -> str | None:
    """The text of the turn's final agent message: its summary item's, else the text the
    terminal event names."""
    text = getattr(summary, "text", None)
    return text if isinstance(text, str) else fallback


def revert_read_state(
    state: ThreadState, kept_turn_ids: Collection[str], ctx: ReduceContext
) -> Reduction:
    """A revert kept ``kept_turn_ids``: the read state forgets a dropped unread turn."""
    after = state.read_state.after_revert(ctx.thread_id, kept_turn_ids)
    if after is None:
        return Reduction(state)
    changed = emit(READ_STATE_CHANGED, after.changed(ctx.thread_id))
    return Reduction(replace(state, read_state=after), (changed,))


def task_complete(
    state: ThreadState, envelope: EventEnvelope, msg: TaskCompleteEvent, ctx: ReduceContext
) -> Reduction:
    error = state.turn.last_error
    fallback = error is None and msg.error is not None
    if error is None and msg.error is not None:
        error = convert.turn_error(msg.error.message, msg.error.codex_error_info)
    return _turn_end(
        state,
        envelope,
        ctx,
        status="failed" if error is not None else "completed",
        error=error,
        summary=None if error is not None else state.turn.last_agent_message,
        root_turn_id=msg.root_turn_id,
        started_at=msg.started_at,
        completed_at=msg.completed_at,
        duration_ms=msg.duration_ms,
        system_error=fallback,
        final_text=msg.last_agent_message,
    )


def turn_aborted(
    state: ThreadState, envelope: EventEnvelope, msg: TurnAbortedEvent, ctx: ReduceContext
) -> Reduction:
    return _turn_end(
        state,
        envelope,
        ctx,
        status="interrupted",
        error=None,
        summary=None,
        root_turn_id=msg.root_turn_id,
        started_at=msg.started_at,
        completed_at=msg.completed_at,
        duration_ms=msg.duration_ms,
        system_error=False,
    )


def error_event(
    state: ThreadState, envelope: EventEnvelope, msg: ErrorEvent, ctx: ReduceContext
) -> Reduction:
    watch = replace(state.watch, running=False, system_error=True)
    status = status_change(state.watch, watch, ctx.thread_id)
    new_state = replace(state, watch=watch)
    info = msg.codex_error_info
    if not convert.error_affects_turn_status(info):
        # a rollback failure answers the pending rollback request (server side), and a
        # non-steerable-turn error does not fail the turn: neither reaches the client
        return Reduction(new_state, status)
    extras = msg.model_extra or {}
    error = convert.turn_error(msg.message, info, misalignment=extras.get("misalignment"))
    notification = ErrorNotification(
        error=error, will_retry=False, thread_id=ctx.thread_id, turn_id=envelope.id
    )
    new_state = replace(new_state, turn=replace(new_state.turn, last_error=error))
    return Reduction(new_state, (*status, emit("error", notification)))


def stream_error(
    state: ThreadState, envelope: EventEnvelope, msg: StreamErrorEvent, ctx: ReduceContext
) -> Reduction:
    error = convert.turn_error(
        msg.message, msg.codex_error_info, additional_details=msg.additional_details
    )
    notification = ErrorNotification(
        error=error, will_retry=True, thread_id=ctx.thread_id, turn_id=envelope.id
    )
    return Reduction(state, (emit("error", notification),))


def shutdown_complete(
    state: ThreadState, envelope: EventEnvelope, msg: ShutdownCompleteEvent, ctx: ReduceContext
) -> Reduction:
    watch = replace(state.watch, running=False, loaded=False)
    return Reduction(replace(state, watch=watch), status_change(state.watch, watch, ctx.thread_id))
