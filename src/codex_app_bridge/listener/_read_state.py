"""A thread's read state, as 0.163.0 keeps it without a client marking anything read (probed).

Role: the value behind ``thread/readState/changed``, ``thread/read``'s ``readState`` and
``thread/list``'s ``readStates``: ``{firstUnread: {type: "turn", turnId} | null, revision}``.

- A new thread has ``firstUnread: null`` and the revision ``initial:<threadId>``.
- A turn that ends ``completed`` or ``failed`` (not ``interrupted``, and not one whose last goal
  update left the goal active: a goal-continuation turn follows it) is activity: the first such
  turn becomes ``firstUnread`` (later ones leave it), and every such end mints a new revision;
  the reducer then sends ``thread/readState/changed`` to the thread's subscribers, after the
  turn's token and rate-limit notifications and before its status change and ``turn/completed``.
- A revert that drops the first unread turn clears ``firstUnread`` with a new revision (and the
  notification); one that keeps it changes nothing.
- A fork starts with the initial state (copied turns are not unread).
- A stored thread's read state is rebuilt from its events (:func:`read_state_of_history`): as the
  revisions are derived, not random, that is the state the live thread had (unless a revert
  minted the last revision), so a restarted server reports what the one before it did.

Nothing marks a turn read: the real server's read/unread operations are not exposed by the
bridge. Revisions are opaque UUIDs derived from the thread and the turn that ended (or, for a
revert, the revision it replaces), so the reducer stays a pure function of its inputs and a
replay of the same events gives the same revisions.

Boundary: pure values.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Final

from codex_app_bridge.protocol.core import EventEnvelope, TaskCompleteEvent
from codex_app_bridge.protocol.v2 import (
    ThreadReadState,
    ThreadReadStateChangedNotification,
    TurnThreadUnreadPosition,
)

__all__ = ["READ_STATE_CHANGED", "ReadState", "read_state_of_history", "read_state_of_turns"]

READ_STATE_CHANGED: Final = "thread/readState/changed"
_REVISIONS: Final = uuid.UUID("6f1d3c52-4e0a-4c38-9d55-2b8a7f0e9a11")


@dataclass(frozen=True, slots=True)
class ReadState:
    """``first_unread``: a turn id or ``None``; ``revision`` ``None``: the initial one."""

    first_unread: str | None = None
    revision: str | None = None

    def wire(self, thread_id: str) -> ThreadReadState:
        position = (
            None
            if self.first_unread is None
            else TurnThreadUnreadPosition(turn_id=self.first_unread)
        )
        revision = self.revision if self.revision is not None else f"initial:{thread_id}"
        return ThreadReadState(first_unread=position, revision=revision)

    def changed(self, thread_id: str) -> ThreadReadStateChangedNotification:
        return ThreadReadStateChangedNotification(
            thread_id=thread_id, read_state=self.wire(thread_id)
        )

    def after_turn(self, thread_id: str, turn_id: str) -> ReadState:
        """After a turn that ended completed or failed."""
        return ReadState(
            first_unread=self.first_unread or turn_id,
            revision=_revision(thread_id, f"turn:{turn_id}"),
        )

    def after_revert(self, thread_id: str, kept_turn_ids: Collection[str]) -> ReadState | None:
        """After a revert that kept ``kept_turn_ids``; ``None`` when nothing changes."""
        if self.first_unread is None or self.first_unread in kept_turn_ids:
            return None
        return ReadState(
            first_unread=None, revision=_revision(thread_id, f"revert:{self.revision}")
        )


def _revision(thread_id: str, what: str) -> str:
    return str(uuid.uuid5(_REVISIONS, f"{thread_id}/{what}"))


def read_state_of_history(thread_id: str, history: Iterable[EventEnvelope]) -> ReadState:
    """The read state a thread's events lead to: every ``task_complete`` (completed or failed)
    in order; ``turn_aborted`` (interrupted) changes nothing."""
    state = ReadState()
    for envelope in history:
        msg = envelope.msg
        if isinstance(msg, TaskCompleteEvent):
            state = state.after_turn(thread_id, msg.turn_id or envelope.id)
    return state


def read_state_of_turns(
    thread_id: str, first_completed: str | None, last_completed: str | None
) -> ReadState:
    """The read state of a thread whose first and last turns that ended (completed or failed)
    are these (``None``: none ended): what :func:`read_state_of_history` folds its events to,
    from what a stored thread's index keeps instead of its events."""
    if last_completed is None:
        return ReadState()
    return ReadState(
        first_unread=first_completed,
        revision=_revision(thread_id, f"turn:{last_completed}"),
    )
