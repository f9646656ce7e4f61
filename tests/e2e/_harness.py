"""One client harness over four transports: the in-memory twin, a real ``serve`` subprocess on
stdio, and the unix socket and websocket listeners.

``open_bridge(kind, ...)`` yields a ``Bridge``; ``bridge.connect()`` gives a ``Session`` (a JSON-RPC
client that keeps every message it receives). Every message the server writes is checked as it
arrives against the vendored 0.163.0 schemas (``_schemas``): notifications against
``ServerNotification.json`` (raw-response ones against their own definitions), results against the
answered method's ``*Response.json``, errors against ``JSONRPCError.json``; none may carry a
``"jsonrpc"`` member. A violation fails the test that received the message.

The stdio kind spawns ``python -m codex_app_bridge serve`` from this checkout; on exit it closes
stdin and requires exit code 0 within the timeout. The memory kind runs a ``BridgeServer`` in the
test's event loop (several connections possible). The unix and websocket kinds run a
``BridgeServer`` in the test's event loop behind the real listener (``transport.listen``: a unix
socket in a private temporary directory, or ``ws://127.0.0.1:<free port>``) and connect with the
``websockets`` client, one text frame per message, so every byte crosses a real socket (the CLI
wiring of those listeners has its own subprocess tests in ``tests/transport``).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import ConnectionClosed

from codex_app_bridge.config import ConfigLayers
from codex_app_bridge.server import BridgeServer
from codex_app_bridge.sources import DefaultAgent, EventSource, load_script
from codex_app_bridge.transport import LineSplitter, TransportKind, create_memory_transport_pair
from codex_app_bridge.transport.listen import TcpEndpoint, serve_tcp, serve_unix
from tests.conftest import bridge_command, bridge_env
from tests.e2e._schemas import check_server_message

TIMEOUT = 60.0
KINDS = ("memory", "stdio", "unix", "websocket")
IN_PROCESS_KINDS = ("memory", "unix", "websocket")

Message = dict[str, Any]


class ProtocolViolation(AssertionError):
    pass


@dataclass
class Session:
    """A client connection: send requests, collect what the server writes."""

    _send: Callable[[bytes], Any]
    _receive: MemoryObjectReceiveStream[bytes]
    received: list[Message] = field(default_factory=list[Message])
    _pending: list[Message] = field(default_factory=list[Message])
    _methods: dict[Any, str] = field(default_factory=dict[Any, str])
    _next_id: int = 1
    _close: Callable[[], Awaitable[None]] | None = None

    async def close(self) -> None:
        """End of input for the server (stdin closed / the in-memory pair's write side)."""
        if self._close is not None:
            await self._close()

    async def send_raw(self, data: bytes) -> None:
        await self._send(data if data.endswith(b"\n") else data + b"\n")

    async def send(self, message: Message) -> None:
        if "id" in message and "method" in message:
            self._methods[message["id"]] = message["method"]
        await self.send_raw(orjson.dumps(message))

    async def _next(self) -> Message:
        if self._pending:
            return self._pending.pop(0)
        with anyio.fail_after(TIMEOUT):
            line = await self._receive.receive()
        message = orjson.loads(line)
        assert isinstance(message, dict), line
        method = self._methods.get(message.get("id")) if "method" not in message else None
        problems = check_server_message(message, method)
        if problems:
            raise ProtocolViolation(f"{line[:300]!r}: {problems}")
        self.received.append(message)
        return message

    async def next_message(self) -> Message:
        return await self._next()

    async def next_raw(self) -> bytes:
        """The next line as received, unchecked and not kept (for floods of simple answers)."""
        assert not self._pending, "raw reads come after the checked ones"
        with anyio.fail_after(TIMEOUT):
            return await self._receive.receive()

    async def until(self, predicate: Callable[[Message], bool]) -> list[Message]:
        """Messages up to and including the first one matching ``predicate``."""
        seen: list[Message] = []
        while True:
            message = await self._next()
            seen.append(message)
            if predicate(message):
                return seen

    async def call(self, method: str, params: Any = None, *, request_id: Any = None) -> Message:
        """Send a request and return its response or error (notifications before it are kept
        and returned by later ``until``/``next_message`` calls)."""
        if request_id is None:
            request_id = self._next_id
            self._next_id += 1
        message: Message = {"id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        before: list[Message] = []
        while True:
            reply = await self._next()
            if "method" not in reply and reply.get("id") == request_id:
                self._pending[:0] = before
                return reply
            before.append(reply)

    async def result(self, method: str, params: Any = None) -> Any:
        reply = await self.call(method, params)
        assert "result" in reply, reply
        return reply["result"]

    async def initialize(self, name: str = "e2e", version: str = "1.0", **caps: Any) -> Any:
        params: Message = {"clientInfo": {"name": name, "version": version}}
        if caps:
            params["capabilities"] = caps
        result = await self.result("initialize", params)
        if "remoteControl/status/changed" not in caps.get("optOutNotificationMethods", ()):
            # Sent to this connection right after the response: consume it so that tests see
            # only what their own requests cause.
            await self.until(lambda m: m.get("method") == "remoteControl/status/changed")
        return result

    async def start_thread(self, **params: Any) -> str:
        result = await self.result("thread/start", params)
        return str(result["thread"]["id"])

    async def start_turn(self, thread_id: str, text: str) -> str:
        reply = await self.call(
            "turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": text}]}
        )
        return str(reply["result"]["turn"]["id"])

    async def run_turn(self, thread_id: str, text: str) -> tuple[str, list[Message]]:
        """Start a turn; everything received from then up to its ``turn/completed``, in arrival
        order (the ``turn/start`` response included)."""
        await self.drain_pending()
        mark = len(self.received)
        turn_id = await self.start_turn(thread_id, text)
        await self.until(is_turn_completed(turn_id))
        return turn_id, self.received[mark:]

    async def drain_pending(self) -> list[Message]:
        """Forget messages received but not consumed yet (they stay in ``received``)."""
        pending, self._pending = self._pending, []
        return pending


