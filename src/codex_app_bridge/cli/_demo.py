"""``codex-app-bridge demo [--json] [--pace SECONDS] [PROMPT ...]``: watch the bridge work.

A small built-in client talks to an in-process server (the built-in agent) over the in-memory
transport, exactly as a real client would over stdio: ``initialize``, ``thread/start``, one
``turn/start`` per prompt (two by default, on the same thread), then ``thread/read`` with the
turns. The exchange is printed readably: requests (``>>>``), responses (``<<<``), notifications
(``  .``), and the reasoning and answer text growing on one line as the deltas arrive.

``--json`` prints the raw exchange instead, one JSON object per line in the capture transcript
format (``{"t": seconds, "dir": "c2s"|"s2c", "msg": <the JSON-RPC message>}``), the same shape as
``tests/data/captures/*/transcript.jsonl``.

The client answers every request the server sends it (``approve: ls``, ``patch: PATH``, ...: see
the README's approvals table): it accepts, or declines with ``--answer decline``
(``testing.answer_server_request``).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO, cast

import anyio
import orjson

from codex_app_bridge.cli._common import run_async
from codex_app_bridge.server import BridgeServer
from codex_app_bridge.sources import DefaultAgent
from codex_app_bridge.testing import answer_server_request
from codex_app_bridge.transport import TransportKind, TransportStreams, create_memory_transport_pair

__all__ = ["DEFAULT_PROMPTS", "run_demo"]

DEFAULT_PROMPTS = ("Hello, bridge! Who are you?", "Say it again, in fewer words.")
_TIMEOUT = 60.0
_STREAMED = {
    "item/agentMessage/delta": "assistant",
    "item/reasoning/summaryTextDelta": "reasoning",
}


def _field(value: object, key: str) -> Any:
    """``value[key]`` when ``value`` is a JSON object (else an empty object)."""
    if isinstance(value, dict):
        return cast("dict[str, Any]", value).get(key, {})
    return {}


def _short(value: object, limit: int = 160) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Printer:
    """Writes the exchange readably, or as transcript JSONL (``raw``)."""

    def __init__(self, out: TextIO, *, raw: bool) -> None:
        self.out = out
        self.raw = raw
        self.start = time.monotonic()
        self.stream: str | None = None  # the item id whose text is growing on the current line

    def _line(self, text: str) -> None:
        if self.stream is not None:
            self.out.write("\n")
            self.stream = None
        self.out.write(text + "\n")
        self.out.flush()

    def message(self, direction: str, message: dict[str, Any]) -> None:
        if self.raw:
            record = {"t": round(time.monotonic() - self.start, 6), "dir": direction}
            self.out.write(orjson.dumps({**record, "msg": message}).decode() + "\n")
            self.out.flush()
            return
        if direction == "c2s" and "method" not in message:  # the answer to a server request
            self._line(f">>> answer  {_short(message.get('result', message.get('error')))}")
        elif direction == "c2s":
            params = f"  {_short(message['params'])}" if "params" in message else ""
            self._line(f">>> {message.get('method')}{params}")
        elif "method" in message and "id" in message:
            self._line(f"<<< request  {message['method']}  {_short(message.get('params'), 120)}")
        elif "method" in message:
            self._notification(str(message["method"]), message.get("params"))
        elif "error" in message:
            self._line(f"<<< error  {_short(message['error'])}")
        else:
            self._line(f"<<< result  {_short(message.get('result'))}")

    def _notification(self, method: str, params: Any) -> None:
        label = _STREAMED.get(method)
        if label is not None:
            item_id = str(_field(params, "itemId"))
            delta = str(_field(params, "delta") or "")
            if self.stream != item_id:
                self._line(f"  . {method}")
                self.out.write(f"    {label}: ")
                self.stream = item_id
            self.out.write(delta.replace("\n", " "))
            self.out.flush()
            return
        self._line(f"  . {method}  {_short(params, 120)}")


class _DemoClient:
    def __init__(self, streams: TransportStreams, printer: _Printer, *, accept: bool) -> None:
        self.read, self.write = streams
        self.printer = printer
        self.accept = accept
        self.next_id = 0

    async def _receive(self) -> dict[str, Any]:
        while True:
            message = await self.read.receive()
            if not isinstance(message, dict):
                raise RuntimeError(f"unexpected message from the server: {message!r}")
            typed: dict[str, Any] = message  # pyright: ignore[reportUnknownVariableType]
            self.printer.message("s2c", typed)
            if "method" in typed and "id" in typed:  # a request to the client: answer it
                await self._answer(typed)
                continue
            return typed

    async def _answer(self, request: dict[str, Any]) -> None:
        method = str(request["method"])
        result = answer_server_request(method, request.get("params"), accept=self.accept)
        reply: dict[str, Any] = (
            {"id": request["id"], "result": result}
            if result is not None
            else {"id": request["id"], "error": {"code": -32601, "message": f"demo: {method}"}}
        )
        self.printer.message("c2s", reply)
        await self.write.send(reply)

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        request_id = self.next_id
        self.next_id += 1
        message = {"id": request_id, "method": method, "params": params}
        self.printer.message("c2s", message)
        await self.write.send(message)
        while True:
            reply = await self._receive()
            if reply.get("id") == request_id and "method" not in reply:
                if "error" in reply:
                    raise RuntimeError(f"{method} failed: {reply['error']}")
                return reply.get("result")

    async def notify(self, method: str) -> None:
        message = {"method": method}
        self.printer.message("c2s", message)
        await self.write.send(message)

    async def until_turn_completed(self, turn_id: str) -> None:
        while True:
            message = await self._receive()
            if message.get("method") != "turn/completed":
                continue
            if _field(_field(message, "params"), "turn").get("id") == turn_id:
                return


async def run_demo(
    out: TextIO,
    *,
    raw: bool = False,
    prompts: tuple[str, ...] = DEFAULT_PROMPTS,
    pace: float,
    accept: bool = True,
) -> None:
    """Run the demo exchange against an in-process server, printing it to ``out``."""
    printer = _Printer(out, raw=raw)
    async with (
        BridgeServer(DefaultAgent(delay=pace)) as server,
        create_memory_transport_pair() as (client_streams, server_streams),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(server.serve_connection, server_streams, TransportKind.MEMORY)
        client = _DemoClient(client_streams, printer, accept=accept)
        with anyio.fail_after(_TIMEOUT):
            await client.request(
                "initialize",
                {"clientInfo": {"name": "codex_app_bridge_demo", "version": "1"}},
            )
            await client.notify("initialized")
            started = await client.request("thread/start", {})
            thread_id = started["thread"]["id"]
            for prompt in prompts:
                turn = await client.request(
                    "turn/start",
                    {"threadId": thread_id, "input": [{"type": "text", "text": prompt}]},
                )
                await client.until_turn_completed(turn["turn"]["id"])
            await client.request("thread/read", {"threadId": thread_id, "includeTurns": True})
        if not raw:  # a blank line after the growing text; JSONL stays JSON to the last line
            printer._line("")  # pyright: ignore[reportPrivateUsage]
        await client.write.aclose()
        tg.cancel_scope.cancel()


def _run(args: argparse.Namespace) -> int:
    prompts = tuple(args.prompt) or DEFAULT_PROMPTS
    accept = args.answer == "accept"
    run_async(
        lambda: run_demo(sys.stdout, raw=args.json, prompts=prompts, pace=args.pace, accept=accept)
    )
    return 0


def _pace(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"invalid pace {text!r}: expected seconds >= 0")
    return value


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run a built-in client against the server and print the exchange",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
    )
    parser.add_argument("--json", action="store_true", help="print the raw exchange as JSONL")
    parser.add_argument(
        "--pace",
        type=_pace,
        default=0.02,
        metavar="SECONDS",
        help="seconds before each streamed delta (default 0.02; 0 for none)",
    )
    parser.add_argument(
        "--answer",
        choices=("accept", "decline"),
        default="accept",
        help="how the client answers approvals and other server requests (default accept)",
    )
    parser.add_argument("prompt", nargs="*", help="prompts to send, one turn each")
    parser.set_defaults(handler=_run)
