"""A connection over the in-memory transport: ids, dialect, ordering, concurrency, queues, shutdown.

Every test drives the server with a plain client (``_support.Client``) and waits on events or on
messages inside ``anyio.fail_after``; nothing sleeps.
"""

from __future__ import annotations

import gc
import logging
import tracemalloc
import weakref
from typing import Any

import anyio
import orjson
import pytest

from codex_app_bridge.protocol.jsonrpc import INT64_MAX, INT64_MIN
from codex_app_bridge.rpc import (
    OVERLOADED,
    OVERLOADED_MESSAGE,
    Connection,
    MethodSpec,
    MethodTable,
    ModelParams,
    OutboundNotification,
    OutboundPolicy,
    RawParams,
    RequestContext,
    RpcError,
    SerialScopes,
    ServerRequests,
    outbound_policy_for,
)
from codex_app_bridge.rpc.connection import COALESCE_MAX_BYTES
from codex_app_bridge.transport import TransportKind
from tests.rpc._support import (
    TABLE,
    TIMEOUT,
    ProbeParams,
    handle_echo,
    handle_wait,
    initialize_gate,
    probe,
    serving,
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("request_id", ["abc", "", "1", 0, 1, -5, 2**62, INT64_MAX, INT64_MIN])
async def test_request_id_is_echoed_with_its_exact_json_type(request_id: object) -> None:
    async with serving() as served:
        reply = await served.client.call(request_id, "test/echo", {"x": 1})
    assert reply == {"id": request_id, "result": {"echo": {"x": 1}}}
    assert type(reply["id"]) is type(request_id)
    assert list(reply) == ["id", "result"]


async def test_jsonrpc_member_is_accepted_on_input_and_absent_on_output() -> None:
    async with serving() as served:
        await served.client.send({"jsonrpc": "2.0", "id": 1, "method": "test/echo", "params": {}})
        ok = await served.client.receive()
        await served.client.send(
            {"jsonrpc": "2.0", "id": 2, "method": "test/failRpc", "params": {}}
        )
        error = await served.client.receive()
    assert ok == {"id": 1, "result": {"echo": {}}}
    assert error == {"error": {"code": -32600, "message": "thread not found: abc"}, "id": 2}
    assert list(error) == ["error", "id"]


async def test_duplicate_in_flight_ids_are_each_answered() -> None:
    async with serving() as served:
        await served.client.send({"id": 77, "method": "test/echo", "params": {"n": 1}})
        await served.client.send({"id": 77, "method": "test/echo", "params": {"n": 2}})
        replies = [await served.client.receive(), await served.client.receive()]
    assert sorted(r["result"]["echo"]["n"] for r in replies) == [1, 2]
    assert {r["id"] for r in replies} == {77}


@pytest.mark.parametrize("bad_id", [1.5, None, True, INT64_MAX + 1, [1], {"a": 1}])
async def test_request_with_an_id_that_is_no_request_id_is_a_notification_and_gets_no_reply(
    bad_id: object,
) -> None:
    async with serving() as served:
        await served.client.send({"id": bad_id, "method": "test/echo", "params": {}})
        reply = await served.client.call("after", "test/echo", {})
    assert reply["id"] == "after"


@pytest.mark.parametrize(
    "frame",
    [
        b'{"id":2,"method":',
        b"[1,2,3]",
        b'[{"id":3,"method":"test/echo","params":{}}]',
        b'"text"',
        b"5",
        b"{}",
        b'{"id":1}',
        b'{"id":1,"method":5,"params":{}}',
        b"   ",
    ],
)
async def test_batches_and_malformed_frames_get_no_reply_and_the_connection_keeps_working(
    frame: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    async with serving() as served:
        await served.client.send(frame)
        reply = await served.client.call("after", "test/echo", {})
    assert reply["id"] == "after"
    if frame.strip():
        assert "Failed to deserialize JSONRPCMessage" in caplog.text


async def test_client_notifications_and_unknown_responses_are_only_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with serving() as served:
        await served.client.send({"method": "initialized"})
        await served.client.send({"id": 999, "result": {}})
        await served.client.send({"id": 998, "error": {"code": 1, "message": "x"}})
        reply = await served.client.call("after", "test/echo", {})
    assert reply["id"] == "after"
    assert "<- notification: initialized" in caplog.text
    assert "could not find callback for request id 999" in caplog.text
    assert "could not find callback for request id 998" in caplog.text


async def test_unknown_method_lists_every_method_and_is_checked_before_the_gate() -> None:
    async with serving(gate=initialize_gate) as served:
        unknown = await served.client.call(1, "foo/bar", {})
        not_initialized = await served.client.call(2, "thread/list", {})
        await served.client.initialize()
        again = await served.client.call(
            3, "initialize", {"clientInfo": {"name": "a", "version": "1"}}
        )
        unknown_after = await served.client.call(4, "foo/bar")
    names = ", ".join(f"`{name}`" for name in TABLE.names)
    expected = f"Invalid request: unknown variant `foo/bar`, expected one of {names}"
    assert unknown == {"error": {"code": -32600, "message": expected}, "id": 1}
    assert unknown_after["error"]["message"] == expected
    assert not_initialized == {"error": {"code": -32600, "message": "Not initialized"}, "id": 2}
    assert again == {"error": {"code": -32600, "message": "Already initialized"}, "id": 3}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (None, "Invalid request: missing field `params`"),
        ("null", "Invalid request: missing field `params`"),
        (
            "[]",
            "Invalid request: invalid length 0, expected struct ThreadListParams with 16 elements",
        ),
        ('{"limit":"x"}', 'Invalid request: invalid type: string "x", expected u32'),
    ],
)
async def test_params_errors_are_reported_before_the_initialize_gate(
    params: str | None, message: str
) -> None:
    frame = b'{"id":1,"method":"thread/list"' + (
        b"}" if params is None else f',"params":{params}}}'.encode()
    )
    async with serving(gate=initialize_gate) as served:
        await served.client.send(frame)
        reply = await served.client.receive()
        gated = await served.client.call(2, "thread/list", {})
    assert reply == {"error": {"code": -32600, "message": message}, "id": 1}
    assert gated["error"]["message"] == "Not initialized"


