"""Failover (issue 24.4): when a thread's owner dies, a node that follows the thread takes its
lease, ends the turn that was in flight as Codex shows a turn cut by a crash (interrupted), and
serves on: its clients lose nothing of the log and start the next turn there."""

from __future__ import annotations

import signal

import anyio
import anyio.to_thread
import pytest

from codex_app_bridge.sources import DefaultAgent
from tests.cluster._nodes import (
    events_in,
    jetstream,
    join,
    open_client,
    open_node,
    read_log,
    spawn_node,
)
from tests.cluster.conftest import NatsServer
from tests.e2e._harness import TIMEOUT, is_turn_completed

pytestmark = pytest.mark.anyio

LONG = " ".join(f"word{i}" for i in range(400))
"""An input the built-in agent echoes as hundreds of paced deltas: a turn that lasts."""


async def test_a_follower_takes_over_a_thread_whose_owner_was_killed_mid_turn(
    nats_server: NatsServer,
) -> None:
    with anyio.fail_after(TIMEOUT * 2):
        async with spawn_node(nats_server.url, "owner", "--pace", "0.02") as (owner, alice):
            await alice.initialize(name="alice")
            thread_id = await alice.start_thread()
            first, _ = await alice.run_turn(thread_id, "before the crash")
            async with open_node(nats_server.url, "survivor") as (bridge, survivor):
                bob = await join(bridge, "bob", thread_id)

                cut = await alice.start_turn(thread_id, LONG)
                await bob.until(lambda m: m.get("method") == "item/agentMessage/delta")
                owner.send_signal(signal.SIGKILL)

                # the survivor takes the lease and ends the turn the owner was playing
                ended = (await bob.until(is_turn_completed(cut)))[-1]
                assert ended["params"]["turn"]["status"] == "interrupted"

                # and serves on: the next turn is played by the survivor
                after, seen = await bob.run_turn(thread_id, "after the crash")
                assert seen[-1]["params"]["turn"]["status"] == "completed"
                read = await bob.result(
                    "thread/read", {"threadId": thread_id, "includeTurns": True}
                )
                turns = read["thread"]["turns"]
                assert [t["id"] for t in turns] == [first, cut, after]
                assert [t["status"] for t in turns] == ["completed", "interrupted", "completed"]
                assert all(t["items"] for t in turns)
                assert survivor.lost_events == survivor.duplicate_events == 0


async def test_nodes_reconnect_after_a_nats_restart_mid_turn_and_lose_nothing(
    nats_server: NatsServer,
) -> None:
    with anyio.fail_after(TIMEOUT * 2):
        async with open_node(nats_server.url, "owner", DefaultAgent(delay=0.01)) as (
            bridge_a,
            node_a,
        ):
            # every event the owner published was acknowledged, across the restart (checked
            # at the end)
            alice = await bridge_a.connect()
            await alice.initialize(name="alice")
            thread_id = await alice.start_thread()
            await alice.run_turn(thread_id, "before the restart")
            async with open_node(nats_server.url, "follower") as (bridge_b, _):
                bob = await join(bridge_b, "bob", thread_id)
                await alice.drain_pending()

                turn = await alice.start_turn(thread_id, LONG)
                seen_b = await bob.until(lambda m: m.get("method") == "item/agentMessage/delta")
                await anyio.to_thread.run_sync(nats_server.restart)

                seen_a = await alice.until(is_turn_completed(turn))
                seen_b += await bob.until(is_turn_completed(turn))
                assert seen_b[-1]["params"]["turn"]["status"] == "completed"
                text_a = "".join(
                    m["params"]["delta"]
                    for m in seen_a
                    if m.get("method") == "item/agentMessage/delta"
                )
                text_b = "".join(
                    m["params"]["delta"]
                    for m in seen_b
                    if m.get("method") == "item/agentMessage/delta"
                )
                assert LONG in text_a
                assert text_b == text_a
                await node_a.flush()
                assert node_a.failed_publishes == 0

                # the log kept the turn: a node that loads the thread now reads it whole
                async with open_client(nats_server.url, "late", client="carol") as (carol, _):
                    read = await carol.result("thread/resume", {"threadId": thread_id})
                    assert [t["status"] for t in read["thread"]["turns"]] == [
                        "completed",
                        "completed",
                    ]


