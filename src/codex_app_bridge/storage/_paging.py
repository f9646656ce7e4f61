"""Keyset paging of ``thread/list`` over stored threads (pure).

Order: by the sort key's timestamp, ties by thread id, descending unless ``asc``. Cursors are
opaque strings; this bridge writes ``<timestamp>|<thread id>`` (the form 0.163.0 uses for
``recency_at``): the next page starts strictly after that position. A bare timestamp (what
0.163.0 writes for ``created_at`` / ``updated_at`` cursors, and every ``backwardsCursor``) starts
at that timestamp, inclusive. Anything else is an :class:`InvalidCursor` (0.163.0:
``-32600 invalid cursor: <cursor>``). ``backwardsCursor`` is the first row's timestamp; both
cursors are ``null`` for an empty page and ``nextCursor`` is ``null`` on the last page.

Boundary: pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, Literal, NamedTuple, TypeVar

from codex_app_bridge.storage._catalog import parse_rollout_timestamp, timestamp_micros

__all__ = ["InvalidCursor", "Page", "cursor_position", "page_threads"]

T = TypeVar("T")


class InvalidCursor(ValueError):
    """A cursor this bridge did not write and cannot read."""

    def __init__(self, cursor: str) -> None:
        super().__init__(f"invalid cursor: {cursor}")
        self.cursor = cursor


class Page(NamedTuple, Generic[T]):
    rows: list[T]
    next_cursor: str | None
    backwards_cursor: str | None


def cursor_position(cursor: str) -> tuple[int, str | None]:
    """Where a cursor starts: ``(timestamp_micros, thread id)`` (strictly after), or
    ``(timestamp_micros, None)`` (a bare timestamp: from it on); :class:`InvalidCursor`."""
    stamp, sep, thread_id = cursor.partition("|")
    if parse_rollout_timestamp(stamp) is None or (sep and not thread_id):
        raise InvalidCursor(cursor)
    return timestamp_micros(stamp), (thread_id if sep else None)


def page_threads(
    rows: Sequence[T],
    key: Callable[[T], tuple[int, str]],
    stamp: Callable[[T], str],
    *,
    direction: Literal["asc", "desc"] | None,
    cursor: str | None,
    limit: int,
) -> Page[T]:
    """One page of ``rows``; ``key(row)`` is ``(timestamp_micros(stamp), thread id)`` and
    ``stamp(row)`` the timestamp as written (what a cursor holds)."""
    descending = direction != "asc"
    ordered = sorted(rows, key=key, reverse=descending)
    if cursor is not None:
        at, thread_id = cursor_position(cursor)
        if thread_id is None:
            ordered = [r for r in ordered if (key(r)[0] <= at if descending else key(r)[0] >= at)]
        else:
            position = (at, thread_id)
            ordered = [
                r for r in ordered if (key(r) < position if descending else key(r) > position)
            ]
    rows_out = ordered[: max(limit, 1)]
    if not rows_out:
        return Page(rows=[], next_cursor=None, backwards_cursor=None)
    last = rows_out[-1]
    more = len(ordered) > len(rows_out)
    return Page(
        rows=rows_out,
        next_cursor=f"{stamp(last)}|{key(last)[1]}" if more else None,
        backwards_cursor=stamp(rows_out[0]),
    )
