"""``ThreadIndex``: the cluster's threads as this node last read the metadata bucket.

Every node keeps each ``codex_threads`` entry (its bytes and its ``thread/list`` row), fed by a
consumer of the bucket's stream (``_node``), so that ``thread/list`` answers threads of the
whole cluster from memory: rows filtered and sorted like the stored threads'
(``storage.ThreadCatalog.rows``: those ``where`` matches, strictly after a position, the first
``limit`` in order, none of ``skip``), one selection over N rows (no full sort).

Boundary: memory only; what an entry holds is ``_meta``'s.
"""

from __future__ import annotations

import heapq
from operator import attrgetter
from typing import TYPE_CHECKING, Final

from codex_app_bridge.cluster._meta import row_of_meta

if TYPE_CHECKING:
    from codex_app_bridge.storage import RowFilter, ThreadRow

__all__ = ["ThreadIndex"]

_CREATED: Final = attrgetter("created_key", "thread_id")
_UPDATED: Final = attrgetter("updated_key", "thread_id")


class ThreadIndex:
    """Thread id -> its metadata entry and row (see the module docstring)."""

    __slots__ = ("_entries", "_rows", "sequence")

    def __init__(self) -> None:
        self._entries: dict[str, bytes] = {}
        self._rows: dict[str, ThreadRow] = {}
        self.sequence = 0
        """The bucket stream's last sequence read into the index."""

    def __len__(self) -> int:
        return len(self._rows)

    def put(self, thread_id: str, data: bytes) -> None:
        try:
            row = row_of_meta(data)
        except (ValueError, KeyError, TypeError):
            return  # not an entry of ours: not listed
        self._entries[thread_id] = data
        self._rows[thread_id] = row

    def remove(self, thread_id: str) -> None:
        self._entries.pop(thread_id, None)
        self._rows.pop(thread_id, None)

    def get(self, thread_id: str) -> bytes | None:
        return self._entries.get(thread_id)

    def rows(
        self,
        where: RowFilter,
        *,
        by_updated: bool,
        descending: bool,
        after: tuple[int, str | None] | None,
        limit: int,
        skip: frozenset[str],
    ) -> list[ThreadRow]:
        key = _UPDATED if by_updated else _CREATED
        unwanted = skip | where.excluded
        candidates = (
            row
            for row in self._rows.values()
            if row.thread_id not in unwanted
            and where.matches(row)
            and (after is None or _beyond(key(row), after, descending))
        )
        if descending:
            return heapq.nlargest(limit, candidates, key=key)
        return heapq.nsmallest(limit, candidates, key=key)


def _beyond(position: tuple[int, str], after: tuple[int, str | None], descending: bool) -> bool:
    """Whether a row at ``position`` comes after the cursor ``after`` (``(key, id)``: strictly
    after; ``(key, None)``: from that timestamp on)."""
    at, thread_id = after
    if thread_id is None:
        return position[0] <= at if descending else position[0] >= at
    return position < (at, thread_id) if descending else position > (at, thread_id)
