"""``thread/list``'s ``created_at`` order is 0.163.0's: the time in each rollout's name, then the
id, newest first (not ``createdAt``, the ``session_meta`` time it shows), the cursors following
that order; a loaded thread stands where its rollout's name puts it.

``tests/data/list_order`` holds rollouts whose name times and ``session_meta`` times disagree
and the real binary's answers over them (``thread_list_0.163.0.json``)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest

from codex_app_bridge.server._handlers_lists import _name_key_of  # pyright: ignore[reportPrivateUsage]
from codex_app_bridge.storage import name_key
from tests.conformance._realpeer import bridge_peer, listed_pages, shown_times
from tests.storage._homes import list_order_home

if TYPE_CHECKING:
    from codex_app_bridge.server._threads import ThreadRecord


@pytest.mark.parametrize("first", [True, False], ids=["first list", "server"])
def test_stored_threads_are_listed_and_paged_as_the_binary_lists_them(
    tmp_path: Path, first: bool
) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    expected = list_order_home(home)
    everything, two, then = expected["lists"]
    assert (everything["params"], two["params"]) == ({}, {"limit": 2})
    with bridge_peer(home, cwd) as bridge:
        if not first:  # the server answers what follows (not ``_first_list``)
            bridge.result("thread/loaded/list", {})
        listed = [shown_times(thread) for thread in bridge.result("thread/list", {})["data"]]
        pages = listed_pages(bridge, 2)
        first_two = bridge.result("thread/list", {"limit": 2})
        next_two = bridge.result("thread/list", {"limit": 2, "cursor": first_two["nextCursor"]})
    rows = everything["data"]
    assert listed == rows
    assert pages == [rows[0:2], rows[2:4], rows[4:6]]
    assert pages[:2] == [two["data"], then["data"]]  # the binary's first two pages
    # a page's backwardsCursor is its first row's place in the order, the time in its name (the
    # binary's is that row's createdAt less 1 ms: A's 19:59:59.999 where A stands at 10:00)
    assert [first_two["backwardsCursor"], next_two["backwardsCursor"]] == [
        "2026-12-01T12:00:00.000Z",
        "2026-12-01T10:00:00.000Z",
    ]
    assert [two["backwardsCursor"], then["backwardsCursor"]] == [
        "2026-12-01T11:59:59.999Z",
        "2026-12-01T19:59:59.999Z",
    ]


@pytest.fixture
def west() -> Iterator[None]:
    """This process at UTC-10 (no summer time), as a machine there names its rollouts."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC+10"  # POSIX: ten hours west
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


def test_a_loaded_thread_stands_where_its_rollouts_name_puts_it(west: None) -> None:
    # created (session_meta) at 20:00 UTC, named 10:00 by a machine at UTC-10: a resumed
    # thread's place is its file's name; one not written yet, the name it will get here
    named = "rollout-2026-12-01T10-00-00-01a2eeee-0000-7000-8000-000000000000.jsonl"
    created = 1796155200  # 2026-12-01T20:00:00Z
    resumed = SimpleNamespace(created_at=created, path=f"/home/dev/.codex/sessions/{named}")
    new = SimpleNamespace(created_at=created, path=None)
    assert _name_key_of(cast("ThreadRecord", resumed)) == name_key("2026-12-01T10-00-00")
    assert _name_key_of(cast("ThreadRecord", new)) == name_key("2026-12-01T10-00-00")
