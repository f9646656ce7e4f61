"""Handshake, dialect and error boundary, over every transport: what a client sees before and
around ``initialize``, with the real 0.163.0 codes and texts."""

from __future__ import annotations

import os

import orjson
import pytest

from codex_app_bridge.protocol.v2.methods import ALL_CLIENT_REQUEST_METHODS
from tests.e2e._harness import methods, open_bridge

pytestmark = pytest.mark.anyio

UNKNOWN_FOO = "Invalid request: unknown variant `foo/bar`, expected one of " + ", ".join(
    f"`{m}`" for m in ALL_CLIENT_REQUEST_METHODS
)


async def test_requests_before_initialize_are_refused_but_unknown_methods_come_first(
    kind: str,
) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        assert await client.call("thread/list", {}) == {
            "error": {"code": -32600, "message": "Not initialized"},
            "id": 1,
        }
        reply = await client.call("foo/bar", {})
        assert reply["error"] == {"code": -32600, "message": UNKNOWN_FOO}
        assert reply["error"]["message"].startswith(
            "Invalid request: unknown variant `foo/bar`, expected one of `initialize`, "
            "`server/diagnostics`, `userVerification/status`"
        )


BAD_INITIALIZE: list[tuple[object, str]] = [
    (None, "Invalid request: missing field `params`"),
    ({}, "Invalid request: missing field `clientInfo`"),
    (
        {"clientInfo": {"name": 5, "version": "1"}},
        "Invalid request: invalid type: integer `5`, expected a string",
    ),
    ([], "Invalid request: invalid length 0, expected struct InitializeParams with 2 elements"),
    (
        {"clientInfo": {"name": "bad\nname", "version": "1"}},
        "Invalid clientInfo.name: 'bad\nname'. Must be a valid HTTP header value.",
    ),
]


