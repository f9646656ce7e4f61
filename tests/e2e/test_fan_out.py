"""Many clients on one bridge: every subscriber gets the whole ordered stream, a client that stops
reading is cut off (socket kinds) without slowing the others, bursts are answered in full."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import orjson
import pytest
from websockets.asyncio.client import ClientConnection
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
FLOOD_DELTAS = 12_000
PACE = 60
BUDGET = 1 << 20
DELTA = "x" * 1000


class FloodSource:
    """Each turn streams as many agent-message deltas of about 1 KB as its input text says,
    numbered in order, ``PACE`` of them every 10 ms (a fast model; an unpaced flood would outrun
    any reader sharing the test's event loop)."""

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
            if index and not index % PACE:
                await anyio.sleep(0.01)
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
        m for m in messages if "method" in m and m.get("params", {}).get("threadId") == thread_id
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
        # after the answer, to every connection (0.163.0): alice gets it too
        for client in (bob, alice):
            await client.until(lambda m: m.get("method") == "thread/goal/cleared")
            await client.drain_pending()
        mark = len(bob.received)
        turn_id, alice_saw = await alice.run_turn(thread_id, "300")
        await bob.until(is_turn_completed(turn_id))
        alice_stream = _thread_traffic(alice_saw, thread_id)
        bob_stream = _thread_traffic(bob.received[mark:], thread_id)
        assert alice_stream == bob_stream
        assert _delta_indexes(alice_stream) == list(range(300))
        assert alice_stream[-1]["method"] == "turn/completed"


class RawClient:
    """A bare websocket client that parses only what it is asked to read (fast enough to keep up
    with a flood; the harness's ``Session`` checks every message against the schemas)."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self._ids = iter(range(1, 1 << 30))

    async def send(self, method: str, params: Any) -> int:
        request_id = next(self._ids)
        message = {"id": request_id, "method": method, "params": params}
        await self.ws.send(orjson.dumps(message), text=True)
        return request_id

    async def read(self) -> Message:
        message = orjson.loads(await self.ws.recv(decode=False))
        assert isinstance(message, dict)
        return message

    async def call(self, method: str, params: Any) -> Message:
        request_id = await self.send(method, params)
        while True:
            message = await self.read()
            if message.get("id") == request_id and "method" not in message:
                assert "result" in message, message
                return message["result"]

    async def initialize(self, name: str) -> None:
        await self.call("initialize", {"clientInfo": {"name": name, "version": "1"}})

    async def run_turn(self, thread_id: str, text: str) -> list[Message]:
        """Everything received from ``turn/start`` up to its ``turn/completed``."""
        params = {"threadId": thread_id, "input": [{"type": "text", "text": text}]}
        await self.send("turn/start", params)
        seen: list[Message] = []
        while True:
            message = await self.read()
            seen.append(message)
            if message.get("method") == "turn/completed":
                return seen


@pytest.mark.parametrize("kind", SOCKET_KINDS)
async def test_a_stalled_reader_is_disconnected_and_a_healthy_one_gets_everything(
    kind: str,
) -> None:
    async with open_bridge(kind, source=FloodSource(), outbound_budget=BUDGET) as bridge:
        server = bridge.server
        assert server is not None
        assert bridge.open_websocket is not None
        async with bridge.open_websocket() as healthy_ws, bridge.open_websocket() as stalled_ws:
            healthy, stalled = RawClient(healthy_ws), RawClient(stalled_ws)
            await healthy.initialize("healthy")
            thread_id = (await healthy.call("thread/start", {}))["thread"]["id"]
            await healthy.run_turn(thread_id, "1")
            await stalled.initialize("stalled")
            await stalled.call("thread/resume", {"threadId": thread_id, "excludeTurns": True})
            assert server.connection_count == 2
            # From here on the stalled client reads nothing while a 12 MB turn streams: more
            # than its 1 MiB budget and the kernel's socket buffers.
            with anyio.fail_after(60):
                saw = await healthy.run_turn(thread_id, str(FLOOD_DELTAS))
            assert _delta_indexes(saw) == list(range(FLOOD_DELTAS))
            assert saw[-1]["params"]["turn"]["status"] == "completed"
            # The stalled client finds a prefix of the stream in its buffers, then the close.
            got: list[Message] = []
            with anyio.fail_after(60):
                try:
                    while True:
                        got.append(await stalled.read())
                except ConnectionClosed:
                    pass
            indexes = _delta_indexes(got)
            assert indexes == list(range(len(indexes)))
            assert len(indexes) < FLOOD_DELTAS
            assert not any(m.get("method") == "turn/completed" for m in got)
            await anyio.wait_all_tasks_blocked()
            assert server.connection_count == 1
            # The healthy client is still served.
            assert (await healthy.call("thread/loaded/list", {}))["data"] == [thread_id]


BURST = 20_000


async def test_a_burst_written_before_reading_anything_gets_every_answer(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client: Session = await bridge.connect()
        await client.initialize()
        ids = range(100, 100 + BURST)
        burst = b"".join(
            b'{"id":%d,"method":"thread/loaded/list","params":{}}\n' % request_id
            for request_id in ids
        )
        with anyio.fail_after(60):
            await client.send_raw(burst)  # everything is written before anything is read
            answers = [orjson.loads(await client.next_raw()) for _ in ids]
        assert sorted(answer["id"] for answer in answers) == list(ids)
        results = [a for a in answers if "result" in a]
        overloaded = [a for a in answers if "error" in a]
        assert all(a["result"] == {"data": [], "nextCursor": None} for a in results)
        assert all(a["error"]["code"] == -32001 for a in overloaded)
        assert len(results) + len(overloaded) == BURST
        # The connection is still in order afterwards.
        assert (await client.result("thread/loaded/list", {}))["data"] == []


@pytest.mark.parametrize("kind", SOCKET_KINDS)
async def test_the_built_in_agent_at_full_speed_follows_a_reading_socket_client(
    kind: str,
) -> None:
    # issue 23.3: at --pace 0 the agent outran the socket, so a client reading all along was
    # disconnected as slow with most of the turn undelivered
    words = 20_000
    text = " ".join(f"w{index}" for index in range(words))
    async with open_bridge(kind, pace=0.0, outbound_budget=64 << 10) as bridge:
        assert bridge.open_websocket is not None
        async with bridge.open_websocket() as ws:
            client = RawClient(ws)
            await client.initialize("reader")
            thread_id = (await client.call("thread/start", {}))["thread"]["id"]
            with anyio.fail_after(120):
                saw = await client.run_turn(thread_id, text)
    deltas = [m["params"]["delta"] for m in saw if m.get("method") == "item/agentMessage/delta"]
    (completed,) = [
        m["params"]["item"]
        for m in saw
        if m.get("method") == "item/completed" and m["params"]["item"]["type"] == "agentMessage"
    ]
    assert "".join(deltas) == completed["text"]
    assert f'"{text}".' in completed["text"]
    assert saw[-1]["params"]["turn"]["status"] == "completed"
