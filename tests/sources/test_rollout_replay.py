"""Rollout replay: ``--script ROLLOUT`` plays each recorded turn as live notifications, and
``codex-app-bridge replay`` prints what one client receives; checked against what the real
0.163.0 server sent for the captured rollouts (the capture oracle's comparison, ids mapped back
from the live ones to the recorded ones)."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from codex_app_bridge.cli._replay import replay
from codex_app_bridge.sources import RolloutSource, ScriptError, index_rollout, load_script
from tests.conftest import CAPTURES_DIR, bridge_command, bridge_env
from tests.listener.test_capture_oracle import (
    CASES,
    comparable,
    real_turn_notifications,
    rollouts_by_thread,
)

TIMEOUT = 60


def _replay(path: Path, **options: Any) -> list[dict[str, Any]]:
    source = load_script(path)
    assert isinstance(source, RolloutSource)
    out = io.BytesIO()

    async def run() -> int:
        with anyio.fail_after(TIMEOUT):
            return await replay(source, out, timestamps=False, **options)

    assert anyio.run(run) == 0
    return [orjson.loads(line) for line in out.getvalue().splitlines()]


def _recorded_ids(path: Path) -> tuple[str, list[str]]:
    index = index_rollout(path)
    (thread_id,) = {line for line in index.thread_ids if line == _meta_id(path)}
    return thread_id, [span.turn_id for span in index.spans]


def _meta_id(path: Path) -> str:
    first: dict[str, Any] = orjson.loads(path.read_bytes().splitlines()[0])
    meta_id: str = first["payload"]["id"]
    return meta_id


def _with_recorded_ids(
    notifications: list[dict[str, Any]], thread_id: str, turn_ids: list[str]
) -> list[dict[str, Any]]:
    """The live thread and turn ids replaced by the recorded ones (in the order turns ran)."""
    live_thread = notifications[0]["params"]["thread"]["id"]
    live_turns = [n["params"]["turn"]["id"] for n in notifications if n["method"] == "turn/started"]
    data = orjson.dumps(notifications).decode()
    for live, recorded in [(live_thread, thread_id), *zip(live_turns, turn_ids, strict=True)]:
        data = data.replace(f'"{live}"', f'"{recorded}"')
    restored: list[dict[str, Any]] = orjson.loads(data)
    return restored


@pytest.mark.parametrize(("capture", "thread_id"), CASES, ids=[f"{c}:{t[-4:]}" for c, t in CASES])
def test_replaying_a_captured_rollout_gives_what_the_real_server_sent(
    capture: str, thread_id: str
) -> None:
    main = rollouts_by_thread(capture)[thread_id][0]
    expected = comparable(real_turn_notifications(capture)[thread_id])
    received = _replay(main)
    assert received[0]["method"] == "thread/started"
    recorded_thread, recorded_turns = _recorded_ids(main)
    assert recorded_thread == thread_id
    restored = _with_recorded_ids(received, thread_id, recorded_turns)
    assert comparable(restored[1:]) == expected
    assert sum(n["method"] == "turn/completed" for n in received) == len(recorded_turns)


def _rollout_line(kind: str, payload: dict[str, Any]) -> bytes:
    line = {"timestamp": "2026-01-01T00:00:00.000Z", "type": kind, "payload": payload}
    return orjson.dumps(line) + b"\n"


def _message(role: str, text: str) -> dict[str, Any]:
    kind = "input_text" if role == "user" else "output_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def _older_rollout(path: Path, *, bad_payload: bool = False) -> Path:
    """A rollout of a version that persisted no item events: two turns of response items."""
    lines = [_rollout_line("session_meta", {"id": "T-old", "cwd": "/"})]
    for index in range(2):
        turn = f"turn-{index}"
        lines += [
            _rollout_line("event_msg", {"type": "task_started", "turn_id": turn}),
            _rollout_line("turn_context", {"turn_id": turn, "cwd": "/"}),
            _rollout_line("response_item", _message("user", f"question {index}")),
            _rollout_line("response_item", _message("assistant", f"answer {index}")),
        ]
        if bad_payload and index == 1:
            lines.append(_rollout_line("event_msg", {"type": "item_completed"}))
        lines.append(
            _rollout_line(
                "event_msg",
                {"type": "task_complete", "turn_id": turn, "last_agent_message": "a"},
            )
        )
    path.write_bytes(b"".join(lines))
    return path


def test_an_older_rollout_records_its_response_items_as_core_does(tmp_path: Path) -> None:
    received = _replay(_older_rollout(tmp_path / "old.jsonl"))
    methods = [n["method"] for n in received]
    per_turn = [
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
    assert methods == ["thread/started", *per_turn, *per_turn]
    texts = [
        n["params"]["item"].get("text") or n["params"]["item"]["content"][0]["text"]
        for n in received
        if n["method"] == "item/completed"
    ]
    assert texts == ["question 0", "answer 0", "question 1", "answer 1"]
    live_thread = received[0]["params"]["thread"]["id"]
    assert "T-old" not in orjson.dumps(received).decode()  # recorded ids replaced by live ones
    assert all(n["params"]["threadId"] == live_thread for n in received[1:])


def test_raw_event_clients_get_each_response_item_of_a_current_rollout() -> None:
    path = CAPTURES_DIR / "shell" / "rollout.jsonl"
    received = _replay(path, raw_events=True)
    raw = [n for n in received if n["method"] == "rawResponseItem/completed"]
    recorded = [line for line in path.read_bytes().splitlines() if b'"response_item"' in line]
    assert len(raw) == len(recorded) > 0


def test_a_bad_rollout_payload_fails_its_turn_naming_the_line(tmp_path: Path) -> None:
    path = _older_rollout(tmp_path / "bad.jsonl", bad_payload=True)
    source = load_script(path)
    out = io.BytesIO()

    async def run() -> int:
        with anyio.fail_after(TIMEOUT):
            return await replay(source, out, timestamps=False)  # type: ignore[arg-type]

    assert anyio.run(run) == 1
    received = [orjson.loads(line) for line in out.getvalue().splitlines()]
    turns = [n["params"]["turn"] for n in received if n["method"] == "turn/completed"]
    assert [t["status"] for t in turns] == ["completed", "failed"]
    assert f"{path}: line 11: invalid event_msg payload" in turns[1]["error"]["message"]


def test_a_rollout_without_a_turn_is_refused_when_loaded() -> None:
    fork_segment = next((CAPTURES_DIR / "revert_fork").glob("rollout-*_*.jsonl"))
    with pytest.raises(ScriptError, match="the rollout holds no turn"):
        load_script(fork_segment)


def test_replay_cli_prints_one_clients_notifications_and_exits_0() -> None:
    path = CAPTURES_DIR / "plain" / "rollout.jsonl"
    proc = subprocess.run(
        [*bridge_command(), "replay", str(path), "--no-timestamps"],
        env=bridge_env(),
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert lines[0]["method"] == "thread/started"
    assert lines[-1]["method"] == "turn/completed"
    assert lines[-1]["params"]["turn"]["status"] == "completed"
    assert all("emittedAtMs" not in line for line in lines)


def test_replay_cli_refuses_a_file_it_cannot_use(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*bridge_command(), "replay", str(tmp_path / "missing.jsonl")],
        env=bridge_env(),
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"replay: " in proc.stderr
    assert b"cannot read" in proc.stderr


@pytest.mark.anyio
async def test_serve_script_takes_a_rollout() -> None:
    from tests.e2e._harness import open_bridge

    path = CAPTURES_DIR / "reasoning" / "rollout.jsonl"
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("stdio", script=path) as bridge:
            client = await bridge.connect()
            await client.initialize()
            thread_id = await client.start_thread()
            _, messages = await client.run_turn(thread_id, "replay")
            reasoning = [
                m["params"]["item"]
                for m in messages
                if m.get("method") == "item/completed"
                and m["params"]["item"]["type"] == "reasoning"
            ]
            assert len(reasoning) == 1
            assert messages[-1]["params"]["turn"]["status"] == "completed"
            _, messages = await client.run_turn(thread_id, "no turn left")
            assert messages[-1]["params"]["turn"]["status"] == "failed"
            await client.close()
