"""The hub driving real rpc ``Connection`` s over the in-memory transport: the outbox policy of
each connection (backpressure, disconnect-slow, opt-out) composes with per-thread fan-out."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from codex_app_bridge.listener import ListenerHub
from codex_app_bridge.rpc import OutboundPolicy
from tests.listener.support import THREAD, TIMEOUT, envelope, task_complete, task_started
from tests.rpc._support import serving

pytestmark = pytest.mark.anyio

DELTAS = 300


async def test_a_slow_socket_client_is_cut_off_while_a_reading_client_gets_every_message() -> None:
    async with (
        # a socket kind with room for 16 messages and about 1 KB behind them
        serving(policy=OutboundPolicy.DISCONNECT_SLOW, capacity=16, outbound_budget=1000) as slow,
        serving(policy=OutboundPolicy.BACKPRESSURE, capacity=16) as fast,
    ):
        hub = ListenerHub()
        for served in (slow, fast):
            hub.add_connection(served.connection)
        listener = hub.create_thread(THREAD)
        listener.subscribe(slow.connection)
        listener.subscribe(fast.connection)
        received: list[Any] = []

        async def read_until_turn_end() -> None:
            while True:
                message = await fast.client.receive()
                received.append(message)
                if message.get("method") == "turn/completed":
                    return

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(read_until_turn_end)
                await listener.handle(envelope(task_started()))
                for i in range(DELTAS):
                    delta = {"type": "agent_message_content_delta", "item_id": "m", "delta": str(i)}
                    await listener.handle(envelope(delta))
                await listener.handle(envelope(task_complete()))

        assert len(received) == DELTAS + 5  # status, started, deltas, read state, status, end
        deltas = [
            m["params"]["delta"] for m in received if m["method"] == "item/agentMessage/delta"
        ]
        assert deltas == [str(i) for i in range(DELTAS)]
        assert all(isinstance(m["emittedAtMs"], int) for m in received)
        assert slow.connection.closed
        # the closed connection was dropped from the thread and from the broadcasts
        assert not listener.is_subscribed(slow.connection.connection_id)
        assert hub.connection_ids() == [fast.connection.connection_id]


async def test_connection_opt_out_applies_to_fanned_out_notifications() -> None:
    async with serving() as served:
        served.connection.set_notification_opt_out(["turn/started"])
        hub = ListenerHub()
        hub.add_connection(served.connection)
        listener = hub.create_thread(THREAD)
        listener.subscribe(served.connection)
        await listener.handle(envelope(task_started()))
        await listener.handle(envelope({"type": "warning", "message": "w"}))
        first = await served.client.receive()
        second = await served.client.receive()
        assert [first["method"], second["method"]] == ["thread/status/changed", "warning"]