def is_turn_completed(turn_id: str) -> Callable[[Message], bool]:
    def check(message: Message) -> bool:
        return (
            message.get("method") == "turn/completed" and message["params"]["turn"]["id"] == turn_id
        )

    return check


def methods(messages: list[Message]) -> list[str]:
    """``method`` of each message; ``"response"`` / ``"error"`` for replies."""
    return [m.get("method", "error" if "error" in m else "response") for m in messages]


@dataclass
class Bridge:
    kind: str
    connect: Callable[[], Any]
    server: BridgeServer | None = None
    stderr: bytearray = field(default_factory=bytearray)
    open_websocket: Callable[[], AbstractAsyncContextManager[ClientConnection]] | None = None
    """Socket kinds: a bare ``websockets`` client connection (for clients that misbehave)."""


async def _pump_lines(
    stream: anyio.abc.ByteReceiveStream, sink: MemoryObjectSendStream[bytes]
) -> None:
    splitter = LineSplitter()
    async with sink:
        try:
            async for chunk in stream:
                for line in splitter.feed(chunk):
                    if line.strip():
                        await sink.send(line)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass


@asynccontextmanager
async def _memory_bridge(source: EventSource, **server_options: Any) -> AsyncIterator[Bridge]:
    async with BridgeServer(source, **server_options) as server, anyio.create_task_group() as tg:

        @asynccontextmanager
        async def connect_pair() -> AsyncIterator[Session]:
            async with create_memory_transport_pair() as (client, server_streams):
                tg.start_soon(server.serve_connection, server_streams, TransportKind.MEMORY)
                read, write = client
                lines_send, lines_recv = anyio.create_memory_object_stream[bytes](1 << 16)

                async def forward() -> None:
                    async with lines_send:
                        try:
                            async for item in read:
                                await lines_send.send(orjson.dumps(item))
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            pass

                tg.start_soon(forward)

                async def send(data: bytes) -> None:
                    for line in data.splitlines():
                        await write.send(line)

                try:
                    yield Session(send, lines_recv, _close=write.aclose)
                finally:
                    await write.aclose()
                    lines_recv.close()

        try:
            async with AsyncExitStack() as stack:

                async def connect() -> Session:
                    return await stack.enter_async_context(connect_pair())

                yield Bridge("memory", connect, server)
        finally:
            tg.cancel_scope.cancel()


