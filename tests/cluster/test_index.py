"""``ThreadIndex``: the cluster's threads selected as ``thread/list`` pages stored ones
(``storage.ThreadCatalog.rows``): filter, order, cursor position, limit, skip; a fresh node's
index started from a head of another's. No NATS."""

from __future__ import annotations

import tracemalloc

import orjson
import pytest

from codex_app_bridge.cluster._index import HEAD_ROWS, ThreadIndex
from codex_app_bridge.storage import RowFilter, ThreadRow


def _entry(number: int, *, updated: int, cwd: str = "/w") -> bytes:
    return orjson.dumps(
        {
            "id": f"t{number}",
            "cwd": cwd,
            "model": "m",
            "modelProvider": "p",
            "preview": f"thread {number}",
            "createdAt": 1_000 + number,
            "updatedAt": updated,
        }
    )


def _index() -> ThreadIndex:
    index = ThreadIndex()
    for number in range(6):  # created in order; updated in the reverse order
        index.put(f"t{number}", _entry(number, updated=2_000 - number, cwd=f"/w{number % 2}"))
    index.put("bad", b"not json")  # not an entry of ours: not listed
    return index


def _ids(rows: list[ThreadRow] | None) -> list[str]:
    assert rows is not None, "a complete index settles every page"
    return [row.thread_id for row in rows]


def test_rows_are_filtered_ordered_and_limited_like_the_stored_ones() -> None:
    index = _index()
    assert len(index) == 6
    where = RowFilter()
    newest = index.rows(
        where, by_updated=False, descending=True, after=None, limit=4, skip=frozenset()
    )
    assert _ids(newest) == ["t5", "t4", "t3", "t2"]
    oldest = index.rows(
        where, by_updated=False, descending=False, after=None, limit=2, skip=frozenset()
    )
    assert _ids(oldest) == ["t0", "t1"]
    updated = index.rows(
        where, by_updated=True, descending=True, after=None, limit=2, skip=frozenset()
    )
    assert _ids(updated) == ["t0", "t1"]
    in_w1 = RowFilter(cwds=frozenset({"/w1"}), excluded=frozenset({"t3"}))
    assert _ids(
        index.rows(
            in_w1, by_updated=False, descending=True, after=None, limit=9, skip=frozenset({"t1"})
        )
    ) == ["t5"]
    searched = RowFilter(search="thread 2")
    assert _ids(
        index.rows(
            searched, by_updated=False, descending=True, after=None, limit=9, skip=frozenset()
        )
    ) == ["t2"]


def test_a_cursor_starts_strictly_after_its_row_or_from_its_timestamp() -> None:
    index = _index()
    where = RowFilter()
    t3 = (1_003 * 1_000_000, "t3")
    after_t3 = index.rows(
        where, by_updated=False, descending=True, after=t3, limit=9, skip=frozenset()
    )
    assert _ids(after_t3) == ["t2", "t1", "t0"]
    before_t3 = index.rows(
        where, by_updated=False, descending=False, after=t3, limit=9, skip=frozenset()
    )
    assert _ids(before_t3) == ["t4", "t5"]
    from_t3 = (1_003 * 1_000_000, None)
    assert _ids(
        index.rows(
            where, by_updated=False, descending=True, after=from_t3, limit=2, skip=frozenset()
        )
    ) == ["t3", "t2"]


def test_a_deleted_entry_is_no_longer_listed() -> None:
    index = _index()
    index.remove("t5")
    assert index.get("t5") is None
    rows = index.rows(
        RowFilter(), by_updated=False, descending=True, after=None, limit=1, skip=frozenset()
    )
    assert _ids(rows) == ["t4"]


def _many(count: int) -> ThreadIndex:
    index = ThreadIndex()
    for number in range(count):  # created in order; updated in the reverse order
        index.put(f"t{number}", _entry(number, updated=10_000 - number), number + 1)
    index.sequence = count
    return index


def _newest(index: ThreadIndex, *, limit: int, by_updated: bool = False) -> list[str] | None:
    rows = index.rows(
        RowFilter(),
        by_updated=by_updated,
        descending=True,
        after=None,
        limit=limit,
        skip=frozenset(),
    )
    return None if rows is None else [row.thread_id for row in rows]


def test_a_head_answers_the_newest_pages_it_settles_and_no_other() -> None:
    whole = _many(HEAD_ROWS * 2)
    fresh = ThreadIndex()
    fresh.load_head(whole.head())
    assert not fresh.complete
    assert fresh.sequence == HEAD_ROWS * 2
    assert len(fresh) == HEAD_ROWS * 2  # the newest by created and by updated: no overlap
    for by_updated in (False, True):
        assert _newest(fresh, limit=101, by_updated=by_updated) == _newest(
            whole, limit=101, by_updated=by_updated
        )
    assert len(_newest(fresh, limit=HEAD_ROWS - 1) or []) == HEAD_ROWS - 1
    assert _newest(fresh, limit=HEAD_ROWS + 1) is None  # past the head: not settled
    ascending = fresh.rows(
        RowFilter(), by_updated=False, descending=False, after=None, limit=1, skip=frozenset()
    )
    assert ascending is None
    # a change after the head's sequence counts; the rest of the bucket, read later by its
    # own consumer, replaces nothing newer
    newest = f"t{HEAD_ROWS * 2 - 1}"
    fresh.remove(newest, HEAD_ROWS * 2 + 1)
    fresh.put(newest, _entry(HEAD_ROWS * 2 - 1, updated=1), HEAD_ROWS * 2 - 1 + 1)
    assert (_newest(fresh, limit=1) or [None])[0] == f"t{HEAD_ROWS * 2 - 2}"
    fresh.complete = True
    assert _newest(fresh, limit=HEAD_ROWS + 1) is not None


def test_a_loaded_head_keeps_each_entry_at_its_own_size() -> None:
    """A joining node keeps the head's entries, one per thread, in allocations of their length,
    not in orjson's buffers of at least 4 KiB each (2.1 MB held for 58 KB of entries before)."""
    count = HEAD_ROWS * 2
    head = _many(count).head()
    fresh = ThreadIndex()
    tracemalloc.start()
    try:
        fresh.load_head(head)
        entries = [fresh.get(f"t{number}") for number in range(count)]
        for number in range(count):
            fresh.remove(f"t{number}", count + 1)  # their last references are now the list's
        size = sum(len(entry or b"") for entry in entries)
        before, _ = tracemalloc.get_traced_memory()
        entries.clear()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(fresh) == 0
    assert before - after < 1.5 * size, (before - after, size)


def test_a_head_of_a_small_bucket_holds_all_of_it() -> None:
    whole = _many(5)
    fresh = ThreadIndex()
    fresh.load_head(whole.head())
    assert fresh.complete
    assert _newest(fresh, limit=9) == ["t4", "t3", "t2", "t1", "t0"]


def test_a_head_of_another_layout_is_refused_and_changes_nothing() -> None:
    fresh = ThreadIndex()
    for data in (b"not json", orjson.dumps({"version": 99}), orjson.dumps({"version": 1})):
        with pytest.raises(ValueError, match="not a thread index head"):
            fresh.load_head(data)
    assert fresh.complete
    assert len(fresh) == 0