async def test_known_but_unsupported_method_answers_the_tables_error_naming_it() -> None:
    table = MethodTable(
        [MethodSpec("thread/rollback", RawParams())],
        unsupported_error=lambda spec: RpcError(-32601, f"{spec.name} is not supported yet"),
    )
    async with serving(table) as served:
        reply = await served.client.call(1, "thread/rollback", {})
        missing = await served.client.call(2, "thread/rollback")
    assert reply == {
        "error": {"code": -32601, "message": "thread/rollback is not supported yet"},
        "id": 1,
    }
    assert missing["error"]["message"] == "Invalid request: missing field `params`"
    assert table.unsupported_names == ("thread/rollback",)
    assert table.supported_names == ()


async def test_unexpected_exception_is_a_logged_internal_error_with_a_safe_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serving() as served:
        reply = await served.client.call(1, "test/failInternal", {})
    assert reply == {"error": {"code": -32603, "message": "Internal error"}, "id": 1}
    assert "secret internal detail" not in orjson.dumps(reply).decode()
    assert "secret internal detail" in caplog.text


async def test_unserializable_result_is_an_internal_error_naming_the_cause() -> None:
    async with serving() as served:
        reply = await served.client.call(1, "test/badResult", {})
    assert reply["error"]["code"] == -32603
    assert reply["error"]["message"].startswith("failed to serialize response: ")


async def test_model_results_are_written_with_their_wire_names() -> None:
    async with serving() as served:
        reply = await served.client.call(1, "test/modelResult", {})
    assert reply == {"id": 1, "result": {"name": "n", "title": None, "version": "v"}}


async def test_gate_sees_the_decoded_request_and_can_refuse_it() -> None:
    async def gate(ctx: RequestContext) -> None:
        if isinstance(ctx.params, ProbeParams) and ctx.params.key == "experimental":
            raise RpcError(-32600, f"{ctx.method}.key requires experimentalApi capability")

    async with serving(gate=gate) as served:
        refused = await served.client.call(1, "test/wait", {"key": "experimental"})
    assert refused["error"]["message"] == "test/wait.key requires experimentalApi capability"


