"""Several clients on one server (in memory): who receives what (runtime spec 2.3)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from codex_app_bridge.transport import TransportKind, create_memory_transport_pair
from tests.e2e._harness import TIMEOUT, is_turn_completed, methods, open_bridge

pytestmark = pytest.mark.anyio


async def test_broadcasts_reach_every_client_and_turn_traffic_only_subscribers() -> None:
    async with open_bridge("memory") as bridge:
        alice = await bridge.connect()
        bob = await bridge.connect()
        await alice.initialize(name="alice")
        agent = (await bob.initialize(name="bob"))["userAgent"]
        # The first client to initialize fixes the originator for everyone.
        assert agent.startswith("alice/0.163.0 (")
        assert agent.endswith("(bob; 1.0)")

        thread_id = await alice.start_thread()
        started = await bob.until(lambda m: m.get("method") == "thread/started")
        assert started[-1]["params"]["thread"]["id"] == thread_id

        await alice.run_turn(thread_id, "only alice listens")
        seen = await bob.until(
            lambda m: (
                m.get("method") == "thread/status/changed"
                and m["params"]["status"]["type"] == "idle"
            )
        )
        assert methods(seen) == ["thread/status/changed", "thread/status/changed"]

        resumed = await bob.result("thread/resume", {"threadId": thread_id, "excludeTurns": True})
        assert resumed["thread"]["id"] == thread_id
        second, alice_saw = await alice.run_turn(thread_id, "now both listen")
        bob_saw = await bob.until(is_turn_completed(second))
        # from bob's resume: his deprecation notice, and the goal notice every connection gets
        resume_only = ("deprecationNotice", "thread/goal/cleared")
        assert [m for m in methods(bob_saw) if m not in resume_only] == [
            m for m in methods(alice_saw) if m not in ("response", *resume_only)
        ]


async def test_closing_a_client_drops_it_without_disturbing_the_other() -> None:
    async with open_bridge("memory") as bridge:
        server = bridge.server
        assert server is not None
        alice = await bridge.connect()
        bob = await bridge.connect()
        await alice.initialize()
        await bob.initialize()
        thread_id = await alice.start_thread()
        await alice.run_turn(thread_id, "first")
        await bob.result("thread/resume", {"threadId": thread_id, "excludeTurns": True})
        listener = server.hub.get(thread_id)
        assert listener is not None
        assert len(listener.subscriber_ids()) == 2
        await bob.close()
        await anyio.wait_all_tasks_blocked()
        assert server.connection_count == 1
        assert len(listener.subscriber_ids()) == 1
        _, messages = await alice.run_turn(thread_id, "still fine")
        assert methods(messages)[-1] == "turn/completed"


async def test_a_turn_start_whose_answer_cannot_be_delivered_leaves_the_thread_idle() -> None:
    async with open_bridge("memory") as bridge:
        server = bridge.server
        assert server is not None
        alice = await bridge.connect()
        await alice.initialize()
        thread_id = await alice.start_thread()
        await alice.run_turn(thread_id, "first")
        gone = anyio.Event()
        async with (
            create_memory_transport_pair() as ((read, write), server_streams),
            anyio.create_task_group() as tg,
        ):

            async def serve_carol() -> None:
                await server.serve_connection(server_streams, TransportKind.MEMORY)
                gone.set()

            tg.start_soon(serve_carol)
            init: dict[str, Any] = {"clientInfo": {"name": "carol", "version": "1"}}
            await write.send({"id": 1, "method": "initialize", "params": init})
            with anyio.fail_after(TIMEOUT):
                assert "result" in await read.receive()
                await read.receive()  # remoteControl/status/changed
            # Carol stops reading; the answer to request 2 finds her gone, so the answer to
            # her turn/start cannot be written.
            read.close()
            await write.send({"id": 2, "method": "thread/loaded/list", "params": {}})
            await anyio.wait_all_tasks_blocked()
            text = [{"type": "text", "text": "never answered"}]
            params = {"threadId": thread_id, "input": text}
            await write.send({"id": 3, "method": "turn/start", "params": params})
            with anyio.fail_after(TIMEOUT):
                await gone.wait()
        read_back = await alice.result("thread/read", {"threadId": thread_id})
        assert read_back["thread"]["status"] == {"type": "idle"}
        second, messages = await alice.run_turn(thread_id, "second")
        assert methods(messages)[-1] == "turn/completed"
        assert messages[-1]["params"]["turn"]["id"] == second


async def test_a_later_initialize_makes_nothing_that_outlives_its_connection() -> None:
    # issue 23's soak: each welcome replaced the server's (spent) list of start-up work with a
    # new empty one, so the one made by the load's last client stayed, among the few live blocks
    # that kept an arena of that load resident
    async with open_bridge("memory") as bridge:
        server = bridge.server
        assert server is not None
        first = await bridge.connect()
        await first.initialize()
        spent = server._after_initialize  # pyright: ignore[reportPrivateUsage]
        later = await bridge.connect()
        await later.initialize()
        await later.close()
        assert server._after_initialize is spent  # pyright: ignore[reportPrivateUsage]
