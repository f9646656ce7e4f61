"""The strongest oracle: every item the real 0.163.0 server completed in the captures, taken from
the rollout's core ``item_completed`` event, becomes exactly the thread item the server sent."""

from __future__ import annotations

from collections import Counter

import pytest

from codex_app_bridge.mapping import thread_item_from_turn_item
from codex_app_bridge.protocol.v2 import dump_dict
from tests.mapping.support import CapturedItem, captured_items

CAPTURED = captured_items()


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
    assert dump_dict(item) == pair.sent["params"]["item"]
