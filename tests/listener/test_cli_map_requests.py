"""``map`` and server requests: an approval turn maps offline as a live client sees it, and as
the real 0.163.0 server sent it (``tests/data/request_captures/shell_approval``)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from codex_app_bridge.cli._map import MapOptions, map_lines
from codex_app_bridge.sources import InjectedSource
from tests.e2e._harness import is_turn_completed, open_bridge

CAPTURE = Path(__file__).resolve().parents[1] / "data" / "request_captures" / "shell_approval"
THREAD = "01a232f3-12d2-7671-9b54-bce77587159d"
TURN = "01a232f3-12de-7f11-a16e-2695595a4edf"
CALL = "call_shell_1"
TIMEOUT = 20

pytestmark = pytest.mark.anyio

# what core emits around the approval of ``touch approved.txt`` (the request's params are the
# captured request's; core's own item_started follows the approval, with its process id)
APPROVAL = {
    "type": "exec_approval_request",
    "call_id": CALL,
    "turn_id": TURN,
    "started_at_ms": 1_796_151_120_735,
    "command": ["/bin/bash", "-lc", "touch approved.txt"],
    "cwd": "/home/dev/project",
    "proposed_execpolicy_amendment": ["touch", "approved.txt"],
    "parsed_cmd": [{"type": "unknown", "cmd": "touch approved.txt"}],
}


def _approval_turn(thread_id: str = THREAD, turn_id: str = TURN) -> list[bytes]:
    """The captured turn's events as envelopes (its rollout's ``event_msg`` lines), with the
    approval and core's ``item_started`` of the command before the command's ``item_completed``."""
    events: list[dict[str, Any]] = []
    for raw in (CAPTURE / "rollout.jsonl").read_bytes().splitlines():
        line = orjson.loads(raw)
        if line["type"] != "event_msg":
            continue
        msg = line["payload"]
        item = msg.get("item", {})
        if msg["type"] == "item_completed" and item.get("id") == CALL:
            started = {
                "type": "item_started",
                "thread_id": THREAD,
                "turn_id": TURN,
                "item": {**item, "status": "in_progress", "exit_code": None, "duration": None},
                "started_at_ms": msg["started_at_ms"],
            }
            events += [APPROVAL, started]
        events.append(msg)
    text = orjson.dumps([{"id": TURN, "msg": msg} for msg in events]).decode()
    rewritten = orjson.loads(text.replace(THREAD, thread_id).replace(TURN, turn_id))
    return [orjson.dumps(envelope) for envelope in rewritten]


async def _map(envelopes: list[bytes], thread_id: str = THREAD) -> list[dict[str, Any]]:
    out = io.BytesIO()
    options = MapOptions(thread_id=thread_id, timestamps=False)
    bad = await map_lines(list(enumerate(envelopes, start=1)), options, out)
    assert bad == 0
    return [orjson.loads(line) for line in out.getvalue().splitlines()]


def _comparable(message: dict[str, Any]) -> dict[str, Any]:
    """A message without the times a server's clock gives it (when it was sent, and when the
    approval's item started)."""
    message = {k: v for k, v in message.items() if k != "emittedAtMs"}
    if message.get("method") == "item/started":
        message["params"] = {k: v for k, v in message["params"].items() if k != "startedAtMs"}
    return message


def _command_started(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        m["params"]["item"]
        for m in messages
        if m.get("method") == "item/started" and m["params"]["item"]["id"] == CALL
    ]


async def test_an_approval_maps_to_the_request_after_its_item_as_0_163_0_sends_them() -> None:
    mapped = [_comparable(m) for m in await _map(_approval_turn())]
    real = [
        _comparable(orjson.loads(line))
        for line in (CAPTURE / "notifications.jsonl").read_bytes().splitlines()
    ]
    request = next(i for i, m in enumerate(real) if "id" in m and "method" in m)
    asked = real[request - 2 : request + 1]  # status waitingOnApproval, item/started, request
    assert [m["method"] for m in asked] == [
        "thread/status/changed",
        "item/started",
        "item/commandExecution/requestApproval",
    ]
    at = mapped.index(asked[-1])
    assert mapped[at - 2 : at + 1] == asked
    # one item/started for the command, the approval's (core's own is not sent again)
    assert _command_started(mapped) == _command_started(real)
    assert _command_started(mapped)[0]["processId"] is None
    completed = [m for m in real if m.get("method") == "item/completed"]
    assert [m for m in mapped if m in completed] == completed
    # nobody answers offline: the turn's end resolves the request, before turn/completed
    assert [m["method"] for m in mapped[-4:]] == [
        "serverRequest/resolved",
        "thread/readState/changed",
        "thread/status/changed",
        "turn/completed",
    ]


async def test_an_approval_turn_maps_offline_as_a_live_client_that_does_not_answer_sees_it() -> (
    None
):
    source = InjectedSource()
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            client = await bridge.connect()
            await client.initialize()
            thread_id = await client.start_thread()
            await client.until(lambda m: m.get("method") == "thread/started")
            turn_id = await client.start_turn(thread_id, "Create approved.txt with touch.")
            await source.next_submission(thread_id)
            mark = len(client.received)
            envelopes = _approval_turn(thread_id, turn_id)
            for envelope in envelopes:
                await source.push(thread_id, envelope)
            await client.until(is_turn_completed(turn_id))
            live = [_comparable(m) for m in client.received[mark:]]
    offline = [_comparable(m) for m in await _map(envelopes, thread_id)]
    assert offline == live
    assert "item/commandExecution/requestApproval" in [m.get("method") for m in offline]
