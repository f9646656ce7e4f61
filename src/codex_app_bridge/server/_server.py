"""``BridgeServer``: one server object, any number of connections, from any transport.

The server owns the process-wide pieces and lends them to every connection:

* the ``ListenerHub`` (per-thread state, subscriptions, broadcasts),
* the ``ThreadRegistry`` (``_registry``: every thread, loaded, unloaded or stored under
  ``codex_home``, and the one owner of their lives) and the ``ThreadStorage`` behind it,
* the stored threads' catalog as ``thread/list`` pages it (``_stored_list``), built without the
  registry: a process whose first request lists threads loads neither the registry nor the
  runtime machinery behind it (``serve`` begins that list at start-up, ``_first_list``),
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
import sys
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self

import anyio
import anyio.abc
import anyio.lowlevel

from codex_app_bridge._clock import uuid4
from codex_app_bridge._gc import resume_collector
from codex_app_bridge.rpc import (
    Connection,
    MethodTable,
    RequestContext,
    SerialScopes,
    ServerRequests,
    outbound_policy_for,
)
from codex_app_bridge.server._handshake import (
    ClientHello,
    ConnectionState,
    check_request,
    codex_home,
    host_name,
    initialize_result,
    validate_initialize,
    welcome_notifications,
)
from codex_app_bridge.server._idle import DEFAULT_IDLE_UNLOAD_SECONDS, IdleUnloader
from codex_app_bridge.server._table import (
    DeferredMethodTable,
    build_method_table,
    in_flight_key,
    method_spec,
)
from codex_app_bridge.transport import TransportKind, TransportStreams

if TYPE_CHECKING:
    from collections.abc import Callable

    from codex_app_bridge.config import ConfigLayers
    from codex_app_bridge.listener import ListenerHub
    from codex_app_bridge.rpc._context import ContextConnection
    from codex_app_bridge.server._first_initialize import FirstInitialize
    from codex_app_bridge.server._first_list import ListReadAhead
    from codex_app_bridge.server._goal_turns import GoalTurns
    from codex_app_bridge.server._handlers import Handlers
    from codex_app_bridge.server._registry import ThreadRegistry
    from codex_app_bridge.server._runtime import ThreadRuntime
    from codex_app_bridge.server._shared import SharedThreads
    from codex_app_bridge.server._stored import ThreadStorage
    from codex_app_bridge.server._stored_list import StoredThreadList
    from codex_app_bridge.sources import EventSource, ThreadGoals, TurnSource
    from codex_app_bridge.storage import ThreadCatalog

__all__ = ["BridgeServer", "wait_idle"]

logger = logging.getLogger(__name__)

_IDLE_POLL_S: Final = 0.001
"""How often ``wait_idle`` looks again while a request is being handled."""


async def wait_idle(busy: Callable[[], bool]) -> None:
    """Return once ``busy()`` is false, every task that was ready (input that arrived meanwhile
    being read, accepted, then handled) having run first."""
    while True:
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        if not busy():
            return
        await anyio.sleep(_IDLE_POLL_S)


_NO_CONFIG_HOME = Path("/nonexistent/codex-app-bridge/config")
"""Where a server made without ``codex_home`` or ``config`` looks for config files: nowhere."""


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
        interrupt_grace: float | None = None,
        codex_home: str | os.PathLike[str] | None = None,
        source_factory: Callable[[], EventSource | TurnSource] | None = None,
        config: ConfigLayers | None = None,
        shared: SharedThreads | None = None,
        read_ahead: ListReadAhead | None = None,
        after_initialize: Sequence[Callable[[], object]] = (),
        installation_id: str | None = None,
    ) -> None:
        """``read_ahead``: the catalog of ``codex_home``, its first page read ahead from the
        first ``initialize`` answered (``_first_list``); made here when first needed otherwise.
        ``after_initialize``: more start-up work (each callable starts its own thread: warm-ups),
        begun with the read-ahead: after that answer (begun before, it would delay it), once no
        request is being handled (``_begin_after_initialize``).
        ``installation_id``: the one a connection was welcomed with before the server started
        (``_first_initialize``); a new one otherwise."""
        self._source = source
        self._read_ahead = read_ahead
        self._after_initialize = list(after_initialize)
        self._shared = shared
        self._config = config
        self.announced_config_warnings: set[str] = set()
        """``configWarning`` summaries this process has sent (each is sent once)."""
        self._source_factory = source_factory
        self._hub: ListenerHub | None = None
        self._threads: ThreadRegistry | None = None
        self._storage: ThreadStorage | None = None
        self._stored_threads: StoredThreadList | None = None
        self._handlers: Handlers | None = None
        self._goals: ThreadGoals | None = None
        self._goal_turns: GoalTurns | None = None
        self.default_cwd = os.path.abspath(default_cwd or os.getcwd())
        self.outbound_budget = outbound_budget
        """Per-connection backlog budget in bytes (``None``: the rpc layer's default per policy)."""
        self._codex_home = None if codex_home is None else Path(codex_home).absolute()
        self.table: MethodTable = DeferredMethodTable(
            self.initialize,
            lambda: build_method_table(self.handlers),
            row=lambda method: method_spec(self.handlers, method),
        )
        """Every method; a method's handlers and the domain behind them are loaded on its first
        request (``_table.DeferredMethodTable``)."""
        self.scopes = SerialScopes()
        self.server_requests = ServerRequests()
        self.originator: str | None = None
        self.user_agent: str | None = None
        """The user agent the first ``initialize`` was answered with (sent to model providers)."""
        """The first client name that initialized (fixes every user agent, as the real server)."""
        self.server_name = host_name()
        self.installation_id = str(uuid4()) if installation_id is None else installation_id
        self._drain_timeout = drain_timeout
        self.idle_unloader = (
            IdleUnloader(lambda: self._threads, idle_unload, self._catalog) if idle_unload else None
        )
        """Unloads threads nobody is subscribed to after ``idle_unload`` seconds (``server._idle``;
        ``None`` or ``0``: never)."""
        self._interrupt_grace = interrupt_grace
        self._task_group: anyio.abc.TaskGroup | None = None
        self._warming = False
        """Whether the warm-up (``_warm``) was started."""
        self._after_initialize_begun = False
        self._connections: dict[int, Connection] = {}
        self._welcomed: dict[int, Connection] = {}
        """Initialized connections waiting for the hub to exist (``add_connection``)."""

    # The domain is created on first use, not with the server: answering ``initialize`` needs
    # none of it, and importing it is most of the start-up time.

    # (plain properties over private slots, not ``cached_property``: ``ServerServices`` is a
    # protocol of read-only properties, which a type checker matches against properties only)

    @property
    def source(self) -> EventSource | TurnSource:
        """Where turns are played from (the built-in agent unless told otherwise)."""
        if self._source is None:
            if self._source_factory is not None:
                self._source = self._source_factory()
            else:
                from codex_app_bridge.sources import DefaultAgent

                self._source = DefaultAgent()
        return self._source

    @property
    def config(self) -> ConfigLayers:
        """The configuration threads resolve theirs from (``config``): the given one, else
        ``codex_home``'s files, else no files at all (defaults only)."""
        if self._config is None:
            from codex_app_bridge.config import load_layers

            if self._codex_home is not None:
                self._config = load_layers(self._codex_home)
            else:
                self._config = load_layers(_NO_CONFIG_HOME, system_config=_NO_CONFIG_HOME)
        return self._config

    @property
    def hub(self) -> ListenerHub:
        """Per-thread state, subscriptions and broadcasts."""
        if self._hub is None:
            from codex_app_bridge.listener import ListenerHub

            hub = ListenerHub()
            for connection in self._welcomed.values():
                hub.add_connection(connection)
            self._welcomed.clear()
            self._hub = hub
        return self._hub

    @property
    def threads(self) -> ThreadRegistry:
        """Every thread of this server (loaded, unloaded or stored) and the owner of their
        lives."""
        if self._threads is None:
            from codex_app_bridge.server._registry import ThreadRegistry

            self._threads = ThreadRegistry(
                self.hub,
                self.source,
                self.storage,
                server_requests=self.server_requests,
                run=self.start_runtime,
                pending_interrupts=partial(self.unhandled_requests, "turn/interrupt"),
                interrupt_grace=lambda: self.interrupt_grace,
                user_agent=lambda: self.user_agent,
                shared=self._shared,
                goals=self.goals,
                turn_ended=lambda record, terminal: self.goal_turns.turn_ended(record, terminal),
            )
        return self._threads

    def known_threads(self) -> ThreadRegistry | None:
        """The thread registry if it was built (``None``: this process has made, loaded or
        resumed no thread yet, so it knows none); always in a cluster (the registry holds the
        threads other servers share)."""
        return self.threads if self._shared is not None else self._threads

    @property
    def stored_threads(self) -> StoredThreadList | None:
        """Stored threads under ``codex_home`` as ``thread/list`` pages them, from their catalog
        alone (built without the registry); ``None``: threads live in memory only."""
        if self._stored_threads is None and self._codex_home is not None:
            from codex_app_bridge.server._stored_list import StoredThreadList
            from codex_app_bridge.storage import CodexHome, ThreadCatalog

            # made here when the read-ahead was not begun (a request came before the server
            # idled): its thread, and the list path it imports, would share the interpreter
            # with this request
            ahead = None if self._read_ahead is None else self._read_ahead.take()
            catalog = ahead or ThreadCatalog(CodexHome(self._codex_home))
            self._stored_threads = StoredThreadList(catalog, lambda: self.source.defaults)
        return self._stored_threads

    def _catalog(self) -> ThreadCatalog | None:
        stored = self._stored_threads
        return None if stored is None else stored.catalog

    @property
    def storage(self) -> ThreadStorage | None:
        """Stored threads under ``codex_home``; ``None``: threads live in memory only."""
        stored = self.stored_threads
        if self._storage is None and self._codex_home is not None and stored is not None:
            from codex_app_bridge.server._stored import ThreadStorage

            self._storage = ThreadStorage(
                self._codex_home, self.hub.offer_broadcast, catalog=stored.catalog
            )
        return self._storage

    @property
    def goals(self) -> ThreadGoals:
        """Every thread's goal, kept under ``codex_home`` (in memory without one)."""
        if self._goals is None:
            from codex_app_bridge.sources import ThreadGoals

            self._goals = ThreadGoals(self._codex_home)
        return self._goals

    @property
    def goal_turns(self) -> GoalTurns:
        """Starts goal-continuation turns (``_goal_turns``)."""
        if self._goal_turns is None:
            from codex_app_bridge.server._goal_turns import GoalTurns

            self._goal_turns = GoalTurns(self)
        return self._goal_turns

    @property
    def handlers(self) -> Handlers:
        if self._handlers is None:
            from codex_app_bridge.server._handlers import Handlers

            self._handlers = Handlers(self)
        return self._handlers

    @property
    def interrupt_grace(self) -> float:
        """Seconds a source has to end an interrupted turn (``ThreadRuntime``)."""
        if self._interrupt_grace is None:
            from codex_app_bridge.server._runtime import INTERRUPT_GRACE

            return INTERRUPT_GRACE
        return self._interrupt_grace

    @interrupt_grace.setter
    def interrupt_grace(self, seconds: float) -> None:
        self._interrupt_grace = seconds

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        if self.idle_unloader is not None:
            self._task_group.start_soon(self.idle_unloader.run, name="idle unload")
        if self._shared is not None:
            self._shared.attach(self._shared_change)
        return self

    def _shared_change(self, method: str, params: dict[str, Any]) -> None:
        """Another server of the cluster changed a thread (``SharedThreads.attach``)."""
        if self._task_group is not None:
            self._task_group.start_soon(self.hub.broadcast, method, params)

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
        try:
            return await group.__aexit__(exc_type, exc, tb)
        finally:
            if self._storage is not None:  # never created: nothing to close
                self._storage.close()
            if self._stored_threads is not None:  # its catalog (closing twice is harmless)
                self._stored_threads.catalog.close()
            elif self._read_ahead is not None and self._read_ahead.started:  # never asked for
                ahead = self._read_ahead.catalog()
                if ahead is not None:
                    ahead.close()
            # every process the server started dies with it (none if the machine never loaded)
            machine = sys.modules.get("codex_app_bridge.machine")
            if machine is not None:
                machine.kill_all()

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    # ------------------------------------------------------------------ connections

    def connection(
        self, streams: TransportStreams, kind: TransportKind, state: ConnectionState | None = None
    ) -> Connection:
        """A new connection over ``streams`` with this server's table, gate and shared state
        (``state``: the connection's handshake state, a new one by default)."""
        return Connection(
            streams,
            self.table,
            policy=outbound_policy_for(kind),
            coalesce=kind in (TransportKind.STDIO, TransportKind.MEMORY),
            gate=self._gate,
            scopes=self.scopes,
            server_requests=self.server_requests,
            drain_timeout=self._drain_timeout,
            state=ConnectionState() if state is None else state,
            outbound_budget=self.outbound_budget,
            count_key=in_flight_key,
        )

    async def _gate(self, ctx: RequestContext) -> None:
        """``check_request``; the first request other than ``initialize`` that is answered
        starts the warm-up (``_warm``) in the server's task group."""
        await check_request(ctx)
        if not self._warming and ctx.method != "initialize":
            ctx.after_response(self._start_warm_up)

    async def _start_warm_up(self) -> None:
        resume_collector()
        if self._warming or self._task_group is None:
            return
        self._warming = True
        from codex_app_bridge.server._warm import warm_up

        self._task_group.start_soon(warm_up, self._busy, name="warm-up")

    def _busy(self) -> bool:
        """A request is being handled, or a turn runs (its events must not wait for a step)."""
        if any(connection.busy for connection in self._connections.values()):
            return True
        return self._threads is not None and any(
            record.active_turn_id is not None for record in self._threads
        )

    async def serve_connection(
        self,
        streams: TransportStreams,
        kind: TransportKind = TransportKind.STDIO,
        first: FirstInitialize | None = None,
    ) -> None:
        """Serve one client until its connection ends. ``first``: its ``initialize``, answered
        and welcomed before the server started (``_first_initialize``), and the requests
        answered after it (``_first_list``): the connection starts initialized, is registered
        and the start-up work begun before anything more of it is read."""
        connection = self.connection(streams, kind, None if first is None else first.state)
        self._connections[connection.connection_id] = connection
        if first is None:  # held only for the requests behind an initialize answered early
            resume_collector()
        logger.info("connection %s opened (%s)", connection.connection_id, kind.value)
        try:
            if first is not None:
                connection.set_notification_opt_out(first.hello.opt_out_notification_methods)
                self._originate(first.hello)
                if self.user_agent is None:
                    self.user_agent = first.user_agent
                self.announced_config_warnings.update(first.announced_warnings)
                self._after_welcome(connection.connection_id)
                if first.answered:  # as after the first request the server answers (``_gate``)
                    await self._start_warm_up()
            await connection.run()
        finally:
            del self._connections[connection.connection_id]
            if self._welcomed.pop(connection.connection_id, None) is None and self._hub is not None:
                self.hub.remove_connection(connection.connection_id)
            machine = None if self._handlers is None else self._handlers.loaded_machine()
            if machine is not None:  # its command/exec processes and fs watches
                machine.connection_closed(connection.connection_id)
            logger.info("connection %s closed", connection.connection_id)

    def unhandled_requests(self, method: str, thread_id: str) -> int:
        """Requests for ``method`` (one of ``_table.COUNTED_METHODS``) on ``thread_id`` (its
        canonical id) received by any connection and not handled yet (the thread runtime holds
        an interrupted turn's end for them)."""
        key = (method, thread_id)
        return sum(c.unhandled(key) for c in self._connections.values())

    async def initialize(self, ctx: RequestContext, params: ClientHello) -> bytes:
        """The ``initialize`` request (``_handshake``); the connection is then welcomed
        (``_welcome``). Nothing of pydantic is loaded to answer."""
        validate_initialize(ctx, params)
        agent, result = initialize_result(self._originate(params), params, self.home)
        if self.user_agent is None:
            self.user_agent = agent
        ctx.after_response(partial(self._welcome, ctx.connection))
        return result

    @property
    def home(self) -> str:
        """The home this server reads and stores under (``--codex-home``), which ``initialize``
        reports, as the real server reports the one it runs with."""
        return codex_home() if self._codex_home is None else str(self._codex_home)

    def _originate(self, hello: ClientHello) -> str:
        """The originator of every user agent: the first client name that initialized."""
        if self.originator is None:
            self.originator = hello.name
        return self.originator

    async def _welcome(self, outbox: ContextConnection) -> None:
        """What the real server sends a connection right after its ``initialize`` answer, before
        it may get broadcasts (``_handshake.welcome_notifications``: the config's warnings, a
        broken file or unknown keys, then the remote control state); then ``_after_welcome``."""
        warnings = self.config.startup_warnings()
        self.announced_config_warnings.update(warning["summary"] for warning in warnings)
        for method, params in welcome_notifications(
            warnings, self.server_name, self.installation_id
        ):
            await outbox.notify(method, params)
        self._after_welcome(outbox.connection_id)

    def _after_welcome(self, connection_id: int) -> None:
        """A connection was welcomed: it is registered for broadcasts and the start-up work
        left for after the first answer begins."""
        connection = self._connections.get(connection_id)
        if connection is not None:  # else it closed meanwhile: nothing to broadcast to
            self.add_connection(connection)
        self._begin_after_initialize()

    def _begin_after_initialize(self) -> None:
        """The start-up work left for after the first ``initialize`` answer (once): the list
        read-ahead, then the warm-ups ``serve`` gave (a failure is logged, never raised), begun
        once no request is being handled: their threads share the interpreter with a request
        that came right behind ``initialize`` (a ``thread/start``, whose own imports then took
        longer), and a request that needs the catalog before makes it itself
        (``ListReadAhead.take``)."""
        if self._after_initialize_begun:
            return
        self._after_initialize_begun = True
        if self._task_group is None:
            self._begin_now()
        else:
            self._task_group.start_soon(self._begin_once_idle, name="start-up work")

    async def _begin_once_idle(self) -> None:
        await wait_idle(self._busy)
        resume_collector()
        self._begin_now()

    def _begin_now(self) -> None:
        if self._read_ahead is not None:
            self._read_ahead.start()
        if not self._after_initialize:
            return  # spent: no new list per welcome (the last, made under a load, outlived it)
        begin, self._after_initialize = self._after_initialize, []
        for work in begin:
            try:
                work()
            except Exception:
                logger.exception("start-up work after initialize failed")

    def add_connection(self, connection: Connection) -> None:
        """Register an initialized connection for broadcasts (kept until the hub exists: before
        it, no thread can have anything to broadcast)."""
        if self._hub is not None:
            self._hub.add_connection(connection)
        else:
            self._welcomed[connection.connection_id] = connection

    # ------------------------------------------------------------------ threads

    def start_task(self, run: Callable[[], Coroutine[Any, Any, object]]) -> None:
        """Run ``run`` in the server's task group (an ``fs/watch`` reader, ...)."""
        if self._task_group is None:
            raise RuntimeError("BridgeServer is not running (use it as an async context manager)")
        self._task_group.start_soon(run)

    def start_runtime(self, runtime: ThreadRuntime) -> None:
        """Run a thread's runtime in the server's task group (until the server stops)."""
        if self._task_group is None:
            raise RuntimeError("BridgeServer is not running (use it as an async context manager)")
        self._task_group.start_soon(runtime.run, name=f"thread {runtime.thread_id}")
