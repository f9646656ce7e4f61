"""The turn runner's guarantees with misbehaving or slow sources (in memory): every turn starts
with turn/started and ends with turn/completed, interrupts and steering land where they should."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
import pytest

from codex_app_bridge.protocol.core import (
    AgentMessageContentDeltaEvent,
    AgentMessageItem,
    EventMsg,
    ItemStartedEvent,
    TaskCompleteEvent,
    TaskStartedEvent,
)
from codex_app_bridge.sources import SourceDefaults, TurnRequest
from tests.e2e._harness import Message, Session, is_turn_completed, methods, open_bridge

pytestmark = pytest.mark.anyio


class FakeSource:
    """A source whose turns are written by the test."""

    def __init__(self, script: Callable[[TurnRequest], AsyncIterator[EventMsg]]) -> None:
        self.script = script
        self.requests: list[TurnRequest] = []

    @property
    def defaults(self) -> SourceDefaults:
        return SourceDefaults(model="fake", model_provider="test")

    def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        self.requests.append(request)
        return self.script(request)


def started(request: TurnRequest) -> TaskStartedEvent:
    return TaskStartedEvent(turn_id=request.turn_id, started_at=request.started_at_ms // 1000)


def complete(request: TurnRequest, text: str | None = None) -> TaskCompleteEvent:
    return TaskCompleteEvent(turn_id=request.turn_id, last_agent_message=text)


async def _thread(client: Session) -> str:
    await client.initialize()
    thread_id = await client.start_thread()
    await client.until(lambda m: m.get("method") == "thread/started")
    return thread_id


async def test_a_source_that_raises_fails_the_turn_with_its_message() -> None:
    async def turn(request: TurnRequest) -> AsyncIterator[EventMsg]:
        yield started(request)
        raise RuntimeError("boom")

    async with open_bridge("memory", source=FakeSource(turn)) as bridge:
        client = await bridge.connect()
        thread_id = await _thread(client)
        _, messages = await client.run_turn(thread_id, "hi")
        error = next(m for m in messages if m.get("method") == "error")["params"]
        assert error["willRetry"] is False
        assert error["error"]["message"] == "codex-app-bridge: the event source failed: boom"
        turn = messages[-1]["params"]["turn"]
        assert turn["status"] == "failed"
        assert turn["error"]["message"] == error["error"]["message"]


async def test_a_source_that_stops_early_fails_the_turn_and_one_without_start_gets_one() -> None:
    async def turn(request: TurnRequest) -> AsyncIterator[EventMsg]:
        yield AgentMessageContentDeltaEvent(
            thread_id=request.thread_id, turn_id=request.turn_id, item_id="m", delta="x"
        )

    async with open_bridge("memory", source=FakeSource(turn)) as bridge:
        client = await bridge.connect()
        thread_id = await _thread(client)
        _, messages = await client.run_turn(thread_id, "hi")
        assert methods(messages)[1:3] == ["thread/status/changed", "turn/started"]
        turn_done = messages[-1]["params"]["turn"]
        assert turn_done["status"] == "failed"
        assert turn_done["error"]["message"] == (
            "codex-app-bridge: the event source ended the turn without task_complete"
        )


async def test_interrupting_a_source_that_never_produced_an_event_still_starts_and_ends_it() -> (
    None
):
    async def turn(request: TurnRequest) -> AsyncIterator[EventMsg]:
        await anyio.Event().wait()  # never set: only an interrupt gets us out
        yield started(request)

    async with open_bridge("memory", source=FakeSource(turn)) as bridge:
        client = await bridge.connect()
        thread_id = await _thread(client)
        await client.drain_pending()
        mark = len(client.received)
        turn_id = await client.start_turn(thread_id, "hi")
        reply = await client.call("turn/interrupt", {"threadId": thread_id, "turnId": turn_id})
        assert reply["result"] == {}
        await client.until(is_turn_completed(turn_id))
        assert methods(client.received[mark:]) == [
            "response",
            "thread/status/changed",
            "turn/started",
            "response",
            "thread/status/changed",
            "turn/completed",
        ]
        assert client.received[-1]["params"]["turn"]["status"] == "interrupted"


async def test_steered_input_is_fed_before_the_turns_next_event() -> None:
    release = anyio.Event()

    async def turn(request: TurnRequest) -> AsyncIterator[EventMsg]:
        yield started(request)
        await release.wait()
        item = AgentMessageItem(id="msg_1", content=[])
        yield ItemStartedEvent(
            thread_id=request.thread_id, turn_id=request.turn_id, item=item, started_at_ms=1
        )
        yield complete(request, "done")

    async with open_bridge("memory", source=FakeSource(turn)) as bridge:
        client = await bridge.connect()
        thread_id = await _thread(client)
        turn_id = await client.start_turn(thread_id, "first")
        await client.until(lambda m: m.get("method") == "turn/started")
        steer = await client.call(
            "turn/steer",
            {
                "threadId": thread_id,
                "expectedTurnId": turn_id,
                "input": [{"type": "text", "text": "more"}],
            },
        )
        assert steer["result"] == {"turnId": turn_id}
        release.set()
        rest = await client.until(is_turn_completed(turn_id))
        items = [
            m["params"]["item"]
            for m in rest
            if m.get("method") in ("item/started", "item/completed")
        ]
        assert [(item["type"], item.get("content")) for item in items[:2]] == [
            ("userMessage", [{"type": "text", "text": "more", "text_elements": []}]),
            ("userMessage", [{"type": "text", "text": "more", "text_elements": []}]),
        ]
        assert items[2]["type"] == "agentMessage"


async def test_a_turn_started_in_reaction_to_turn_completed_is_a_new_turn() -> None:
    async def turn(request: TurnRequest) -> AsyncIterator[EventMsg]:
        yield started(request)
        yield complete(request, "ok")

    source = FakeSource(turn)
    async with open_bridge("memory", source=source) as bridge:
        client = await bridge.connect()
        thread_id = await _thread(client)
        first = await client.start_turn(thread_id, "one")
        completed: list[Message] = await client.until(is_turn_completed(first))
        assert completed[-1]["params"]["turn"]["status"] == "completed"
        second = await client.start_turn(thread_id, "two")
        assert second != first
        await client.until(is_turn_completed(second))
        assert [r.turn_index for r in source.requests] == [0, 1]
        assert [r.input[0].text for r in source.requests] == ["one", "two"]  # type: ignore[union-attr]


async def test_a_source_that_cannot_even_begin_fails_the_turn_and_the_server_lives_on() -> None:
    def turn(request: TurnRequest) -> AsyncIterator[EventMsg]:
        raise ValueError(f"no turn {request.turn_index} for you")

    async with open_bridge("memory", source=FakeSource(turn)) as bridge:
        client = await bridge.connect()
        thread_id = await _thread(client)
        for index in range(2):
            _, messages = await client.run_turn(thread_id, "hi")
            turn_done = messages[-1]["params"]["turn"]
            assert turn_done["status"] == "failed"
            assert turn_done["error"]["message"] == (
                f"codex-app-bridge: the event source failed: no turn {index} for you"
            )