async def _pump_frames(ws: ClientConnection, sink: MemoryObjectSendStream[bytes]) -> None:
    async with sink:
        try:
            while True:
                message = await ws.recv(decode=False)
                await sink.send(message)
        except (ConnectionClosed, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass


def _ws_session(ws: ClientConnection, tg: anyio.abc.TaskGroup, stack: AsyncExitStack) -> Session:
    lines_send, lines_recv = anyio.create_memory_object_stream[bytes](1 << 16)
    stack.callback(lines_recv.close)
    tg.start_soon(_pump_frames, ws, lines_send)

    async def send(data: bytes) -> None:
        # One message per text frame (raw bytes as they are: a bad line stays bad).
        for line in data.split(b"\n"):
            if line.strip():
                await ws.send(line, text=True)

    return Session(send, lines_recv, _close=ws.close)


@asynccontextmanager
async def _socket_bridge(
    kind: str, source: EventSource, **server_options: Any
) -> AsyncIterator[Bridge]:
    directory = tempfile.mkdtemp(prefix="cab-")
    try:
        async with (
            BridgeServer(source, **server_options) as server,
            anyio.create_task_group() as tg,
        ):
            open_ws: Callable[[], AbstractAsyncContextManager[ClientConnection]]
            if kind == "unix":
                path = str(Path(directory) / "bridge.sock")
                await tg.start(serve_unix, path, server.serve_connection)
                open_ws = partial(unix_connect, path, uri="ws://localhost/", max_size=None)
            else:
                endpoint: TcpEndpoint = await tg.start(
                    partial(serve_tcp, "127.0.0.1", 0, server.serve_connection)
                )
                open_ws = partial(connect, endpoint.url, max_size=None)
            try:
                async with AsyncExitStack() as stack:

                    async def connect_ws() -> Session:
                        with anyio.fail_after(TIMEOUT):
                            ws = await stack.enter_async_context(open_ws())
                        return _ws_session(ws, tg, stack)

                    yield Bridge(kind, connect_ws, server, open_websocket=open_ws)
            finally:
                tg.cancel_scope.cancel()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@asynccontextmanager
async def _stdio_bridge(args: list[str]) -> AsyncIterator[Bridge]:
    process = await anyio.open_process(
        [*bridge_command(), "serve", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=bridge_env(),
    )
    stderr = bytearray()
    connected = False
    async with process, anyio.create_task_group() as tg:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        lines_send, lines_recv = anyio.create_memory_object_stream[bytes](1 << 16)
        tg.start_soon(_pump_lines, process.stdout, lines_send)

        async def drain_stderr() -> None:
            assert process.stderr is not None
            async for chunk in process.stderr:
                stderr.extend(chunk)

        tg.start_soon(drain_stderr)
        stdin = process.stdin

        async def connect() -> Session:
            nonlocal connected
            assert not connected, "stdio serves one connection"
            connected = True
            return Session(stdin.send, lines_recv, _close=stdin.aclose)

        try:
            yield Bridge("stdio", connect, None, stderr)
        finally:
            await stdin.aclose()
            lines_recv.close()
            with anyio.fail_after(TIMEOUT):
                code = await process.wait()
            tg.cancel_scope.cancel()
        assert code == 0, f"serve exited {code}: {stderr.decode(errors='replace')[-2000:]}"


@asynccontextmanager
async def open_bridge(
    kind: str,
    *,
    pace: float = 0.0,
    script: Path | None = None,
    source: EventSource | None = None,
    outbound_budget: int | None = None,
    idle_unload: float | None = None,
    codex_home: Path | None = None,
    config: ConfigLayers | None = None,
) -> AsyncIterator[Bridge]:
    """A running bridge of ``kind`` (see the module docstring); ``source``, ``outbound_budget``,
    ``idle_unload`` and ``config`` (``BridgeServer``'s) are for the in-process kinds only (not
    stdio); ``codex_home``: threads are stored there (``--codex-home``), on every kind."""
    options: dict[str, Any] = {}
    if config is not None:
        options["config"] = config
    if outbound_budget is not None:
        options["outbound_budget"] = outbound_budget
    if idle_unload is not None:
        options["idle_unload"] = idle_unload
    if kind in IN_PROCESS_KINDS:
        if source is None:
            source = DefaultAgent(delay=pace) if script is None else load_script(script)
        if codex_home is not None:
            options["codex_home"] = codex_home
        if kind == "memory":
            async with _memory_bridge(source, **options) as bridge:
                yield bridge
        else:
            async with _socket_bridge(kind, source, **options) as bridge:
                yield bridge
    else:
        assert source is None, "a custom source needs an in-process kind"
        assert not options, "server options need an in-process kind"
        args = ["--pace", str(pace)] if script is None else ["--script", str(script)]
        if codex_home is not None:
            args += ["--codex-home", str(codex_home)]
        async with _stdio_bridge(args) as bridge:
            yield bridge
