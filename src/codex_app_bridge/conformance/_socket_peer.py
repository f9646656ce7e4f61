"""A JSON-RPC client over a server's unix socket listener, for the scenarios with several clients.

Role: :class:`SocketPeer` is :class:`~codex_app_bridge.conformance.real_codex.StdioPeer` (the
same waiters, requests, server-request answers and record of every message) with a WebSocket on
``unix://PATH`` instead of the server's stdio: one JSON-RPC message per text frame, as both the
real ``codex app-server --listen unix://PATH`` and ``codex-app-bridge serve --listen unix://PATH``
speak it. :func:`listening_server` spawns such a server and yields a ``connect()`` that opens
one more client on it. Boundary: the wire only, like ``real_codex``. Runs on the asyncio backend
(the ``websockets`` client).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Final

import anyio
import anyio.abc
from websockets.asyncio.client import ClientConnection, unix_connect
from websockets.exceptions import ConnectionClosed

from codex_app_bridge.conformance.real_codex import (
    JsonObject,
    ServerRequestHandler,
    StdioPeer,
    default_server_request_handler,
)

__all__ = ["SocketPeer", "listening_server"]

CONNECT_TIMEOUT_S: Final = 30.0
_RETRY_S: Final = 0.05


class SocketPeer(StdioPeer):
    """A client on one WebSocket connection; ``process`` is the server it talks to."""

    def __init__(
        self, process: anyio.abc.Process, ws: ClientConnection, handler: ServerRequestHandler
    ) -> None:
        super().__init__(process, handler)
        self._ws = ws

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        process: anyio.abc.Process,
        path: str,
        *,
        handler: ServerRequestHandler = default_server_request_handler,
        timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> AsyncGenerator[SocketPeer]:
        """Connect to the socket at ``path`` (waiting up to ``timeout_s`` for the server to bind
        it) and serve the connection until the block ends."""
        ws = await _connect(process, path, timeout_s)
        peer = cls(process, ws, handler)
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer._read_loop, tg)
            try:
                yield peer
            finally:
                with anyio.move_on_after(5):
                    await ws.close()
                with anyio.move_on_after(5):
                    await peer._closed.wait()
                tg.cancel_scope.cancel()

    async def _read_loop(self, tg: anyio.abc.TaskGroup) -> None:
        try:
            while True:
                try:
                    frame = await self._ws.recv()
                except ConnectionClosed:
                    break
                try:
                    message = json.loads(frame)
                except ValueError:
                    message = {"_unparsed": str(frame)}
                if not isinstance(message, dict):
                    message = {"_unparsed": str(frame)}
                self._on_message(message, tg)  # pyright: ignore[reportUnknownArgumentType]
        finally:
            self._closed.set()
            for waiter in [*self._pending.values(), *self._waiters]:
                waiter.event.set()

    async def send(self, message: JsonObject) -> None:
        self.sent.append(message)
        async with self._send_lock:
            await self._ws.send(json.dumps(message), text=True)


async def _connect(process: anyio.abc.Process, path: str, timeout_s: float) -> ClientConnection:
    with anyio.fail_after(timeout_s):
        while True:
            try:
                return await unix_connect(path, uri="ws://localhost/", max_size=None)
            except (FileNotFoundError, ConnectionRefusedError):
                if process.returncode is not None:
                    raise ConnectionRefusedError(
                        f"the server exited ({process.returncode}) before listening on {path}"
                    ) from None
                await anyio.sleep(_RETRY_S)  # the server is still binding its socket


Connect = Callable[[], AbstractAsyncContextManager[SocketPeer]]


@asynccontextmanager
async def listening_server(
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str],
    stderr_path: str | os.PathLike[str] | None = None,
    close_timeout_s: float = 10.0,
) -> AsyncGenerator[tuple[Connect, AsyncExitStack]]:
    """Spawn ``argv`` followed by ``--listen unix://<a short private path>``; yield ``connect``
    (each call a context for one more client) and an exit stack the caller may enter clients on
    (closed before the server is stopped). The server is sent SIGTERM at the end."""
    # sun_path is about 100 bytes: a scratch directory of its own, short, under the temp dir
    sockdir = Path(tempfile.mkdtemp(prefix="cab-"))
    path = str(sockdir / "s.sock")
    stderr_file = open(stderr_path, "wb") if stderr_path is not None else None  # noqa: ASYNC230, SIM115
    try:
        process = await anyio.open_process(
            [*argv, "--listen", f"unix://{path}"],
            stdin=-3,
            stdout=-3,
            stderr=stderr_file if stderr_file is not None else -3,
            cwd=str(cwd),
            env=dict(env),
        )
        try:
            async with AsyncExitStack() as clients:

                def connect() -> AbstractAsyncContextManager[SocketPeer]:
                    return SocketPeer.open(process, path)

                yield connect, clients
        finally:
            if process.returncode is None:
                process.terminate()
            with anyio.move_on_after(close_timeout_s) as scope:
                await process.wait()
            if scope.cancelled_caught:
                process.kill()
                await process.wait()
    finally:
        if stderr_file is not None:
            stderr_file.close()
        for leftover in sockdir.iterdir():
            leftover.unlink(missing_ok=True)
        sockdir.rmdir()
