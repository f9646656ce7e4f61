"""The rollout a model thread leaves has 0.163.0's lines in 0.163.0's places: after a first turn's
context its ``world_state`` and then the ``turn_context`` (a later turn: the ``turn_context``
right after ``task_started``), a ``token_usage_record`` after each response's items, and after
a compaction's ``compacted`` line a ``world_state`` and ``turn_context`` again. The reference is
the real binary's rollout in ``tests/data/captures/plain`` (its ``thread_settings_applied`` line
is not written by the bridge: KNOWN_DIFFERENCES)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from codex_app_bridge.conformance.mock_responses import MockResponses
from codex_app_bridge.conformance.real_codex import (
    StdioPeer,
    bridge_command,
    codex_env,
    write_codex_config,
)
from tests.conftest import CAPTURES_DIR, bridge_env

pytestmark = pytest.mark.anyio

TIMEOUT = 60.0
JsonObject = dict[str, Any]


def _kind(line: JsonObject) -> str:
    payload = line.get("payload")
    if line["type"] == "event_msg" and isinstance(payload, dict):
        return f"event_msg:{payload['type']}"
    return str(line["type"])


def _turns(lines: list[JsonObject]) -> list[list[str]]:
    """Line kinds, one list per turn (the lines before the first turn dropped)."""
    turns: list[list[str]] = []
    for line in lines:
        kind = _kind(line)
        if kind == "event_msg:task_started":
            turns.append([])
        if turns:
            turns[-1].append(kind)
    return turns


async def _run(scratch: Path, mock: MockResponses) -> list[JsonObject]:
    home, work = scratch / "home", scratch / "work"
    work.mkdir()
    write_codex_config(home, mock.base_url)
    env = codex_env(home, extra={k: v for k, v in bridge_env().items() if k == "PYTHONPATH"})
    with anyio.fail_after(TIMEOUT * 4):
        async with StdioPeer.spawn(
            bridge_command(), env=env, cwd=str(work), stderr_path=scratch / "stderr.log"
        ) as peer:
            await peer.initialize()
            thread_id = (await peer.request("thread/start", {"cwd": str(work)}))["thread"]["id"]
            for count, step in enumerate(("one", None, "two"), start=1):
                if step is None:
                    await peer.request("thread/compact/start", {"threadId": thread_id})
                else:
                    text = [{"type": "text", "text": step}]
                    await peer.request("turn/start", {"threadId": thread_id, "input": text})
                await peer.wait_for(
                    lambda m, n=count: (
                        m.get("method") == "turn/completed"
                        and sum(1 for x in peer.received if x.get("method") == "turn/completed")
                        >= n
                    ),
                    timeout_s=TIMEOUT,
                )
            read = await peer.request("thread/read", {"threadId": thread_id})
    text = await anyio.Path(read["thread"]["path"]).read_text(encoding="utf-8")
    return [json.loads(x) for x in text.splitlines()]


async def test_a_model_threads_rollout_has_the_binarys_lines_in_the_binarys_places() -> None:
    real = [
        json.loads(x)
        for x in (CAPTURES_DIR / "plain" / "rollout.jsonl").read_text("utf-8").splitlines()
    ]
    with MockResponses() as mock, tempfile.TemporaryDirectory() as scratch:
        mock.set_scenario("plain", text="ok")
        lines = await _run(Path(scratch), mock)
    first, compaction, second = _turns(lines)
    (real_first,) = _turns(real)
    assert first == [k for k in real_first if k != "event_msg:thread_settings_applied"]
    assert second == [
        "event_msg:task_started",
        "turn_context",
        "response_item",
        "event_msg:item_completed",
        "event_msg:item_completed",
        "response_item",
        "token_usage_record",
        "event_msg:token_count",
        "event_msg:task_complete",
    ]
    after = compaction[compaction.index("compacted") :]
    assert after[:3] == ["compacted", "world_state", "turn_context"]
    assert [line["ordinal"] for line in lines] == list(range(len(lines)))

    # the world state has the binary's layout (its texts are the bridge's own)
    def state(of: list[JsonObject]) -> JsonObject:
        return next(line["payload"] for line in of if line["type"] == "world_state")

    assert state(lines)["full"] is True
    assert sorted(state(lines)["state"]) == sorted(state(real)["state"])
    # each response's usage with the turn's and the thread's totals
    records = [line["payload"] for line in lines if line["type"] == "token_usage_record"]
    (real_record,) = [line["payload"] for line in real if line["type"] == "token_usage_record"]
    assert [sorted(r) for r in records] == [sorted(real_record)] * len(records)
    thread_id = lines[0]["payload"]["id"]
    assert {(r["thread_id"], r["session_id"]) for r in records} == {(thread_id, thread_id)}
    totals = [r["thread_token_usage"]["total_tokens"] for r in records]
    assert totals == sorted(totals)
    assert len(set(totals)) == len(totals)
    assert all(r["turn_token_usage"] == r["usage"] for r in records)  # one response per turn
