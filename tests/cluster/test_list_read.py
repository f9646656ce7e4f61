"""Stored-thread methods on a node that has not loaded the thread (issue 24.2): ``thread/list``
from the metadata bucket, ``thread/read`` from the bucket and the log, ``thread/turns/list``
from the log.

Two nodes in the test's event loop, joined to a real ``nats-server -js`` (``conftest``).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import anyio
import orjson
import pytest

from tests.cluster._nodes import join, open_client, open_node
from tests.cluster.conftest import NatsServer
from tests.cluster.test_log import _strip  # pyright: ignore[reportPrivateUsage]
from tests.e2e._harness import TIMEOUT, Message, Session

pytestmark = pytest.mark.anyio

HERE_ONLY = (
    "status",
    "path",
    "turns",
    "environments",
    "recencyAt",
    "canAcceptDirectInput",
)
"""What a node that has not loaded the thread shows otherwise, as for a stored thread that is not
loaded: ``notLoaded``, no environments nor direct input, ``recencyAt`` its last update (a loaded
thread shows its creation); and no rollout path of its own, the turns only with
``includeTurns``."""


def _shown(thread: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in _strip(thread).items() if k not in HERE_ONLY}


async def test_a_node_lists_and_reads_the_threads_another_node_plays(
    nats_server: NatsServer,
) -> None:
    url = nats_server.url
    with anyio.fail_after(TIMEOUT * 2):
        async with open_client(url, "node-a", client="alice") as (alice, node_a):
            ids: list[str] = []
            for text in ("first thread", "second thread", "third thread"):
                thread_id = await alice.start_thread()
                await alice.run_turn(thread_id, text)
                ids.append(thread_id)
            await alice.drain_pending()
            await node_a.flush()  # the log and the metadata the turns' ends changed
            async with open_node(url, "node-b") as (bridge_b, _):
                bob = await bridge_b.connect()
                await bob.initialize(name="bob")

                # thread/list: every thread of node a, newest first, in pages, notLoaded here
                listed_a = await alice.result("thread/list", {})
                page = await bob.result("thread/list", {"limit": 2})
                assert [t["id"] for t in page["data"]] == ids[::-1][:2]
                assert page["nextCursor"] is not None
                rest = await bob.result("thread/list", {"limit": 2, "cursor": page["nextCursor"]})
                assert [t["id"] for t in rest["data"]] == ids[:1]
                assert rest["nextCursor"] is None
                listed_b = page["data"] + rest["data"]
                assert [t["status"] for t in listed_b] == [{"type": "notLoaded"}] * 3
                assert [t["preview"] for t in listed_b] == [
                    "third thread",
                    "second thread",
                    "first thread",
                ]
                assert [_shown(t) for t in listed_b] == [_shown(t) for t in listed_a["data"]]
                assert page["readStates"] | rest["readStates"] == listed_a["readStates"]
                searched = await bob.result("thread/list", {"searchTerm": "SECOND"})
                assert [t["id"] for t in searched["data"]] == [ids[1]]

                # thread/read: with its turns from the log, as node a reads them
                for include_turns in (False, True):
                    params = {"threadId": ids[0], "includeTurns": include_turns}
                    read_a = await alice.result("thread/read", params)
                    read_b = await bob.result("thread/read", params)
                    assert read_b["thread"]["status"] == {"type": "notLoaded"}
                    assert _shown(read_b["thread"]) == _shown(read_a["thread"])
                    assert _strip(read_b["thread"]["turns"]) == _strip(read_a["thread"]["turns"])
                    assert read_b["readState"] == read_a["readState"]
                [turn] = read_b["thread"]["turns"]
                assert turn["status"] == "completed"
                kinds = [item["type"] for item in turn["items"]]
                assert kinds[0] == "userMessage", kinds
                assert kinds[-1] == "agentMessage", kinds
                missing = await bob.call("thread/read", {"threadId": ids[0][:-4] + "0000"})
                assert "error" in missing

                # thread/turns/list: the log's turns, paged as node a pages them
                for params in ({"threadId": ids[2]}, {"threadId": ids[2], "limit": 1}):
                    turns_a = await alice.result("thread/turns/list", params)
                    turns_b = await bob.result("thread/turns/list", params)
                    assert _strip(turns_b) == _strip(turns_a)
                    assert [t["status"] for t in turns_b["data"]] == ["completed"]
                missing = await bob.call("thread/turns/list", {"threadId": ids[0][:-4] + "0000"})
                assert "error" in missing

                # once loaded on node b (resumed), it is listed once, as loaded there
                carol = await join(bridge_b, "carol", ids[1])
                listed = await carol.result("thread/list", {})
                assert [t["id"] for t in listed["data"]] == ids[::-1]
                assert listed["data"][1]["status"] != {"type": "notLoaded"}


async def test_a_name_set_on_any_node_shows_on_every_node(nats_server: NatsServer) -> None:
    url = nats_server.url
    with anyio.fail_after(TIMEOUT * 2):
        async with open_client(url, "node-a", client="alice") as (alice, node_a):
            thread_id = await alice.start_thread()
            await alice.run_turn(thread_id, "a thread to name")
            await alice.drain_pending()
            await node_a.flush()
            async with open_client(url, "node-b", client="bob") as (bob, _):
                # node b has not loaded the thread: the name goes to the bucket
                await bob.result("thread/name/set", {"threadId": thread_id, "name": "from b"})
                listed = await bob.result("thread/list", {})
                assert [t["name"] for t in listed["data"]] == ["from b"]
                read = await bob.result("thread/read", {"threadId": thread_id})
                assert read["thread"]["name"] == "from b"
                # the owner renames its record as its index reads the entry, and keeps the
                # name in the entries it writes after
                await node_a._index_caught_up()  # pyright: ignore[reportPrivateUsage]
                read = await alice.result("thread/read", {"threadId": thread_id})
                assert read["thread"]["name"] == "from b"
                await alice.run_turn(thread_id, "a turn after the name")
                await node_a.flush()
                listed = await bob.result("thread/list", {})
                assert [t["name"] for t in listed["data"]] == ["from b"]
                # the owner's name reaches node b
                await alice.result("thread/name/set", {"threadId": thread_id, "name": "from a"})
                read = await bob.result("thread/read", {"threadId": thread_id})
                assert read["thread"]["name"] == "from a"
                missing = await bob.call(
                    "thread/name/set", {"threadId": thread_id[:-4] + "0000", "name": "x"}
                )
                assert "error" in missing


def _named(name: str) -> Callable[[Message], bool]:
    def check(message: Message) -> bool:
        return (
            message.get("method") == "thread/name/updated"
            and message["params"]["threadName"] == name
        )

    return check


def _names(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (m["params"]["threadId"], m["params"]["threadName"])
        for m in messages
        if m.get("method") == "thread/name/updated"
    ]


async def test_a_name_set_on_one_node_is_told_to_the_clients_of_every_node(
    nats_server: NatsServer,
) -> None:
    """``thread/name/updated`` goes to every initialized connection, as the real server sends
    it: on every node, each client told once."""
    url = nats_server.url
    with anyio.fail_after(TIMEOUT * 2):
        async with open_client(url, "node-a", client="alice") as (alice, node_a):
            thread_id = await alice.start_thread()
            await alice.run_turn(thread_id, "a thread to name")
            await node_a.flush()
            async with open_client(url, "node-b", client="bob") as (bob, _):
                await alice.drain_pending()
                await bob.result("thread/name/set", {"threadId": thread_id, "name": "from b"})
                await alice.until(_named("from b"))
                await alice.result("thread/name/set", {"threadId": thread_id, "name": "from a"})
                seen = await bob.until(_named("from a"))
                # bob's node told bob of its own change once, then of node a's
                assert _names(seen) == [(thread_id, "from b"), (thread_id, "from a")]
                await alice.until(_named("from a"))
                assert _names(alice.received) == [(thread_id, "from b"), (thread_id, "from a")]


async def test_a_name_written_while_the_owner_writes_its_entry_is_kept(
    nats_server: NatsServer,
) -> None:
    """A name another node writes into the entry just before the owner writes it again (the
    owner has not read the name yet) is not lost: the owner writes expecting the entry's
    revision it wrote, reads the newer one and keeps its name."""
    from codex_app_bridge.cluster._subjects import META_BUCKET
    from tests.cluster._nodes import jetstream

    url = nats_server.url
    with anyio.fail_after(TIMEOUT * 2):
        async with open_node(url, "node-a") as (bridge_a, node_a), jetstream(url) as js:
            alice = await bridge_a.connect()
            await alice.initialize(name="alice")
            thread_id = await alice.start_thread()
            await alice.run_turn(thread_id, "a thread to name")
            await node_a.flush()
            kv = await js.key_value(META_BUCKET)
            entry = await kv.get(thread_id)
            assert entry.value is not None
            meta = orjson.loads(entry.value)
            meta["name"] = "named elsewhere"
            await kv.update(thread_id, orjson.dumps(meta), last=entry.revision)
            await node_a._index_caught_up()  # pyright: ignore[reportPrivateUsage]
            assert bridge_a.server is not None
            record = bridge_a.server.threads.get(thread_id)
            assert record is not None
            record.name = None  # the owner as it is before its index reads the name
            await alice.run_turn(thread_id, "the owner writes its entry at the turn's start")
            await node_a.flush()
            entry = await kv.get(thread_id)
            assert entry.value is not None
            assert orjson.loads(entry.value)["name"] == "named elsewhere"
            assert record.name == "named elsewhere"


def _method(name: str) -> Callable[[Message], bool]:
    return lambda message: message.get("method") == name


async def test_a_thread_is_archived_and_unarchived_from_any_node(nats_server: NatsServer) -> None:
    """The archive state is the metadata entry's: ``thread/list``'s ``archived`` filter on
    every node, ``thread/archived`` / ``thread/unarchived`` to every node's clients, kept by
    the owner's later entries; an archived thread is not resumed on another node."""
    url = nats_server.url
    with anyio.fail_after(TIMEOUT * 2):
        async with open_client(url, "node-a", client="alice") as (alice, node_a):
            kept = await alice.start_thread()
            await alice.run_turn(kept, "a thread that stays")
            thread_id = await alice.start_thread()
            await alice.run_turn(thread_id, "a thread to archive")
            await node_a.flush()
            async with open_client(url, "node-b", client="bob") as (bob, node_b):
                await alice.drain_pending()

                async def listed(client: Session, archived: bool) -> list[str]:
                    page = await client.result("thread/list", {"archived": archived})
                    return [t["id"] for t in page["data"]]

                # archived on node b, which has not loaded it (node a plays it)
                await bob.result("thread/archive", {"threadId": thread_id})
                told = (await alice.until(_method("thread/archived")))[-1]
                assert told["params"] == {"threadId": thread_id}
                assert await listed(bob, False) == [kept]
                assert await listed(bob, True) == [thread_id]
                assert await listed(alice, False) == [kept]
                assert await listed(alice, True) == [thread_id]
                again = await bob.call("thread/archive", {"threadId": thread_id})
                assert "error" in again
                # the owner's next entry keeps the state
                await alice.run_turn(thread_id, "the owner writes its entry again")
                await node_a.flush()
                await node_b._index_caught_up()  # pyright: ignore[reportPrivateUsage]
                assert await listed(bob, True) == [thread_id]
                async with open_client(url, "node-c", client="carol") as (carol, _):
                    resumed = await carol.call("thread/resume", {"threadId": thread_id})
                    assert "error" in resumed
                # unarchived on node a, its owner: node b's client is told
                back = await alice.result("thread/unarchive", {"threadId": thread_id})
                assert back["thread"]["id"] == thread_id
                await bob.until(_method("thread/unarchived"))
                assert await listed(bob, True) == []
                assert await listed(bob, False) == [thread_id, kept]
                missing = await bob.call("thread/unarchive", {"threadId": thread_id})
                assert "error" in missing
                unknown = await bob.call("thread/archive", {"threadId": kept[:-4] + "0000"})
                assert "error" in unknown


async def test_a_node_keeps_the_entry_it_wrote_for_a_thread_at_its_own_size(
    nats_server: NatsServer,
) -> None:
    """A node keeps, per thread, the metadata entry it last wrote (its own change is no news to
    it): in an allocation of the entry's length, not in orjson's buffer of at least 4 KiB."""
    with anyio.fail_after(TIMEOUT * 2):
        async with open_client(nats_server.url, "node-a", client="alice") as (alice, node):
            thread_id = await alice.start_thread()
            tracemalloc.start()
            try:
                await alice.run_turn(thread_id, "a thread whose entry is kept")
                await alice.drain_pending()
                await node.flush()
                ours = node._ours  # pyright: ignore[reportPrivateUsage]
                entry = ours[thread_id]
                size = len(entry)
                ours[thread_id] = b""  # the entry's last reference is now this test's
                before, _ = tracemalloc.get_traced_memory()
                del entry
                after, _ = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    assert before - after < size + 64, (before - after, size)
