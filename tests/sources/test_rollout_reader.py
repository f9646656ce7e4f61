"""``RolloutReader`` (the rules ``map`` applies): how long a turn is buffered before its lines go.

A 0.163.0 turn records item events, which decides the response-item rule: what was buffered goes
at the first item event and every later line goes as it comes, so a long turn is never held. An
older turn (no item events) is held to its end, where its response items become recorded items.
"""

from __future__ import annotations

from typing import Any

from codex_app_bridge.protocol.core import RawResponseItemEvent
from codex_app_bridge.sources import RolloutEntry, RolloutReader

THREAD = "01a2cccc-0000-7000-8000-000000000001"
TURN = "01a2dddd-0000-7000-8000-000000000001"
USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
ITEM_COMPLETED = {
    "type": "item_completed",
    "thread_id": THREAD,
    "turn_id": TURN,
    "item": {"type": "UserMessage", "id": "u1", "content": [{"type": "text", "text": "hi"}]},
}
DELTA = {
    "type": "agent_message_content_delta",
    "thread_id": THREAD,
    "turn_id": TURN,
    "item_id": "m1",
    "delta": "w ",
}


def event(payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "event_msg", "payload": payload}


def kinds(entries: list[RolloutEntry]) -> list[str]:
    return ["item" if entry.envelope is None else entry.envelope.msg.type for entry in entries]


def test_a_turn_with_item_events_goes_line_by_line_once_the_first_one_arrives() -> None:
    reader = RolloutReader()
    assert reader.feed(1, event({"type": "task_started", "turn_id": TURN})) == []
    assert reader.feed(2, {"type": "response_item", "payload": USER}) == []
    released = reader.feed(3, event(ITEM_COMPLETED))
    assert kinds(released) == ["task_started", "raw_response_item", "item_completed"]
    assert [entry.number for entry in released] == [1, 2, 3]
    for number in range(4, 1004):
        assert kinds(reader.feed(number, event(DELTA))) == ["agent_message_content_delta"]
    (raw,) = reader.feed(1004, {"type": "response_item", "payload": USER})
    assert raw.envelope is not None
    assert isinstance(raw.envelope.msg, RawResponseItemEvent)
    assert kinds(reader.feed(1005, event({"type": "task_complete", "turn_id": TURN}))) == [
        "task_complete"
    ]
    assert reader.flush() == []


def test_a_turn_without_item_events_is_held_to_its_end_and_records_its_items() -> None:
    reader = RolloutReader()
    assert reader.feed(1, event({"type": "task_started", "turn_id": TURN})) == []
    assert reader.feed(2, {"type": "response_item", "payload": USER}) == []
    assert reader.feed(3, event(DELTA)) == []
    ended = reader.feed(4, event({"type": "task_complete", "turn_id": TURN}))
    assert kinds(ended) == ["task_started", "item", "agent_message_content_delta", "task_complete"]
    assert ended[1].turn_id == TURN
    # the next turn starts undecided again
    assert reader.feed(5, event({"type": "task_started", "turn_id": "t2"})) == []
    assert kinds(reader.flush()) == ["task_started"]
