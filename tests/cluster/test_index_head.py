"""A fresh node's first ``thread/list`` from the head of the cluster's thread index (issue 24):
a node that read the whole metadata bucket writes the head (the newest entries, and the bucket
sequence they reflect) to the object store as it leaves; a node that joins after reads it in one
fetch and the bucket's changes after it, answers the newest-first pages from them, and reads the
rest of the bucket after its first page (what a page past the head needs).

Nodes in the test's event loop, joined to a real ``nats-server -js`` (``conftest``); the entries
are written to the bucket as their owners write them.
"""

from __future__ import annotations

import anyio
import orjson
import pytest

from codex_app_bridge.cluster._index import HEAD_ROWS
from codex_app_bridge.cluster._subjects import META_BUCKET
from tests.cluster._nodes import jetstream, open_node
from tests.cluster.conftest import NatsServer
from tests.e2e._harness import TIMEOUT, Session

pytestmark = pytest.mark.anyio

THREADS = HEAD_ROWS * 3


def _id(number: int) -> str:
    return f"01a2cccc-0000-7000-8000-{number:012d}"


def _entry(number: int) -> bytes:
    created = 1_700_000_000 + 60 * number
    return orjson.dumps(
        {
            "id": _id(number),
            "owner": "test",
            "cwd": "/w",
            "model": "mock-model",
            "modelProvider": "mock",
            "approvalPolicy": "never",
            "approvalsReviewer": "user",
            "sandbox": {"type": "dangerFullAccess"},
            "originator": "codex-app-bridge",
            "name": None,
            "preview": f"thread {number}",
            "createdAt": created,
            "updatedAt": created + 30,
            "turnsStarted": 1,
        }
    )


async def _ids(session: Session, params: dict[str, object]) -> list[str]:
    page = await session.result("thread/list", params)
    return [thread["id"] for thread in page["data"]]


async def test_a_fresh_node_lists_the_newest_from_the_head_and_the_rest_after(
    nats_server: NatsServer,
) -> None:
    url = nats_server.url
    with anyio.fail_after(TIMEOUT * 3):
        async with open_node(url, "node-a") as (bridge_a, node_a):
            async with jetstream(url) as js:
                kv = await js.key_value(META_BUCKET)
                for number in range(THREADS):
                    await kv.put(_id(number), _entry(number))
            alice = await bridge_a.connect()
            await alice.initialize(name="alice")
            assert await _ids(alice, {"limit": 3}) == [_id(n) for n in (767, 766, 765)]
            assert node_a.indexed == THREADS
        # node a left: it wrote the head; changes after it: a new thread, the newest deleted
        async with jetstream(url) as js:
            kv = await js.key_value(META_BUCKET)
            await kv.put(_id(THREADS), _entry(THREADS))
            await kv.delete(_id(THREADS - 1))
        newest_first = [_id(n) for n in range(THREADS, -1, -1) if n != THREADS - 1]
        async with open_node(url, "node-b") as (bridge_b, node_b):
            assert node_b.snapshot_sequence == THREADS  # the head node a wrote
            assert node_b.indexed < THREADS  # the head and the changes after it, not the rest
            bob = await bridge_b.connect()
            await bob.initialize(name="bob")
            assert await _ids(bob, {}) == newest_first[:25]
            assert await _ids(bob, {"limit": 100, "sortKey": "updated_at"}) == newest_first[:100]
            # past the head: answered once the rest of the bucket is read
            assert await _ids(bob, {"sortDirection": "asc", "limit": 2}) == [_id(0), _id(1)]
            cursor = (await bob.result("thread/list", {"limit": 100}))["nextCursor"]
            for _ in range(2):
                cursor = (await bob.result("thread/list", {"limit": 100, "cursor": cursor}))[
                    "nextCursor"
                ]
            assert await _ids(bob, {"limit": 100, "cursor": cursor}) == newest_first[300:400]
            assert node_b.indexed == THREADS
