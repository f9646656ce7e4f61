"""``ThreadIndex``: the cluster's threads selected as ``thread/list`` pages stored ones
(``storage.ThreadCatalog.rows``): filter, order, cursor position, limit, skip. No NATS."""

from __future__ import annotations

import orjson

from codex_app_bridge.cluster._index import ThreadIndex
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


def _ids(rows: list[ThreadRow]) -> list[str]:
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
