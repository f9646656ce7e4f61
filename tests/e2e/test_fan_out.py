"""Many clients on one bridge: every subscriber gets the whole ordered stream, a client that stops
reading is cut off (socket kinds) without slowing the others, bursts are answered in full."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import orjson
import pytest
from websockets.exceptions import ConnectionClosed

from codex_app_bridge.protocol.core import (
    AgentMessageContentDeltaEvent,
    AgentMessageItem,
    EventMsg,
    ItemCompletedEvent,
    ItemStartedEvent,
    TaskCompleteEvent,
    TaskStartedEvent,
    TextAgentMessageContent,
)
from codex_app_bridge.sources import SourceDefaults, TurnRequest, input_text
from tests.e2e._harness import Message, Session, is_turn_completed, open_bridge

pytestmark = pytest.mark.anyio

SOCKET_KINDS = ("unix", "websocket")
FLOOD_DELTAS = 20_000
DELTA = "x" * 1000


class FloodSource:
    """Each turn streams as many agent-message deltas of about 1 KB as its input text says,
    numbered in order."""

    @property
    def defaults(self) -> SourceDefaults:
        return SourceDefaults(model="flood", model_provider="test")

    async def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        turn_id = request.turn_id
        yield TaskStartedEvent(turn_id=turn_id, started_at=request.started_at_ms // 1000)
        item = AgentMessageItem(id="msg_flood", content=[])
        yield ItemStartedEvent(
            thread_id=request.thread_id, turn_id=turn_id, item=item, started_at_ms=1
        )
        for index in range(int(input_text(request.input))):
            yield AgentMessageContentDeltaEvent(
                thread_id=request.thread_id,
                turn_id=turn_id,
                item_id="msg_flood",
                delta=f"{index:06d}{DELTA}",
            )
        done = AgentMessageItem(id="msg_flood", content=[TextAgentMessageContent(text="flood")])
        yield ItemCompletedEvent(
            thread_id=request.thread_id,
            turn_id=turn_id,
            item=done,
            started_at_ms=1,
            completed_at_ms=2,
        )
        yield TaskCompleteEvent(turn_id=turn_id, last_agent_message="flood")


def _thread_traffic(messages: list[Message], thread_id: str) -> list[Message]:
    return [
        m
        for m in messages
        if "method" in m and m.get("params", {}).get("threadId") == thread_id
    ]


def _delta_indexes(messages: list[Message]) -> list[int]:
    return [
        int(m["params"]["delta"][:6])
        for m in messages
        if m.get("method") == "item/agentMessage/delta"
    ]


@pytest.mark.parametrize("kind", ["memory", *SOCKET_KINDS])
async def test_two_subscribers_see_identical_ordered_streams(kind: str) -> None:
    async with open_bridge(kind, source=FloodSource()) as bridge:
        alice: Session = await bridge.connect()
        bob: Session = await bridge.connect()
        await alice.initialize(name="alice")
        await bob.initialize(name="bob")
        thread_id = await alice.start_thread()
        await alice.run_turn(thread_id, "1")  # a thread is resumable once it has a turn
        await bob.result("thread/resume", {"threadId": thread_id, "excludeTurns": True})
        await bob.drain_pending()
        mark = len(bob.received)
        turn_id, alice_saw = await alice.run_turn(thread_id, "2000")
        await bob.until(is_turn_completed(turn_id))
        alice_stream = _thread_traffic(alice_saw, thread_id)
        bob_stream = _thread_traffic(bob.received[mark:], thread_id)
        assert alice_stream == bob_stream
        assert _delta_indexes(alice_stream) == list(range(2_000))
        assert alice_stream[-1]["method"] == "turn/completed"


async def _read_json(ws: Any) -> Message:
    message = orjson.loads(await ws.recv(decode=False))
    assert isinstance(message, dict)
    return message


@pytest.mark.parametrize("kind", SOCKET_KINDS)
async def test_a_stalled_reader_is_disconnected_and_a_healthy_one_gets_everything(
    kind: str,
) -> None:
    async with open_bridge(kind, source=FloodSource()) as bridge:
        server = bridge.server
        assert server is not None
        assert bridge.open_websocket is not None
        healthy: Session = await bridge.connect()
        await healthy.initialize(name="healthy")
        thread_id = await healthy.start_thread()
        await healthy.run_turn(thread_id, "1")
        async with bridge.open_websocket() as stalled:
            await stalled.send(
                orjson.dumps(
                    {
                        "id": 1,
                        "method": "initialize",
                        "params": {"clientInfo": {"name": "stalled", "version": "1"}},
                    }
                ),
                text=True,
            )
            await stalled.send(
                orjson.dumps(
                    {
                        "id": 2,
                        "method": "thread/resume",
                        "params": {"threadId": thread_id, "excludeTurns": True},
                    }
                ),
                text=True,
            )
            with anyio.fail_after(20):
                while (await _read_json(stalled)).get("id") != 2:
                    pass
            assert server.connection_count == 2
            # From here on the stalled client reads nothing while a 20 MB turn streams.
            turn_id, saw = await healthy.run_turn(thread_id, str(FLOOD_DELTAS))
            assert _delta_indexes(saw) == list(range(FLOOD_DELTAS))
            assert saw[-1]["params"]["turn"]["status"] == "completed"
            with anyio.fail_after(20):
                while server.connection_count != 1:
                    await anyio.sleep(0.01)
            # What the stalled client still finds in its buffers is a prefix, then the close.
            got: list[Message] = []
            with anyio.fail_after(20), pytest.raises(ConnectionClosed):
                while True:
                    got.append(await _read_json(stalled))
            indexes = _delta_indexes(got)
            assert indexes == list(range(len(indexes)))
            assert len(indexes) < FLOOD_DELTAS
            assert not any(is_turn_completed(turn_id)(m) for m in got)
        # The healthy client is still served.
        assert (await healthy.result("thread/loaded/list", {}))["data"] == [thread_id]
