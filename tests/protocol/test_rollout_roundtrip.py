"""Rollout lines: every line the real 0.163.0 binary wrote parses and is written back unchanged.

"Unchanged" means equal as JSON values (key order aside), with the same null-versus-absent
choices as the binary. Unknown line types and unknown events survive verbatim.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from codex_app_bridge.protocol.core import (
    ROLLOUT_LINE_ADAPTER,
    CompactedLine,
    EventMsgLine,
    ResponseItemLine,
    RolloutParseError,
    SessionMetaLine,
    ThreadRolledBackEvent,
    TokenUsageRecordLine,
    TurnContextLine,
    UnknownEventMsg,
    UnknownResponseItem,
    UnknownRolloutLine,
    UnknownTurnItem,
    WorldStateLine,
    core_json_schemas,
    dump_rollout_line,
    dump_rollout_record,
    iter_rollout_jsonl,
    parse_rollout_line,
)
from tests.conftest import CAPTURES_DIR

ROLLOUT_FILES = sorted(CAPTURES_DIR.glob("*/rollout*.jsonl"))

# Pinned so that a capture file that goes missing (or is added) fails loudly instead of
# silently shrinking what the round-trip proves.
EXPECTED_ROLLOUT_FILES = 10
EXPECTED_ROLLOUT_LINES = 144


def _captured_lines() -> list[tuple[str, bytes]]:
    lines: list[tuple[str, bytes]] = []
    for path in ROLLOUT_FILES:
        for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
            lines.append((f"{path.parent.name}/{path.name}:{number}", raw))
    return lines


CAPTURED_LINES = _captured_lines()


def _roundtrip(raw: bytes | str) -> Any:
    return json.loads(dump_rollout_line(parse_rollout_line(raw)))


def test_every_capture_rollout_file_and_line_is_checked() -> None:
    assert len(ROLLOUT_FILES) == EXPECTED_ROLLOUT_FILES
    assert len(CAPTURED_LINES) == EXPECTED_ROLLOUT_LINES


@pytest.mark.parametrize(("where", "raw"), CAPTURED_LINES, ids=[w for w, _ in CAPTURED_LINES])
def test_captured_rollout_line_reserializes_to_the_same_json(where: str, raw: bytes) -> None:
    assert _roundtrip(raw) == json.loads(raw), where


# the lines the rollout writer makes from a payload model (``RolloutWriter.append_record``)
RECORD_LINES = (SessionMetaLine, EventMsgLine, ResponseItemLine, CompactedLine, TurnContextLine)
RECORD_CASES = [
    (where, raw)
    for where, raw in CAPTURED_LINES
    if isinstance(line := parse_rollout_line(raw), RECORD_LINES)
    and getattr(line, "metadata", None) is None
]


def test_the_records_cover_every_kind_of_line_the_writer_makes() -> None:
    kinds = {parse_rollout_line(raw).type for _, raw in RECORD_CASES}
    assert kinds >= {"session_meta", "event_msg", "response_item", "turn_context"}
    assert len(RECORD_CASES) >= 90


@pytest.mark.parametrize(("where", "raw"), RECORD_CASES, ids=[w for w, _ in RECORD_CASES])
def test_a_record_of_a_trusted_payload_is_the_bytes_of_its_line(where: str, raw: bytes) -> None:
    line = parse_rollout_line(raw)
    assert isinstance(line, RECORD_LINES)
    record = dump_rollout_record(
        line.type, line.payload, timestamp=line.timestamp, ordinal=line.ordinal
    )
    assert record == dump_rollout_line(line), where


@pytest.mark.parametrize(("where", "raw"), CAPTURED_LINES, ids=[w for w, _ in CAPTURED_LINES])
def test_captured_rollout_line_parses_into_a_known_model(where: str, raw: bytes) -> None:
    line = parse_rollout_line(raw)
    assert not isinstance(line, UnknownRolloutLine), where
    if isinstance(line, EventMsgLine):
        assert not isinstance(line.payload, UnknownEventMsg), where
        item = getattr(line.payload, "item", None)
        assert not isinstance(item, UnknownTurnItem), where
    if isinstance(line, ResponseItemLine):
        assert not isinstance(line.payload, UnknownResponseItem), where


def test_every_captured_rollout_line_validates_against_the_exported_schema() -> None:
    validator = jsonschema.Draft202012Validator(core_json_schemas()["RolloutLine"])
    invalid = [where for where, raw in CAPTURED_LINES if not validator.is_valid(json.loads(raw))]
    assert invalid == []


def test_captured_line_types_map_to_their_line_models() -> None:
    seen: dict[str, set[str]] = {}
    for _, raw in CAPTURED_LINES:
        line = parse_rollout_line(raw)
        seen.setdefault(line.type, set()).add(type(line).__name__)
    assert seen == {
        "session_meta": {SessionMetaLine.__name__},
        "response_item": {ResponseItemLine.__name__},
        "event_msg": {EventMsgLine.__name__},
        "turn_context": {TurnContextLine.__name__},
        "world_state": {WorldStateLine.__name__},
        "token_usage_record": {TokenUsageRecordLine.__name__},
    }


def test_captured_session_meta_exposes_thread_id_and_keeps_unknown_keys() -> None:
    raw = (CAPTURES_DIR / "plain" / "rollout.jsonl").read_bytes().splitlines()[0]
    line = parse_rollout_line(raw)
    assert isinstance(line, SessionMetaLine)
    assert line.ordinal == 0
    assert line.payload.thread_id == json.loads(raw)["payload"]["session_id"]
    assert line.payload.cli_version == "0.163.0"
    assert (line.payload.model_extra or {})["history_mode"] == "paginated"


def test_whole_rollout_file_parses_line_by_line_in_order() -> None:
    path = CAPTURES_DIR / "shell" / "rollout.jsonl"
    lines = list(iter_rollout_jsonl(path.read_bytes()))
    assert [line.ordinal for line in lines] == list(range(len(lines)))
    assert len(lines) == len(path.read_bytes().splitlines())


def test_blank_lines_in_a_rollout_file_are_skipped() -> None:
    data = b'\n{"timestamp":"t","type":"event_msg","payload":{"type":"turn_diff","unified_diff":""}}\n\n'
    assert [line.type for line in iter_rollout_jsonl(data)] == ["event_msg"]


def test_malformed_line_in_a_rollout_file_names_its_line_number() -> None:
    data = b'{"timestamp":"t","type":"world_state","payload":{"full":true,"state":{}}}\n{"type":\n'
    with pytest.raises(RolloutParseError) as caught:
        list(iter_rollout_jsonl(data))
    assert caught.value.line_number == 2
    assert isinstance(caught.value.error, ValidationError)


# Examples from spec/core-projection.md section 4.6 (older writers: no ordinal).
SPEC_LINES = [
    '{"timestamp":"2025-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"message",'
    '"role":"user","content":[{"type":"input_text","text":"u1"}]}}',
    '{"timestamp":"2025-01-01T00:00:01.000Z","type":"event_msg","payload":'
    '{"type":"thread_rolled_back","num_turns":1}}',
]


@pytest.mark.parametrize("raw", SPEC_LINES)
def test_spec_rollout_line_without_ordinal_round_trips(raw: str) -> None:
    assert _roundtrip(raw) == json.loads(raw)


def test_thread_rolled_back_line_carries_the_turn_count() -> None:
    line = parse_rollout_line(SPEC_LINES[1])
    assert isinstance(line, EventMsgLine)
    assert line.payload == ThreadRolledBackEvent(num_turns=1)


def test_legacy_compacted_line_gains_the_two_fields_the_binary_always_writes() -> None:
    raw = (
        '{"timestamp":"2025-01-01T00:00:02.000Z","type":"compacted",'
        '"payload":{"message":"summary","replacement_history":[]}}'
    )
    line = parse_rollout_line(raw)
    assert isinstance(line, CompactedLine)
    assert line.payload.replacement_history == []
    expected = json.loads(raw)
    expected["payload"] |= {"compaction_response_id": None, "latest_token_usage_record": None}
    assert _roundtrip(raw) == expected


def test_compacted_line_with_window_chain_round_trips() -> None:
    payload = {
        "message": "summary",
        "replacement_history": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "u"}]}
        ],
        "window_number": 2,
        "first_window_id": "w1",
        "previous_window_id": "w1",
        "window_id": "w2",
        "compaction_response_id": "resp_1",
        "latest_token_usage_record": None,
    }
    raw = json.dumps({"timestamp": "t", "ordinal": 7, "type": "compacted", "payload": payload})
    assert _roundtrip(raw) == json.loads(raw)
    line = parse_rollout_line(raw)
    assert isinstance(line, CompactedLine)
    record = dump_rollout_record("compacted", line.payload, timestamp="t", ordinal=7)
    assert record == dump_rollout_line(line)


@pytest.mark.parametrize(
    "line",
    [
        {"timestamp": "t", "ordinal": 3, "type": "future_kind", "payload": {"x": [1, None]}},
        {"timestamp": "t", "type": "future_kind", "payload": "just a string", "extra": True},
        {"type": "no_timestamp_either", "payload": None},
    ],
    ids=["object-payload", "string-payload-and-extra-key", "no-timestamp"],
)
def test_unknown_rollout_line_type_survives_unchanged(line: dict[str, Any]) -> None:
    parsed = parse_rollout_line(json.dumps(line))
    assert isinstance(parsed, UnknownRolloutLine)
    assert _roundtrip(json.dumps(line)) == line


@pytest.mark.parametrize(
    "line",
    [
        {
            "timestamp": "t",
            "type": "inter_agent_communication",
            "payload": {
                "author": "/root",
                "recipient": "/root/worker",
                "other_recipients": [],
                "content": "continue",
                "trigger_turn": True,
            },
        },
        {
            "timestamp": "t",
            "type": "inter_agent_communication_metadata",
            "payload": {"trigger_turn": False},
        },
        {"timestamp": "t", "type": "security_risk_score", "payload": {"score": 3}},
        {"timestamp": "t", "type": "realtime_item", "payload": {"kind": "x", "id": "r1"}},
        {"timestamp": "t", "type": "retained_context", "payload": {"entries": []}},
        {
            "timestamp": "t",
            "type": "rollout_reference",
            "payload": {
                "rollout_path": "/h/.codex/sessions/r.jsonl",
                "thread_id": "T",
                "max_depth": 8,
            },
        },
    ],
    ids=lambda line: line["type"],
)
def test_other_known_rollout_line_types_round_trip(line: dict[str, Any]) -> None:
    parsed = parse_rollout_line(json.dumps(line))
    assert not isinstance(parsed, UnknownRolloutLine)
    assert _roundtrip(json.dumps(line)) == line


def test_unknown_event_inside_a_rollout_line_survives_unchanged() -> None:
    line = {
        "timestamp": "t",
        "ordinal": 9,
        "type": "event_msg",
        "payload": {"type": "brand_new_event", "nested": {"a": None}, "list": [1, "two"]},
    }
    parsed = parse_rollout_line(json.dumps(line))
    assert isinstance(parsed, EventMsgLine)
    assert isinstance(parsed.payload, UnknownEventMsg)
    assert _roundtrip(json.dumps(line)) == line


def test_malformed_known_rollout_line_gives_a_validation_error_with_its_location() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_rollout_line('{"timestamp":"t","type":"session_meta","payload":{"cwd":"/"}}')
    locations = {tuple(error["loc"]) for error in caught.value.errors()}
    assert ("session_meta", "payload", "id") in locations


@pytest.mark.parametrize("raw", ['{"timestamp":"t"}', "[1, 2]", '{"type": 5}'])
def test_rollout_line_without_a_string_type_is_rejected_clearly(raw: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ROLLOUT_LINE_ADAPTER.validate_json(raw)
    assert caught.value.errors()[0]["type"] == "missing_tag"


def test_dump_of_a_rollout_line_is_compact_json_bytes() -> None:
    dumped = dump_rollout_line(parse_rollout_line(SPEC_LINES[1]))
    assert isinstance(dumped, bytes)
    assert b"\n" not in dumped


def test_rollout_files_are_the_capture_selection_documented_in_the_readme() -> None:
    readme = (CAPTURES_DIR / "README.md").read_text()
    for path in ROLLOUT_FILES:
        assert f"| {path.parent.name} |" in readme, Path(path).parent.name
