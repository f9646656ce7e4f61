"""``ThreadIndex``: the cluster's threads as this node last read the metadata bucket.

Every node keeps each ``codex_threads`` entry (its bytes and its ``thread/list`` row), fed by a
consumer of the bucket's stream (``_node``), so that ``thread/list`` answers threads of the
whole cluster from memory: rows filtered and sorted like the stored threads'
(``storage.ThreadCatalog.rows``: those ``where`` matches, strictly after a position, the first
``limit`` in order, none of ``skip``), one selection over N rows (no full sort).

A fresh node does not wait for the whole bucket (nats-py delivers about one entry per 25 us:
a quarter of a second for 10,000 threads) before its first ``thread/list``: the nodes keep the
index's ``head`` (the ``HEAD_ROWS`` newest entries by ``createdAt`` and by ``updatedAt``, and the
bucket sequence they reflect) in an object store; a joining node ``load_head``s it in one fetch,
reads the bucket's changes after that sequence, and answers a newest-first page from them while
the rest of the bucket is read in the background (``complete`` once it is): a row that is not
there was, at the head's sequence, no newer than the head's oldest (``floor``), so a page whose
last row is newer than the floor is the same page the whole index gives.

Boundary: memory only; what an entry holds is ``_meta``'s.
"""

from __future__ import annotations

import heapq
from operator import attrgetter
from typing import TYPE_CHECKING, Final

import orjson

from codex_app_bridge.cluster._meta import row_of_meta
from codex_app_bridge.protocol.jsonrpc import right_sized

if TYPE_CHECKING:
    from codex_app_bridge.storage import RowFilter, ThreadRow

__all__ = ["HEAD_ROWS", "HEAD_VERSION", "ThreadIndex"]

HEAD_ROWS: Final = 256
"""Entries of the head per order (``thread/list`` pages hold at most 100)."""
HEAD_VERSION: Final = 1
"""The layout of ``ThreadIndex.head`` (a node ignores a head of another layout)."""

_CREATED: Final = attrgetter("created_key", "thread_id")
_UPDATED: Final = attrgetter("updated_key", "thread_id")


class ThreadIndex:
    """Thread id -> its metadata entry and row (see the module docstring)."""

    __slots__ = ("_entries", "_floors", "_rows", "_sequences", "complete", "sequence")

    def __init__(self) -> None:
        self._entries: dict[str, bytes] = {}
        self._rows: dict[str, ThreadRow] = {}
        self._sequences: dict[str, int] = {}
        """Thread id -> the bucket sequence of what the index holds of it (or of its removal):
        the bucket is read by two consumers after a head (its changes, and the rest), and an
        older message never replaces a newer one."""
        self._floors: tuple[int | None, int | None] = (None, None)
        """The head's oldest ``created_key`` and ``updated_key`` (``None``: it held every
        entry)."""
        self.sequence = 0
        """The bucket stream's last sequence whose changes are all in the index."""
        self.complete = True
        """Every entry of the bucket is here (``False`` from a head until the rest is read)."""

    def __len__(self) -> int:
        return len(self._rows)

    def _newer(self, thread_id: str, sequence: int) -> bool:
        if not sequence:
            return True
        if sequence <= self._sequences.get(thread_id, 0):
            return False
        self._sequences[thread_id] = sequence
        return True

    def put(self, thread_id: str, data: bytes, sequence: int = 0) -> None:
        """Hold the entry the bucket's message ``sequence`` wrote (``0``: unnumbered)."""
        if not self._newer(thread_id, sequence):
            return
        try:
            row = row_of_meta(data)
        except (ValueError, KeyError, TypeError):
            self._entries.pop(thread_id, None)
            self._rows.pop(thread_id, None)
            return  # not an entry of ours: not listed
        self._entries[thread_id] = data
        self._rows[thread_id] = row

    def remove(self, thread_id: str, sequence: int = 0) -> None:
        if not self._newer(thread_id, sequence):
            return
        self._entries.pop(thread_id, None)
        self._rows.pop(thread_id, None)

    def get(self, thread_id: str) -> bytes | None:
        return self._entries.get(thread_id)

    def row(self, thread_id: str) -> ThreadRow | None:
        return self._rows.get(thread_id)

    def head(self) -> bytes:
        """The newest ``HEAD_ROWS`` entries by each order, as one JSON object with the layout's
        version, ``sequence`` and the floors (of a complete index)."""
        rows = self._rows.values()
        ids: dict[str, None] = {}
        floors: list[int | None] = []
        for key in (_CREATED, _UPDATED):
            newest = heapq.nlargest(HEAD_ROWS, rows, key=key)
            ids.update(dict.fromkeys(row.thread_id for row in newest))
            floors.append(key(newest[-1])[0] if len(rows) > HEAD_ROWS else None)
        entries = b",".join(self._entries[i] for i in ids)
        head = orjson.dumps({"version": HEAD_VERSION, "sequence": self.sequence, "floors": floors})
        return head[:-1] + b',"entries":[' + entries + b"]}"

    def load_head(self, data: bytes) -> None:
        """Start from a ``head`` (``ValueError``: not one of this layout; nothing changes):
        not ``complete`` until the rest is read (``put``)."""
        try:
            head = orjson.loads(data)
            if head.get("version") != HEAD_VERSION:
                raise ValueError(f"layout {head.get('version')!r}")
            sequence = int(head["sequence"])
            created, updated = head["floors"]
            # kept, one per thread: at their own size, not in orjson's buffers of 4 KiB or more
            entries = [(e["id"], right_sized(orjson.dumps(e))) for e in head["entries"]]
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"not a thread index head: {exc}") from None
        self._floors = (created, updated)
        self.complete = created is None and updated is None
        for thread_id, entry in entries:
            self.put(thread_id, entry)
        self.sequence = sequence

    def rows(
        self,
        where: RowFilter,
        *,
        by_updated: bool,
        descending: bool,
        after: tuple[int, str | None] | None,
        limit: int,
        skip: frozenset[str],
    ) -> list[ThreadRow] | None:
        """The rows ``thread/list`` selects (see the module docstring); ``None`` when the index
        is not ``complete`` and what it holds does not settle the page."""
        floor = self._floors[by_updated]
        if not self.complete and not descending:
            return None
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
            found = heapq.nlargest(limit, candidates, key=key)
        else:
            found = heapq.nsmallest(limit, candidates, key=key)
        if self.complete or floor is None:
            return found
        return found if len(found) == limit and key(found[-1])[0] > floor else None


def _beyond(position: tuple[int, str], after: tuple[int, str | None], descending: bool) -> bool:
    """Whether a row at ``position`` comes after the cursor ``after`` (``(key, id)``: strictly
    after; ``(key, None)``: from that timestamp on)."""
    at, thread_id = after
    if thread_id is None:
        return position[0] <= at if descending else position[0] >= at
    return position < (at, thread_id) if descending else position > (at, thread_id)