async def test_an_owner_paused_past_its_lease_cannot_write_the_log_another_node_took(
    nats_server: NatsServer,
) -> None:
    url = nats_server.url
    ttl = 2.0
    with anyio.fail_after(TIMEOUT * 2):
        args = ("--pace", "0.02", "--cluster-lease-ttl", str(ttl))
        async with jetstream(url) as js, spawn_node(url, "a", *args) as (owner, alice):
            await alice.initialize(name="alice")
            thread_id = await alice.start_thread()
            first, _ = await alice.run_turn(thread_id, "before the pause")
            async with open_node(url, "b", lease_ttl=ttl) as (bridge, node):
                bob = await join(bridge, "bob", thread_id)
                await alice.drain_pending()

                cut = await alice.start_turn(thread_id, LONG)
                await bob.until(lambda m: m.get("method") == "item/agentMessage/delta")
                owner.send_signal(signal.SIGSTOP)  # paused mid-turn, past its lease
                try:
                    # b takes the thread: the turn a was playing ends there, b plays the next
                    ended = (await bob.until(is_turn_completed(cut)))[-1]
                    assert ended["params"]["turn"]["status"] == "interrupted"
                    assert node.owns(thread_id)
                    after, seen = await bob.run_turn(thread_id, "after the take-over")
                    assert seen[-1]["params"]["turn"]["status"] == "completed"
                finally:
                    owner.send_signal(signal.SIGCONT)

                # a wakes up mid-turn and finds the thread taken: it stops writing the log and
                # follows it, as any node does: its client sees the turn end as b ended it,
                # then b's turn, and its next turn is played by b
                ended = (await alice.until(is_turn_completed(cut)))[-1]
                assert ended["params"]["turn"]["status"] == "interrupted"
                followed = (await alice.until(is_turn_completed(after)))[-1]
                assert followed["params"]["turn"]["status"] == "completed"
                last, seen = await alice.run_turn(thread_id, "from the former owner")
                assert seen[-1]["params"]["turn"]["status"] == "completed"
                assert node.owns(thread_id)
                await bob.until(is_turn_completed(last))
                await node.flush()

                # nothing of a's in the log after b's fence; the numbers run 1..N, b has N
                log = await read_log(js, thread_id)
                writers = [m.writer for m in log]
                taken = writers.index("b")
                assert set(writers[:taken]) == {"a"}
                assert set(writers[taken:]) == {"b"}, writers
                assert log[taken].count == 0  # the fence
                assert node.log_length(thread_id) == events_in(log)
                assert node.lost_events == node.duplicate_events == 0
                read = await bob.result(
                    "thread/read", {"threadId": thread_id, "includeTurns": True}
                )
                turns = read["thread"]["turns"]
                assert [t["id"] for t in turns] == [first, cut, after, last]
                assert [t["status"] for t in turns] == [
                    "completed",
                    "interrupted",
                    "completed",
                    "completed",
                ]


async def test_a_client_of_a_killed_owner_resumes_on_a_node_that_had_not_loaded_the_thread(
    nats_server: NatsServer,
) -> None:
    """No other node had the thread loaded when its owner died mid-turn: a client that
    reconnects to any node and resumes it finds every turn, the cut one ended as a crash ends
    it (before, ``thread/read`` there shows it so too), and that node plays on."""
    url = nats_server.url
    ttl = 2.0
    with anyio.fail_after(TIMEOUT * 2):
        args = ("--pace", "0.02", "--cluster-lease-ttl", str(ttl))
        async with spawn_node(url, "a", *args) as (owner, alice):
            await alice.initialize(name="alice")
            thread_id = await alice.start_thread()
            first, _ = await alice.run_turn(thread_id, "before the crash")
            cut = await alice.start_turn(thread_id, LONG)
            await alice.until(lambda m: m.get("method") == "item/agentMessage/delta")
            owner.send_signal(signal.SIGKILL)
            await owner.wait()
        async with open_client(url, "b", lease_ttl=ttl, client="bob") as (bob, node):
            listed = await bob.result("thread/list", {})
            assert [t["id"] for t in listed["data"]] == [thread_id]
            resumed = await bob.result("thread/resume", {"threadId": thread_id})
            assert [t["id"] for t in resumed["thread"]["turns"]] == [first, cut]
            # its lease lapses: b takes the thread and ends the turn a was playing
            ended = (await bob.until(is_turn_completed(cut)))[-1]
            assert ended["params"]["turn"]["status"] == "interrupted"
            assert node.owns(thread_id)
            after, seen = await bob.run_turn(thread_id, "after the crash")
            assert seen[-1]["params"]["turn"]["status"] == "completed"
            read = await bob.result("thread/read", {"threadId": thread_id, "includeTurns": True})
            turns = read["thread"]["turns"]
            assert [t["id"] for t in turns] == [first, cut, after]
            assert [t["status"] for t in turns] == ["completed", "interrupted", "completed"]
            assert node.lost_events == node.duplicate_events == 0


async def test_an_owner_whose_lease_lapsed_unclaimed_holds_it_again_without_a_fence(
    nats_server: NatsServer,
) -> None:
    """An owner too busy to renew a lease in time (a loaded machine) finds it lapsed: nobody
    else took it, so it takes it again, and neither fences its own log nor cuts its turns."""
    from codex_app_bridge.cluster._subjects import LEASE_BUCKET

    url = nats_server.url
    with anyio.fail_after(TIMEOUT * 2):
        async with jetstream(url) as js, open_node(url, "a", lease_ttl=1.0) as (bridge, node):
            alice = await bridge.connect()
            await alice.initialize(name="alice")
            thread_id = await alice.start_thread()
            await alice.run_turn(thread_id, "before the lapse")
            await node.flush()
            leases = await js.key_value(LEASE_BUCKET)
            await leases.delete(thread_id)  # as the lease's TTL removes it
            watcher = await leases.watch(thread_id)  # pyright: ignore[reportUnknownMemberType]
            while True:  # from the deletion on, until the node writes the lease again
                entry: object = await watcher.updates(timeout=TIMEOUT)
                if getattr(entry, "value", None) == node.holder.encode():
                    break
            await watcher.stop()
            assert node.owns(thread_id)
            _, seen = await alice.run_turn(thread_id, "after the lapse")
            assert seen[-1]["params"]["turn"]["status"] == "completed"
            await node.flush()
            log = await read_log(js, thread_id)
            assert {m.writer for m in log} == {"a"}
            assert all(m.count for m in log), log  # no fence
            assert node.fenced == 0
            assert node.log_length(thread_id) == events_in(log)
