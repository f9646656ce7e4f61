"""Immediate methods (``MethodSpec.immediate``): answered by the processing loop as they arrive,
with no task of their own, yet in order behind their scope and through the one error boundary."""

from __future__ import annotations

from typing import Any

import anyio
import orjson
import pytest

from codex_app_bridge.protocol.jsonrpc import JsonValue
from codex_app_bridge.rpc import (
    OVERLOADED,
    Connection,
    MethodSpec,
    MethodTable,
    ModelParams,
    RawParams,
    RequestContext,
    invalid_request,
)
from tests.rpc._support import (
    TABLE,
    TIMEOUT,
    Probe,
    ProbeParams,
    handle_wait,
    probe,
    serving,
    thread_scope,
)

pytestmark = pytest.mark.anyio


def now(ctx: RequestContext, params: ProbeParams) -> dict[str, Any]:
    state = probe(ctx)
    state.order.append(f"now:{params.key}")
    return {"key": params.key, "task": anyio.get_current_task().id}


def now_failing(ctx: RequestContext, params: dict[str, JsonValue]) -> None:
    if params.get("internal"):
        raise RuntimeError("secret internal detail")
    raise invalid_request("thread not found: abc")


def now_then_notify(ctx: RequestContext, params: dict[str, JsonValue]) -> dict[str, bool]:
    async def after() -> None:
        await ctx.connection.notify("test/after", {"seen": True})

    ctx.after_response(after)
    return {"ok": True}


async def wait_task(ctx: RequestContext, params: ProbeParams) -> dict[str, Any]:
    reply = await handle_wait(ctx, params)
    return {**reply, "task": anyio.get_current_task().id}


def _table() -> MethodTable:
    return MethodTable(
        [
            *(spec for spec in TABLE if spec.name != "test/wait"),
            MethodSpec("test/wait", ModelParams(ProbeParams), wait_task, scope=thread_scope),
            MethodSpec("test/now", ModelParams(ProbeParams), scope=thread_scope, immediate=now),
            MethodSpec("test/nowFailing", RawParams(), immediate=now_failing),
            MethodSpec("test/nowThenNotify", RawParams(), immediate=now_then_notify),
        ]
    )


async def test_immediate_requests_are_answered_on_the_processing_loop_while_others_wait() -> None:
    async with serving(_table()) as served:
        client, state = served.client, served.probe
        await client.send({"id": "w1", "method": "test/wait", "params": {"key": "w1"}})
        await client.send({"id": "w2", "method": "test/wait", "params": {"key": "w2"}})
        with anyio.fail_after(TIMEOUT):
            await state.started_event("w1").wait()
            await state.started_event("w2").wait()
        first = await client.call("n1", "test/now", {"key": "n1"})
        second = await client.call("n2", "test/now", {"key": "n2"})
        state.gate("w1").set()
        state.gate("w2").set()
        waited = [await client.receive(), await client.receive()]
    # one task (the connection's processing loop) answers both; each waiting request has its own
    assert first["result"]["task"] == second["result"]["task"]
    tasks = {reply["result"]["task"] for reply in waited}
    assert len(tasks) == 2
    assert first["result"]["task"] not in tasks


async def test_an_immediate_request_waits_behind_earlier_requests_of_its_scope() -> None:
    async with serving(_table()) as served:
        client, state = served.client, served.probe
        await client.send(
            {"id": "w", "method": "test/wait", "params": {"key": "w", "threadId": "t1"}}
        )
        with anyio.fail_after(TIMEOUT):
            await state.started_event("w").wait()
        await client.send(
            {"id": "same", "method": "test/now", "params": {"key": "same", "threadId": "t1"}}
        )
        other = await client.call(
            "other", "test/now", {"key": "other", "threadId": "t2"}
        )  # another scope: answered at once
        assert other["result"]["key"] == "other"
        assert "now:same" not in state.order
        state.gate("w").set()
        replies = [await client.receive(), await client.receive()]
        after = await client.call("later", "test/now", {"key": "later", "threadId": "t1"})
    assert [reply["id"] for reply in replies] == ["w", "same"]
    assert after["result"]["key"] == "later"
    assert state.order == ["start:w", "now:other", "end:w", "now:same", "now:later"]


async def test_immediate_handler_errors_go_through_the_one_error_boundary() -> None:
    async with serving(_table()) as served:
        refused = await served.client.call(1, "test/nowFailing", {})
        internal = await served.client.call(2, "test/nowFailing", {"internal": True})
        still = await served.client.call(3, "test/now", {"key": "k"})
    assert refused == {"error": {"code": -32600, "message": "thread not found: abc"}, "id": 1}
    assert internal["error"]["code"] == -32603
    assert "secret" not in internal["error"]["message"]
    assert still["result"]["key"] == "k"


async def test_after_response_callbacks_of_an_immediate_handler_follow_its_response() -> None:
    async with serving(_table()) as served:
        reply = await served.client.call(1, "test/nowThenNotify", {})
        notification = await served.client.receive()
    assert reply == {"id": 1, "result": {"ok": True}}
    assert notification["method"] == "test/after"
    assert notification["params"] == {"seen": True}


@pytest.mark.parametrize("method", ["test/now", "test/echo"])
async def test_input_decoded_far_ahead_of_the_ingress_queue_is_answered_without_overload(
    method: str,
) -> None:
    # What stdio does with a pipelining client: a whole chunk of requests is decoded before the
    # connection reads any. 2,000 wait there; the ingress queue holds 128.
    count = 2_000
    inbound_send, inbound = anyio.create_memory_object_stream[Any](count)
    outbound, outbound_recv = anyio.create_memory_object_stream[Any](count + 1)
    for index in range(count):
        inbound_send.send_nowait({"id": index, "method": method, "params": {}})
    inbound_send.close()
    connection = Connection((inbound, outbound), _table(), state=Probe())
    with anyio.fail_after(TIMEOUT):
        await connection.run()
    replies: list[Any] = []
    with outbound_recv:
        async for item in outbound_recv:
            replies += [orjson.loads(line) for line in item.split(b"\n")]
    assert not [r for r in replies if r.get("error", {}).get("code") == OVERLOADED]
    assert sorted(reply["id"] for reply in replies) == list(range(count))
    assert all("result" in reply for reply in replies)


def test_a_method_has_one_kind_of_handler() -> None:
    with pytest.raises(ValueError, match="both a handler and an immediate handler"):
        MethodSpec("test/both", RawParams(), wait_task, immediate=now_failing)
