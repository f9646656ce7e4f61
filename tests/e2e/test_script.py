"""``--script FILE`` over every transport: recorded turns replayed with live ids, one per
``turn/start``, and a clear failed turn once the recording runs out."""

from __future__ import annotations

import pytest

from tests.conftest import DATA_DIR
from tests.e2e._harness import open_bridge

pytestmark = pytest.mark.anyio

SCRIPT = DATA_DIR / "scripts" / "two_turns.jsonl"
RECORDED_THREAD = "01a2aaaa-0000-7000-8000-000000000001"
RECORDED_TURNS = ("01a2aaaa-0000-7000-8000-0000000000a1", "01a2aaaa-0000-7000-8000-0000000000a2")


async def test_each_turn_start_plays_the_next_recorded_turn_with_live_ids(kind: str) -> None:
    async with open_bridge(kind, script=SCRIPT) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        answers: list[str] = []
        for _ in RECORDED_TURNS:
            turn_id, messages = await client.run_turn(thread_id, "ignored live input")
            for message in messages:
                text = str(message)
                assert RECORDED_THREAD not in text
                assert all(recorded not in text for recorded in RECORDED_TURNS)
                params = message.get("params", {})
                assert params.get("threadId", thread_id) == thread_id
                assert params.get("turnId", turn_id) == turn_id
            turn = messages[-1]["params"]["turn"]
            assert (turn["id"], turn["status"]) == (turn_id, "completed")
            answers.append(turn["items"][0]["text"])
        assert answers[0].startswith('You said: "first recorded question".')
        assert answers[1].startswith('You said: "second recorded question".')

        turn_id, messages = await client.run_turn(thread_id, "one too many")
        error = next(m for m in messages if m.get("method") == "error")["params"]["error"]
        assert "has no turn left to play (it recorded 2 turns; this is turn 3" in error["message"]
        turn = messages[-1]["params"]["turn"]
        assert (turn["status"], turn["error"]["message"]) == ("failed", error["message"])

        other = await client.start_thread()
        _, messages = await client.run_turn(other, "again from the start")
        assert messages[-1]["params"]["turn"]["items"][0]["text"].startswith(
            'You said: "first recorded question".'
        )