async def test_a_bad_initialize_leaves_the_connection_uninitialized(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        for params, message in BAD_INITIALIZE:
            reply = await client.call("initialize", params)
            assert reply["error"] == {"code": -32600, "message": message}, params
            assert (await client.call("thread/loaded/list", {}))["error"]["message"] == (
                "Not initialized"
            )
        await client.initialize()


async def test_initialize_answers_like_the_real_server_then_announces_remote_control(
    kind: str,
) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        reply = await client.call(
            "initialize",
            {"clientInfo": {"name": "codex_python_sdk", "title": "SDK", "version": "0.163.0"}},
            request_id=0,
        )
        assert reply["id"] == 0
        result = reply["result"]
        assert sorted(result) == ["codexHome", "platformFamily", "platformOs", "userAgent"]
        agent = result["userAgent"]
        # The official SDK splits name/version at the first "/" and the first space.
        assert agent.startswith("codex_python_sdk/0.163.0 (")
        assert agent.endswith(" (codex_python_sdk; 0.163.0)")
        assert agent.split(" (", 2)[1].count(";") == 1  # "(<os> <version>; <arch>)"
        assert os.path.isabs(result["codexHome"])
        assert (result["platformFamily"], result["platformOs"]) == ("unix", "linux")
        notice = await client.next_message()
        assert notice["method"] == "remoteControl/status/changed"
        assert notice["params"]["status"] == "disabled"


async def test_a_second_initialize_is_refused(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        reply = await client.call("initialize", {"clientInfo": {"name": "x", "version": "1"}})
        assert reply["error"] == {"code": -32600, "message": "Already initialized"}


async def test_user_agent_sanitizes_client_parts_and_keeps_the_first_originator(
    kind: str,
) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        result = await client.initialize(name="é ü", version="v\x7f")
        assert result["userAgent"].startswith("_ _/0.163.0 (")
        assert result["userAgent"].endswith("(_ _; v_)")


async def test_initialized_is_optional_and_never_answered(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        await client.send({"method": "initialized"})
        await client.send({"method": "initialized", "params": {}})
        reply = await client.call("thread/loaded/list", {})
        assert reply["result"] == {"data": [], "nextCursor": None}


async def test_request_ids_are_echoed_with_their_json_type(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        for request_id in ["abc", -5, 0, 4611686018427387904, "", -(2**63)]:
            reply = await client.call("thread/loaded/list", {}, request_id=request_id)
            assert reply["id"] == request_id
            assert type(reply["id"]) is type(request_id)
        # Duplicate in-flight ids are not detected: each request is answered.
        await client.send({"id": 77, "method": "thread/loaded/list", "params": {}})
        await client.send({"id": 77, "method": "thread/loaded/list", "params": {}})
        answers = await client.until(lambda m: m.get("id") == 77)
        answers += await client.until(lambda m: m.get("id") == 77)
        assert [m["id"] for m in answers] == [77, 77]


async def test_malformed_lines_batches_and_bad_ids_get_no_reply(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        await client.send_raw(b'{"id":2,"method":')
        await client.send_raw(b"[1,2,3]")
        await client.send_raw(b'[{"id":3,"method":"thread/list","params":{}}]')
        await client.send({"id": 1.5, "method": "thread/list", "params": {}})
        await client.send({"id": None, "method": "thread/list", "params": {}})
        await client.send({"id": 999, "result": {}})
        # Not UTF-8 (a Latin-1 byte), and nested 128 levels deep (serde_json's limit): dropped
        # like invalid JSON, never an internal error.
        await client.send_raw(b'{"id":4,"method":"thread/list","params":{"searchTerm":"caf\xe9"}}')
        deep = b"[" * 126 + b"]" * 126
        await client.send_raw(b'{"id":5,"method":"thread/list","params":{"x":%s}}' % deep)
        await client.send_raw(
            b'{"id":6,"method":"thread/list","params":{"x":%s}}' % (b"[" * 300 + b"]" * 300)
        )
        # One level less is fine (unknown params members are ignored).
        shallow = b"[" * 125 + b"]" * 125
        fine = await client.call("thread/loaded/list", {"x": orjson.loads(shallow)})
        assert fine["result"]["data"] == []
        reply = await client.call("thread/loaded/list", {}, request_id=7)
        # Nothing arrived between: the next message is the answer to id 7.
        assert client.received[-1] == reply
        assert reply["id"] == 7


async def test_a_jsonrpc_member_is_accepted_and_never_written(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"clientInfo": {"name": "n", "version": "1"}},
            }
        )
        messages = await client.until(lambda m: m.get("id") == 1)
        assert all("jsonrpc" not in m for m in messages)


INVALID_PARAMS: list[tuple[str, object, str]] = [
    # Positional params follow the Rust struct's field order (the generated models are sorted).
    (
        "initialize",
        [1, 2],
        "Invalid request: invalid type: integer `1`, expected struct ClientInfo",
    ),
    ("thread/read", [True], "Invalid request: invalid type: boolean `true`, expected a string"),
    ("turn/start", [True], "Invalid request: invalid type: boolean `true`, expected a string"),
    ("thread/read", None, "Invalid request: missing field `params`"),
    ("thread/read", {}, "Invalid request: missing field `threadId`"),
    (
        "thread/read",
        {"threadId": 123},
        "Invalid request: invalid type: integer `123`, expected a string",
    ),
    (
        "thread/list",
        [],
        "Invalid request: invalid length 0, expected struct ThreadListParams with 16 elements",
    ),
    (
        "thread/unsubscribe",
        [],
        "Invalid request: invalid length 0, expected struct ThreadUnsubscribeParams with 1 element",
    ),
    (
        "turn/start",
        {"threadId": "x", "input": {}},
        "Invalid request: invalid type: map, expected a sequence",
    ),
    (
        "thread/read",
        {"threadId": "not-a-uuid"},
        "invalid thread id: invalid character: expected an optional prefix of `urn:uuid:` "
        "followed by [0-9a-fA-F-], found `n` at 1",
    ),
    (
        "thread/read",
        {"threadId": "00000000-0000-0000-0000-000000000000"},
        "thread not loaded: 00000000-0000-0000-0000-000000000000",
    ),
    (
        "thread/read",
        {"threadId": "urn:uuid:00000000-0000-0000-0000-00000000000A"},
        "thread not loaded: 00000000-0000-0000-0000-00000000000a",
    ),
]


async def test_invalid_params_get_the_real_serde_worded_errors(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        for method, params, message in INVALID_PARAMS:
            reply = await client.call(method, params)
            assert reply["error"] == {"code": -32600, "message": message}, (method, params)


EXPERIMENTAL: list[tuple[str, object, str]] = [
    ("mock/experimentalMethod", {}, "mock/experimentalMethod requires experimentalApi capability"),
    (
        "thread/start",
        {"mockExperimentalField": "x", "experimentalRawEvents": True},
        "thread/start.mockExperimentalField requires experimentalApi capability",
    ),
    (
        "thread/start",
        {"experimentalRawEvents": True},
        "thread/start.experimentalRawEvents requires experimentalApi capability",
    ),
    (
        "thread/start",
        {"runtimeWorkspaceRoots": []},
        "thread/start.runtimeWorkspaceRoots requires experimentalApi capability",
    ),
    (
        "thread/start",
        {
            "approvalPolicy": {
                "granular": {"mcp_elicitations": True, "rules": True, "sandbox_approval": True}
            }
        },
        "askForApproval.granular requires experimentalApi capability",
    ),
]


async def test_experimental_methods_and_fields_need_the_capability(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        for method, params, message in EXPERIMENTAL:
            reply = await client.call(method, params)
            assert reply["error"] == {"code": -32600, "message": message}, (method, params)


async def test_unset_experimental_fields_pass_without_the_capability(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        reply = await client.call(
            "thread/start",
            {
                "experimentalRawEvents": False,
                "mockExperimentalField": None,
                "persistExtendedHistory": False,
            },
        )
        assert "result" in reply


async def test_with_the_capability_experimental_things_reach_their_handlers(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize(experimentalApi=True)
        reply = await client.call("mock/experimentalMethod", {})
        assert reply["error"] == {
            "code": -32601,
            "message": "mock/experimentalMethod is not supported by codex-app-bridge",
            "data": {"method": "mock/experimentalMethod", "reason": "unsupported"},
        }
        started = await client.call("thread/start", {"mockExperimentalField": "x"})
        assert "result" in started


async def test_known_but_unsupported_methods_answer_a_clear_error(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        reply = await client.call("plugin/list", {})
        assert reply["error"] == {
            "code": -32601,
            "message": "plugin/list is not supported by codex-app-bridge",
            "data": {"method": "plugin/list", "reason": "unsupported"},
        }


async def test_opted_out_notifications_are_never_sent(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize(
            optOutNotificationMethods=[
                "remoteControl/status/changed",
                "thread/started",
                "item/agentMessage/delta",
                "no/such/method",
            ]
        )
        thread_id = await client.start_thread()
        _, messages = await client.run_turn(thread_id, "hello")
        seen = set(methods(client.received))
        assert "thread/started" not in seen
        assert "remoteControl/status/changed" not in seen
        assert "item/agentMessage/delta" not in seen
        assert {"turn/started", "item/completed", "turn/completed"} <= set(methods(messages))
