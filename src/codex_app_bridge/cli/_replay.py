"""``codex-app-bridge replay FILE``: what one subscribed client receives when a recording is
served.

FILE is anything ``serve --script`` takes: a script of event envelopes ``{id, msg}`` or a Codex
rollout (``rollout-*.jsonl``). The command runs the real server in process with FILE as its
source, connects one client (in memory), initializes it, starts a thread and starts one turn per
recorded turn, each once the previous one has completed; it prints, as JSONL, every
notification that client receives from ``thread/start`` on (``thread/started``,
``turn/started``, items, ``turn/completed``, ...), exactly as the server wrote them. Thread and
turn ids are the live ones the server minted. ``--raw-events`` opts the client in to
``rawResponseItem/completed`` (``experimentalRawEvents``); ``--seed N`` makes the run
reproducible (``serve --seed``: seeded ids, a clock that stands still); ``--no-timestamps`` leaves
``emittedAtMs`` out and implies ``--seed 0`` unless a seed is given, so two runs print the same
bytes; ``--pace`` is ``serve``'s.

Exit status: 0; 1 when a turn failed because the recording was bad (its ``error`` notification
says which line); 2 when FILE cannot be used at all (reported before anything is printed).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, BinaryIO, cast

import anyio
import orjson

from codex_app_bridge._clock import SeededClock, install_clock
from codex_app_bridge.cli._common import EXIT_BAD_INPUT, EXIT_USAGE, run_async
from codex_app_bridge.server import BridgeServer
from codex_app_bridge.sources import (
    RolloutSource,
    ScriptError,
    ScriptPacing,
    ScriptSource,
    load_script,
)
from codex_app_bridge.transport import TransportKind, create_memory_transport_pair

__all__ = ["register", "replay"]

_COMMAND = "replay"
_REMOTE_CONTROL = "remoteControl/status/changed"


async def replay(
    source: ScriptSource | RolloutSource,
    out: BinaryIO,
    *,
    raw_events: bool = False,
    timestamps: bool = True,
) -> int:
    """Serve ``source`` to one client and write what it receives; the number of failed turns
    whose recording was bad (``ScriptError`` if the file cannot be indexed)."""
    count = await anyio.to_thread.run_sync(source.turn_count)
    live = source.pacing != ScriptPacing()
    bad = 0
    async with (
        BridgeServer(source) as server,
        create_memory_transport_pair() as (client, server_streams),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(server.serve_connection, server_streams, TransportKind.MEMORY)
        read, write = client
        ids = iter(range(1, 1 << 62))
        printing = False

        def show(message: dict[str, Any]) -> None:
            if not timestamps:
                message.pop("emittedAtMs", None)
            out.write(orjson.dumps(message) + b"\n")
            if live:  # a paced replay is watched as it plays
                out.flush()

        async def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
            request_id = next(ids)
            await write.send({"id": request_id, "method": method, "params": params})
            async for item in read:
                if not isinstance(item, dict):
                    continue
                message = cast("dict[str, Any]", item)
                if message.get("id") == request_id and "method" not in message:
                    if "error" in message:
                        raise RuntimeError(f"{method} failed: {message['error']}")
                    result: dict[str, Any] = message["result"]
                    return result
                if printing and "method" in message and "id" not in message:
                    show(message)
            raise RuntimeError("the server closed the connection")

        async def until_turn_completed(turn_id: str) -> dict[str, Any]:
            async for item in read:
                if not isinstance(item, dict):
                    continue
                message = cast("dict[str, Any]", item)
                if "method" in message and "id" not in message:
                    show(message)
                    params: dict[str, Any] = message.get("params") or {}
                    if message["method"] == "turn/completed" and params["turn"]["id"] == turn_id:
                        turn: dict[str, Any] = params["turn"]
                        return turn
            raise RuntimeError("the server closed the connection")

        # the connection-level notice after initialize is not what a recording produces
        capabilities: dict[str, Any] = {"optOutNotificationMethods": [_REMOTE_CONTROL]}
        if raw_events:
            capabilities["experimentalApi"] = True
        client_info = {"name": "codex-app-bridge-replay", "version": "1"}
        await call("initialize", {"clientInfo": client_info, "capabilities": capabilities})
        await write.send({"method": "initialized"})
        printing = True
        start: dict[str, Any] = {"experimentalRawEvents": True} if raw_events else {}
        thread = await call("thread/start", start)
        thread_id = thread["thread"]["id"]
        for number in range(count):
            params = {
                "threadId": thread_id,
                "input": [{"type": "text", "text": f"replay turn {number + 1}"}],
            }
            turn_id = (await call("turn/start", params))["turn"]["id"]
            turn = await until_turn_completed(turn_id)
            if turn["status"] == "failed" and " line " in orjson.dumps(turn.get("error")).decode():
                bad += 1
        out.flush()
        await write.aclose()
        tg.cancel_scope.cancel()
    return bad


def _run(args: argparse.Namespace) -> int:
    try:
        source = load_script(args.file)
        if args.pace is not None:
            source = source.with_pacing(ScriptPacing.parse(args.pace))
    except (ScriptError, ValueError) as exc:
        print(f"{_COMMAND}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    out = sys.stdout.buffer
    seed = 0 if args.seed is None and args.no_timestamps else args.seed
    if seed is not None:
        install_clock(SeededClock(seed))
    try:
        bad = run_async(
            lambda: replay(
                source, out, raw_events=args.raw_events, timestamps=not args.no_timestamps
            )
        )
    finally:
        out.flush()
    return EXIT_BAD_INPUT if bad else 0


def register(subparsers: Any) -> None:
    """Add the ``replay`` command."""
    parser = subparsers.add_parser(
        _COMMAND,
        help="serve a script or rollout to one client and print the notifications it receives",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
    )
    parser.add_argument("file", metavar="FILE", help="a script of {id, msg} lines or a rollout")
    parser.add_argument(
        "--raw-events",
        action="store_true",
        help="the client opted in to rawResponseItem/completed (experimentalRawEvents)",
    )
    parser.add_argument(
        "--no-timestamps",
        action="store_true",
        help="leave emittedAtMs out of each notification; with seeded ids (--seed, default 0) "
        "two runs print the same bytes (stable output for diffing)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="N",
        help="reproducible ids and times (see serve --seed)",
    )
    parser.add_argument(
        "--pace", metavar="PACE", default=None, help="as serve --script --pace (default: none)"
    )
    parser.set_defaults(handler=_run)
