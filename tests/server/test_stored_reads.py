"""Stored threads are read off the event loop: while one client's ``thread/list`` waits on a slow
file system, another client is served (initialize, a new thread and its turn, which the writer
stores), and the list is answered once the files are.

Also ``thread/list``'s ``limit``, which 0.163.0 clamps to 1..100, and the first ``thread/list`` of
a process, answered from the catalog before the thread registry is built (``_stored_list``)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from codex_app_bridge.server import BridgeServer
from codex_app_bridge.server._first_list import ListReadAhead
from codex_app_bridge.server._handlers_lists import FIRST_PAGE
from codex_app_bridge.storage import _index as index_module
from tests.conftest import bridge_env
from tests.e2e._harness import open_bridge

pytestmark = pytest.mark.anyio

WAIT = 30.0


async def test_a_slow_file_system_holds_up_only_the_request_that_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "codex-home"
    async with open_bridge("memory", codex_home=home) as bridge:
        first, second = await bridge.connect(), await bridge.connect()
        await first.initialize(name="first")
        stored = await first.start_thread()
        await first.run_turn(stored, "stored before")

        entered, release = threading.Event(), threading.Event()
        original = index_module.RolloutIndex.refresh

        def slow_refresh(self: index_module.RolloutIndex) -> set[str]:
            if not release.is_set():
                entered.set()
                release.wait(WAIT)  # a file system that does not answer
            return original(self)

        monkeypatch.setattr(index_module.RolloutIndex, "refresh", slow_refresh)
        listing: dict[str, Any] = {}

        async def list_threads() -> None:
            listing.update(await first.result("thread/list", {}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(list_threads)
            assert await anyio.to_thread.run_sync(entered.wait, WAIT)
            with anyio.fail_after(WAIT):
                await second.initialize(name="second")
                thread_id = await second.start_thread()
                _, messages = await second.run_turn(thread_id, "served meanwhile")
                assert messages[-1]["params"]["turn"]["status"] == "completed"
                loaded = await second.result("thread/loaded/list", {})
                assert thread_id in loaded["data"]
            assert listing == {}  # still waiting for the files
            release.set()
        assert [thread["id"] for thread in listing["data"]] == [thread_id, stored]


async def test_thread_list_limit_is_clamped_to_one_through_one_hundred(tmp_path: Path) -> None:
    async with open_bridge("memory", codex_home=tmp_path / "codex-home") as bridge:
        client = await bridge.connect()
        await client.initialize()
        threads = []
        for text in ("one", "two", "three"):
            thread_id = await client.start_thread()
            await client.run_turn(thread_id, text)
            threads.append(thread_id)
        one = await client.result("thread/list", {"limit": 0})
        assert len(one["data"]) == 1
        assert one["nextCursor"] is not None
        everything = await client.result("thread/list", {"limit": 1000})
        assert len(everything["data"]) == 3


async def test_a_first_thread_list_answers_from_the_catalog_without_the_registry(
    tmp_path: Path,
) -> None:
    home = tmp_path / "codex-home"
    async with open_bridge("memory", codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        stored = await client.start_thread()
        await client.run_turn(stored, "stored before")
    async with open_bridge("memory", codex_home=home) as bridge:
        server = bridge.server
        assert server is not None
        client = await bridge.connect()
        await client.initialize()
        listing = await client.result("thread/list", {})
        assert [thread["id"] for thread in listing["data"]] == [stored]
        assert listing["data"][0]["status"] == {"type": "notLoaded"}
        assert listing["data"][0]["preview"] == "stored before"
        assert set(listing["readStates"]) == {stored}
        # the process knows no thread yet: the list came from the catalog alone
        assert server.known_threads() is None
        # once a thread is made the registry lists it from memory, the stored one from its file
        started = await client.start_thread()
        await client.run_turn(started, "made now")
        assert server.known_threads() is not None
        listing = await client.result("thread/list", {})
        status = {thread["id"]: thread["status"]["type"] for thread in listing["data"]}
        assert status == {started: "idle", stored: "notLoaded"}, listing
        assert len(listing["data"]) == 2


async def test_the_first_page_read_ahead_at_start_up_is_the_one_listed(tmp_path: Path) -> None:
    # ``serve`` reads the default first page ahead as it starts (``_first_list``): the server
    # lists through that catalog, in process and behind the command
    home = tmp_path / "codex-home"
    async with open_bridge("memory", codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        stored = [await client.start_thread(), await client.start_thread()]
        for thread_id, text in zip(stored, ("older", "newer"), strict=True):
            await client.run_turn(thread_id, text)
    ahead = ListReadAhead(home)
    async with BridgeServer(codex_home=home, read_ahead=ahead) as server:
        listed = server.stored_threads
        assert listed is not None
        assert listed.catalog is ahead.catalog()
        rows, fetched = await listed.rows(
            FIRST_PAGE, by_updated=False, descending=True, after=None, limit=26, fetch=25
        )
        assert [row.thread_id for row in rows] == stored[::-1]
        assert [fetched[row.thread_id].preview for row in rows] == ["newer", "older"]
    async with open_bridge("stdio", codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        listing = await client.result("thread/list", {})
        assert [thread["id"] for thread in listing["data"]] == stored[::-1]
        assert [thread["preview"] for thread in listing["data"]] == ["newer", "older"]


def test_the_list_path_imports_neither_the_registry_nor_the_core_models() -> None:
    """What the first ``thread/list`` of a process imports: the list handler (which reads plain
    params itself), the stored list and the storage index; not the registry, the runtime, the listener's hub, the sources, the
    mapping, the core models or pydantic (a module-level import that pulls one in is named)."""
    probe = (
        "import sys\n"
        "from codex_app_bridge.server._handlers_lists import ThreadListParamsSpec\n"
        "ThreadListParamsSpec(16).decode({'limit': 25, 'sortKey': 'updated_at'})\n"
        "import codex_app_bridge.server._stored_list\n"
        "import codex_app_bridge.storage\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        env=bridge_env(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    heavy = (
        "pydantic",
        "codex_app_bridge.protocol.core",
        "codex_app_bridge.protocol.v2._generated",
        "codex_app_bridge.mapping",
        "codex_app_bridge.projection",
        "codex_app_bridge.listener._hub",
        "codex_app_bridge.sources",
        "codex_app_bridge.server._registry",
        "codex_app_bridge.server._runtime",
        "codex_app_bridge.server._threads",
        "codex_app_bridge.storage._reader",
        "codex_app_bridge.storage._writer",
    )
    loaded = result.stdout.decode().split()
    assert "codex_app_bridge.storage._index" in loaded
    assert [m for m in loaded if any(m == h or m.startswith(f"{h}.") for h in heavy)] == []