async def test_requests_with_different_scopes_run_concurrently() -> None:
    async with serving() as served:
        client, state = served.client, served.probe
        await client.send(
            {"id": "a", "method": "test/wait", "params": {"key": "a", "threadId": "t1"}}
        )
        await client.send(
            {"id": "b", "method": "test/wait", "params": {"key": "b", "threadId": "t2"}}
        )
        with anyio.fail_after(TIMEOUT):
            await state.started_event("a").wait()
            await state.started_event("b").wait()
        # both run at once: release the later one first, it answers first
        state.gate("b").set()
        assert (await client.receive())["id"] == "b"
        state.gate("a").set()
        assert (await client.receive())["id"] == "a"


async def test_requests_with_the_same_scope_are_handled_strictly_fifo() -> None:
    async with serving() as served:
        client, state = served.client, served.probe
        for key, thread in (("a", "t1"), ("b", "t1"), ("c", "t2")):
            params = {"key": key, "threadId": thread}
            await client.send({"id": key, "method": "test/wait", "params": params})
        with anyio.fail_after(TIMEOUT):
            await state.started_event("a").wait()
            await state.started_event("c").wait()
        assert "start:b" not in state.order  # c (sent after b) runs, b waits behind a
        state.gate("b").set()
        state.gate("c").set()
        assert (await client.receive())["id"] == "c"
        state.gate("a").set()
        assert [(await client.receive())["id"], (await client.receive())["id"]] == ["a", "b"]
    same_scope = [entry for entry in state.order if entry.endswith((":a", ":b"))]
    assert same_scope == ["start:a", "end:a", "start:b", "end:b"]


async def test_scopes_shared_by_two_connections_serialize_across_them() -> None:
    scopes = SerialScopes()
    async with serving(scopes=scopes) as one, serving(scopes=scopes) as two:
        await one.client.send(
            {"id": 1, "method": "test/wait", "params": {"key": "a", "threadId": "t"}}
        )
        with anyio.fail_after(TIMEOUT):
            await one.probe.started_event("a").wait()
        await two.client.send(
            {"id": 2, "method": "test/wait", "params": {"key": "b", "threadId": "t"}}
        )
        await two.client.send(
            {"id": 3, "method": "test/wait", "params": {"key": "c", "threadId": "u"}}
        )
        two.probe.gate("c").set()
        assert (await two.client.receive())["id"] == 3
        assert "start:b" not in two.probe.order
        two.probe.gate("b").set()
        one.probe.gate("a").set()
        assert (await one.client.receive())["id"] == 1
        assert (await two.client.receive())["id"] == 2
    assert len(scopes) == 0


async def test_a_closing_connection_releases_the_scope_for_other_connections() -> None:
    scopes = SerialScopes()
    async with serving(scopes=scopes) as two:
        async with serving(scopes=scopes, drain_timeout=0) as one:
            await one.client.send(
                {"id": 1, "method": "test/wait", "params": {"key": "a", "threadId": "t"}}
            )
            with anyio.fail_after(TIMEOUT):
                await one.probe.started_event("a").wait()
            await two.client.send(
                {"id": 2, "method": "test/wait", "params": {"key": "b", "threadId": "t"}}
            )
            one.connection.close()
            with anyio.fail_after(TIMEOUT):
                await one.finished.wait()
        two.probe.gate("b").set()
        assert (await two.client.receive())["id"] == 2


async def test_a_request_dropped_while_queued_lets_no_later_one_overtake() -> None:
    scopes = SerialScopes()
    async with serving(scopes=scopes) as one:
        async with serving(scopes=scopes, drain_timeout=0) as two:
            await one.client.send(
                {"id": 1, "method": "test/wait", "params": {"key": "a", "threadId": "t"}}
            )
            with anyio.fail_after(TIMEOUT):
                await one.probe.started_event("a").wait()
            await two.client.send(
                {"id": 2, "method": "test/wait", "params": {"key": "b", "threadId": "t"}}
            )
            # requests are accepted in order: the answer to 3 proves b is queued behind a
            two.probe.gate("x").set()
            reply = await two.client.call(3, "test/wait", {"key": "x", "threadId": "u"})
            assert reply["id"] == 3
            two.connection.close()
            with anyio.fail_after(TIMEOUT):
                await two.finished.wait()
        await one.client.send(
            {"id": 4, "method": "test/wait", "params": {"key": "c", "threadId": "t"}}
        )
        one.probe.gate("y").set()
        assert (await one.client.call(5, "test/wait", {"key": "y", "threadId": "u"}))["id"] == 5
        assert "start:c" not in one.probe.order  # c still waits for a, not for the dropped b
        one.probe.gate("c").set()
        one.probe.gate("a").set()
        assert [(await one.client.receive())["id"], (await one.client.receive())["id"]] == [1, 4]
    assert "start:b" not in two.probe.order
    same_scope = [entry for entry in one.probe.order if entry.endswith((":a", ":c"))]
    assert same_scope == ["start:a", "end:a", "start:c", "end:c"]
    assert len(scopes) == 0


