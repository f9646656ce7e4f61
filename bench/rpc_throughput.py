#!/usr/bin/env python3
"""Throughput of the rpc layer over the in-memory transport (framing included).

Prints requests/s for pipelined ``echo`` requests (each through params decoding, the gate-less
pipeline, dispatch and response encoding), the cost the dispatcher adds per request,
and notifications/s for one pre-encoded notification sent to a connection.

    PYTHONPATH=src python bench/rpc_throughput.py [--requests N] [--notifications N]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import anyio

from codex_app_bridge.protocol.jsonrpc import Request
from codex_app_bridge.rpc import (
    Connection,
    MethodSpec,
    MethodTable,
    OutboundNotification,
    RawParams,
    RequestContext,
)
from codex_app_bridge.rpc._dispatch import Dispatcher
from codex_app_bridge.transport import create_memory_transport_pair


async def echo(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    return params


TABLE = MethodTable([MethodSpec("echo", RawParams(), echo)])


async def requests_per_second(count: int) -> tuple[float, int]:
    async with create_memory_transport_pair() as ((read, write), server):
        connection = Connection(server, TABLE)
        async with anyio.create_task_group() as tg:
            tg.start_soon(connection.run)
            start = time.perf_counter()

            async def send_all() -> None:
                for index in range(count):
                    await write.send({"id": index, "method": "echo", "params": {"i": index}})

            tg.start_soon(send_all)
            overloaded = 0
            for _ in range(count):
                reply = await read.receive()
                overloaded += isinstance(reply, dict) and "error" in reply
            elapsed = time.perf_counter() - start
            await write.aclose()
    return count / elapsed, overloaded


async def dispatch_overhead_us(count: int) -> tuple[float, float]:
    async with create_memory_transport_pair() as (_client, server):
        connection = Connection(server, TABLE)
        spec = TABLE.get("echo")
        assert spec is not None
        ctx = RequestContext(connection, Request(1, "echo", {}), spec, {})
        dispatcher = Dispatcher(TABLE)
        start = time.perf_counter()
        for _ in range(count):
            await dispatcher.invoke(ctx, spec)
        through_library = (time.perf_counter() - start) / count * 1e6
        start = time.perf_counter()
        for _ in range(count):
            await echo(ctx, {})
        direct = (time.perf_counter() - start) / count * 1e6
    return through_library, direct


async def notifications_per_second(count: int) -> float:
    async with create_memory_transport_pair() as ((read, _write), server):
        connection = Connection(server, TABLE)
        note = OutboundNotification.encode("item/agentMessage/delta", {"delta": "hello"})
        async with anyio.create_task_group() as tg:
            start = time.perf_counter()

            async def send_all() -> None:
                for _ in range(count):
                    await connection.send_notification(note)

            tg.start_soon(send_all)
            for _ in range(count):
                await read.receive()
            elapsed = time.perf_counter() - start
    return count / elapsed


async def main(requests: int, notifications: int) -> None:
    rps, overloaded = await requests_per_second(requests)
    via_library, direct = await dispatch_overhead_us(requests)
    nps = await notifications_per_second(notifications)
    print(
        f"pipelined echo requests over the in-memory pair: {rps:,.0f} answers/s "
        f"({requests} requests, {overloaded} answered -32001)"
    )
    print(
        f"handler call through the dispatcher: {via_library:.1f} us, direct: {direct:.1f} us "
        f"(dispatch adds {via_library - direct:.1f} us per request)"
    )
    print(f"pre-encoded notifications to one connection: {nps:,.0f} msg/s ({notifications})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--notifications", type=int, default=50_000)
    args = parser.parse_args()
    anyio.run(main, args.requests, args.notifications)
