"""A tiny stdio JSON-RPC server for the process-boundary tests: ``python stdio_server_main.py``.

It serves a three-method table over ``stdio_transport`` with an rpc ``Connection`` and exits when
stdin reaches EOF. ``test/print`` writes to ``print`` and to file descriptor 1 directly, which the
transport must divert to stderr.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import anyio

from codex_app_bridge.rpc import Connection, MethodSpec, MethodTable, RawParams, RequestContext
from codex_app_bridge.transport import stdio_transport


async def echo(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    return params


async def size(ctx: RequestContext, params: dict[str, Any]) -> int:
    return len(str(params.get("junk", "")))


async def stray_output(ctx: RequestContext, params: dict[str, Any]) -> str:
    print("stray print output")
    os.write(1, b"stray fd 1 output\n")
    return "printed"


TABLE = MethodTable(
    [
        MethodSpec("test/echo", RawParams(), echo),
        MethodSpec("test/size", RawParams(), size),
        MethodSpec("test/print", RawParams(), stray_output),
    ]
)


async def main() -> None:
    async with stdio_transport() as streams:
        await Connection(streams, TABLE).run()


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    anyio.run(main)
