"""``HistoryLog``: a finished turn's events are kept encoded and read back as the same events."""

from __future__ import annotations

import json

import orjson

from codex_app_bridge.protocol.core import EventEnvelope, dump_event_envelope, parse_event_envelope
from codex_app_bridge.server._history_log import HistoryLog
from tests.conftest import probe_json

TURN = "01a2aaaa-0000-7000-8000-0000000000a1"
USAGE = {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 5, "total_tokens": 15}


def _events(turn: str) -> list[EventEnvelope]:
    msgs: list[dict[str, object]] = [
        {"type": "task_started", "turn_id": turn, "started_at": 1796000000},
        {
            "type": "item_completed",
            "thread_id": "t",
            "turn_id": turn,
            "item": {
                "type": "AgentMessage",
                "id": "msg_1",
                "content": [{"type": "Text", "text": "line one\nline two \u00e9"}],
            },
        },
        {
            "type": "token_count",
            "info": {
                "total_token_usage": USAGE,
                "last_token_usage": USAGE,
                "model_context_window": 1000,
            },
            "rate_limits": None,
        },
        {"type": "task_complete", "turn_id": turn, "last_agent_message": "line one"},
    ]
    return [parse_event_envelope(orjson.dumps({"id": turn, "msg": m})) for m in msgs]


def _wire(events: list[EventEnvelope]) -> list[bytes]:
    return [dump_event_envelope(e) for e in events]


def test_frozen_turns_read_back_as_the_same_events() -> None:
    first, second = _events(TURN), _events("turn-2")
    log = HistoryLog(first)  # a log made from events (a resume, a fork) is kept encoded at once
    for envelope in second:
        log.append(envelope)
    assert len(log) == 8
    assert log.events()[4:] == second  # not frozen yet: the models themselves
    log.freeze()
    events = log.events()
    assert _wire(events) == _wire(first + second)
    assert events == first + second
    assert events[0] is not first[0]  # built anew from the encoded turn


def test_truncate_and_copy() -> None:
    log = HistoryLog(_events(TURN))
    for envelope in _events("turn-2"):
        log.append(envelope)
    copy = log.copy()
    log.truncate(6)
    assert _wire(log.events()) == _wire((_events(TURN) + _events("turn-2"))[:6])
    log.truncate(2)
    assert _wire(log.events()) == _wire(_events(TURN)[:2])
    assert len(log) == 2
    assert len(copy) == 8  # a copy does not follow the original's cuts
    log.append(_events("turn-3")[0])
    log.freeze()
    assert [e.id for e in log.events()] == [TURN, TURN, "turn-3"]


FREEZE_PROBE = """
import json
from codex_app_bridge.protocol.core import (
    EVENT_ENVELOPE_ADAPTER, EVENT_MSG_ADAPTER, EventEnvelope, validate_event_msg,
)
from codex_app_bridge.server._history_log import HistoryLog
msgs = json.loads(input())
log = HistoryLog(
    EventEnvelope.trusted("turn-1", validate_event_msg(msg)) for msg in msgs
)
events = log.events()
print(json.dumps({
    "types": [event.msg.type for event in events],
    "built": [EVENT_ENVELOPE_ADAPTER.pydantic_complete, EVENT_MSG_ADAPTER.pydantic_complete],
}))
"""


def test_a_log_is_frozen_and_read_back_without_building_the_union_of_every_event() -> None:
    """The adapters over every event kind are built at their first use, tens of milliseconds
    (a first resume paid them, or a first turn's end): the log writes and reads each event with
    its own model."""
    msgs = [event.msg.model_dump(mode="json", by_alias=True) for event in _events(TURN)]
    report = probe_json(FREEZE_PROBE, json.dumps(msgs))
    assert report["types"] == [msg["type"] for msg in msgs]
    assert report["built"] == [False, False]
