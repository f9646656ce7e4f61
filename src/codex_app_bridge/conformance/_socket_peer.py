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
import shutil
import tempfile
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
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

CONNECT_TIMEOUT_S: Final = 60.0
_RETRY_S: Final = 0.05


class SocketPeer(StdioPeer):
    """A client on one WebSocket connection; ``process`` is the server it talks to."""

    def __init__(
        self, process: anyio.abc.Process, ws: ClientConnection, handler: ServerRequestHandler
    ) -> None:
        super().__init__(process, handler)
        self._ws = ws

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

    def start_reading(self, tg: anyio.abc.TaskGroup) -> None:
        """Read the connection in ``tg`` (server requests are answered there too)."""
        tg.start_soon(self._read_loop, tg)

    async def close(self) -> None:
        """Close the connection and wait until its reader has seen the end."""
        await self._ws.close()
        await self._closed.wait()


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


Connect = Callable[[], Awaitable[SocketPeer]]
"""Opens one more client on the server's socket (served until the server's block ends)."""


@asynccontextmanager
async def listening_server(
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str],
    stderr_path: str | os.PathLike[str] | None = None,
    handler: ServerRequestHandler = default_server_request_handler,
    close_timeout_s: float = 10.0,
) -> AsyncGenerator[Connect]:
    """Spawn ``argv`` followed by ``--listen unix://<a short private path>``; yield ``connect``,
    which opens one more client (waiting for the server to bind its socket). Every client is
    read in this block's task group, so a client opened under a narrower cancel scope outlives
    it; at the end the clients close, then the server gets SIGTERM."""
    # sun_path is about 100 bytes: a directory of its own, short, under the temp dir
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
        peers: list[SocketPeer] = []
        try:
            async with anyio.create_task_group() as tg:

                async def connect() -> SocketPeer:
                    ws = await _connect(process, path, CONNECT_TIMEOUT_S)
                    peer = SocketPeer(process, ws, handler)
                    peers.append(peer)
                    peer.start_reading(tg)
                    return peer

                try:
                    yield connect
                finally:
                    with anyio.move_on_after(close_timeout_s, shield=True):
                        for peer in peers:
                            await peer.close()
                    tg.cancel_scope.cancel()
        finally:
            if process.returncode is None:
                process.terminate()
            with anyio.move_on_after(close_timeout_s, shield=True) as scope:
                await process.wait()
            if scope.cancelled_caught:
                process.kill()
                with anyio.CancelScope(shield=True):
                    await process.wait()
    finally:
        if stderr_file is not None:
            stderr_file.close()
        shutil.rmtree(sockdir, ignore_errors=True)
