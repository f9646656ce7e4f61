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
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from codex_app_bridge.storage._catalog import parse_rollout_timestamp

__all__ = ["InvalidCursor", "Page", "page_threads"]

T = TypeVar("T")


class InvalidCursor(ValueError):
    """A cursor this bridge did not write and cannot read."""

    def __init__(self, cursor: str) -> None:
        super().__init__(f"invalid cursor: {cursor}")
        self.cursor = cursor


@dataclass(frozen=True)
class Page(Generic[T]):
    rows: list[T]
    next_cursor: str | None
    backwards_cursor: str | None


def _position(cursor: str) -> tuple[str, str | None]:
    stamp, sep, thread_id = cursor.partition("|")
    if parse_rollout_timestamp(stamp) is None or (sep and not thread_id):
        raise InvalidCursor(cursor)
    return stamp, (thread_id if sep else None)


def _normalized(stamp: str) -> str:
    moment = parse_rollout_timestamp(stamp)
    assert moment is not None
    return moment.isoformat(timespec="microseconds")


def page_threads(
    rows: Sequence[T],
    key: Callable[[T], tuple[str, str]],
    *,
    direction: Literal["asc", "desc"] | None,
    cursor: str | None,
    limit: int,
) -> Page[T]:
    """One page of ``rows``; ``key(row)`` is ``(timestamp, thread id)``."""
    descending = direction != "asc"
    ordered = sorted(
        rows, key=lambda row: (_normalized(key(row)[0]), key(row)[1]), reverse=descending
    )
    if cursor is not None:
        stamp, thread_id = _position(cursor)
        at = (_normalized(stamp), thread_id or "")

        def after(row: T) -> bool:
            here = (_normalized(key(row)[0]), key(row)[1])
            if thread_id is None:
                return here[0] <= at[0] if descending else here[0] >= at[0]
            return here < at if descending else here > at

        ordered = [row for row in ordered if after(row)]
    rows_out = ordered[: max(limit, 1)]
    if not rows_out:
        return Page(rows=[], next_cursor=None, backwards_cursor=None)
    last_stamp, last_id = key(rows_out[-1])
    more = len(ordered) > len(rows_out)
    return Page(
        rows=rows_out,
        next_cursor=f"{last_stamp}|{last_id}" if more else None,
        backwards_cursor=key(rows_out[0])[0],
    )
