"""The turn record both history projections build, and the rules they share.

A :class:`TurnRecord` is a turn under construction: its lifecycle fields, its items (append-only
list; an upsert replaces an item in place, keyed by the first item with that id) and the
bookkeeping the projections need (how the turn was opened, whether it saw a compaction, what the
paginated summary keeps). :meth:`TurnRecord.to_turn` is the only way out: a fresh v2 ``Turn``.

Items are v2 wire models and are never mutated once stored (a change stores a new model), so a
``Turn`` handed out keeps showing what it showed when it was taken.

Boundary: pure data and small pure functions; no event handling (``_history_unpaginated`` and
``_history_paginated`` do that).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from codex_app_bridge.protocol.v2 import (
    AgentMessageThreadItem,
    ThreadItem,
    Turn,
    TurnError,
    TurnItemsView,
    TurnStatus,
    UserMessageThreadItem,
)

__all__ = [
    "HistoryMode",
    "TurnRecord",
    "final_agent_message",
    "first_user_message",
    "last_agent_message",
    "summary_items",
]

#: How a thread's history is rebuilt (its ``session_meta.history_mode``); it also decides how a
#: turn's summary items are picked (``itemsView: "summary"``).
HistoryMode = Literal["legacy", "paginated"]


@dataclass
class TurnRecord:
    """A turn being built from history (see the module docstring)."""

    id: str
    status: TurnStatus = "completed"
    root_turn_id: str | None = None
    error: TurnError | None = None
    started_at: int | None = None
    completed_at: int | None = None
    duration_ms: int | None = None
    # Opened by task_started (kept even without items) rather than implicitly.
    opened_explicitly: bool = False
    # Saw a persisted `compacted` line (kept even without items).
    saw_compaction: bool = False
    # Paginated: a terminal event (task_complete / turn_aborted) froze the lifecycle fields.
    terminal: bool = False
    # Paginated summary: the first user message that arrived before the terminal event, and the
    # final agent message as of the terminal event.
    summary_user_id: str | None = None
    final_agent_id: str | None = None
    items: list[ThreadItem] = field(default_factory=list[ThreadItem])
    _positions: dict[str, int] = field(default_factory=dict[str, int], repr=False)

    def push(self, item: ThreadItem) -> None:
        """Append ``item``; an id already present keeps resolving to its first occurrence."""
        self._positions.setdefault(item.id, len(self.items))
        self.items.append(item)

    def upsert(self, item: ThreadItem) -> None:
        """Replace the first item with ``item``'s id in place, or append it."""
        position = self._positions.get(item.id)
        if position is None:
            self.push(item)
        else:
            self.items[position] = item

    def replace_last(self, item: ThreadItem) -> None:
        """Put ``item`` where the last item is (same id: a reasoning item that grew)."""
        self.items[-1] = item

    def to_turn(
        self,
        *,
        items_view: TurnItemsView = "full",
        summary_rule: HistoryMode = "legacy",
        interrupt_stale: bool = False,
    ) -> Turn:
        """This record as a v2 ``Turn``.

        ``interrupt_stale`` reports an ``inProgress`` turn as ``interrupted``: what a thread
        that is not running shows for a turn that never finished. ``items_view="summary"`` keeps
        the summary items of ``summary_rule``; ``"notLoaded"`` keeps none.
        """
        status: TurnStatus = self.status
        if interrupt_stale and status == "inProgress":
            status = "interrupted"
        if items_view == "full":
            items = list(self.items)
        elif items_view == "summary":
            items = self.summary(summary_rule)
        else:
            items = []
        # trusted values (this record's own, its items models already): no validation, which
        # would build the validator of every thread item kind on a process's first turn
        return Turn.model_construct(
            id=self.id,
            root_turn_id=self.root_turn_id,
            items=items,
            items_view=items_view,
            status=status,
            error=self.error,
            started_at=self.started_at,
            completed_at=self.completed_at,
            duration_ms=self.duration_ms,
        )

    def summary(self, rule: HistoryMode) -> list[ThreadItem]:
        """The items ``thread/turns/list`` shows for this turn (``itemsView: "summary"``).

        Probed on 0.163.0 (``thread/turns/list`` after ``thread/resume``): a legacy thread shows
        the first user message and the last agent message, whatever their phase; a paginated
        thread shows the first user message that arrived before the turn ended and the last
        non-commentary agent message as of the terminal event, so items that arrive late, or a
        turn that never ended, add no agent message.
        """
        if rule == "legacy":
            keep = {
                item.id
                for item in (first_user_message(self.items), last_agent_message(self.items))
                if item is not None
            }
        else:
            keep = {i for i in (self.summary_user_id, self.final_agent_id) if i is not None}
        return summary_items(self.items, keep)


def summary_items(items: Sequence[ThreadItem], ids: set[str]) -> list[ThreadItem]:
    """The first item of each id in ``ids``, in turn order."""
    kept: list[ThreadItem] = []
    seen: set[str] = set()
    for item in items:
        if item.id in ids and item.id not in seen:
            seen.add(item.id)
            kept.append(item)
    return kept


def first_user_message(items: Sequence[ThreadItem]) -> UserMessageThreadItem | None:
    """The first ``userMessage`` item, if any."""
    for item in items:
        if isinstance(item, UserMessageThreadItem):
            return item
    return None


def last_agent_message(items: Sequence[ThreadItem]) -> AgentMessageThreadItem | None:
    """The last ``agentMessage`` item, whatever its phase."""
    for item in reversed(items):
        if isinstance(item, AgentMessageThreadItem):
            return item
    return None


def final_agent_message(items: Sequence[ThreadItem]) -> AgentMessageThreadItem | None:
    """The last ``agentMessage`` that is not commentary: the turn's answer."""
    for item in reversed(items):
        if isinstance(item, AgentMessageThreadItem) and item.phase != "commentary":
            return item
    return None
