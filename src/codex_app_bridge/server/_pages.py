"""``thread/turns/list`` and ``thread/items/list`` pages, as 0.163.0 pages them (probed).

Both page over positions in the thread's log (a rollout line's ``ordinal``; for a thread only in
memory, the event's index + 1). A turn sits at the position of the first lifecycle event naming
it, an item at its first ``item_completed``.

* ``thread/turns/list``: newest first unless ``sortDirection: "asc"``; ``itemsView`` defaults to
  ``summary``; no ``limit`` means every turn, ``0`` means one.
* ``thread/items/list``: oldest first unless ``desc``; ``turnId`` keeps one turn's items (an
  unknown turn is an empty page); an item anchor cursor needs ``turnId`` (-32602).
* Cursors are the JSON 0.163.0 writes, ``{"requestedThreadId", "rolloutOrdinal",
  "includeAnchor", "scope": {"kind"}}``: ``nextCursor`` continues after the page's last row
  (``includeAnchor: false``, ``null`` on the last page), ``backwardsCursor`` starts again at its
  first row (``includeAnchor: true``, ``null`` for an empty page), both in the request's
  direction. Any other cursor is ``-32600 invalid cursor: <cursor>``.

Boundary: pure; the turns and entries come from ``mapping.thread_history``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

import orjson

from codex_app_bridge.mapping.thread_history import ThreadHistoryBuilder
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import ThreadItemEntry, Turn, TurnItemsView
from codex_app_bridge.rpc import INVALID_PARAMS, RpcError, invalid_request
from codex_app_bridge.server._errors import invalid_cursor

__all__ = ["HistoryPages", "Page", "backwards_cursors", "positioned_events"]

T = TypeVar("T")
_TURN_EVENTS = frozenset({"task_started", "turn_started", "task_complete", "turn_complete"})


def positioned_events(
    lines: Iterable[core.RolloutLine | core.EventEnvelope],
) -> list[tuple[int, core.EventMsg]]:
    """``(position, event)`` of every event of a rollout (its ordinals) or an event log."""
    out: list[tuple[int, core.EventMsg]] = []
    for index, entry in enumerate(lines):
        if isinstance(entry, core.EventEnvelope):
            out.append((index + 1, entry.msg))
        elif isinstance(entry, core.EventMsgLine):
            out.append((index if entry.ordinal is None else entry.ordinal, entry.payload))
    return out


def _turn_of(msg: core.EventMsg) -> str | None:
    if msg.type in _TURN_EVENTS or isinstance(msg, core.TurnAbortedEvent):
        turn_id = getattr(msg, "turn_id", None)
        return turn_id if isinstance(turn_id, str) else None
    return None


@dataclass(frozen=True)
class Page:
    rows: list[Any]
    next_cursor: str | None
    backwards_cursor: str | None


class HistoryPages:
    """The turns and items of one thread's log, with their positions (``running``: a turn of
    the thread is running, so its last turn is not shown interrupted)."""

    def __init__(
        self,
        thread_id: str,
        events: Sequence[tuple[int, core.EventMsg]],
        *,
        running: bool = False,
    ) -> None:
        self.thread_id = thread_id
        self.running = running
        self._builder = ThreadHistoryBuilder("paginated")
        self._turn_at: dict[str, int] = {}
        self._item_at: dict[tuple[str, str], int] = {}
        for position, msg in events:
            self._builder.handle_event(msg)
            turn_id = _turn_of(msg)
            if turn_id is not None:
                self._turn_at.setdefault(turn_id, position)
            if isinstance(msg, core.ItemCompletedEvent):
                item_id = getattr(msg.item, "id", None)
                if isinstance(item_id, str):
                    self._item_at.setdefault((msg.turn_id, item_id), position)

    # ------------------------------------------------------------------ cursors

    def _cursor(self, position: int, *, include: bool, kind: str) -> str:
        return orjson.dumps(
            {
                "requestedThreadId": self.thread_id,
                "rolloutOrdinal": position,
                "includeAnchor": include,
                "scope": {"kind": kind},
            }
        ).decode()

    @staticmethod
    def _decode(raw: str, kind: str) -> tuple[int, bool]:
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise invalid_cursor(raw) from None
        if not isinstance(data, dict):
            raise invalid_cursor(raw)
        cursor = cast("dict[str, Any]", data)
        position, include, scope = (
            cursor.get("rolloutOrdinal"),
            cursor.get("includeAnchor"),
            cursor.get("scope"),
        )
        if (
            not isinstance(position, int)
            or not isinstance(include, bool)
            or not isinstance(scope, dict)
            or cast("dict[str, Any]", scope).get("kind") != kind
        ):
            raise invalid_cursor(raw)
        return position, include

    def _page(
        self,
        rows: list[tuple[int, T]],
        *,
        descending: bool,
        anchor: tuple[int, bool] | None,
        limit: int | None,
        kind: str,
    ) -> Page:
        rows = sorted(rows, key=lambda row: row[0], reverse=descending)
        if anchor is not None:
            at, include = anchor

            def keep(position: int) -> bool:
                if position == at:
                    return include
                return position < at if descending else position > at

            rows = [row for row in rows if keep(row[0])]
        taken = rows if limit is None else rows[: max(limit, 1)]
        if not taken:
            return Page([], None, None)
        more = len(taken) < len(rows)
        return Page(
            rows=[row for _, row in taken],
            next_cursor=self._cursor(taken[-1][0], include=False, kind=kind) if more else None,
            backwards_cursor=self._cursor(taken[0][0], include=True, kind=kind),
        )

    # ------------------------------------------------------------------ pages

    def turns(
        self,
        *,
        items_view: TurnItemsView | None,
        direction: Literal["asc", "desc"] | None,
        cursor: str | None,
        limit: int | None,
    ) -> Page:
        turns: list[Turn] = self._builder.turns(
            items_view=items_view or "summary", interrupt_stale=not self.running
        )
        rows = [(self._turn_at.get(turn.id, 0), turn) for turn in turns]
        anchor = None if cursor is None else self._decode(cursor, "turns")
        return self._page(
            rows, descending=direction != "asc", anchor=anchor, limit=limit, kind="turns"
        )

    def items(
        self,
        *,
        turn_id: str | None,
        direction: Literal["asc", "desc"] | None,
        cursor: object,
        limit: int | None,
    ) -> Page:
        kind = "itemsByCreatedAtOrdinal"
        entries: list[ThreadItemEntry] = self._builder.item_entries(turn_id)
        rows = [(self._item_at.get((e.turn_id, e.item.id), 0), e) for e in entries]
        anchor: tuple[int, bool] | None = None
        if isinstance(cursor, str):
            anchor = self._decode(cursor, kind)
        elif cursor is not None:
            item_id = getattr(cursor, "item_id", None)
            if turn_id is None:
                raise RpcError(INVALID_PARAMS, "turnId is required when cursor is an item anchor")
            position = self._item_at.get((turn_id, str(item_id)))
            if position is None:
                raise invalid_request(f"item not found: {item_id}")
            anchor = (position, True)
        return self._page(
            rows, descending=direction == "desc", anchor=anchor, limit=limit, kind=kind
        )


def backwards_cursors(pages: HistoryPages) -> tuple[str | None, str | None]:
    """The ``turnsBackwardsCursor`` and ``itemsBackwardsCursor`` of a thread/resume or
    thread/revert answer: from the first turn, and from the last item, backwards."""
    turns = pages.turns(items_view=None, direction=None, cursor=None, limit=1)
    items = pages.items(turn_id=None, direction="desc", cursor=None, limit=1)
    return turns.backwards_cursor, items.backwards_cursor
