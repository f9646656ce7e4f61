"""The bridge and the real 0.163.0 binary continue each other's threads with the same model
context: a thread one of them ran is resumed by the other, which sends the model the history
the first one recorded (and, resuming its own kind, what the first would have sent).

Each scenario runs turn one on server A, then turn two on server B resuming the thread, and
(on a copy of the home taken after turn one) turn two on A itself; both against the same mock.
"""

from __future__ import annotations

import json
import shutil
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
    real_codex_command,
    write_codex_config,
)
from tests.conftest import bridge_env

pytestmark = [pytest.mark.anyio, pytest.mark.conformance]

TIMEOUT = 120.0
JsonObject = dict[str, Any]


def _command(kind: str) -> list[str]:
    return real_codex_command() if kind == "real" else bridge_command()


async def _turn(
    kind: str, home: Path, work: Path, mock: MockResponses, thread_id: str | None, text: str
) -> tuple[str, list[JsonObject]]:
    """One turn on a fresh server of ``kind`` (a new thread, or ``thread_id`` resumed); the
    requests the mock received for it."""
    before = len(mock.requests())
    env = codex_env(home, extra={k: v for k, v in bridge_env().items() if k == "PYTHONPATH"})
    async with StdioPeer.spawn(_command(kind), env=env, cwd=str(work)) as peer:
        await peer.initialize()
        if thread_id is None:
            started = await peer.request("thread/start", {"cwd": str(work)})
        else:
            started = await peer.request("thread/resume", {"threadId": thread_id})
        thread_id = str(started["thread"]["id"])
        await peer.request(
            "turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": text}]}
        )
        await peer.wait_for(lambda m: m.get("method") == "turn/completed", timeout_s=TIMEOUT)
    return thread_id, mock.requests()[before:]


def _metadata(request: JsonObject) -> JsonObject:
    headers = {str(k).lower(): v for k, v in request["headers"].items()}
    return json.loads(headers["x-codex-turn-metadata"])


def _history_items(request: JsonObject) -> list[JsonObject]:
    """A request's input without the base-instructions message (first)."""
    return list(request["body"]["input"][1:])


def _masked(items: list[JsonObject], fresh_from: int) -> list[JsonObject]:
    """Items with the ids of those from ``fresh_from`` on masked (minted for this request)."""
    return [
        {k: v for k, v in item.items() if not (k == "id" and index >= fresh_from)}
        for index, item in enumerate(items)
    ]


async def _resume_both_ways(first: str, second: str) -> tuple[JsonObject, JsonObject, JsonObject]:
    """Turn one on ``first``; turn two on ``second`` resuming it, and on ``first`` resuming it
    (from the same home): the three first requests."""
    with MockResponses() as mock, tempfile.TemporaryDirectory() as scratch:
        mock.set_scenario("plain", text="ok")
        base = Path(scratch)
        home, work, kept = base / "home", base / "work", base / "kept"
        work.mkdir()
        write_codex_config(home, mock.base_url)
        with anyio.fail_after(TIMEOUT * 3):
            thread_id, one = await _turn(first, home, work, mock, None, "one")
            shutil.copytree(home, kept)
            _, by_second = await _turn(second, home, work, mock, thread_id, "two")
            shutil.rmtree(home)
            shutil.copytree(kept, home)
            _, by_first = await _turn(first, home, work, mock, thread_id, "two")
    return one[0], by_second[0], by_first[0]


@pytest.mark.parametrize(("first", "second"), [("real", "bridge"), ("bridge", "real")])
async def test_a_resumed_thread_sends_the_model_what_its_first_server_recorded(
    first: str, second: str
) -> None:
    one, by_second, by_first = await _resume_both_ways(first, second)
    recorded = _history_items(one)  # context, user message "one"
    # the resuming server starts from everything the first recorded: the items of turn one as
    # sent, then the model's answer, byte for byte (ids included)
    for request in (by_second, by_first):
        items = _history_items(request)
        assert items[: len(recorded)] == recorded
        answer = items[len(recorded)]
        assert (answer["type"], answer["role"], answer["id"]) == (
            "message",
            "assistant",
            "msg_plain_0",
        )
        assert items[-1]["content"] == [{"type": "input_text", "text": "two"}]
        assert _metadata(request)["history_initialization"] == "cold_resume"
    assert _metadata(one)["history_initialization"] == "new"


async def test_the_bridge_resuming_a_real_thread_sends_what_the_real_server_would() -> None:
    _, by_bridge, by_real = await _resume_both_ways("real", "bridge")
    bridge_items, real_items = _history_items(by_bridge), _history_items(by_real)
    # nothing is re-injected when the settings match: history, then the new user message
    assert len(bridge_items) == len(real_items)
    fresh = len(real_items) - 1
    assert _masked(bridge_items, fresh) == _masked(real_items, fresh)
