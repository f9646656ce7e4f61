"""Params and envelopes read as 0.163.0 reads them (probed over stdio, issue 23.6):

* a method the bridge does not implement answers "not supported" whatever its params are:
  the real server reads ``configRequirements/read`` with ``params: null`` and ``skills/list``
  with ``params: []``, so refusing them as bad params would be a difference of its own;
* a positional (array) params form may leave out the struct's trailing fields that serde fills
  with their default (``thread/read ["<id>"]``); a longer array than the struct is
  ``invalid length N, expected M elements in sequence``;
* a message with a duplicate envelope member (``id``, ``method``, ``params``) is dropped
  unanswered, as the real server drops it (duplicate keys inside params keep the last, as
  orjson and serde both read them).
"""

from __future__ import annotations

import pytest

from tests.e2e._harness import Session, open_bridge

pytestmark = pytest.mark.anyio

KINDS = ("memory", "websocket")


async def _raw_call(client: Session, line: bytes, request_id: int) -> dict[str, object]:
    await client.send_raw(line)
    seen = await client.until(lambda m: m.get("id") == request_id)
    return seen[-1]


@pytest.mark.parametrize("kind", KINDS)
async def test_unimplemented_methods_answer_not_supported_whatever_their_params(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client: Session = await bridge.connect()
        await client.initialize()
        for request_id, line in (
            (1, b'{"id":1,"method":"configRequirements/read","params":null}'),
            (2, b'{"id":2,"method":"skills/list","params":[]}'),
            (3, b'{"id":3,"method":"configRequirements/read"}'),
        ):
            reply = await _raw_call(client, line, request_id)
            error = reply["error"]
            assert isinstance(error, dict)
            assert error["code"] == -32601, reply
            assert "not supported" in str(error["message"])


@pytest.mark.parametrize("kind", KINDS)
async def test_positional_params_may_leave_out_trailing_default_fields(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client: Session = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        await client.send({"id": 5, "method": "thread/read", "params": [thread_id]})
        reply = (await client.until(lambda m: m.get("id") == 5))[-1]
        result = reply["result"]
        assert isinstance(result, dict)
        assert result["thread"]["id"] == thread_id
        # Option fields without a default are still needed, as serde needs them
        reply = await _raw_call(client, b'{"id":6,"method":"thread/loaded/list","params":[]}', 6)
        assert reply["error"] == {
            "code": -32600,
            "message": "Invalid request: invalid length 0, expected struct "
            "ThreadLoadedListParams with 2 elements",
        }
        reply = await _raw_call(
            client, b'{"id":7,"method":"thread/loaded/list","params":[null,null,null]}', 7
        )
        assert reply["error"] == {
            "code": -32600,
            "message": "Invalid request: invalid length 3, expected 2 elements in sequence",
        }


@pytest.mark.parametrize("kind", KINDS)
async def test_a_message_with_a_duplicate_envelope_member_is_dropped_unanswered(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client: Session = await bridge.connect()
        await client.initialize()
        await client.send_raw(b'{"id":4,"id":5,"method":"thread/loaded/list","params":{}}')
        await client.send_raw(b'{"id":8,"method":"thread/loaded/list","method":"x","params":{}}')
        await client.send_raw(b'{"id":9,"method":"thread/loaded/list","params":{},"params":{}}')
        reply = await client.call("thread/loaded/list", {}, request_id=10)
        assert reply["result"] == {"data": [], "nextCursor": None}
        assert [m.get("id") for m in client.received if "id" in m and "method" not in m][-1:] == [
            10
        ]
        assert not any(m.get("id") in (4, 5, 8, 9) for m in client.received)
