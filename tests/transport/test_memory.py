"""The in-memory twin delivers what a pipe would: framed, decoded, bounded, with EOF and peer-gone."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from codex_app_bridge.transport import DecodeError, create_memory_transport_pair

pytestmark = pytest.mark.anyio

TIMEOUT = 60


async def test_messages_arrive_decoded_in_both_directions() -> None:
    async with create_memory_transport_pair() as (
        (client_read, client_write),
        (server_read, server_write),
    ):
        with anyio.fail_after(TIMEOUT):
            await client_write.send({"id": 1, "method": "m", "params": {}})
            assert await server_read.receive() == {"id": 1, "method": "m", "params": {}}
            await server_write.send(b'{"id":1,"result":{"z":1,"a":2}}')
            reply = await client_read.receive()
    assert reply == {"id": 1, "result": {"z": 1, "a": 2}}
    assert list(reply["result"]) == ["z", "a"]


async def test_raw_frames_are_split_decoded_or_reported_like_on_a_pipe() -> None:
    async with create_memory_transport_pair() as ((_client_read, client_write), (server_read, _w)):
        await client_write.send(b'{"a":1}\n\n   \n[1,2]')
        await client_write.send(b'{"id":2,"method":')
        with anyio.fail_after(TIMEOUT):
            items: list[Any] = [await server_read.receive() for _ in range(3)]
    assert items[:2] == [{"a": 1}, [1, 2]]
    assert isinstance(items[2], DecodeError)
    assert items[2].raw == b'{"id":2,"method":'


async def test_closing_a_write_side_is_end_of_input_for_the_other_side() -> None:
    async with create_memory_transport_pair() as ((_client_read, client_write), (server_read, _w)):
        await client_write.send({"n": 1})
        await client_write.aclose()
        with anyio.fail_after(TIMEOUT):
            received = [item async for item in server_read]
    assert received == [{"n": 1}]


async def test_a_side_that_stops_reading_makes_the_others_writes_fail() -> None:
    async with create_memory_transport_pair(capacity=2) as (
        (client_read, _cw),
        (_sr, server_write),
    ):
        await client_read.aclose()
        with anyio.fail_after(TIMEOUT), pytest.raises(anyio.BrokenResourceError):  # noqa: PT012
            for index in range(10):
                await server_write.send({"n": index})


async def test_a_side_that_does_not_read_fills_the_others_queue_of_capacity_items() -> None:
    capacity = 5
    async with create_memory_transport_pair(capacity=capacity) as (_client, (_sr, server_write)):
        for index in range(capacity):
            server_write.send_nowait({"n": index})
        await anyio.wait_all_tasks_blocked()
        server_write.send_nowait({"n": "in flight"})  # the pump holds one item
        with pytest.raises(anyio.WouldBlock):
            server_write.send_nowait({"n": "one too many"})
