"""One client connection: reads its transport, classifies, dispatches, answers, and is its outbox.

Reading (``_read_loop``, one task): each inbound item is classified (``protocol.jsonrpc``).
Malformed JSON, batches and other undecodable values are logged and get no reply; client
notifications are logged; client responses settle server -> client requests (``ServerRequests``;
unknown ids are logged); requests enter the ingress queue (``INGRESS_QUEUE_CAPACITY`` = 128, as
the real server). When that queue is full the request is answered ``-32001 "Server overloaded;
retry later."`` at once. Unlike the real server, which drops that overload answer when the
outbound queue is full too (leaving the request unanswered), we never drop it: the reader waits
for room (stdio) and so stops reading, which pushes back on the client; on socket kinds a full
outbound queue disconnects the client instead (it is not reading).

Processing (``_process_loop``, the ``run`` task), per request, in arrival order:

1. unknown method -> ``-32600 Invalid request: unknown variant `x`, expected one of …`` (before
   anything else, so also before initialize);
2. params decoded by the method's ``ParamsSpec`` (serde-worded ``-32600`` errors);
3. the gate hook (the server layer's initialize / experimental checks) may raise ``RpcError``;
4. ``inline`` methods (``initialize``) run right here; known but unsupported ones are answered
   their error here; ``immediate`` ones (handlers that answer from memory without awaiting) are
   answered here too, with no task, unless earlier requests with their scope key are still
   pending; the others run in their own task, at most ``max_in_flight`` at a time (when the limit
   is reached, processing waits and the ingress queue fills, which is what overload means), FIFO
   behind earlier requests with the same scope key.

Neither loop takes a pass of the event loop per message: each takes everything already queued
and waits only when nothing is. When the reader fills the ingress queue within one pass, it gives
the processing loop one turn before it answers overloaded, so a burst that the server keeps up
with (a client writing thousands of requests before it reads) is served whole.

Handling: the handler is called by ``_dispatch``; every error goes through the one
boundary (``errors.error_object``); the response is queued; then, only after a successful response
is queued, the callbacks the handler registered with ``ctx.after_response`` run in order (so a
``turn/start`` result precedes ``turn/started``).

Outbound: everything goes through the transport's write stream (the per-connection queue), and
never with a per-message await: ``offer`` puts bytes in the stream at once, or, when the stream is
full, behind it in the connection's *backlog*, which one task moves into the stream as the writer
makes room (in order; a message never overtakes another). The backlog's byte budget is
``outbound_budget``, counted by length; a message enters the backlog as an exact-size copy
(``protocol.jsonrpc.right_sized``; coalesced batches, joined, and delta lines, built from their
parts, are exact already: ``OutboundNotification.exact``), as an orjson result sits in a buffer of
at least 4 KiB: two thousand queued 230-byte notifications held 8.2 MB for a count of 0.46 MB (0.55
MB copied). What goes to the stream at once is not copied (the hot path): the stream holds at most
``OUTBOUND_QUEUE_CAPACITY`` items as they were encoded. Policy ``BACKPRESSURE`` (stdio, memory;
budget ``OUTBOUND_HIGH_WATER``) keeps everything and reports the connection ``congested`` while the
backlog holds more than the budget: producers (the thread runtimes, the request path) ``await
wait_writable()`` only then, and the
request path waiting is what stops reading, so a client that writes thousands of requests before
reading any answer gets them all as long as they fit the budget. ``DISCONNECT_SLOW`` (unix socket,
websocket; budget ``SOCKET_OUTBOUND_BUDGET``) is ``congested`` past an eighth of its budget (at
most ``SOCKET_PACE_MARK``), so every source follows a reading client's delivery (a source at
full speed never outruns the socket); a producer waiting on it waits while the client reads, but
a client that takes nothing for ``stall_grace`` seconds is closed ("slow consumer"), and a
backlog past the whole budget (answers, broadcasts, which never wait) closes it at once, so a
client that stopped reading never holds up the others for long. Notifications honour
the connection's opt-out list; responses, errors and server requests never do.

With ``coalesce`` (line-framed transports: stdio and its in-memory twin), the messages offered
during one pass of the event loop are joined with ``\n`` into one outbound item when the loop
next runs callbacks: one queue operation and one write per batch instead of one per message
(the framing is unchanged, JSON text never holds a raw newline). Order is kept: every message,
response or notification, goes through the same list. An item is closed once it holds
``COALESCE_MAX_BYTES``: the outbound stream is bounded in items, so this bounds it in bytes (a
pass that offered a thousand 12 KB output deltas made one 12 MB item, and 128 of them fit in the
stream before the connection counted as ``congested``).

A handler may answer later (``ctx.defer()``): its return value is then ignored and the
``DeferredReply`` writes the one response when it is resolved, from wherever in the stream its
owner decides (``turn/interrupt`` is answered by the thread runtime right before the turn's
terminal notifications).

Shutdown rules:

* end of input (EOF): reading stops; server -> client requests this connection was waiting on fail
  with ``ConnectionClosedError`` (no answer can arrive); every request already received is still
  processed and answered and running handlers complete, for at most ``drain_timeout`` seconds,
  after which the rest are cancelled unanswered; then the outbound stream is closed (the transport
  flushes it) and ``run`` returns. So ``printf '<requests>' | codex-app-bridge serve`` answers all.
* ``close()`` (server shutdown, slow consumer, peer gone): everything is cancelled at once, queued
  requests are dropped (there is no one left to answer), the outbound stream is closed.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Hashable, Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from codex_app_bridge.protocol.jsonrpc import (
    ErrorResponse,
    JsonValue,
    Notification,
    Request,
    RequestId,
    Response,
    Undecodable,
    classify,
    encode_error,
    encode_server_request,
    right_sized,
)
from codex_app_bridge.rpc._context import DeferredReply, RequestContext
from codex_app_bridge.rpc._dispatch import Dispatcher, Failed, Outcome
from codex_app_bridge.rpc._encode import encode_result
from codex_app_bridge.rpc.answers import ConnectionClosedError, ServerRequests
from codex_app_bridge.rpc.errors import (
    error_object,
    invalid_request,
    overloaded_error,
)
from codex_app_bridge.rpc.methods import MethodSpec, MethodTable
from codex_app_bridge.rpc.outbox import EncodedParams, OutboundNotification, Outbox
from codex_app_bridge.rpc.scopes import ScopeTicket, SerialScopes
from codex_app_bridge.transport import DecodeError, TransportKind, TransportStreams

__all__ = [
    "INGRESS_QUEUE_CAPACITY",
    "MAX_IN_FLIGHT",
    "OUTBOUND_HIGH_WATER",
    "SOCKET_OUTBOUND_BUDGET",
    "Connection",
    "CountKey",
    "DeferredReply",
    "Gate",
    "OutboundPolicy",
    "RequestContext",
    "outbound_policy_for",
]

logger = logging.getLogger(__name__)

INGRESS_QUEUE_CAPACITY: Final = 128
"""Requests accepted but not yet processed, per connection (the real server's bound)."""

MAX_IN_FLIGHT: Final = 1024
"""Requests being handled (or queued behind a scope) at once, per connection."""

OUTBOUND_HIGH_WATER: Final = 4 << 20
"""Backlog bytes past which a ``BACKPRESSURE`` connection is ``congested`` (producers wait)."""

COALESCE_MAX_BYTES: Final = 64 << 10
"""Bytes of coalesced messages past which they go to the outbound stream as one item at once."""

SOCKET_OUTBOUND_BUDGET: Final = 8 << 20
"""Backlog bytes past which a ``DISCONNECT_SLOW`` connection is disconnected as a slow consumer."""

SOCKET_PACE_MARK: Final = 1 << 20
"""Backlog bytes past which a ``DISCONNECT_SLOW`` connection is ``congested`` (at most; an eighth
of its budget when that is smaller): producers wait for the client to read."""

SOCKET_STALL_GRACE: Final = 10.0
"""Seconds a producer waits on a ``DISCONNECT_SLOW`` connection that delivers nothing before the
connection is closed as a slow consumer."""

_connection_ids = itertools.count()


class OutboundPolicy(Enum):
    """What a connection does when its outbound queue is full."""

    BACKPRESSURE = "backpressure"
    """Wait for room (stdio: the single client is slowed down, never cut off)."""
    DISCONNECT_SLOW = "disconnect_slow"
    """Close the connection at once (socket kinds: a slow client must not hold up the others)."""


def outbound_policy_for(kind: TransportKind) -> OutboundPolicy:
    """The real server's policy for a transport kind (the in-memory twin behaves like stdio)."""
    if kind in (TransportKind.UNIX, TransportKind.WEBSOCKET):
        return OutboundPolicy.DISCONNECT_SLOW
    return OutboundPolicy.BACKPRESSURE


Gate = Callable[[RequestContext], Awaitable[None]]
"""Runs before dispatch with the decoded request; raises ``RpcError`` to refuse it."""

CountKey = Callable[[str, object], Hashable | None]
"""What a received request is counted under until its handler returns (``Connection.unhandled``),
from its method and raw params; ``None``: the request is not counted."""


class Connection:
    """Serves one client over a transport's stream pair (see the module docstring)."""

    def __init__(
        self,
        streams: TransportStreams,
        table: MethodTable,
        *,
        policy: OutboundPolicy = OutboundPolicy.BACKPRESSURE,
        coalesce: bool = False,
        gate: Gate | None = None,
        scopes: SerialScopes | None = None,
        server_requests: ServerRequests | None = None,
        connection_id: int | None = None,
        ingress_capacity: int = INGRESS_QUEUE_CAPACITY,
        max_in_flight: int = MAX_IN_FLIGHT,
        drain_timeout: float = 10.0,
        state: Any = None,
        outbound_budget: int | None = None,
        count_key: CountKey | None = None,
        stall_grace: float = SOCKET_STALL_GRACE,
    ) -> None:
        self._inbound: MemoryObjectReceiveStream[Any] = streams[0]
        self._outbound: MemoryObjectSendStream[Any] = streams[1]
        self._table = table
        self._dispatcher = Dispatcher(table)
        self.policy = policy
        self._gate = gate
        self._scopes = scopes if scopes is not None else SerialScopes()
        self.server_requests = server_requests if server_requests is not None else ServerRequests()
        self._connection_id = next(_connection_ids) if connection_id is None else connection_id
        self._ingress_capacity = ingress_capacity
        self._in_flight = anyio.Semaphore(max_in_flight)
        self._drain_timeout = drain_timeout
        self.state: Any = state
        """Free slot for the server layer's per-connection state (initialized, capabilities)."""

        self._opt_out: frozenset[str] = frozenset()
        if outbound_budget is None:
            outbound_budget = (
                OUTBOUND_HIGH_WATER
                if policy is OutboundPolicy.BACKPRESSURE
                else SOCKET_OUTBOUND_BUDGET
            )
        self._high_water = outbound_budget
        self._pace_mark = (
            outbound_budget
            if policy is OutboundPolicy.BACKPRESSURE
            else min(SOCKET_PACE_MARK, outbound_budget // 8)
        )
        self._stall_grace = stall_grace
        self._delivered = 0
        """Messages moved from the backlog to the transport (progress of a congested client)."""
        self._coalesce = coalesce
        self._coalesced: list[bytes] = []
        self._coalesced_bytes = 0
        self._flush_scheduled = False
        self._backlog: deque[bytes] = deque()
        self._backlog_bytes = 0
        self._flushing = False
        self._writable: anyio.Event | None = None
        self._flush_done: anyio.Event | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._closed = False
        self._input_closed = False
        self._started = False
        self._cancel_scope = anyio.CancelScope()
        self._active = 0
        self._idle = anyio.Event()
        self._tickets: set[ScopeTicket] = set()
        self._own_requests: set[int] = set()
        self._count_key = count_key
        self._unhandled: dict[int, Hashable] = {}
        """id(request) -> its ``count_key``, from receipt until its handler returned."""
        self._unhandled_keys: Counter[Hashable] = Counter()

    # ---------------------------------------------------------------------------- outbox surface

    @property
    def connection_id(self) -> int:
        return self._connection_id

    @property
    def closed(self) -> bool:
        return self._closed

    def set_notification_opt_out(self, methods: Iterable[str]) -> None:
        """Exact notification method names this client does not want (``initialize``)."""
        self._opt_out = frozenset(methods)

    def wants(self, method: str) -> bool:
        return method not in self._opt_out

    async def send_notification(self, notification: OutboundNotification) -> bool:
        if notification.method in self._opt_out:
            return False
        return await self._emit(notification.data)

    def offer_notification(self, notification: OutboundNotification) -> bool:
        """Queue a notification now, without waiting (opt-out applies); False if not queued."""
        if notification.method in self._opt_out:
            return False
        return self.offer(notification.data, notification.exact)

    @property
    def congested(self) -> bool:
        """More than the pace mark is waiting behind the outbound queue: producers wait (see the
        module docstring)."""
        return self._backlog_bytes > self._pace_mark and not self._closed

    @property
    def _request_path_waits(self) -> bool:
        """The request path waits for room (so stops reading) on ``BACKPRESSURE`` only: a
        socket client that writes much before reading is bounded by the budget instead."""
        return self.policy is OutboundPolicy.BACKPRESSURE and self.congested

    @property
    def backlog_bytes(self) -> int:
        return self._backlog_bytes

    def offer(self, data: bytes, exact: bool = False) -> bool:
        """Queue one encoded message without waiting; False if the connection is gone.

        In the outbound stream at once when it has room, else in the backlog behind it (see the
        module docstring); a ``DISCONNECT_SLOW`` connection whose backlog passes its budget is
        closed. ``exact``: ``data``'s allocation is its length (``OutboundNotification.exact``),
        so it is not copied when it waits.
        """
        if self._closed:
            logger.debug("dropping message for disconnected connection %s", self._connection_id)
            return False
        if self._coalesce:
            self._coalesced.append(data)
            self._coalesced_bytes += len(data)
            if self._coalesced_bytes >= COALESCE_MAX_BYTES:
                return self._put_coalesced()
            if not self._flush_scheduled:
                self._flush_scheduled = True
                asyncio.get_running_loop().call_soon(self.flush)
            return True
        return self._put(data, exact)

    def flush(self) -> None:
        """Hand the messages coalesced so far to the outbound stream, as one item."""
        self._flush_scheduled = False
        self._put_coalesced()

    def _put_coalesced(self) -> bool:
        pending = self._coalesced
        self._coalesced_bytes = 0
        if not pending or self._closed:
            pending.clear()
            return not self._closed
        if len(pending) == 1:
            data = pending[0]
            pending.clear()
            return self._put(data)
        data = b"\n".join(pending)
        pending.clear()
        return self._put(data, True)

    def _put(self, data: bytes, exact: bool = False) -> bool:
        """``data`` to the stream, or behind it; ``exact``: its allocation is its length."""
        if not self._backlog:
            try:
                self._outbound.send_nowait(data)
            except anyio.WouldBlock:
                pass
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                logger.info("connection %s: peer gone", self._connection_id)
                self.close()
                return False
            else:
                return True
        self._backlog.append(data if exact else right_sized(data))
        self._backlog_bytes += len(data)
        if self.policy is OutboundPolicy.DISCONNECT_SLOW and self._backlog_bytes > self._high_water:
            logger.warning(
                "disconnecting slow connection after outbound queue filled: connection %s "
                "(%d bytes waiting)",
                self._connection_id,
                self._backlog_bytes,
            )
            self.close()
            return False
        if not self._flushing and self._task_group is not None:
            self._flushing = True
            self._task_group.start_soon(self._flush_backlog)
        return True

    async def wait_writable(self) -> None:
        """Return once the connection is not ``congested`` (or is closed). A ``DISCONNECT_SLOW``
        connection that delivers nothing for ``stall_grace`` seconds meanwhile is closed."""
        while self.congested:
            if self._writable is None:
                self._writable = anyio.Event()
            writable = self._writable
            if self.policy is OutboundPolicy.BACKPRESSURE:
                await writable.wait()
                continue
            delivered = self._delivered
            with anyio.move_on_after(self._stall_grace):
                await writable.wait()
            if self.congested and self._delivered == delivered:
                logger.warning(
                    "disconnecting slow connection: nothing read for %.0f s: connection %s "
                    "(%d bytes waiting)",
                    self._stall_grace,
                    self._connection_id,
                    self._backlog_bytes,
                )
                self.close()

    def _wake_writers(self) -> None:
        if self._writable is not None and (not self.congested or self._closed):
            self._writable.set()
            self._writable = None

    async def _flush_backlog(self) -> None:
        backlog = self._backlog
        try:
            while backlog:
                try:
                    while backlog:
                        self._outbound.send_nowait(backlog[0])
                        self._backlog_bytes -= len(backlog.popleft())
                        self._delivered += 1
                except anyio.WouldBlock:
                    await self._outbound.send(backlog[0])
                    self._backlog_bytes -= len(backlog.popleft())
                    self._delivered += 1
                self._wake_writers()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            logger.info("connection %s: peer gone", self._connection_id)
            self.close()
        finally:
            self._flushing = False
            if self._closed:
                backlog.clear()
                self._backlog_bytes = 0
            self._wake_writers()
            if self._flush_done is not None:
                self._flush_done.set()

    async def notify(
        self, method: str, params: EncodedParams, *, emitted_at_ms: int | None = None
    ) -> bool:
        """Encode and send one notification to this connection (opt-out applies)."""
        if method in self._opt_out:
            return False
        encoded = OutboundNotification.encode(method, params, emitted_at_ms=emitted_at_ms)
        return await self._emit(encoded.data)

    async def send_server_request(
        self, request_id: RequestId, method: str, params: EncodedParams
    ) -> bool:
        return await self._emit(encode_server_request(request_id, method, params))

    async def request(self, method: str, params: EncodedParams) -> JsonValue:
        """Send a server -> client request and wait for the client's result.

        Raises ``ServerRequestError`` if the client answers an error and ``ConnectionClosedError``
        if the connection goes away first.
        """
        if self._input_closed or self._closed:
            raise ConnectionClosedError(f"{method}: the client can no longer answer")
        pending = self.server_requests.create()
        self._own_requests.add(pending.id)
        try:
            if not await self.send_server_request(pending.id, method, params):
                self.server_requests.cancel(pending.id, ConnectionClosedError(method))
            return await pending.wait()
        finally:
            self._own_requests.discard(pending.id)

    @property
    def busy(self) -> bool:
        """Whether a request of this connection is being handled in a task of its own (the
        others are answered as they are read)."""
        return self._active > 0

    def unhandled(self, key: Hashable) -> int:
        """Requests counted under ``key`` (``count_key``) received but whose handler has not
        returned yet (queued, waiting for their scope's turn, or running)."""
        return self._unhandled_keys[key]

    def _track(self, request: Request) -> None:
        if self._count_key is None:
            return
        key = self._count_key(request.method, request.params)
        if key is not None:
            self._unhandled[id(request)] = key
            self._unhandled_keys[key] += 1

    def _untrack(self, request: Request) -> None:
        key = self._unhandled.pop(id(request), None)
        if key is not None:
            self._unhandled_keys[key] -= 1
            if not self._unhandled_keys[key]:
                del self._unhandled_keys[key]

    # ---------------------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Stop serving now: cancel handlers, drop queued requests, close the outbound stream."""
        if not self._closed:
            self._closed = True
            self._cancel_own_requests()
        self._backlog.clear()
        self._backlog_bytes = 0
        self._coalesced.clear()
        self._coalesced_bytes = 0
        self._wake_writers()
        self._cancel_scope.cancel()
        self._outbound.close()

    async def run(self) -> None:
        """Serve until end of input or ``close()``; returns when the connection is done."""
        if self._started:
            raise RuntimeError("a Connection runs once")
        self._started = True
        ingress_send, ingress_recv = anyio.create_memory_object_stream[Request](
            self._ingress_capacity
        )
        try:
            with self._cancel_scope:
                async with anyio.create_task_group() as tg:
                    self._task_group = tg
                    if self._backlog and not self._flushing:
                        self._flushing = True
                        tg.start_soon(self._flush_backlog)
                    tg.start_soon(self._read_loop, ingress_send)
                    await self._process_loop(ingress_recv, tg)
                    with anyio.move_on_after(self._drain_timeout):
                        self.flush()
                        while self._active or self._backlog:
                            if self._active:
                                self._idle = anyio.Event()
                                await self._idle.wait()
                            else:
                                await self._drain_backlog()
                            self.flush()
                    tg.cancel_scope.cancel()
        finally:
            self._task_group = None
            self._unhandled.clear()
            self._unhandled_keys.clear()
            self._closed = True
            self._backlog.clear()
            self._backlog_bytes = 0
            self._wake_writers()
            self._cancel_own_requests()
            for ticket in list(self._tickets):
                ticket.release()
            self._tickets.clear()
            ingress_send.close()
            ingress_recv.close()
            self._inbound.close()
            self._outbound.close()

    async def _drain_backlog(self) -> None:
        while self._backlog and self._flushing and not self._closed:
            self._flush_done = anyio.Event()
            await self._flush_done.wait()

    def _cancel_own_requests(self) -> None:
        for request_id in list(self._own_requests):
            self.server_requests.cancel(request_id, ConnectionClosedError("connection closed"))
        self._own_requests.clear()

    # ---------------------------------------------------------------------------- reading

    async def _read_loop(self, ingress: MemoryObjectSendStream[Request]) -> None:
        inbound = self._inbound
        async with ingress:
            try:
                # Everything already decoded is taken in this pass (no loop pass per message):
                # the processing loop runs when this one waits for input or finds the ingress
                # queue full.
                while True:
                    try:
                        item = inbound.receive_nowait()
                    except anyio.WouldBlock:
                        item = await inbound.receive()
                    refused = self._receive(item, ingress)
                    if refused is not None:
                        await self._queue_or_refuse(refused, ingress)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
        # End of input: nothing this client owes us can arrive any more.
        self._input_closed = True
        self._cancel_own_requests()

    def _receive(self, item: object, ingress: MemoryObjectSendStream[Request]) -> Request | None:
        """Classify and route one inbound item; returns a request the full ingress queue refused."""
        if isinstance(item, DecodeError):
            logger.warning("Failed to deserialize JSONRPCMessage: %s", item.reason)
            if item.request_id is not None:  # an oversized request: its sender gets the reason
                error = invalid_request(f"Invalid request: {item.reason}")
                self.offer(encode_error(item.request_id, error_object(error)))
            return None
        message = classify(item)
        if isinstance(message, Request):
            try:
                ingress.send_nowait(message)
            except anyio.WouldBlock:
                return message
            self._track(message)
        elif isinstance(message, Notification):
            logger.info("<- notification: %s", message.method)
        elif isinstance(message, Response | ErrorResponse):
            if not self.server_requests.resolve(message):
                logger.warning("could not find callback for request id %r", message.id)
        else:
            assert isinstance(message, Undecodable)
            logger.warning("Failed to deserialize JSONRPCMessage: %s", message.reason)
        return None

    async def _queue_or_refuse(
        self, request: Request, ingress: MemoryObjectSendStream[Request]
    ) -> None:
        # The queue filled within one pass of this loop: the processing loop gets its turn first
        # (it takes everything queued unless it is itself held up), so only a server that really
        # cannot keep up answers overloaded, as the real one does.
        await anyio.lowlevel.checkpoint()
        try:
            ingress.send_nowait(request)
        except anyio.WouldBlock:
            logger.warning(
                "ingress queue full on connection %s; answering request %r overloaded",
                self._connection_id,
                request.id,
            )
            await self._send_error(request.id, overloaded_error())
            return
        self._track(request)

    # ---------------------------------------------------------------------------- processing

    async def _process_loop(
        self, ingress: MemoryObjectReceiveStream[Request], tg: anyio.abc.TaskGroup
    ) -> None:
        async with ingress:
            try:
                while True:
                    try:
                        request = ingress.receive_nowait()
                    except anyio.WouldBlock:
                        request = await ingress.receive()
                    await self._accept(request, tg)
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                pass

    async def _accept(self, request: Request, tg: anyio.abc.TaskGroup) -> None:
        spec = self._table.get(request.method)
        if spec is None:
            self._untrack(request)
            await self._send_error(request.id, self._table.unknown_method_error(request.method))
            return
        try:
            params = spec.params.decode(request.params)
            ctx = RequestContext(self, request, spec, params)
            if self._gate is not None:
                await self._gate(ctx)
            key = spec.scope_key(params, self._connection_id)
        except Exception as exc:
            self._untrack(request)
            await self._send_error(request.id, exc)
            return
        if spec.inline:
            await self._execute(ctx, spec)
            return
        answered = False
        if spec.handler is None and (key is None or not self._scopes.busy(key)):
            # Immediate, or known but unsupported: answered here and now, with no task; a task
            # is needed only for after-response callbacks.
            outcome = self._dispatcher.invoke_now(ctx, spec)
            self._untrack(request)
            answered = self._respond(ctx, outcome)
            if not (answered and ctx._after_response):  # pyright: ignore[reportPrivateUsage]
                ctx.take_after_response()  # not due (an error, a deferred answer): dropped
                if self._request_path_waits:
                    await self.wait_writable()
                return
        try:
            self._in_flight.acquire_nowait()
        except anyio.WouldBlock:
            await self._in_flight.acquire()
        ticket = None if key is None else self._scopes.enter(key)
        if ticket is not None:
            self._tickets.add(ticket)
        self._active += 1
        tg.start_soon(self._run_spawned, ctx, spec, ticket, answered)

    async def _run_spawned(
        self,
        ctx: RequestContext,
        spec: MethodSpec[Any],
        ticket: ScopeTicket | None,
        answered: bool,
    ) -> None:
        try:
            if ticket is not None:
                await ticket.wait_turn()
            if answered:
                await self._after_response(ctx)
            else:
                await self._execute(ctx, spec)
        finally:
            self._untrack(ctx.request)
            if ticket is not None:
                ticket.release()
                self._tickets.discard(ticket)
            self._in_flight.release()
            self._active -= 1
            if not self._active:
                self._idle.set()

    async def _execute(self, ctx: RequestContext, spec: MethodSpec[Any]) -> None:
        try:
            outcome = await self._dispatcher.invoke(ctx, spec)
        finally:
            self._untrack(ctx.request)
        if self._respond(ctx, outcome):
            await self._after_response(ctx)
            return
        ctx.take_after_response()  # not due (an error, a deferred answer): dropped
        if self._request_path_waits:
            await self.wait_writable()

    def _respond(self, ctx: RequestContext, outcome: Outcome) -> bool:
        """Queue the answer to a handled request; True if a success response was queued (the
        callbacks the handler registered with ``after_response`` are then due)."""
        deferred = ctx._deferred  # pyright: ignore[reportPrivateUsage]
        if isinstance(outcome, Failed):
            if deferred is not None:
                deferred.cancel()
            self.offer(encode_error(ctx.request_id, error_object(outcome.error)))
            return False
        if deferred is not None:
            return False
        data, encoded = encode_result(ctx.request_id, outcome.value)
        return self.offer(data) and encoded

    async def _after_response(self, ctx: RequestContext) -> None:
        if self._request_path_waits:
            await self.wait_writable()
        for callback in ctx.take_after_response():
            try:
                await callback()
            except Exception:
                logger.exception("after-response callback of %s failed", ctx.method)

    # ---------------------------------------------------------------------------- writing

    async def _send_error(self, request_id: RequestId, exc: BaseException) -> bool:
        return await self._emit(encode_error(request_id, error_object(exc)))

    async def _emit(self, data: bytes) -> bool:
        if not self.offer(data):
            return False
        if self._task_group is None:
            self.flush()  # not running (yet): no later pass of the loop is promised to us
        if self._backlog and not self._flushing and self._task_group is None:
            # not running (yet): nobody else moves the backlog, so this caller does
            self._flushing = True
            await self._flush_backlog()
        elif self.congested and self.policy is OutboundPolicy.BACKPRESSURE:
            await self.wait_writable()
        return True


if TYPE_CHECKING:
    # Static check only: a Connection is what upper layers know as an Outbox.
    _CONNECTION_IS_AN_OUTBOX: type[Outbox] = Connection
