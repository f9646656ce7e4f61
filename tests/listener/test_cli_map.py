"""``codex-app-bridge map``: envelopes or rollouts in, one subscribed client's notifications out."""

from __future__ import annotations

import io
import subprocess
from typing import Any

import anyio
import orjson
import pytest

from codex_app_bridge.cli._map import DEFAULT_THREAD_ID, MapOptions, map_lines
from tests.conftest import CAPTURES_DIR, bridge_command, bridge_env
from tests.listener.support import (
    TURN,
    agent_message_item,
    item_completed,
    task_complete,
    task_started,
)


def lines(*values: Any) -> list[tuple[int, bytes]]:
    return [
        (n, v if isinstance(v, bytes) else orjson.dumps(v)) for n, v in enumerate(values, start=1)
    ]


def run_map(numbered: list[tuple[int, bytes]], **options: Any) -> tuple[list[Any], int]:
    out = io.BytesIO()
    opts = MapOptions(**{"timestamps": False, **options})
    bad = anyio.run(map_lines, numbered, opts, out)
    return [orjson.loads(line) for line in out.getvalue().splitlines()], bad


def env(msg: dict[str, Any], turn_id: str = TURN) -> dict[str, Any]:
    return {"id": turn_id, "msg": msg}


def rollout(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-11-30T00:00:00.000Z", "type": kind, "payload": payload}


def test_envelopes_in_notifications_out_as_the_server_writes_them() -> None:
    result = subprocess.run(
        [*bridge_command(), "map", "--thread-id", "T-1"],
        input=b"\n".join(orjson.dumps(env(m)) for m in (task_started(), task_complete())) + b"\n",
        capture_output=True,
        env=bridge_env(),
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [n["method"] for n in out] == [
        "thread/status/changed",
        "turn/started",
        "thread/readState/changed",
        "thread/status/changed",
        "turn/completed",
    ]
    assert all(list(n) == ["method", "params", "emittedAtMs"] for n in out)
    assert all(isinstance(n["emittedAtMs"], int) for n in out)
    assert {n["params"]["threadId"] for n in out} == {"T-1"}


def test_bad_lines_are_reported_with_their_numbers_and_the_rest_is_processed() -> None:
    body = b"\n".join(
        [
            orjson.dumps(env(task_started())),
            b"{not json",
            b"[1, 2]",
            b'{"neither": true}',
            orjson.dumps({"id": 5, "msg": {"type": "warning", "message": "x"}}),
            orjson.dumps(rollout("event_msg", {"type": "warning"})),
            b"",
            orjson.dumps(env({"type": "warning", "message": "still here"})),
        ]
    )
    result = subprocess.run(
        [*bridge_command(), "map", "--no-timestamps", "-"],
        input=body,
        capture_output=True,
        env=bridge_env(),
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    errors = result.stderr.decode().splitlines()
    assert [e.split(":")[1].strip() for e in errors] == [
        "line 2",
        "line 3",
        "line 4",
        "line 5",
        "line 6",
    ]
    assert "not JSON" in errors[0]
    out = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [n["method"] for n in out] == ["thread/status/changed", "turn/started", "warning"]
    assert out[-1]["params"]["message"] == "still here"


def test_missing_file_is_a_usage_error() -> None:
    result = subprocess.run(
        [*bridge_command(), "map", "/nonexistent/events.jsonl"],
        capture_output=True,
        env=bridge_env(),
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert b"cannot read" in result.stderr


def test_default_thread_id_and_timestamps_flag() -> None:
    out, bad = run_map(lines(env({"type": "warning", "message": "w"})), timestamps=True)
    assert bad == 0
    assert out[0]["params"]["threadId"] == DEFAULT_THREAD_ID
    assert "emittedAtMs" in out[0]
    out, _ = run_map(lines(env({"type": "warning", "message": "w"})))
    assert out == [{"method": "warning", "params": {"threadId": DEFAULT_THREAD_ID, "message": "w"}}]


def test_unknown_events_are_noted_but_are_not_bad_lines(capsys: pytest.CaptureFixture[str]) -> None:
    out, bad = run_map(
        lines(env({"type": "future_event"}), env({"type": "warning", "message": "w"}))
    )
    assert bad == 0
    assert [n["method"] for n in out] == ["warning"]
    assert "line 1: note: event skipped" in capsys.readouterr().err


def test_a_request_is_a_line_of_its_own_after_its_item_and_a_failed_conversion_is_a_bad_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    approval = {"type": "exec_approval_request", "call_id": "c", "command": ["ls"], "cwd": "/"}
    unconvertible = {"type": "plan_update", "plan": [{"step": "s", "status": "no_such_status"}]}
    out, bad = run_map(lines(env(approval), env(unconvertible)))
    assert bad == 1
    assert [(n["method"], "id" in n) for n in out] == [
        ("thread/status/changed", False),
        ("item/started", False),
        ("item/commandExecution/requestApproval", True),
    ]
    assert out[-1]["id"] == 0
    assert out[-1]["params"]["itemId"] == "c"
    err = capsys.readouterr().err
    assert "line 1" not in err
    assert "map: line 2: event skipped (plan_update: " in err


def test_stateless_gives_one_line_per_event_with_null_where_the_mapper_gives_none() -> None:
    delta = {"type": "agent_message_content_delta", "item_id": "m1", "delta": "Hel"}
    out, bad = run_map(
        lines(
            env(task_started()),
            env(delta),
            rollout("session_meta", {"id": "T-9"}),
            rollout("response_item", {"type": "message", "role": "user", "content": []}),
            rollout("event_msg", delta),
        ),
        stateless=True,
        thread_id="T-2",
    )
    assert bad == 0
    assert out == [
        None,
        {
            "method": "item/agentMessage/delta",
            "params": {"threadId": "T-2", "turnId": TURN, "itemId": "m1", "delta": "Hel"},
        },
        {
            "method": "item/agentMessage/delta",
            "params": {"threadId": "T-2", "turnId": "", "itemId": "m1", "delta": "Hel"},
        },
    ]


def test_rollout_events_take_their_own_turn_id_else_the_current_turn() -> None:
    out, bad = run_map(
        lines(
            rollout("session_meta", {"id": "T-roll"}),
            rollout("event_msg", task_started("turn-A")),
            rollout("event_msg", {"type": "warning", "message": "no turn id of its own"}),
            rollout("event_msg", {"type": "turn_diff", "unified_diff": "d"}),
            rollout("event_msg", task_complete("turn-A")),
        )
    )
    assert bad == 0
    diff = next(n for n in out if n["method"] == "turn/diff/updated")
    assert diff["params"] == {"threadId": "T-roll", "turnId": "turn-A", "diff": "d"}
    assert out[-1]["params"]["turn"]["id"] == "turn-A"


def test_raw_events_flag_turns_rollout_response_items_into_raw_notifications() -> None:
    path = CAPTURES_DIR / "shell" / "rollout.jsonl"
    numbered = list(enumerate(path.read_bytes().splitlines(), start=1))
    response_items = sum(1 for _, line in numbered if orjson.loads(line)["type"] == "response_item")
    plain, _ = run_map(numbered)
    raw, bad = run_map(numbered, raw_events=True)
    assert bad == 0
    assert not any(n["method"] == "rawResponseItem/completed" for n in plain)
    raw_items = [n for n in raw if n["method"] == "rawResponseItem/completed"]
    assert len(raw_items) == response_items
    assert [n for n in raw if n["method"] != "rawResponseItem/completed"] == plain


def test_older_rollout_without_item_events_records_its_response_items() -> None:
    user = {
        "type": "message",
        "id": "msg_u",
        "role": "user",
        "content": [{"type": "input_text", "text": "Say hi"}],
    }
    assistant = {
        "type": "message",
        "id": "msg_a",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Hi!"}],
    }
    out, bad = run_map(
        lines(
            rollout("session_meta", {"id": "T-old"}),
            rollout("event_msg", task_started("turn-old")),
            rollout("response_item", user),
            rollout("event_msg", {"type": "user_message", "message": "Say hi"}),
            rollout("response_item", assistant),
            rollout("event_msg", {"type": "agent_message", "message": "Hi!"}),
            rollout("event_msg", task_complete("turn-old")),
        )
    )
    assert bad == 0
    assert [n["method"] for n in out] == [
        "thread/status/changed",
        "turn/started",
        "item/started",
        "item/completed",
        "item/started",
        "item/completed",
        "thread/readState/changed",
        "thread/status/changed",
        "turn/completed",
    ]
    # a user message gets a fresh id from Codex's projection; start and completion share it
    assert out[2]["params"]["item"]["id"] == out[3]["params"]["item"]["id"]
    assert [n["params"]["item"]["id"] for n in out[4:6]] == ["msg_a", "msg_a"]
    assert out[2]["params"]["item"]["type"] == "userMessage"
    assert out[-1]["params"]["turn"]["items"][0]["text"] == "Hi!"


def test_a_rollout_with_item_events_does_not_record_its_response_items_twice() -> None:
    assistant = {
        "type": "message",
        "id": "msg_a",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Hi!"}],
    }
    out, bad = run_map(
        lines(
            rollout("event_msg", task_started("turn-new")),
            rollout("response_item", assistant),
            rollout("event_msg", item_completed(agent_message_item("msg_a", "Hi!"), "turn-new")),
            rollout("event_msg", task_complete("turn-new")),
        )
    )
    assert bad == 0
    assert [n["method"] for n in out].count("item/completed") == 1
    assert "item/started" not in [n["method"] for n in out]
