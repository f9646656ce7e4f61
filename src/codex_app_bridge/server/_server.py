"""``BridgeServer``: one server object, any number of connections, from any transport.

The server owns the process-wide pieces and lends them to every connection:

* the ``ListenerHub`` (per-thread state, subscriptions, broadcasts),
* the ``ThreadStore`` (threads in memory; stored sessions plug in behind it later),
* the event source turns are played from (the built-in agent unless told otherwise),
* the method table (``_table``), the gate (``_handshake.check_request``), the thread
  serialization scopes and the server -> client request ids, all shared across connections as in
  the real server,
* a task group for the thread runtimes (one task per loaded thread: a turn outlives the request
  that started it, and every thread stops when the server does).

Use it as an async context manager, then hand it each connection's stream pair::

    async with BridgeServer() as server, stdio_transport() as streams:
        await server.serve_connection(streams, TransportKind.STDIO)

``serve_connection`` returns when the connection ends (EOF, peer gone, ``close``); the connection
is then dropped from every thread and broadcast. A thread left without subscribers stays loaded
until ``idle_unload`` seconds pass (``server._idle``). Leaving the context cancels running turns (on
stdio, end of input therefore ends the process without a ``turn/completed``, as the real server).
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from types import TracebackType
from typing import Self

import anyio
import anyio.abc

from codex_app_bridge.listener import ListenerHub
from codex_app_bridge.rpc import (
    Connection,
    MethodTable,
    SerialScopes,
    ServerRequests,
    outbound_policy_for,
)
from codex_app_bridge.server._handlers import Handlers
from codex_app_bridge.server._handshake import ConnectionState, check_request
from codex_app_bridge.server._idle import DEFAULT_IDLE_UNLOAD_SECONDS, IdleUnloader
from codex_app_bridge.server._runtime import INTERRUPT_GRACE, ThreadRuntime
from codex_app_bridge.server._table import build_method_table
from codex_app_bridge.server._threads import ThreadStore
from codex_app_bridge.sources import DefaultAgent, EventSource, TurnSource
from codex_app_bridge.transport import TransportKind, TransportStreams

__all__ = ["BridgeServer"]

logger = logging.getLogger(__name__)


class BridgeServer:
    """The codex app-server bridge (see the module docstring)."""

    def __init__(
        self,
        source: EventSource | TurnSource | None = None,
        *,
        default_cwd: str | None = None,
        drain_timeout: float = 10.0,
        outbound_budget: int | None = None,
        idle_unload: float | None = DEFAULT_IDLE_UNLOAD_SECONDS,
        interrupt_grace: float = INTERRUPT_GRACE,
    ) -> None:
        self.source: EventSource | TurnSource = source if source is not None else DefaultAgent()
        self.default_cwd = os.path.abspath(default_cwd or os.getcwd())
        self.outbound_budget = outbound_budget
        """Per-connection backlog budget in bytes (``None``: the rpc layer's default per policy)."""
        self.hub = ListenerHub()
        self.store = ThreadStore()
        self.handlers = Handlers(self)
        self.table: MethodTable = build_method_table(self.handlers)
        self.scopes = SerialScopes()
        self.server_requests = ServerRequests()
        self.originator: str | None = None
        """The first client name that initialized (fixes every user agent, as the real server)."""
        self.server_name = socket.gethostname() or "localhost"
        self.installation_id = str(uuid.uuid4())
        self._drain_timeout = drain_timeout
        self.idle_unloader = IdleUnloader(self, idle_unload) if idle_unload else None
        """Unloads threads nobody is subscribed to after ``idle_unload`` seconds (``server._idle``;
        ``None`` or ``0``: never)."""
        self.interrupt_grace = interrupt_grace
        """Seconds a source has to end an interrupted turn (``ThreadRuntime``)."""
        self._task_group: anyio.abc.TaskGroup | None = None
        self._connections: dict[int, Connection] = {}

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        if self.idle_unloader is not None:
            self._task_group.start_soon(self.idle_unloader.run, name="idle unload")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group = self._task_group
        assert group is not None, "BridgeServer used outside its context"
        for connection in list(self._connections.values()):
            connection.close()
        group.cancel_scope.cancel()
        self._task_group = None
        return await group.__aexit__(exc_type, exc, tb)

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    # ------------------------------------------------------------------ connections

    def connection(self, streams: TransportStreams, kind: TransportKind) -> Connection:
        """A new connection over ``streams`` with this server's table, gate and shared state."""
        return Connection(
            streams,
            self.table,
            policy=outbound_policy_for(kind),
            coalesce=kind in (TransportKind.STDIO, TransportKind.MEMORY),
            gate=check_request,
            scopes=self.scopes,
            server_requests=self.server_requests,
            drain_timeout=self._drain_timeout,
            state=ConnectionState(),
            outbound_budget=self.outbound_budget,
        )

    async def serve_connection(
        self, streams: TransportStreams, kind: TransportKind = TransportKind.STDIO
    ) -> None:
        """Serve one client until its connection ends."""
        connection = self.connection(streams, kind)
        self._connections[connection.connection_id] = connection
        logger.info("connection %s opened (%s)", connection.connection_id, kind.value)
        try:
            await connection.run()
        finally:
            del self._connections[connection.connection_id]
            self.hub.remove_connection(connection.connection_id)
            logger.info("connection %s closed", connection.connection_id)

    def unhandled_requests(self, method: str, thread_id: str) -> int:
        """Requests for ``method`` on ``thread_id`` received by any connection and not handled
        yet (the thread runtime holds an interrupted turn's end for them)."""
        return sum(c.unhandled(method, thread_id) for c in self._connections.values())

    # ------------------------------------------------------------------ threads

    def start_runtime(self, runtime: ThreadRuntime) -> None:
        """Run a thread's runtime in the server's task group (until the server stops)."""
        if self._task_group is None:
            raise RuntimeError("BridgeServer is not running (use it as an async context manager)")
        self._task_group.start_soon(runtime.run, name=f"thread {runtime.thread_id}")
