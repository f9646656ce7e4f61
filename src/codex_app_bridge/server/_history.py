"""A thread's turns for ``thread/read includeTurns`` / ``thread/resume`` / ``thread/fork``.

The thread's history log (the envelopes its runtime kept, see ``HISTORY_EVENT_TYPES``) goes through the mapping layer's
``ThreadHistoryBuilder`` in its *paginated* mode (turns from the lifecycle events, items from
``item_completed``: what 0.163.0 does for the threads it creates); this module only adapts the
call and cuts a log for ``thread/fork`` (``lastTurnId``, and an interruption marker for a turn
still running in the source thread).
"""

from __future__ import annotations

from collections.abc import Sequence

from codex_app_bridge.mapping.thread_history import build_turns
from codex_app_bridge.protocol.core import EventEnvelope, TurnAbortedEvent
from codex_app_bridge.protocol.v2 import Turn
from codex_app_bridge.rpc import invalid_request
from codex_app_bridge.sources import TURN_END_TYPES, TURN_START_TYPES

__all__ = ["build_thread_turns", "fork_events"]


def build_thread_turns(events: Sequence[EventEnvelope], *, running: bool = False) -> list[Turn]:
    """The turns of an event log, oldest first; a turn left ``inProgress`` on a thread that is
    not running is reported ``interrupted`` (as the real server does)."""
    return build_turns(events, history_mode="paginated", interrupt_stale=not running)


def _turn_spans(events: Sequence[EventEnvelope]) -> list[tuple[str, int, int | None]]:
    """``(turn_id, first_index, terminal_index | None)`` per turn, in order."""
    spans: list[tuple[str, int, int | None]] = []
    for index, envelope in enumerate(events):
        kind = envelope.msg.type
        if kind in TURN_START_TYPES:
            spans.append((envelope.id, index, None))
        elif kind in TURN_END_TYPES and spans and spans[-1][0] == envelope.id:
            turn_id, first, _ = spans[-1]
            spans[-1] = (turn_id, first, index)
    return spans


def fork_events(
    events: Sequence[EventEnvelope], *, last_turn_id: str | None, now_s: int
) -> list[EventEnvelope]:
    """The log a fork starts from: through ``last_turn_id`` (inclusive) if given; a turn still
    running at the end is closed with a ``turn_aborted`` marker (the fork never runs it)."""
    log = list(events)
    spans = _turn_spans(log)
    if last_turn_id is not None:
        match = next((span for span in spans if span[0] == last_turn_id), None)
        if match is None:
            raise invalid_request(f"turn not found: {last_turn_id}")
        if match[2] is None:
            raise invalid_request(f"cannot fork through turn {last_turn_id}: it is in progress")
        return log[: match[2] + 1]
    if spans and spans[-1][2] is None:
        turn_id = spans[-1][0]
        log.append(
            EventEnvelope(
                id=turn_id,
                msg=TurnAbortedEvent(
                    turn_id=turn_id,
                    root_turn_id=turn_id,
                    reason="interrupted",
                    completed_at=now_s,
                ),
            )
        )
    return log
