"""``thread/compact/start`` with a model: the compaction runs as a turn of its own, as 0.163.0
runs a local compaction (probed): one streamed request with ``request_kind: "compaction"``, no
tools, the history plus a prompt without id; the turn shows a ``contextCompaction`` item and the
``Heads up`` warning; the history becomes fresh context + the real user messages + the summary,
which the next request and the rollout (``compacted`` line) carry."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from codex_app_bridge.agent._compact import COMPACT_PROMPT, COMPACTION_WARNING
from codex_app_bridge.conformance.mock_responses import MockResponses
from codex_app_bridge.conformance.real_codex import (
    StdioPeer,
    bridge_command,
    codex_env,
    write_codex_config,
)
from codex_app_bridge.projection import SUMMARY_PREFIX
from tests.conftest import bridge_env

pytestmark = pytest.mark.anyio

TIMEOUT = 60.0
JsonObject = dict[str, Any]


def _metadata(request: JsonObject) -> JsonObject:
    headers = {str(k).lower(): v for k, v in request["headers"].items()}
    return json.loads(headers["x-codex-turn-metadata"])


def _completed(peer: StdioPeer) -> int:
    return sum(1 for m in peer.received if m.get("method") == "turn/completed")


async def _until_completed(peer: StdioPeer, count: int) -> None:
    if _completed(peer) < count:
        await peer.wait_for(
            lambda m: m.get("method") == "turn/completed" and _completed(peer) >= count,
            timeout_s=TIMEOUT,
        )


async def test_a_compaction_turn_replaces_the_history_with_context_user_messages_and_summary() -> (
    None
):
    with MockResponses() as mock, tempfile.TemporaryDirectory() as scratch:
        mock.set_scenario("plain", text="the summary")
        home, work = Path(scratch) / "home", Path(scratch) / "work"
        work.mkdir()
        write_codex_config(home, mock.base_url)
        env = codex_env(home, extra={k: v for k, v in bridge_env().items() if k == "PYTHONPATH"})
        with anyio.fail_after(TIMEOUT * 4):
            async with StdioPeer.spawn(
                bridge_command(), env=env, cwd=str(work), stderr_path=Path(scratch) / "stderr.log"
            ) as peer:
                await peer.initialize()
                started = await peer.request("thread/start", {"cwd": str(work)})
                thread_id = started["thread"]["id"]
                turn = {"threadId": thread_id, "input": [{"type": "text", "text": "one"}]}
                await peer.request("turn/start", turn)
                await _until_completed(peer, 1)
                mark = len(peer.received)
                assert await peer.request("thread/compact/start", {"threadId": thread_id}) == {}
                await _until_completed(peer, 2)
                compaction = [m for m in peer.received[mark:] if "method" in m]
                turn["input"] = [{"type": "text", "text": "two"}]
                await peer.request("turn/start", turn)
                await _until_completed(peer, 3)
                read = await peer.request("thread/read", {"threadId": thread_id})
        rollout = await anyio.Path(read["thread"]["path"]).read_text()
    methods = [m["method"] for m in compaction]
    shown = [m for m in methods if m in _SHOWN]
    assert shown == [
        "turn/started",
        "item/started",
        "item/completed",
        "warning",
        "turn/completed",
    ]
    items = [m["params"]["item"] for m in compaction if m["method"].startswith("item/")]
    assert [item["type"] for item in items] == ["contextCompaction", "contextCompaction"]
    assert items[0] == items[1]
    warning = next(m for m in compaction if m["method"] == "warning")
    assert warning["params"]["message"] == COMPACTION_WARNING
    ended = compaction[-1]["params"]["turn"]
    assert (ended["status"], ended["items"]) == ("completed", [])

    one, compact, two = mock.requests()
    assert [_metadata(r)["request_kind"] for r in (one, compact, two)] == [
        "turn",
        "compaction",
        "turn",
    ]
    assert compact["body"]["tools"] == []
    assert compact["body"]["parallel_tool_calls"] is False
    answer: JsonObject = {
        "type": "message",
        "status": "completed",
        "id": "msg_plain_0",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "the summary", "annotations": []}],
    }
    history_one = one["body"]["input"][1:]
    assert compact["body"]["input"][1:] == [
        *history_one,
        answer,
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": COMPACT_PROMPT}],
        },
    ]
    # after: fresh context (new ids, same text), the user message as recorded, the summary
    after = two["body"]["input"][1:]
    context, user_one = history_one[:-1], history_one[-1]
    assert [{**i, "id": None} for i in after[: len(context)]] == [
        {**i, "id": None} for i in context
    ]
    assert {i["id"] for i in after[: len(context)]}.isdisjoint({i["id"] for i in context})
    assert after[len(context)] == user_one
    summary = after[len(context) + 1]
    assert summary["content"] == [{"type": "input_text", "text": f"{SUMMARY_PREFIX}\nthe summary"}]
    assert after[len(context) + 2]["content"] == [{"type": "input_text", "text": "two"}]
    assert _metadata(two)["window_number"] == 1

    lines = [json.loads(x) for x in rollout.splitlines()]
    (compacted,) = [line["payload"] for line in lines if line["type"] == "compacted"]
    assert compacted["message"] == f"{SUMMARY_PREFIX}\nthe summary"
    replaced = compacted["replacement_history"]
    strip = "internal_chat_message_metadata_passthrough"
    assert [{k: v for k, v in i.items() if k != strip} for i in replaced] == after[:-1]


_SHOWN = frozenset({"turn/started", "item/started", "item/completed", "warning", "turn/completed"})


async def test_a_source_without_a_model_shows_the_compaction_turn_and_keeps_its_history() -> None:
    from tests.e2e._harness import is_turn_completed, open_bridge

    async with open_bridge("memory") as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        await client.run_turn(thread_id, "one")
        assert await client.result("thread/compact/start", {"threadId": thread_id}) == {}
        started = await client.until(_turn_started)
        turn_id = started[-1]["params"]["turn"]["id"]
        messages = await client.until(is_turn_completed(turn_id))
        read = await client.result("thread/read", {"threadId": thread_id, "includeTurns": True})
    items = [m["params"]["item"]["type"] for m in messages if m.get("method") == "item/completed"]
    assert items == ["contextCompaction"]
    assert messages[-1]["params"]["turn"]["status"] == "completed"
    assert len(read["thread"]["turns"]) == 2
    bad = await _unknown_thread_error()
    assert bad["message"].startswith("thread not found: ")


def _turn_started(message: JsonObject) -> bool:
    return message.get("method") == "turn/started"


async def _unknown_thread_error() -> JsonObject:
    from tests.e2e._harness import open_bridge

    async with open_bridge("memory") as bridge:
        client = await bridge.connect()
        await client.initialize()
        reply = await client.call(
            "thread/compact/start", {"threadId": "01a229f2-bbfe-7a20-9d7f-35a05b666f52"}
        )
    return reply["error"]


async def test_a_turn_over_the_auto_compact_limit_compacts_before_its_user_message() -> None:
    from codex_app_bridge.agent._session import AUTO_PRE_TURN_COMPACTION
    from tests.agent._harness import run_turns

    # the mock reports 120 tokens per response: the second turn starts over the limit
    run = await run_turns(
        "multi_turn",
        ["First question", "Second question"],
        top_config="model_auto_compact_token_limit = 100\n",
    )
    one, compact, two = run.requests
    assert [_metadata(r)["request_kind"] for r in (one, compact, two)] == [
        "turn",
        "compaction",
        "turn",
    ]
    assert _metadata(compact)["compaction"] == AUTO_PRE_TURN_COMPACTION
    assert [_metadata(r)["window_number"] for r in (one, compact, two)] == [0, 0, 1]
    # the compaction request does not hold the new message; the turn's request starts afresh
    texts = [json.dumps(i) for i in compact["body"]["input"]]
    assert not any("Second question" in t for t in texts)
    assert [i["role"] for i in two["body"]["input"][-3:]] == ["user", "user", "user"]
    assert two["body"]["input"][-1]["content"][0]["text"] == "Second question"
    # clients see the compaction item before the turn's user message, in the same turn
    second = [m for m in run.received if m.get("method") in ("item/started", "turn/started")]
    kinds = [m["params"].get("item", {}).get("type", m["method"]) for m in second]
    assert kinds[-4:] == ["turn/started", "contextCompaction", "userMessage", "agentMessage"]
    usage = [m for m in run.received if m.get("method") == "thread/tokenUsage/updated"]
    assert len(usage) == 1 + 3 + 1  # first turn; before, after and the estimate; second turn


async def test_under_the_limit_nothing_is_compacted() -> None:
    from tests.agent._harness import run_turns

    run = await run_turns(
        "multi_turn",
        ["First question", "Second question"],
        top_config="model_auto_compact_token_limit = 1000\n",
    )
    assert [_metadata(r)["request_kind"] for r in run.requests] == ["turn", "turn"]


async def test_a_tool_call_over_the_limit_compacts_before_its_follow_up() -> None:
    from codex_app_bridge.agent._session import AUTO_MID_TURN_COMPACTION
    from tests.agent._harness import run_turns

    run = await run_turns(
        "unknown_tool", ["Use frobnicate."], top_config="model_auto_compact_token_limit = 100\n"
    )
    _, compact, follow_up = run.requests
    assert _metadata(compact)["compaction"] == AUTO_MID_TURN_COMPACTION
    assert [i["type"] for i in compact["body"]["input"]][-3:] == [
        "function_call",
        "function_call_output",
        "message",
    ]
    # the follow-up goes on from the compacted history: the call and its output are gone
    kinds = [i["type"] for i in follow_up["body"]["input"]]
    assert "function_call" not in kinds
    assert "function_call_output" not in kinds
    assert _metadata(follow_up)["window_number"] == 1
    (completed,) = [m for m in run.received if m.get("method") == "turn/completed"]
    assert completed["params"]["turn"]["status"] == "completed"
