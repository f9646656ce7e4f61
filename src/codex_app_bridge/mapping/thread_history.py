"""ThreadHistoryBuilder: a thread's turns and items, rebuilt from its rollout or its event stream.

What ``thread/read {includeTurns}``, ``thread/resume``, ``thread/fork``, ``thread/turns/list``,
``thread/items/list`` and the snapshot of a running turn show. Feed rollout lines
(:meth:`ThreadHistoryBuilder.handle_rollout_line`) or live core events
(:meth:`~ThreadHistoryBuilder.handle_event`, :meth:`~ThreadHistoryBuilder.handle_envelope`) one at a
time and take :meth:`~ThreadHistoryBuilder.turns` at any point; :func:`build_turns` does it in one
call. For a 0.163.0 revert or fork segment, assemble the full rollout first with
:func:`resolve_rollout_history` (or stream it: :func:`history_chain`, :func:`iter_rollout_history`).

Codex 0.163.0 rebuilds history two ways, picked by the thread's ``history_mode`` (the
``session_meta`` line says ``"paginated"`` for every thread 0.163.0 creates; older rollouts are
``"legacy"``), and so does this builder:

* **paginated** (``_history_paginated``): turns from the lifecycle events, keyed by turn id;
  items from ``item_completed``, which 0.163.0 persists for every item. Legacy item events,
  ``error`` events, compaction markers and rollback markers play no part.
* **legacy**, unpaginated (``_history_unpaginated``): Codex's event-driven builder over the persisted legacy
  events (``user_message``, ``agent_message``, tool end events, ...), behind the replay filter
  0.163.0 applies to legacy rollouts; implicit turns, synthetic ``item-<k>`` ids, rollback.

Both were probed against the 0.163.0 binary (crafted rollouts through ``thread/read`` and
``thread/resume``); the module docstrings list the rules. Every capture in
``tests/data/captures`` rebuilds to exactly the turns the real server returned.

Views: ``turns(items_view=...)`` gives every item (``thread/read``, ``thread/resume``) or the
``thread/turns/list`` summaries (which need to know what arrived after a turn ended);
``interrupt_stale=True`` shows turns that never ended as ``interrupted``, as the server does for a
thread that is not running. :meth:`~ThreadHistoryBuilder.item_entries` gives the
``thread/items/list`` entries, :meth:`~ThreadHistoryBuilder.active_turn` the running turn, which
:func:`merge_active_turn` puts over the persisted turns, and :func:`turn_summary` the view
``turn/completed`` sends.

Boundary: pure. No I/O, no clock (implicit turn ids of a live-only builder are UUIDv7s).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from codex_app_bridge.mapping._history_paginated import PaginatedHistory
from codex_app_bridge.mapping._history_turns import HistoryMode, TurnRecord, final_agent_message
from codex_app_bridge.mapping._history_unpaginated import UnpaginatedHistory
from codex_app_bridge.mapping._rollout_chain import (
    HistoryBase,
    HistoryBaseError,
    history_base_of,
    history_chain,
    iter_rollout_history,
    resolve_rollout_history,
    rollout_id_from_filename,
)
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import ThreadItemEntry, Turn, TurnItemsView

__all__ = [
    "HistoryBase",
    "HistoryBaseError",
    "HistoryMode",
    "ThreadHistoryBuilder",
    "build_turns",
    "history_base_of",
    "history_chain",
    "iter_rollout_history",
    "merge_active_turn",
    "resolve_rollout_history",
    "rollout_id_from_filename",
    "turn_summary",
]


def _session_history_mode(line: core.SessionMetaLine) -> HistoryMode:
    mode = (line.payload.model_extra or {}).get("history_mode")
    return "paginated" if mode == "paginated" else "legacy"


class ThreadHistoryBuilder:
    """Incremental thread history: feed rollout lines or core events, take turns at any time.

    ``history_mode`` fixes how history is rebuilt; left ``None``, the first ``session_meta`` line
    decides (``"legacy"`` when the first input is anything else). The builder never raises for
    a validated input: unknown events and lines are ignored, items the wire cannot show are
    skipped and counted in :attr:`skipped_items`.
    """

    def __init__(self, history_mode: HistoryMode | None = None) -> None:
        self._requested_mode: HistoryMode | None = history_mode
        self._projection: UnpaginatedHistory | PaginatedHistory | None = None
        if history_mode is not None:
            self._projection = self._make(history_mode)

    @staticmethod
    def _make(mode: HistoryMode) -> UnpaginatedHistory | PaginatedHistory:
        return PaginatedHistory() if mode == "paginated" else UnpaginatedHistory()

    @property
    def history_mode(self) -> HistoryMode | None:
        """The mode in use, ``None`` until the first input decides it."""
        if self._projection is None:
            return None
        return "paginated" if isinstance(self._projection, PaginatedHistory) else "legacy"

    @property
    def skipped_items(self) -> int:
        """Items left out because the 0.163.0 wire cannot show them."""
        return 0 if self._projection is None else self._projection.skipped_items

    def _for(self, line: core.RolloutLine | None) -> UnpaginatedHistory | PaginatedHistory:
        if self._projection is None:
            mode: HistoryMode = (
                _session_history_mode(line) if isinstance(line, core.SessionMetaLine) else "legacy"
            )
            self._projection = self._make(mode)
        return self._projection

    def handle_rollout_line(self, line: core.RolloutLine) -> None:
        """One line of a rollout file, in file order."""
        self._for(line).handle_rollout_line(line)

    def handle_rollout_lines(self, lines: Iterable[core.RolloutLine]) -> None:
        """Several lines, in order."""
        for line in lines:
            self.handle_rollout_line(line)

    def handle_event(self, msg: core.EventMsg) -> None:
        """One live core event (not subject to the legacy replay filter)."""
        self._for(None).handle_event(msg)

    def handle_envelope(self, envelope: core.EventEnvelope) -> None:
        """One live event envelope (the event's own turn ids are used, not the envelope id)."""
        self.handle_event(envelope.msg)

    def reset(self) -> None:
        """Forget everything (the requested mode, if any, is kept)."""
        self._projection = (
            None if self._requested_mode is None else self._make(self._requested_mode)
        )

    def _records(self) -> list[TurnRecord]:
        return [] if self._projection is None else self._projection.records()

    def _rule(self) -> HistoryMode:
        return self.history_mode or "legacy"

    def turns(
        self, *, items_view: TurnItemsView = "full", interrupt_stale: bool = False
    ) -> list[Turn]:
        """The turns so far (the open one included), oldest first.

        ``items_view``: ``"full"`` (every item), ``"summary"`` (what ``thread/turns/list`` shows)
        or ``"notLoaded"`` (no items). ``interrupt_stale`` reports turns still ``inProgress`` as
        ``interrupted``, as the real server does for a thread that is not running.
        """
        rule = self._rule()
        return [
            record.to_turn(
                items_view=items_view, summary_rule=rule, interrupt_stale=interrupt_stale
            )
            for record in self._records()
        ]

    def item_entries(self, turn_id: str | None = None) -> list[ThreadItemEntry]:
        """The ``thread/items/list`` entries, oldest first; only ``turn_id``'s when given.

        Paginated threads: every completed item in the order it first arrived, with the
        timestamps of that first arrival and its latest content; items of turns never started are
        listed too (probed). Legacy threads have no item timestamps (0.163.0 refuses
        ``thread/items/list`` for them with -32601 "thread/items/list is not supported yet"): the
        turns' items in order, with null timestamps.
        """
        projection = self._projection
        if isinstance(projection, PaginatedHistory):
            return projection.item_entries(turn_id)
        return [
            ThreadItemEntry(turn_id=record.id, item=item)
            for record in self._records()
            if turn_id is None or record.id == turn_id
            for item in record.items
        ]

    @property
    def active_turn_id(self) -> str | None:
        """The id of the turn still in progress (opened and not ended), if any."""
        record = self._active_record()
        return None if record is None else record.id

    @property
    def active_turn_position(self) -> int | None:
        """The index of the turn still in progress among :meth:`turns`, if any."""
        record = self._active_record()
        if record is None:
            return None
        return next(i for i, turn in enumerate(self._records()) if turn is record)

    def active_turn(self) -> Turn | None:
        """The turn still in progress, with every item, if any."""
        record = self._active_record()
        return None if record is None else record.to_turn()

    def _active_record(self) -> TurnRecord | None:
        projection = self._projection
        if isinstance(projection, PaginatedHistory):
            return projection.active_record()
        if projection is not None and projection.current is not None:
            current = projection.current
            return current if current.status == "inProgress" else None
        return None


def build_turns(
    lines: Iterable[core.RolloutLine | core.EventEnvelope],
    *,
    history_mode: HistoryMode | None = None,
    items_view: TurnItemsView = "full",
    interrupt_stale: bool = False,
) -> list[Turn]:
    """The turns of a whole rollout (or event stream) in one call; see :class:`ThreadHistoryBuilder`."""
    builder = ThreadHistoryBuilder(history_mode)
    for entry in lines:
        if isinstance(entry, core.EventEnvelope):
            builder.handle_envelope(entry)
        else:
            builder.handle_rollout_line(entry)
    return builder.turns(items_view=items_view, interrupt_stale=interrupt_stale)


def merge_active_turn(turns: Sequence[Turn], active: Turn | None) -> list[Turn]:
    """Persisted turns with the running turn's live snapshot in place of its persisted copy.

    As Codex merges them for ``thread/read`` and ``thread/resume`` of a running thread: any
    persisted turn with the active turn's id is dropped and the active turn goes last.
    """
    if active is None:
        return list(turns)
    return [*(turn for turn in turns if turn.id != active.id), active]


def turn_summary(turn: Turn) -> Turn:
    """The turn as ``turn/completed`` shows it.

    A completed turn keeps only its final agent message (the last one that is not commentary),
    with ``itemsView: "summary"``; a failed or interrupted turn keeps no items, with
    ``itemsView: "notLoaded"`` (0.163.0 captures). For ``thread/turns/list`` summaries, which
    also keep the first user message, use ``builder.turns(items_view="summary")``.
    """
    if turn.status != "completed":
        return turn.model_copy(update={"items": [], "items_view": "notLoaded"})
    final = final_agent_message(turn.items)
    return turn.model_copy(
        update={"items": [] if final is None else [final], "items_view": "summary"}
    )
