"""The JSON-RPC envelope: classification in the real server's order and the outbound shapes."""

from __future__ import annotations

import orjson
import pytest

from codex_app_bridge.protocol.jsonrpc import (
    ABSENT,
    INT64_MAX,
    INT64_MIN,
    UNDECODABLE_REASON,
    ErrorObject,
    ErrorResponse,
    Notification,
    Request,
    Response,
    Undecodable,
    classify,
    encode_error,
    encode_notification,
    encode_response,
    encode_server_request,
    is_request_id,
    now_ms,
)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            {"id": 1, "method": "thread/list", "params": {}},
            Request(1, "thread/list", {}),
        ),
        ({"id": "abc", "method": "m"}, Request("abc", "m", ABSENT)),
        ({"id": 0, "method": "m", "params": None}, Request(0, "m", None)),
        ({"jsonrpc": "2.0", "id": -5, "method": "m", "params": []}, Request(-5, "m", [])),
        ({"id": INT64_MAX, "method": "m"}, Request(INT64_MAX, "m")),
        ({"id": INT64_MIN, "method": "m"}, Request(INT64_MIN, "m")),
        (
            {"id": 1, "method": "m", "trace": {"traceparent": "00-ab", "extra": 1}},
            Request(1, "m", ABSENT, {"traceparent": "00-ab", "extra": 1}),
        ),
        # an id that is not a string or a signed 64-bit integer makes it a notification
        ({"id": 1.5, "method": "m", "params": {}}, Notification("m", {})),
        ({"id": None, "method": "m"}, Notification("m")),
        ({"id": True, "method": "m"}, Notification("m")),
        ({"id": INT64_MAX + 1, "method": "m"}, Notification("m")),
        ({"id": [1], "method": "m"}, Notification("m")),
        # so does a malformed trace
        ({"id": 1, "method": "m", "trace": 5}, Notification("m")),
        ({"id": 1, "method": "m", "trace": {"traceparent": 5}}, Notification("m")),
        ({"method": "initialized"}, Notification("initialized")),
        ({"id": 0, "result": {"decision": "accept"}}, Response(0, {"decision": "accept"})),
        ({"id": 7, "result": None}, Response(7, None)),
        (
            {"id": 3, "error": {"code": -32600, "message": "no", "data": {"x": 1}}},
            ErrorResponse(3, ErrorObject(-32600, "no", {"x": 1})),
        ),
        (
            {"id": "s", "error": {"code": 1, "message": "m"}},
            ErrorResponse("s", ErrorObject(1, "m")),
        ),
    ],
)
def test_inbound_values_are_classified_in_the_real_server_order(
    value: object, message: object
) -> None:
    assert classify(value) == message


@pytest.mark.parametrize(
    "value",
    [
        [{"id": 1, "method": "m"}],  # batch
        [1, 2, 3],
        "text",
        5,
        None,
        {},
        {"id": 1},
        {"id": 1, "method": 5, "params": {}},
        {"id": 1.5, "result": {}},
        {"id": 1, "error": {"code": "x", "message": "m"}},
        {"id": 1, "error": {"code": 1.0, "message": "m"}},
        {"id": 1, "error": {"code": 1}},
    ],
)
def test_batches_non_objects_and_shapeless_objects_are_undecodable(value: object) -> None:
    assert classify(value) == Undecodable(UNDECODABLE_REASON)


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        *[("", True), ("1", True), (0, True), (-1, True), (2**62, True), (INT64_MIN, True)],
        *[
            (INT64_MAX + 1, False),
            (INT64_MIN - 1, False),
            (True, False),
            (1.0, False),
            (None, False),
        ],
    ],
)
def test_request_ids_are_strings_or_signed_64_bit_integers(value: object, ok: bool) -> None:
    assert is_request_id(value) is ok


def test_response_is_id_then_result_without_jsonrpc_member() -> None:
    assert encode_response(0, {"a": 1}) == b'{"id":0,"result":{"a":1}}'
    assert encode_response("x", b'{"pre":1}') == b'{"id":"x","result":{"pre":1}}'
    assert encode_response(-3, orjson.Fragment(b"[]")) == b'{"id":-3,"result":[]}'


def test_error_is_error_then_id_and_data_only_when_present() -> None:
    assert encode_error(4, ErrorObject(-32600, "Not initialized")) == (
        b'{"error":{"code":-32600,"message":"Not initialized"},"id":4}'
    )
    assert encode_error("a", ErrorObject(-32600, "draining", {"reason": "x"})) == (
        b'{"error":{"code":-32600,"message":"draining","data":{"reason":"x"}},"id":"a"}'
    )
    assert encode_error(1, ErrorObject(1, "m", None)) == (
        b'{"error":{"code":1,"message":"m","data":null},"id":1}'
    )


def test_notification_is_method_params_emitted_at_ms() -> None:
    assert encode_notification("turn/started", {"threadId": "t"}, emitted_at_ms=17) == (
        b'{"method":"turn/started","params":{"threadId":"t"},"emittedAtMs":17}'
    )
    assert encode_notification("x", orjson.Fragment(b'{"y":2}'), emitted_at_ms=1) == (
        b'{"method":"x","params":{"y":2},"emittedAtMs":1}'
    )


def test_notification_is_stamped_with_the_wall_clock_in_milliseconds() -> None:
    before = now_ms()
    stamped = orjson.loads(encode_notification("x", {}))["emittedAtMs"]
    after = now_ms()
    assert before <= stamped <= after
    assert 1_700_000_000_000 < stamped < 10_000_000_000_000


def test_server_request_is_method_id_params() -> None:
    assert encode_server_request(0, "item/tool/call", b'{"q":1}') == (
        b'{"method":"item/tool/call","id":0,"params":{"q":1}}'
    )
