"""The listening transports: ``unix://PATH`` and ``ws://IP:PORT``, many connections each.

Both speak WebSocket (``transport.websocket``) and hand each upgraded connection's stream pair to
``handler(streams, kind)``, each connection in its own task, so that one slow or broken client
never holds up another. ``serve_unix`` and ``serve_tcp`` run until cancelled; with
``task_status`` (``TaskGroup.start``) they report where they listen once bound.

Unix socket, as the real server: a socket file left by a dead server (nothing accepts on it) is
replaced; a live one is never stolen (``ListenError`` "… already in use at PATH"); a path that
exists and is not a socket is refused; a missing parent directory is created private (0700); the
socket file is made 0600 and removed on exit (if it is still ours). No health endpoints, no Origin
check and no authentication there: file permissions guard it.

TCP: ``GET /readyz`` / ``/healthz``, any request with an ``Origin`` refused with 403, optional
bearer-token authentication (``transport.auth``).
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio
import anyio.abc

from codex_app_bridge.transport._streams import (
    OUTBOUND_QUEUE_CAPACITY,
    TransportKind,
    TransportStreams,
)
from codex_app_bridge.transport.auth import CapabilityToken
from codex_app_bridge.transport.websocket import MAX_MESSAGE_BYTES, HandshakePolicy, serve_websocket

__all__ = [
    "ConnectionServer",
    "ListenError",
    "TcpEndpoint",
    "prepare_unix_socket_path",
    "serve_tcp",
    "serve_unix",
]

logger = logging.getLogger(__name__)

ConnectionServer = Callable[[TransportStreams, TransportKind], Awaitable[None]]
"""Serves one connection until it ends (``BridgeServer.serve_connection``)."""


class ListenError(OSError):
    """The listener cannot start (socket in use, path not a socket, address unavailable)."""


@dataclass(frozen=True, slots=True)
class TcpEndpoint:
    """Where a TCP listener is bound (the real port when 0 was asked for)."""

    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}"


def _socket_is_live(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


def prepare_unix_socket_path(path: str) -> None:
    """Make ``path`` bindable: parent created (0700), a stale socket removed, a live one refused."""
    parent = Path(path).parent
    if not parent.exists():
        parent.mkdir(parents=True, mode=0o700)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise ListenError(
            errno.EEXIST, f"app-server control socket path exists and is not a socket: {path}"
        )
    if _socket_is_live(path):
        raise ListenError(
            errno.EADDRINUSE, f"app-server control socket is already in use at {path}"
        )
    logger.info("removing stale socket file %s", path)
    os.unlink(path)


async def _serve_one(
    stream: anyio.abc.ByteStream,
    *,
    policy: HandshakePolicy,
    handler: ConnectionServer,
    kind: TransportKind,
    capacity: int,
    max_message_bytes: int,
) -> None:
    async def run(streams: TransportStreams) -> None:
        await handler(streams, kind)

    try:
        await serve_websocket(
            stream, policy, run, capacity=capacity, max_message_bytes=max_message_bytes
        )
    except Exception:
        logger.exception("%s connection failed", kind.value)


async def serve_unix(
    path: str,
    handler: ConnectionServer,
    *,
    capacity: int = OUTBOUND_QUEUE_CAPACITY,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    task_status: anyio.abc.TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve WebSocket over a unix socket at ``path`` until cancelled (see the module docstring)."""
    prepare_unix_socket_path(path)
    listener = await anyio.create_unix_listener(path, mode=0o600)
    ours = os.stat(path).st_ino
    policy = HandshakePolicy(
        refuse_origin=False,
        health_endpoints=False,
        reply_to_non_upgrade=False,
        extra_headers=(
            ("x-codex-websocket-max-unfragmented-message-bytes", str(max_message_bytes)),
        ),
    )
    try:
        async with listener:
            task_status.started(path)
            await listener.serve(
                partial(
                    _serve_one,
                    policy=policy,
                    handler=handler,
                    kind=TransportKind.UNIX,
                    capacity=capacity,
                    max_message_bytes=max_message_bytes,
                )
            )
    finally:
        try:
            if os.stat(path).st_ino == ours:
                os.unlink(path)
        except OSError:
            pass


async def serve_tcp(
    host: str,
    port: int,
    handler: ConnectionServer,
    token: CapabilityToken | None = None,
    *,
    capacity: int = OUTBOUND_QUEUE_CAPACITY,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    task_status: anyio.abc.TaskStatus[TcpEndpoint] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve WebSocket on ``host:port`` until cancelled (see the module docstring)."""
    try:
        listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    except OSError as exc:
        raise ListenError(exc.errno, f"failed to bind ws://{host}:{port}: {exc.strerror}") from exc
    bound = listener.extra(anyio.abc.SocketAttribute.local_address)
    assert isinstance(bound, tuple)
    policy = HandshakePolicy(authorize=None if token is None else token.check)
    async with listener:
        task_status.started(TcpEndpoint(host, int(bound[1])))
        await listener.serve(
            partial(
                _serve_one,
                policy=policy,
                handler=handler,
                kind=TransportKind.WEBSOCKET,
                capacity=capacity,
                max_message_bytes=max_message_bytes,
            )
        )
