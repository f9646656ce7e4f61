"""The strongest oracle: the real 0.163.0 server's own notifications. Every item it completed in
the captures, taken from the rollout's core ``item_completed`` event, maps to exactly the
``item/completed`` it sent (``emittedAtMs`` aside, which the sender stamps); the same items put
back in progress map to exactly the ``item/started`` it sent."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from codex_app_bridge.mapping import item_event_to_server_notification, thread_item_from_turn_item
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import dump_dict
from tests.mapping.support import CapturedItem, captured_items, schema_errors

CAPTURED = captured_items()


def without_emitted_at(line: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in line.items() if key != "emittedAtMs"}


def test_the_captures_hold_every_kind_of_item_they_should() -> None:
    # a capture that silently stops being read (or loses its items) fails here
    kinds = Counter(pair.event.item.type for pair in CAPTURED)
    assert kinds == {
        "UserMessage": 10,
        "AgentMessage": 9,
        "Reasoning": 1,
        "CommandExecution": 1,
        "FileChange": 1,
    }


@pytest.mark.parametrize("pair", CAPTURED, ids=lambda pair: pair.label)
def test_captured_turn_item_becomes_the_thread_item_the_server_sent(pair: CapturedItem) -> None:
    item = thread_item_from_turn_item(pair.event.item)
    assert item is not None
    assert dump_dict(item) == pair.sent["completed"]["params"]["item"]


@pytest.mark.parametrize("pair", CAPTURED, ids=lambda pair: pair.label)
def test_captured_item_completed_becomes_the_notification_the_server_sent(
    pair: CapturedItem,
) -> None:
    # a rollout event_msg line has no envelope: its turn id is the payload's
    notification = item_event_to_server_notification(
        pair.event, pair.event.thread_id, pair.event.turn_id
    )
    assert notification is not None
    written = dump_dict(notification)
    assert written == without_emitted_at(pair.sent["completed"])
    assert schema_errors(written) == []


def in_progress(item: core.TurnItem) -> core.TurnItem:
    """The item as core reports it when it starts: nothing produced yet."""
    match item:
        case core.AgentMessageItem():
            return item.model_copy(update={"content": []})
        case core.ReasoningItem():
            return item.model_copy(update={"summary_text": [], "raw_content": []})
        case core.CommandExecutionItem():
            return item.model_copy(
                update={
                    "status": "in_progress",
                    "aggregated_output": None,
                    "exit_code": None,
                    "duration": None,
                }
            )
        case core.FileChangeItem():
            return item.model_copy(update={"status": None, "stdout": None, "stderr": None})
        case _:
            return item


@pytest.mark.parametrize("pair", CAPTURED, ids=lambda pair: pair.label)
def test_captured_item_put_back_in_progress_becomes_the_item_started_the_server_sent(
    pair: CapturedItem,
) -> None:
    completed = pair.event
    assert completed.started_at_ms is not None
    started = core.ItemStartedEvent(
        thread_id=completed.thread_id,
        turn_id=completed.turn_id,
        item=in_progress(completed.item),
        started_at_ms=completed.started_at_ms,
    )
    notification = item_event_to_server_notification(started, started.thread_id, started.turn_id)
    assert notification is not None
    written = dump_dict(notification)
    assert written == without_emitted_at(pair.sent["started"])
    assert schema_errors(written) == []
