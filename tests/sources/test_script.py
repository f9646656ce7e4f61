"""Script sources: parsing with line-numbered errors, turn grouping, id rewriting, pacing and the
failed turn once the recording runs out."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from codex_app_bridge.protocol.core import EventMsg, TextUserInput
from codex_app_bridge.sources import (
    ScriptError,
    ScriptPacing,
    ScriptSource,
    TurnRequest,
    load_script,
    parse_script,
)
from tests.conftest import DATA_DIR

pytestmark = pytest.mark.anyio


def line(turn: str, msg: dict[str, object], **extra: object) -> bytes:
    return orjson.dumps({"id": turn, "msg": msg, **extra})


def started(turn: str) -> dict[str, object]:
    return {"type": "task_started", "turn_id": turn}


def complete(turn: str) -> dict[str, object]:
    return {"type": "task_complete", "turn_id": turn, "last_agent_message": None}


def request(turn_index: int, *, thread: str = "LIVE-T", turn: str = "LIVE-U") -> TurnRequest:
    return TurnRequest(
        thread_id=thread,
        turn_id=turn,
        input=[TextUserInput(text="x")],
        user_message_id="m",
        turn_index=turn_index,
        model="m",
        cwd="/",
    )


async def play(source: ScriptSource, req: TurnRequest) -> list[EventMsg]:
    return [event async for event in source.turn(req)]


def test_turns_open_at_task_started_or_at_a_new_id_after_an_ended_turn() -> None:
    data = b"\n".join(
        [
            line("a", {"type": "warning", "message": "before"}),
            line("a", started("a")),
            line("a", complete("a")),
            b"",
            line("b", {"type": "agent_message_content_delta", "item_id": "i", "delta": "d"}),
            line("b", complete("b")),
            line("c", started("c")),
            line("c", {"type": "never_heard_of_it", "x": 1}),
        ]
    )
    turns, _ = parse_script(data)
    assert [(t.turn_id, [e.msg["type"] for e in t.events]) for t in turns] == [
        ("a", ["warning", "task_started", "task_complete"]),
        ("b", ["agent_message_content_delta", "task_complete"]),
        ("c", ["task_started", "never_heard_of_it"]),
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"id":"a","msg":{"type":"warning","message":"x"}}\nnot json', "line 2: not JSON"),
        (b"[1]", "line 1: expected an object {id, msg}"),
        (b'{"id":1,"msg":{}}', "line 1: expected an event envelope {id: string, msg: object}"),
        (b'{"id":"a","msg":{"type":"task_started"}}', "line 1: invalid 'task_started' event"),
    ],
)
def test_a_bad_line_is_reported_with_its_number(data: bytes, message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        parse_script(data, name="s.jsonl")


def test_loading_reports_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="cannot read the script"):
        load_script(tmp_path / "missing.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(ScriptError, match="holds no events"):
        load_script(empty)


async def test_playing_rewrites_recorded_ids_everywhere() -> None:
    source = load_script(DATA_DIR / "scripts" / "two_turns.jsonl")
    assert source.thread_ids == {"01a2aaaa-0000-7000-8000-000000000001"}
    events = await play(source, request(1))
    dumped = b"".join(
        orjson.dumps(event.model_dump(mode="json", by_alias=True)) for event in events
    )
    assert b"01a2aaaa-0000-7000-8000-000000000001" not in dumped
    assert b"01a2aaaa-0000-7000-8000-0000000000a2" not in dumped
    assert events[0].turn_id == "LIVE-U"  # type: ignore[union-attr]
    assert events[1].thread_id == "LIVE-T"  # type: ignore[union-attr]
    assert events[-1].type == "task_complete"


async def test_running_out_of_turns_plays_a_clear_failed_turn() -> None:
    source = ScriptSource(parse_script(line("a", started("a")))[0], name="one.jsonl")
    events = await play(source, request(1))
    assert [event.type for event in events] == ["task_started", "error", "task_complete"]
    message = events[1].message  # type: ignore[union-attr]
    assert message == (
        "codex-app-bridge: the script one.jsonl has no turn left to play "
        "(it recorded 1 turn; this is turn 2 of the thread)"
    )
    assert events[2].error.message == message  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "pacing"),
    [
        ("recorded", ScriptPacing(recorded=True)),
        ("recorded:4", ScriptPacing(recorded=True, speed=4.0)),
        ("0.25", ScriptPacing(delay=0.25)),
        ("0", ScriptPacing(delay=0.0)),
    ],
)
def test_pacing_is_parsed(text: str, pacing: ScriptPacing) -> None:
    assert ScriptPacing.parse(text) == pacing


@pytest.mark.parametrize("text", ["-1", "fast", "recorded:0", "recorded:x", "inf"])
def test_bad_pacing_is_refused(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - messages are tested through the CLI
        ScriptPacing.parse(text)


def test_recorded_gaps_are_capped_and_scaled() -> None:
    recorded = ScriptPacing(recorded=True, speed=2.0, max_gap=5.0)
    assert recorded.wait_before(1.0, 2.0) == 0.5
    assert recorded.wait_before(1.0, 100.0) == 2.5
    assert recorded.wait_before(2.0, 1.0) == 0.0
    assert recorded.wait_before(None, 1.0) == 0.0
    assert ScriptPacing(delay=0.1).wait_before(None, None) == 0.1
    assert ScriptPacing().wait_before(1.0, 9.0) == 0.0


def test_recording_times_come_from_t_or_iso_timestamps() -> None:
    data = b"\n".join(
        [
            line("a", started("a"), t=1.5),
            line("a", complete("a"), timestamp="2026-11-30T00:00:01.250Z"),
        ]
    )
    [turn], _ = parse_script(data)
    assert turn.events[0].at == 1.5
    expected = datetime(2026, 11, 30, 0, 0, 1, 250_000, tzinfo=UTC).timestamp()
    assert turn.events[1].at == expected