async def test_response_precedes_the_notifications_its_handler_defers() -> None:
    async with serving() as served:
        params = {"threadId": "t", "input": [{"type": "text", "text": "hi"}]}
        reply = await served.client.call(1, "turn/start", params)
        started = await served.client.receive()
    assert reply == {"id": 1, "result": {"turn": {"id": "turn-1", "status": "inProgress"}}}
    assert started["method"] == "turn/started"
    assert list(started) == ["method", "params", "emittedAtMs"]
    assert started["params"] == {"threadId": "t"}


async def test_deferred_work_does_not_run_when_the_handler_fails() -> None:
    ran: list[str] = []

    async def handler(ctx: RequestContext, params: dict[str, Any]) -> None:
        async def later() -> None:
            ran.append("later")

        ctx.after_response(later)
        raise RpcError(-32600, "refused")

    table = MethodTable([MethodSpec("x", RawParams(), handler)])
    async with serving(table) as served:
        reply = await served.client.call(1, "x", {})
        after = await served.client.call(2, "x", {})
    assert reply["error"]["message"] == "refused"
    assert after["id"] == 2
    assert ran == []


@pytest.mark.parametrize("fails", [False, True])
async def test_a_request_context_is_freed_by_reference_counting(fails: bool) -> None:
    # issue 23's soak: a callback registered with after_response closes over its context; kept
    # by the context, it made a cycle (context, connection, params...) that only a full
    # collection freed: run or dropped, the callbacks leave the context
    freed = anyio.Event()
    ran: list[str] = []

    async def handler(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
        async def later() -> None:
            ran.append(ctx.method)

        weakref.finalize(ctx, freed.set)
        ctx.after_response(later)
        if fails:
            raise RpcError(-32600, "refused")
        return {}

    table = MethodTable([MethodSpec("x", RawParams(), handler)])
    collecting = gc.isenabled()
    gc.disable()  # only reference counting frees anything now
    try:
        async with serving(table) as served:
            reply = await served.client.call(1, "x", {})
            with anyio.fail_after(TIMEOUT):
                await freed.wait()
    finally:
        if collecting:
            gc.enable()
    assert ("error" in reply) is fails
    assert ran == ([] if fails else ["x"])


def _blocking_table() -> MethodTable:
    specs = [
        MethodSpec("test/block", ModelParams(ProbeParams), handle_wait, inline=True),
        MethodSpec("test/echo", RawParams(), handle_echo),
    ]
    return MethodTable(specs)


async def test_full_ingress_queue_answers_overloaded_and_every_request_is_answered() -> None:
    extra = 20
    async with serving(_blocking_table()) as served:
        client, state = served.client, served.probe
        await client.send({"id": "block", "method": "test/block", "params": {"key": "block"}})
        with anyio.fail_after(TIMEOUT):
            await state.started_event("block").wait()
        # The processing loop is busy: 128 requests fit in the ingress queue, the rest overflow.
        for index in range(128 + extra):
            await client.send({"id": index, "method": "test/echo", "params": {}})
        overloaded = [await client.receive() for _ in range(extra)]
        state.gate("block").set()
        answered = [await client.receive() for _ in range(128 + 1)]
    assert overloaded == [
        {"error": {"code": OVERLOADED, "message": OVERLOADED_MESSAGE}, "id": index}
        for index in range(128, 128 + extra)
    ]
    assert answered[0] == {"id": "block", "result": {"key": "block"}}
    assert sorted(reply["id"] for reply in answered[1:]) == list(range(128))
    assert all("result" in reply for reply in answered)


async def test_overload_answer_waits_for_outbound_room_instead_of_being_dropped() -> None:
    burst = 12
    async with serving(_blocking_table(), capacity=1, ingress_capacity=1) as served:
        client, state = served.client, served.probe
        await client.send({"id": "block", "method": "test/block", "params": {"key": "block"}})
        with anyio.fail_after(TIMEOUT):
            await state.started_event("block").wait()
        received: list[dict[str, Any]] = []
        sent_all = anyio.Event()

        async def send_burst() -> None:
            for index in range(burst):
                await client.send({"id": index, "method": "test/echo", "params": {}})
            sent_all.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(send_burst)
            # Not reading yet: the outbound queue (1) fills with overload answers, the server
            # stops reading, and the burst cannot be fully written.
            with anyio.fail_after(TIMEOUT):
                while len(received) < burst - 1:
                    received.append(await client.receive())
            await sent_all.wait()
            state.gate("block").set()
            received += [await client.receive() for _ in range(2)]
    overloaded = [r["id"] for r in received if r.get("error", {}).get("code") == OVERLOADED]
    results = [r["id"] for r in received if "result" in r]
    assert sorted(overloaded) == list(range(1, burst))
    assert results == ["block", 0]


async def test_opt_out_filters_exact_notification_methods_only() -> None:
    async with serving(gate=initialize_gate) as served:
        client = served.client
        await client.initialize(optOutNotificationMethods=["test/tick", "item/tool/call", "turn/"])
        reply = await client.call(1, "test/notifyMany", {"count": 3})
        await client.send(
            {"id": 2, "method": "turn/start", "params": {"threadId": "t", "input": []}}
        )
        turn_reply = await client.receive()
        turn_started = await client.receive()
        await client.send({"id": 3, "method": "test/askClient", "params": {"question": "q"}})
        server_request = await client.receive()
        await client.send({"id": server_request["id"], "result": "fine"})
        asked = await client.receive()
    assert reply == {"id": 1, "result": {"sent": 3}}  # no test/tick before it
    assert turn_reply["id"] == 2
    assert turn_started["method"] == "turn/started"  # no prefix matching
    assert server_request["method"] == "item/tool/call"  # server requests are never filtered
    assert asked == {"id": 3, "result": "fine"}
    assert not served.connection.wants("test/tick")
    assert served.connection.wants("turn/started")


async def test_one_encoded_notification_fans_out_to_connections_honouring_each_opt_out() -> None:
    async with serving() as one, serving() as two:
        two.connection.set_notification_opt_out(["thread/started"])
        started = OutboundNotification.encode(
            "thread/started", orjson.Fragment(b'{"thread":{"id":"t"}}')
        )
        status = OutboundNotification.encode(
            "thread/status/changed", b'{"threadId":"t"}', emitted_at_ms=5
        )
        for connection in (one.connection, two.connection):
            await connection.send_notification(started)
            await connection.send_notification(status)
        first = [await one.client.receive(), await one.client.receive()]
        second = await two.client.receive()
    assert first == [orjson.loads(started.data), orjson.loads(status.data)]
    assert first[0]["params"] == {"thread": {"id": "t"}}
    assert second == {
        "method": "thread/status/changed",
        "params": {"threadId": "t"},
        "emittedAtMs": 5,
    }


async def test_server_to_client_requests_use_one_counter_from_zero_and_await_the_answer() -> None:
    registry = ServerRequests()
    async with serving(server_requests=registry) as one, serving(server_requests=registry) as two:
        await one.client.send({"id": "q1", "method": "test/askClient", "params": {"question": "a"}})
        request_one = await one.client.receive()
        await two.client.send({"id": "q2", "method": "test/askClient", "params": {"question": "b"}})
        request_two = await two.client.receive()
        await two.client.send({"id": request_two["id"], "result": {"answer": "B"}})
        await one.client.send({"id": request_one["id"], "result": {"answer": "A"}})
        reply_two = await two.client.receive()
        reply_one = await one.client.receive()
    assert request_one == {"method": "item/tool/call", "id": 0, "params": {"question": "a"}}
    assert list(request_one) == ["method", "id", "params"]
    assert request_two["id"] == 1
    assert reply_one == {"id": "q1", "result": {"answer": "A"}}
    assert reply_two == {"id": "q2", "result": {"answer": "B"}}
    assert len(registry) == 0


async def test_client_error_answer_fails_the_server_request() -> None:
    async def handler(ctx: RequestContext, params: dict[str, Any]) -> str:
        try:
            await ctx.connection.request("item/tool/call", {})
        except Exception as exc:
            return type(exc).__name__ + ": " + str(exc)
        return "answered"

    table = MethodTable([MethodSpec("ask", RawParams(), handler)])
    async with serving(table) as served:
        await served.client.send({"id": 1, "method": "ask", "params": {}})
        request = await served.client.receive()
        await served.client.send({"id": request["id"], "error": {"code": -1, "message": "no"}})
        reply = await served.client.receive()
    assert reply == {"id": 1, "result": "ServerRequestError: -1: no"}


async def test_slow_consumer_on_a_socket_kind_is_disconnected_without_affecting_another() -> None:
    capacity = 8
    total = 100
    budget = 1000  # bytes behind the queue: about a dozen of these notifications
    options: dict[str, Any] = {
        "policy": OutboundPolicy.DISCONNECT_SLOW,
        "capacity": capacity,
        "outbound_budget": budget,
    }
    async with serving(**options) as slow, serving(**options) as fast:
        received: list[dict[str, Any]] = []
        acks_send, acks = anyio.create_memory_object_stream[None](total)

        async def read_fast() -> None:
            while len(received) < total:
                received.append(await fast.client.receive())
                acks_send.send_nowait(None)

        async with anyio.create_task_group() as tg, acks_send, acks:
            tg.start_soon(read_fast)
            # The producer goes at the fast client's pace; sends to the slow one never wait:
            # once its queue is full and the budget behind it used up, it is cut off (what
            # waited behind the queue is dropped with it).
            for index in range(total):
                note = OutboundNotification.encode("item/agentMessage/delta", {"i": index})
                await slow.connection.send_notification(note)
                await fast.connection.send_notification(note)
                with anyio.fail_after(TIMEOUT):
                    await acks.receive()
        assert slow.connection.closed
        assert not slow.connection.congested  # a socket kind never holds producers up
        assert not fast.connection.closed
        with anyio.fail_after(TIMEOUT):
            await slow.finished.wait()
        delivered = 0
        async for _message in slow.client.read:
            delivered += 1
        reply = await fast.client.call("still", "test/echo", {})
    assert [message["params"]["i"] for message in received] == list(range(total))
    assert capacity <= delivered <= capacity + 1
    assert reply["id"] == "still"


async def test_end_of_input_answers_every_request_already_received_then_closes() -> None:
    async with serving() as served:
        for index in range(5):
            await served.client.send({"id": index, "method": "test/echo", "params": {}})
        await served.client.close()
        replies = [message async for message in served.client.read]
        with anyio.fail_after(TIMEOUT):
            await served.finished.wait()
    assert sorted(reply["id"] for reply in replies) == list(range(5))


async def test_end_of_input_cancels_handlers_still_running_after_the_drain_timeout() -> None:
    async with serving(drain_timeout=0.05) as served:
        await served.client.send({"id": 1, "method": "test/wait", "params": {"key": "never"}})
        with anyio.fail_after(TIMEOUT):
            await served.probe.started_event("never").wait()
        await served.client.close()
        with anyio.fail_after(TIMEOUT):
            await served.finished.wait()
        replies = [message async for message in served.client.read]
    assert replies == []
    assert served.probe.order == ["start:never"]


async def test_end_of_input_fails_server_requests_waiting_for_the_client() -> None:
    async def handler(ctx: RequestContext, params: dict[str, Any]) -> str:
        try:
            await ctx.connection.request("item/tool/call", {})
        except Exception as exc:
            return type(exc).__name__
        return "answered"

    table = MethodTable([MethodSpec("ask", RawParams(), handler)])
    async with serving(table, drain_timeout=60) as served:
        await served.client.send({"id": 1, "method": "ask", "params": {}})
        await served.client.receive()
        await served.client.close()
        reply = await served.client.receive()
        with anyio.fail_after(TIMEOUT):
            await served.finished.wait()
    assert reply == {"id": 1, "result": "ConnectionClosedError"}


async def test_close_cancels_everything_and_ends_the_outbound_stream() -> None:
    async with serving() as served:
        await served.client.send({"id": 1, "method": "test/wait", "params": {"key": "k"}})
        with anyio.fail_after(TIMEOUT):
            await served.probe.started_event("k").wait()
        served.connection.close()
        with anyio.fail_after(TIMEOUT):
            await served.finished.wait()
        replies = [message async for message in served.client.read]
        assert await served.connection.notify("late", {}) is False
    assert replies == []
    assert served.probe.order == ["start:k"]


async def test_a_write_to_a_peer_that_is_gone_ends_the_connection_while_input_stays_open() -> None:
    inbound_send, inbound = anyio.create_memory_object_stream[Any](0)
    outbound, outbound_recv = anyio.create_memory_object_stream[Any](8)
    outbound_recv.close()  # the transport saw the peer go away (EPIPE, socket closed)
    connection = Connection((inbound, outbound), TABLE)
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg, inbound_send:
            tg.start_soon(connection.run)
            await inbound_send.send({"id": 1, "method": "test/echo", "params": {}})
    assert connection.closed


async def test_coalesced_messages_go_out_in_items_of_bounded_size() -> None:
    """The outbound stream is bounded in items: the messages of one pass go out as several items
    of at most ``COALESCE_MAX_BYTES`` (plus one message), in order, never as one item of
    everything (a thousand output deltas made 12 MB items, 128 of them fitting in the stream)."""
    inbound_send, inbound = anyio.create_memory_object_stream[Any](0)
    outbound, outbound_recv = anyio.create_memory_object_stream[Any](1024)
    connection = Connection((inbound, outbound), TABLE, coalesce=True)
    messages = [orjson.dumps({"i": index, "pad": "x" * 10_000}) for index in range(100)]
    for message in messages:
        assert connection.offer(message)
    connection.flush()  # what the end of the pass does
    items: list[bytes] = []
    while True:
        try:
            items.append(outbound_recv.receive_nowait())
        except anyio.WouldBlock:
            break
    for stream in (inbound_send, inbound, outbound, outbound_recv):
        await stream.aclose()
    assert b"\n".join(items) == b"\n".join(messages)
    assert len(items) > 1
    assert max(map(len, items)) < COALESCE_MAX_BYTES + 10_100


async def test_notifications_queued_behind_a_full_stream_hold_about_their_length() -> None:
    """What waits in the backlog is counted by length against its budget, so it must hold about
    that: an orjson result sits in a buffer of at least 4 KiB (orjson 3.13), and two thousand
    230-byte notifications held 8.2 MB for a count of 0.46 MB before they were copied to size."""
    inbound_send, inbound = anyio.create_memory_object_stream[Any](0)
    outbound, outbound_recv = anyio.create_memory_object_stream[Any](1)
    connection = Connection((inbound, outbound), TABLE)
    assert connection.offer(b"{}")  # the stream is full: what follows waits behind it
    tracemalloc.start()
    try:
        for index in range(2000):
            note = OutboundNotification.encode("item/started", {"i": index, "pad": "x" * 150})
            assert connection.offer_notification(note)
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    queued = connection.backlog_bytes
    for stream in (inbound_send, inbound, outbound, outbound_recv):
        await stream.aclose()
    assert queued > 2000 * 150
    assert held < 1.5 * queued, (held, queued)


async def test_a_delta_line_queued_behind_a_full_stream_is_kept_as_it_is() -> None:
    """A delta line is joined from its parts, so its allocation is its length already
    (``OutboundNotification.exact``): on a socket connection whose client reads slower than the
    thread streams, every delta waits in the backlog, and a copy there cost 240 ns a delta."""
    inbound_send, inbound = anyio.create_memory_object_stream[Any](0)
    outbound, outbound_recv = anyio.create_memory_object_stream[Any](1)
    connection = Connection((inbound, outbound), TABLE, policy=OutboundPolicy.DISCONNECT_SLOW)
    assert connection.offer(b"{}")  # the stream is full: what follows waits behind it
    head, tail = b'{"method":"item/agentMessage/delta","params":{"delta":"', b'"}}'
    lines = [head + b"d%d" % index + tail for index in range(2000)]
    tracemalloc.start()
    try:
        for line in lines:
            note = OutboundNotification("item/agentMessage/delta", line)
            assert connection.offer_notification(note)
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    queued = connection.backlog_bytes
    for stream in (inbound_send, inbound, outbound, outbound_recv):
        await stream.aclose()
    assert queued == sum(map(len, lines))
    assert held < 16 * len(lines), (held, queued)  # the backlog's own pointers


async def test_handler_can_use_its_context() -> None:
    seen: dict[str, Any] = {}

    async def handler(ctx: RequestContext, params: dict[str, Any]) -> None:
        seen.update(id=ctx.request_id, method=ctx.method, spec=ctx.spec.name, probe=probe(ctx))

    table = MethodTable([MethodSpec("ctx", RawParams(), handler)])
    async with serving(table) as served:
        reply = await served.client.call("r", "ctx", {"a": 1})
    assert reply == {"id": "r", "result": None}
    assert seen["id"] == "r"
    assert seen["method"] == seen["spec"] == "ctx"
    assert seen["probe"] is served.probe


async def test_at_most_max_in_flight_requests_are_handled_at_once() -> None:
    async with serving(max_in_flight=1) as served:
        client, state = served.client, served.probe
        await client.send(
            {"id": "a", "method": "test/wait", "params": {"key": "a", "threadId": "1"}}
        )
        await client.send(
            {"id": "b", "method": "test/wait", "params": {"key": "b", "threadId": "2"}}
        )
        with anyio.fail_after(TIMEOUT):
            await state.started_event("a").wait()
        await anyio.wait_all_tasks_blocked()
        assert "start:b" not in state.order
        state.gate("b").set()
        state.gate("a").set()
        assert [(await client.receive())["id"], (await client.receive())["id"]] == ["a", "b"]


async def test_server_request_after_end_of_input_fails_at_once() -> None:
    async def handler(ctx: RequestContext, params: dict[str, Any]) -> str:
        await probe(ctx).gate("go").wait()
        try:
            await ctx.connection.request("item/tool/call", {})
        except Exception as exc:
            return type(exc).__name__
        return "answered"

    table = MethodTable([MethodSpec("ask", RawParams(), handler)])
    async with serving(table, drain_timeout=60) as served:
        await served.client.send({"id": 1, "method": "ask", "params": {}})
        await served.client.close()
        await anyio.wait_all_tasks_blocked()
        served.probe.gate("go").set()
        reply = await served.client.receive()
    assert reply == {"id": 1, "result": "ConnectionClosedError"}


@pytest.mark.parametrize(
    ("kind", "policy"),
    [
        (TransportKind.STDIO, OutboundPolicy.BACKPRESSURE),
        (TransportKind.MEMORY, OutboundPolicy.BACKPRESSURE),
        (TransportKind.UNIX, OutboundPolicy.DISCONNECT_SLOW),
        (TransportKind.WEBSOCKET, OutboundPolicy.DISCONNECT_SLOW),
    ],
)
async def test_socket_kinds_disconnect_slow_clients_and_stdio_waits(
    kind: TransportKind, policy: OutboundPolicy
) -> None:
    assert outbound_policy_for(kind) is policy


async def test_a_socket_kind_paces_producers_while_its_client_reads_and_cuts_off_a_stalled_one() -> (
    None
):
    # issue 23.3: a socket connection reports congestion past an eighth of its budget, so a
    # source waits for a client that reads; one that reads nothing for the grace is closed
    options: dict[str, Any] = {
        "policy": OutboundPolicy.DISCONNECT_SLOW,
        "capacity": 4,
        "outbound_budget": 8000,
        "stall_grace": 0.2,
    }
    note = OutboundNotification.encode("item/agentMessage/delta", {"pad": "x" * 200})
    async with serving(**options) as reading, serving(**options) as stalled:
        for served in (reading, stalled):
            while not served.connection.congested:
                assert served.connection.offer(note.data)
            assert not served.connection.closed  # congested well before the budget

        async def read_all() -> None:
            async for _message in reading.client.read:
                pass

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_all)
            with anyio.fail_after(TIMEOUT):
                await reading.connection.wait_writable()
            assert not reading.connection.closed
            assert not reading.connection.congested
            with anyio.fail_after(TIMEOUT):
                # whatever buffers lie between fill up; then the producer is held until the
                # grace ends the connection
                while not stalled.connection.closed:
                    await stalled.connection.wait_writable()
                    while not (stalled.connection.congested or stalled.connection.closed):
                        stalled.connection.offer(note.data)
            tg.cancel_scope.cancel()
