"""The per-thread reducer: ``reduce(state, envelope, ctx) -> Reduction(state, emissions, ...)``.

Role: everything the real app-server's bespoke event handling does for one core event on one
thread, as a pure function. ``ThreadState`` is immutable; a reduction returns the next state and
the notifications to send, in order, each tagged with its audience. The clock is an input
(``ReduceContext.now_ms``), never read. The stateless per-event mapping is delegated to
``codex_app_bridge.mapping``; the reducer owns only the state around it.

This module is the entry point and the one dispatch table (event type -> handler); the
handlers live with their concern, and the dependency goes one way (``_state`` <- concerns <-
``_reducer``):

* ``_state``: ``ThreadState`` and its parts, ``Reduction`` / ``Emission`` (re-exported here as
  the reducer's API), the status derivation;
* ``_turns``: the turn lifecycle (``task_started``, ``task_complete``, ``turn_aborted``,
  ``error``, ``stream_error``, ``shutdown_complete``): status watch and ``TurnSummary``;
* ``_items``: the item ledger (first-class and legacy item events, guardian reviews);
* ``_rows``: the one-to-one rows (``ROWS``) and the live-path mapper row.

Boundary: no connections, no I/O, no locks (``_hub`` does the fan-out and serialization).

Rules that belong to no single concern:

* Approval and other server-request events (``REQUEST_EVENT_TYPES``: approvals, questions,
  elicitations, dynamic tool calls) are not reduced here: ``_requests`` raises them (through
  ``ThreadListener.raise_request``); given to ``reduce`` they are skipped and counted. Pending
  requests show as ``ThreadWatch`` counters (``waitingOnApproval`` / ``waitingOnUserInput``),
  which a turn's start and end clear.
* Unknown event types and events whose conversion fails are skipped and counted; the state is
  left untouched, so one bad event never stalls the thread. A known event with no handler (legacy
  messages, ``session_configured``, ...) gives nothing.
"""

from __future__ import annotations

from typing import Any

from codex_app_bridge.listener._items import (
    LEGACY_ITEM_KIND,
    guardian_assessment,
    item_completed,
    item_started,
    legacy_item,
)
from codex_app_bridge.listener._rows import ROWS
from codex_app_bridge.listener._state import (
    REQUEST_EVENT_TYPES,
    Audience,
    Emission,
    Handler,
    ReduceContext,
    Reduction,
    ThreadState,
    ThreadStatusModel,
    ThreadWatch,
    TurnSummary,
)
from codex_app_bridge.listener._turns import (
    error_event,
    revert_read_state,
    shutdown_complete,
    stream_error,
    task_complete,
    task_started,
    turn_aborted,
)
from codex_app_bridge.protocol.core import (
    ErrorEvent,
    EventEnvelope,
    GuardianAssessmentEvent,
    ItemCompletedEvent,
    ItemStartedEvent,
    ShutdownCompleteEvent,
    StreamErrorEvent,
    TaskCompleteEvent,
    TaskStartedEvent,
    TurnAbortedEvent,
    UnknownEventMsg,
)

__all__ = [
    "Audience",
    "Emission",
    "ReduceContext",
    "Reduction",
    "ThreadState",
    "ThreadStatusModel",
    "ThreadWatch",
    "TurnSummary",
    "reduce",
    "revert_read_state",
]


_HANDLERS: dict[type[Any], Handler] = {
    # turn lifecycle (_turns)
    TaskStartedEvent: task_started,
    TaskCompleteEvent: task_complete,
    TurnAbortedEvent: turn_aborted,
    ErrorEvent: error_event,
    StreamErrorEvent: stream_error,
    ShutdownCompleteEvent: shutdown_complete,
    # item ledger (_items)
    ItemStartedEvent: item_started,
    ItemCompletedEvent: item_completed,
    GuardianAssessmentEvent: guardian_assessment,
    **dict.fromkeys(LEGACY_ITEM_KIND, legacy_item),
    # one-to-one rows (_rows)
    **ROWS,
}
"""Event type -> handler: the one dispatch table."""


def reduce(state: ThreadState, envelope: EventEnvelope, ctx: ReduceContext) -> Reduction:
    """Reduce one event. Never raises: a bad, unknown or out-of-scope event is skipped.

    A skipped event leaves the state as it was and gives ``Reduction.skipped`` its reason.
    """
    msg = envelope.msg
    if isinstance(msg, UnknownEventMsg):
        return Reduction(state, skipped=f"unknown event type {msg.type!r}")
    if msg.type in REQUEST_EVENT_TYPES:
        return Reduction(state, skipped=f"{msg.type}: server requests are not handled here")
    handler = _HANDLERS.get(type(msg))
    if handler is None:
        # a known event the live v2 path ignores (legacy messages, session_configured, ...)
        return Reduction(state)
    try:
        return handler(state, envelope, msg, ctx)
    except Exception as exc:  # one bad event must never stall the thread
        return Reduction(state, skipped=f"{msg.type}: {type(exc).__name__}: {exc}")
