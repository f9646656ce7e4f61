"""Raw response events reach only the connections that started the thread with
``experimentalRawEvents`` (which needs ``experimentalApi``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from codex_app_bridge.protocol.core import (
    RESPONSE_ITEM_ADAPTER,
    EventMsg,
    RawResponseItemEvent,
    TaskCompleteEvent,
    TaskStartedEvent,
)
from codex_app_bridge.sources import TurnRequest
from tests.e2e._harness import is_turn_completed, methods, open_bridge
from tests.server.test_turn_runner import FakeSource

pytestmark = pytest.mark.anyio

ITEM = RESPONSE_ITEM_ADAPTER.validate_python(
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}
)


async def turn(request: TurnRequest) -> AsyncIterator[EventMsg]:
    yield TaskStartedEvent(turn_id=request.turn_id)
    yield RawResponseItemEvent(item=ITEM)
    yield TaskCompleteEvent(turn_id=request.turn_id, last_agent_message="hi")


@pytest.mark.parametrize(("raw", "expected"), [(True, 1), (False, 0)])
async def test_raw_response_items_are_opt_in(raw: bool, expected: int) -> None:
    async with open_bridge("memory", source=FakeSource(turn)) as bridge:
        client = await bridge.connect()
        await client.initialize(experimentalApi=True)
        thread_id = (await client.result("thread/start", {"experimentalRawEvents": raw}))["thread"][
            "id"
        ]
        turn_id = await client.start_turn(thread_id, "hi")
        messages = await client.until(is_turn_completed(turn_id))
        raw_items = [m for m in messages if m.get("method") == "rawResponseItem/completed"]
        assert len(raw_items) == expected
        if raw_items:
            params = raw_items[0]["params"]
            assert (params["threadId"], params["turnId"]) == (thread_id, turn_id)
            assert params["item"]["content"][0]["text"] == "hi"
        assert methods(messages)[-1] == "turn/completed"
