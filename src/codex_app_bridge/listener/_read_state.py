"""A thread's read state, as 0.163.0 keeps it without a client marking anything read (probed).

Role: the value behind ``thread/readState/changed``, ``thread/read``'s ``readState`` and
``thread/list``'s ``readStates``: ``{firstUnread: {type: "turn", turnId} | null, revision}``.

- A new thread has ``firstUnread: null`` and the revision ``initial:<threadId>``.
- A turn that ends is activity (:func:`is_activity`, 0.163.0's terminal-attention rule) when it
  failed, or when it completed with a final agent message whose text is not blank, does not
  hold ``<decision>DONT_NOTIFY</decision>`` and leaves no goal active (a goal-continuation turn
  follows it). So a standalone compaction (no agent message) is none. An interrupted turn is
  none either (as the bridge saw 0.163.0 do; the upstream source also counts an interrupted
  turn that completed its final message: not probed). The first such turn
  becomes ``firstUnread`` (later ones leave it), and every such end mints a new revision; the
  reducer then sends ``thread/readState/changed`` to the thread's subscribers, after the
  turn's token and rate-limit notifications and before its status change and ``turn/completed``.
- A revert that drops the first unread turn clears ``firstUnread`` with a new revision (and the
  notification); one that keeps it changes nothing.
- A fork starts with the initial state (copied turns are not unread).
- A stored thread's read state is rebuilt from its events (:func:`read_state_of_history`): as the
  revisions are derived, not random, that is the state the live thread had (unless a revert
  minted the last revision), so a restarted server reports what the one before it did. A rollout
  keeps no per-turn goal status, so there a goal turn directly followed by another goal turn
  (``task_started``'s ``turn_attribution.turn_trigger: goal``) is the one a goal continued.

Nothing marks a turn read: the real server's read/unread operations are not exposed by the
bridge. Revisions are opaque UUIDs derived from the thread and the turn that ended (or, for a
revert, the revision it replaces), so the reducer stays a pure function of its inputs and a
replay of the same events gives the same revisions.

Boundary: pure values.
"""

from __future__ import annotations

import importlib
import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    # loaded where they are used: a stored thread's read state (``read_state_of_turns``,
    # ``wire_json``) is made without the core and wire models
    from codex_app_bridge.protocol.core import EventEnvelope
    from codex_app_bridge.protocol.v2 import ThreadReadState, ThreadReadStateChangedNotification

__all__ = [
    "READ_STATE_CHANGED",
    "ReadState",
    "is_activity",
    "read_state_of_history",
    "read_state_of_turns",
]

READ_STATE_CHANGED: Final = "thread/readState/changed"
_DONT_NOTIFY: Final = "<decision>DONT_NOTIFY</decision>"
_REVISIONS: Final = uuid.UUID("6f1d3c52-4e0a-4c38-9d55-2b8a7f0e9a11")


@dataclass(frozen=True, slots=True)
class ReadState:
    """``first_unread``: a turn id or ``None``; ``revision`` ``None``: the initial one."""

    first_unread: str | None = None
    revision: str | None = None

    def wire(self, thread_id: str) -> ThreadReadState:
        from codex_app_bridge.protocol.v2 import ThreadReadState, TurnThreadUnreadPosition

        position = (
            None
            if self.first_unread is None
            else TurnThreadUnreadPosition(turn_id=self.first_unread)
        )
        revision = self.revision if self.revision is not None else f"initial:{thread_id}"
        return ThreadReadState(first_unread=position, revision=revision)

    def wire_json(self, thread_id: str) -> dict[str, Any]:
        """:meth:`wire` as JSON data, made without the models (``thread/list`` of stored
        threads answers from plain data)."""
        position = (
            None if self.first_unread is None else {"turnId": self.first_unread, "type": "turn"}
        )
        revision = self.revision if self.revision is not None else f"initial:{thread_id}"
        return {"firstUnread": position, "revision": revision}

    def changed(self, thread_id: str) -> ThreadReadStateChangedNotification:
        from codex_app_bridge.protocol.v2 import ThreadReadStateChangedNotification

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


def is_activity(
    *, interrupted: bool, failed: bool, final_text: str | None, goal_continues: bool
) -> bool:
    """Whether a turn's end is unread activity (0.163.0's terminal-attention rule; ``failed``:
    the turn recorded an error; ``final_text``: its final agent message, ``None`` without
    one)."""
    if interrupted:
        return False
    if failed:
        return True
    if final_text is None or _DONT_NOTIFY in final_text:
        return False
    return not goal_continues and bool(final_text.strip())


def _revision(thread_id: str, what: str) -> str:
    return str(_uuid5(_REVISIONS, f"{thread_id}/{what}"))


def _uuid5(namespace: uuid.UUID, name: str) -> uuid.UUID:
    """``uuid.uuid5`` by CPython's own SHA-1 when it has one: ``uuid.uuid5`` imports
    ``hashlib``, whose set-up of OpenSSL (5-20 ms) was most of a process's first
    ``thread/list`` after the catalog (a read state per listed thread)."""
    try:
        sha1: Callable[[bytes], _Digest] = importlib.import_module("_sha1").sha1
    except ImportError:  # an interpreter built without it
        return uuid.uuid5(namespace, name)
    digest = sha1(namespace.bytes + name.encode()).digest()
    return uuid.UUID(bytes=digest[:16], version=5)


class _Digest(Protocol):
    def digest(self) -> bytes: ...


def read_state_of_history(thread_id: str, history: Iterable[EventEnvelope]) -> ReadState:
    """The read state a thread's events lead to: each turn end :func:`is_activity` counts, in
    order (a stored ``task_complete`` carries its error and final message; ``turn_aborted``
    none of them); a goal turn's end counts only when no goal turn follows it directly."""
    from codex_app_bridge.protocol.core import (
        TaskCompleteEvent,
        TaskStartedEvent,
        ThreadGoalUpdatedEvent,
    )

    state = ReadState()
    goal_turn = False
    pending: str | None = None
    """A goal turn's end that counts unless the next turn continues the goal."""
    for envelope in history:
        msg = envelope.msg
        if isinstance(msg, TaskStartedEvent):
            attribution = msg.turn_attribution
            continued = attribution is not None and attribution.turn_trigger == "goal"
            if pending is not None and not continued:
                state = state.after_turn(thread_id, pending)
            pending = None
            goal_turn = continued
        elif isinstance(msg, ThreadGoalUpdatedEvent) and msg.turn_id is None and pending:
            state, pending = state.after_turn(thread_id, pending), None  # a goal set anew
        elif isinstance(msg, TaskCompleteEvent):
            final = msg.last_agent_message
            failed = msg.error is not None
            if not is_activity(
                interrupted=False, failed=failed, final_text=final, goal_continues=False
            ):
                continue
            turn_id = msg.turn_id or envelope.id
            if goal_turn and not failed:
                pending = turn_id
            else:
                state = state.after_turn(thread_id, turn_id)
    if pending is not None:
        state = state.after_turn(thread_id, pending)
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
