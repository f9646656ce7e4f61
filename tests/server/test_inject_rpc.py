"""``serve --allow-inject``: a harness on the JSON-RPC connection claims a thread, pushes its
events and reads the Ops it received; without the flag the methods do not exist."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.e2e._harness import Session, _stdio_bridge, is_turn_completed  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.anyio

TIMEOUT = 60


def _envelope(turn_id: str, msg: dict[str, Any]) -> dict[str, Any]:
    return {"id": turn_id, "msg": msg}


def _answer(thread_id: str, turn_id: str, text: str) -> list[dict[str, Any]]:
    ids = {"thread_id": thread_id, "turn_id": turn_id}
    item = {"type": "AgentMessage", "id": "msg_1", "content": []}
    done = {**item, "content": [{"type": "Text", "text": text}]}
    return [
        _envelope(turn_id, {"type": "task_started", "turn_id": turn_id}),
        _envelope(turn_id, {"type": "item_started", **ids, "item": item, "started_at_ms": 1}),
        _envelope(
            turn_id,
            {"type": "agent_message_content_delta", **ids, "item_id": "msg_1", "delta": text},
        ),
        _envelope(
            turn_id,
            {
                "type": "item_completed",
                **ids,
                "item": done,
                "started_at_ms": 1,
                "completed_at_ms": 2,
            },
        ),
        _envelope(
            turn_id, {"type": "task_complete", "turn_id": turn_id, "last_agent_message": text}
        ),
    ]


async def _thread(client: Session) -> str:
    await client.initialize()
    thread_id = await client.start_thread()
    await client.until(lambda m: m.get("method") == "thread/started")
    return thread_id


async def test_without_the_flag_the_inject_methods_do_not_exist() -> None:
    with anyio.fail_after(TIMEOUT):
        async with _stdio_bridge(["--pace", "0"]) as bridge:
            client = await bridge.connect()
            await client.initialize()
            unknown = await client.call("bridge/unknown", {"threadId": "x"})
            inject = await client.call("bridge/inject/claim", {"threadId": "x"})
            assert inject["error"]["code"] == unknown["error"]["code"] == -32600
            assert inject["error"]["message"] == unknown["error"]["message"].replace(
                "bridge/unknown", "bridge/inject/claim"
            )
            await client.close()


async def test_a_harness_claims_a_thread_pushes_its_turns_and_reads_its_ops() -> None:
    with anyio.fail_after(TIMEOUT):
        async with _stdio_bridge(["--pace", "0", "--allow-inject"]) as bridge:
            client = await bridge.connect()
            thread_id = await _thread(client)
            assert await client.result("bridge/inject/claim", {"threadId": thread_id}) == {}

            turn_id = await client.start_turn(thread_id, "hello")
            ops = await client.result(
                "bridge/inject/submissions", {"threadId": thread_id, "waitMs": 10_000}
            )
            assert ops["next"] == 1
            (submission,) = ops["submissions"]
            assert submission["id"] == turn_id
            assert submission["op"]["type"] == "user_turn"
            assert submission["op"]["items"][0]["text"] == "hello"
            pushed = await client.result(
                "bridge/inject/push",
                {"threadId": thread_id, "events": _answer(thread_id, turn_id, "Hi!")},
            )
            assert pushed == {"pushed": 5}
            done = await client.until(is_turn_completed(turn_id))
            assert done[-1]["params"]["turn"]["status"] == "completed"
            deltas = [
                m["params"]["delta"] for m in done if m.get("method") == "item/agentMessage/delta"
            ]
            assert deltas == ["Hi!"]

            # an interrupt reaches the harness as an Op; it ends the turn itself
            second = await client.start_turn(thread_id, "long")
            started = _envelope(second, {"type": "task_started", "turn_id": second})
            await client.result("bridge/inject/push", {"threadId": thread_id, "events": [started]})
            await client.until(lambda m: m.get("method") == "turn/started")
            params = {"threadId": thread_id, "turnId": second}
            await client.send({"id": "int", "method": "turn/interrupt", "params": params})
            ops = await client.result(
                "bridge/inject/submissions", {"threadId": thread_id, "since": 2, "waitMs": 10_000}
            )
            assert [(s["id"], s["op"]["type"]) for s in ops["submissions"]] == [
                (second, "interrupt")
            ]
            aborted = {"type": "turn_aborted", "turn_id": second, "reason": "interrupted"}
            await client.result(
                "bridge/inject/push",
                {"threadId": thread_id, "events": [_envelope(second, aborted)]},
            )
            done = await client.until(is_turn_completed(second))
            assert done[-1]["params"]["turn"]["status"] == "interrupted"

            # a bad envelope is refused with its index; end fails a running turn
            third = await client.start_turn(thread_id, "third")
            bad = await client.call(
                "bridge/inject/push",
                {"threadId": thread_id, "events": [_answer(thread_id, third, "x")[0], {"id": 1}]},
            )
            assert bad["error"]["code"] == -32600
            assert bad["error"]["message"].startswith(
                "bridge/inject/push: events[1] is not an event envelope"
            )
            assert bad["error"]["message"].endswith("(1 delivered)")
            # an event type nobody knows is refused too: no client would ever see it
            unknown = await client.call(
                "bridge/inject/push",
                {"threadId": thread_id, "events": [_envelope(third, {"type": "nope"})]},
            )
            assert unknown["error"] == {
                "code": -32600,
                "message": "bridge/inject/push: events[0]: unknown event type 'nope': "
                "no client sees it (0 delivered)",
            }
            assert await client.result("bridge/inject/end", {"threadId": thread_id}) == {}
            done = await client.until(is_turn_completed(third))
            assert done[-1]["params"]["turn"]["status"] == "failed"
            await client.close()


async def test_claiming_is_refused_for_unknown_or_already_playing_threads() -> None:
    with anyio.fail_after(TIMEOUT):
        async with _stdio_bridge(["--pace", "0", "--allow-inject"]) as bridge:
            client = await bridge.connect()
            thread_id = await _thread(client)
            missing = await client.call(
                "bridge/inject/claim", {"threadId": "01a2aaaa-0000-7000-8000-000000000000"}
            )
            assert missing["error"]["message"].startswith("thread not found")
            # an unclaimed thread plays from the server's own source (the built-in agent)
            _, messages = await client.run_turn(thread_id, "hi")
            assert messages[-1]["params"]["turn"]["status"] == "completed"
            late = await client.call("bridge/inject/claim", {"threadId": thread_id})
            assert "already plays its turns from the server's source" in late["error"]["message"]
            unclaimed = await client.call(
                "bridge/inject/push", {"threadId": thread_id, "events": []}
            )
            assert unclaimed["error"]["message"].endswith("is not claimed")
            await client.close()
