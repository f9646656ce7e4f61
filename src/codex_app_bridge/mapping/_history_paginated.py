"""Thread history of a *paginated* thread (0.163.0's default): turns keyed by id, items from
``item_completed``.

0.163.0 persists, for a paginated thread, the turn lifecycle (``task_started``,
``task_complete``, ``turn_aborted``) and an ``item_completed`` for every item. What
``thread/read``, ``thread/resume`` and ``thread/turns/list`` show was probed on the 0.163.0
binary with crafted paginated rollouts:

* A turn exists once a lifecycle event names it, in the order of that first event. Items of a
  turn that arrive before its first lifecycle event are kept for it; items of a turn never
  named by a lifecycle event are dropped.
* ``task_started`` opens the turn ``inProgress`` (``startedAt``, ``rootTurnId`` from the event)
  or, for a turn still open, updates ``startedAt`` (and a missing ``rootTurnId``).
* The first terminal event decides: ``task_complete`` -> ``completed``, or ``failed`` with its
  ``error``; ``turn_aborted`` -> ``interrupted``. It sets ``startedAt``, ``completedAt`` and
  ``durationMs`` to its own values (null when it has none) and ``rootTurnId`` when missing.
  Later lifecycle events for that turn are ignored. A terminal event for a turn not seen yet
  creates it; an abort without a turn id is ignored.
* ``item_completed`` upserts the converted item into its turn, in place when the turn already
  has an item with that id (items arriving after the terminal event included).
* Everything else is ignored: ``item_started``, the legacy item events (``user_message``,
  ``agent_message``, reasoning, tool begin/end), ``error``, ``context_compacted``, ``compacted``
  lines, hook-prompt ``response_item`` s and ``thread_rolled_back`` (0.163.0 reverts by writing
  a new segment instead, see ``_rollout_chain``).
* Summary (``itemsView: "summary"``): the first user message that arrived before the terminal
  event, and the last non-commentary agent message as of the terminal event.
* Item entries (``thread/items/list``): every ``item_completed``, keyed by turn and item id, in
  the order each first arrived, with the timestamps of that first arrival and the latest item;
  items of turns never named by a lifecycle event are listed too.

Boundary: pure; items come from :func:`thread_item_from_turn_item`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from codex_app_bridge.mapping._errors import turn_error
from codex_app_bridge.mapping._history_turns import TurnRecord, final_agent_message
from codex_app_bridge.mapping._thread_item import thread_item_from_turn_item
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import (
    ThreadItem,
    ThreadItemEntry,
    TurnError,
    TurnStatus,
    UserMessageThreadItem,
)

__all__ = ["PaginatedHistory"]

_log = logging.getLogger(__name__)


@dataclass
class _Entry:
    turn_id: str
    item: ThreadItem
    started_at_ms: int | None
    completed_at_ms: int | None


class PaginatedHistory:
    """Incremental paginated-thread history (see the module docstring)."""

    def __init__(self) -> None:
        self.turns: dict[str, TurnRecord] = {}
        # Items of turns no lifecycle event has named yet, by turn id.
        self._orphans: dict[str, TurnRecord] = {}
        # thread/items/list, by (turn id, item id) in order of first arrival.
        self._entries: dict[tuple[str, str], _Entry] = {}
        self.skipped_items = 0

    def handle_rollout_line(self, line: core.RolloutLine) -> None:
        """One persisted line: only events matter."""
        if isinstance(line, core.EventMsgLine):
            self.handle_event(line.payload)

    def handle_event(self, msg: core.EventMsg) -> None:
        """One core event (live or replayed)."""
        if isinstance(msg, core.TaskStartedEvent):
            self._started(msg)
        elif isinstance(msg, core.TaskCompleteEvent):
            error = (
                None
                if msg.error is None
                else turn_error(msg.error.message, msg.error.codex_error_info)
            )
            self._terminal(msg, msg.turn_id, "failed" if error is not None else "completed", error)
        elif isinstance(msg, core.TurnAbortedEvent):
            if msg.turn_id is not None:
                self._terminal(msg, msg.turn_id, "interrupted", None)
        elif isinstance(msg, core.ItemCompletedEvent):
            self._item(msg)

    def records(self) -> list[TurnRecord]:
        """Every turn so far, in order of first appearance."""
        return list(self.turns.values())

    def item_entries(self, turn_id: str | None = None) -> list[ThreadItemEntry]:
        """The ``thread/items/list`` entries, oldest first (only ``turn_id``'s when given)."""
        return [
            ThreadItemEntry(
                turn_id=entry.turn_id,
                item=entry.item,
                started_at_ms=entry.started_at_ms,
                completed_at_ms=entry.completed_at_ms,
            )
            for entry in self._entries.values()
            if turn_id is None or entry.turn_id == turn_id
        ]

    def active_record(self) -> TurnRecord | None:
        """The most recently opened turn that has not ended."""
        for record in reversed(self.turns.values()):
            if not record.terminal:
                return record
        return None

    def _open(self, turn_id: str) -> tuple[TurnRecord, bool]:
        record = self.turns.get(turn_id)
        if record is not None:
            return record, False
        record = self._orphans.pop(turn_id, None) or TurnRecord(id=turn_id)
        self.turns[turn_id] = record
        return record, True

    def _started(self, msg: core.TaskStartedEvent) -> None:
        record, created = self._open(msg.turn_id)
        if record.terminal:
            return
        if created:
            record.status = "inProgress"
            record.opened_explicitly = True
        record.started_at = msg.started_at
        if record.root_turn_id is None:
            record.root_turn_id = msg.root_turn_id

    def _terminal(
        self,
        msg: core.TaskCompleteEvent | core.TurnAbortedEvent,
        turn_id: str,
        status: TurnStatus,
        error: TurnError | None,
    ) -> None:
        record, _ = self._open(turn_id)
        if record.terminal:
            return
        record.terminal = True
        record.opened_explicitly = True
        record.status = status
        record.error = error
        record.started_at = msg.started_at
        record.completed_at = msg.completed_at
        record.duration_ms = msg.duration_ms
        if record.root_turn_id is None:
            record.root_turn_id = msg.root_turn_id
        final = final_agent_message(record.items)
        record.final_agent_id = None if final is None else final.id

    def _item(self, msg: core.ItemCompletedEvent) -> None:
        turn_id = msg.turn_id
        converted = thread_item_from_turn_item(msg.item)
        if converted is None:
            self.skipped_items += 1
            _log.debug("history: skipped an item of type %s", msg.item.type)
            return
        entry = self._entries.get((turn_id, converted.id))
        if entry is None:
            self._entries[turn_id, converted.id] = _Entry(
                turn_id, converted, msg.started_at_ms, msg.completed_at_ms
            )
        else:
            entry.item = converted
        record = self.turns.get(turn_id)
        if record is None:
            record = self._orphans.setdefault(turn_id, TurnRecord(id=turn_id))
        self._store(record, converted)

    @staticmethod
    def _store(record: TurnRecord, item: ThreadItem) -> None:
        record.upsert(item)
        if (
            not record.terminal
            and record.summary_user_id is None
            and isinstance(item, UserMessageThreadItem)
        ):
            record.summary_user_id = item.id
