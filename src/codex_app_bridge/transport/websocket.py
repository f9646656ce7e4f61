"""WebSocket framing over any anyio byte stream: the wire of ``ws://IP:PORT`` and ``unix://PATH``.

The real server speaks WebSocket on both listeners (a unix socket stream must upgrade too; raw JSON
Lines written to it get no reply). One JSON-RPC message per text frame, each way; binary frames
are dropped with a log line and the connection is kept; a text frame that is not one JSON value
(two lines in one frame included) arrives as a ``DecodeError``, as a bad line does on stdio.
Messages up to ``MAX_MESSAGE_BYTES`` (16 MiB, the real server's limit on both listeners); a larger
one ends the connection. No extension (no compression) is negotiated, as the real server.

Before the upgrade, ``HandshakePolicy`` decides, in the real server's order:

1. ``refuse_origin`` (TCP): a request carrying an ``Origin`` header gets ``403`` with no body, even
   on the health endpoints (browsers must not reach the server);
2. ``health_endpoints`` (TCP): ``GET``/``HEAD /readyz`` and ``/healthz`` get ``200`` with no body,
   other methods there ``405`` (``allow: GET,HEAD``), without authentication;
3. ``authorize`` (TCP with ``--ws-auth``): a refusal message answers ``401`` with that text, before
   the upgrade, so no message is ever read from an unauthenticated client;
4. anything that is not an upgrade gets ``400 Connection header did not include 'upgrade'`` (TCP)
   or is closed without a reply (unix socket, as the real server).

Bytes that are no HTTP request (a bad request line, a header line without a colon, a control
byte in a header value) get ``400 Bad Request`` with no body on TCP, as the real server answers
them; the unix socket closes without a reply, as there.

After the upgrade the stream pair follows the transport contract (``transport/__init__``): the read
side yields decoded frames and ends when the peer closes; the write side's buffer is the outbound
queue. When the rpc side closes its write stream, what is queued is written, a close frame
(1000) follows and the socket is closed; a writer that makes no progress for ``close_timeout``
seconds (a client that stopped reading) is abandoned and the socket closed anyway.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from websockets.datastructures import Headers
from websockets.exceptions import InvalidMessage
from websockets.frames import Frame, Opcode
from websockets.http11 import Request, Response
from websockets.protocol import Event, State
from websockets.server import ServerProtocol

from codex_app_bridge.transport._framing import (
    InboundItem,
    OutboundItem,
    decode_line,
    encode_item,
)
from codex_app_bridge.transport._streams import OUTBOUND_QUEUE_CAPACITY, TransportStreams

__all__ = [
    "HEALTH_PATHS",
    "MAX_MESSAGE_BYTES",
    "Authorizer",
    "HandshakePolicy",
    "serve_websocket",
]

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""Largest inbound message (the real server advertises and enforces 16 MiB)."""

HEALTH_PATHS = frozenset({"/readyz", "/healthz"})

_READ_CHUNK = 1 << 16
_WRITE_BATCH = 1 << 20  # bytes of queued messages framed before one socket write

Authorizer = Callable[[Headers], "str | None"]
"""Checks the upgrade request's headers: ``None`` to accept, else the 401 refusal text."""

ConnectionHandler = Callable[[TransportStreams], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class HandshakePolicy:
    """What the HTTP side of a listener does before the upgrade (see the module docstring)."""

    refuse_origin: bool = True
    health_endpoints: bool = True
    authorize: Authorizer | None = None
    reply_to_non_upgrade: bool = True
    """False on the unix socket: a request that is not an upgrade is closed without a reply."""
    extra_headers: tuple[tuple[str, str], ...] = ()
    """Added to the 101 response (the unix socket advertises its message size limit)."""


def _empty_response(status: int, reason: str, *, close: bool = True) -> Response:
    headers = Headers()
    if close:
        headers["connection"] = "close"
    headers["content-length"] = "0"
    return Response(status, reason, headers, b"")


def _is_upgrade(request: Request) -> bool:
    tokens = ",".join(request.headers.get_all("Connection")).lower()
    return "upgrade" in (token.strip() for token in tokens.split(","))


def _prelude(
    protocol: ServerProtocol, request: Request, policy: HandshakePolicy
) -> Response | None:
    """The response that ends the exchange before any upgrade, or ``None`` to try upgrading."""
    path = request.path.split("?", 1)[0]
    if policy.refuse_origin and "Origin" in request.headers:
        logger.info("refusing a request with an Origin header (%s)", request.headers["Origin"])
        return _empty_response(403, "Forbidden", close=not _is_upgrade(request))
    if policy.health_endpoints and path in HEALTH_PATHS and not _is_upgrade(request):
        if request.method in ("GET", "HEAD"):
            return _empty_response(200, "OK")
        response = _empty_response(405, "Method Not Allowed")
        response.headers["allow"] = "GET,HEAD"
        return response
    if policy.authorize is not None:
        refusal = policy.authorize(request.headers)
        if refusal is not None:
            logger.warning("refusing websocket upgrade: %s", refusal)
            return protocol.reject(401, refusal)
    if not _is_upgrade(request) and request.method == "GET":
        return protocol.reject(400, "Connection header did not include 'upgrade'")
    return None


class _Session:
    """One upgraded connection: the protocol state machine, the socket and the two pumps."""

    def __init__(self, stream: anyio.abc.ByteStream, protocol: ServerProtocol) -> None:
        self.stream = stream
        self.protocol = protocol
        self._write_lock = anyio.Lock()
        self.progress = anyio.Event()
        self.writer_done = anyio.Event()

    async def flush(self) -> None:
        """Write what the protocol has queued (frames, pongs, close, EOF), in queue order."""
        async with self._write_lock:
            for chunk in self.protocol.data_to_send():
                if chunk:
                    await self.stream.send(chunk)
                else:
                    await self.stream.send_eof()
            self.progress.set()
            self.progress = anyio.Event()

    async def read(self, inbound: MemoryObjectSendStream[InboundItem], events: list[Event]) -> None:
        """Deliver text messages until the peer closes; ``events`` were parsed with the request."""
        fragments: list[bytes] = []
        text = False
        async with inbound:
            try:
                while True:
                    for event in events:
                        if not isinstance(event, Frame):
                            continue
                        if event.opcode is Opcode.TEXT or event.opcode is Opcode.BINARY:
                            text = event.opcode is Opcode.TEXT
                            fragments = [bytes(event.data)]
                        elif event.opcode is Opcode.CONT:
                            fragments.append(bytes(event.data))
                        else:
                            continue  # ping (the protocol queues the pong), pong, close
                        if not event.fin:
                            continue
                        message = b"".join(fragments)
                        fragments = []
                        if not text:
                            logger.warning("dropping unsupported binary websocket message")
                            continue
                        item = decode_line(message)
                        if item is not None:
                            await inbound.send(item)
                    await self.flush()
                    if self.protocol.parser_exc is not None:
                        if not isinstance(self.protocol.parser_exc, EOFError):
                            logger.warning("websocket protocol error: %s", self.protocol.parser_exc)
                        return
                    if self.protocol.state is State.CLOSED or self.protocol.eof_sent:
                        return
                    try:
                        data = await self.stream.receive(_READ_CHUNK)
                    except anyio.EndOfStream:
                        self.protocol.receive_eof()
                        await self.flush()
                        return
                    self.protocol.receive_data(data)
                    events = self.protocol.events_received()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return

    async def write(self, outbound: MemoryObjectReceiveStream[OutboundItem]) -> None:
        try:
            async with outbound:
                async for item in outbound:
                    size = self._frame(item)
                    while size < _WRITE_BATCH:
                        try:
                            size += self._frame(outbound.receive_nowait())
                        except (anyio.WouldBlock, anyio.EndOfStream):
                            break
                    await self.flush()
            if self.protocol.state is State.OPEN:
                self.protocol.send_close(1000)
                await self.flush()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        finally:
            self.writer_done.set()

    def _frame(self, item: OutboundItem) -> int:
        data = encode_item(item)
        if self.protocol.state is State.OPEN:
            self.protocol.send_text(data)
        return len(data)

    async def wait_writer(self, close_timeout: float) -> None:
        """Until the writer is done, as long as it makes progress within ``close_timeout``."""
        while not self.writer_done.is_set():
            progress = self.progress
            with anyio.move_on_after(close_timeout) as scope:
                async with anyio.create_task_group() as tg:

                    async def done() -> None:
                        await self.writer_done.wait()
                        tg.cancel_scope.cancel()

                    tg.start_soon(done)
                    await progress.wait()
                    tg.cancel_scope.cancel()
            if scope.cancelled_caught:
                logger.info("websocket peer is not reading; closing without flushing")
                return


async def _handshake(
    stream: anyio.abc.ByteStream, protocol: ServerProtocol, handshake_timeout: float
) -> tuple[Request | None, list[Event]]:
    """Read until the HTTP request is parsed; frames that came with it are returned too."""
    with anyio.move_on_after(handshake_timeout):
        while True:
            try:
                data = await stream.receive(_READ_CHUNK)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return None, []
            protocol.receive_data(data)
            events = protocol.events_received()
            if events and isinstance(events[0], Request):
                return events[0], events[1:]
            if protocol.handshake_exc is not None or protocol.eof_sent:
                logger.info("not an HTTP request: %s", protocol.handshake_exc)
                return None, []
    logger.info("no HTTP request within %s s; closing", handshake_timeout)
    return None, []


def _not_http(protocol: ServerProtocol) -> bool:
    """The peer sent bytes that are no HTTP request (not: it left before finishing one)."""
    exc = protocol.handshake_exc
    return isinstance(exc, InvalidMessage) and not isinstance(exc.__cause__, EOFError)


async def serve_websocket(
    stream: anyio.abc.ByteStream,
    policy: HandshakePolicy,
    handler: ConnectionHandler,
    *,
    capacity: int = OUTBOUND_QUEUE_CAPACITY,
    handshake_timeout: float = 10.0,
    close_timeout: float = 5.0,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> None:
    """Serve one accepted stream: HTTP prelude, upgrade, then ``handler`` over the stream pair.

    Returns when the exchange is over; the stream is always closed.
    """
    # a larger message closes the connection with 1009 "message too big"
    protocol = ServerProtocol(max_size=max_message_bytes, logger=logger)
    async with stream:
        request, events = await _handshake(stream, protocol, handshake_timeout)
        if request is None:
            if policy.reply_to_non_upgrade and _not_http(protocol):
                with contextlib.suppress(
                    anyio.BrokenResourceError, anyio.ClosedResourceError, OSError
                ):
                    await stream.send(_empty_response(400, "Bad Request").serialize())
            return
        try:
            if not policy.reply_to_non_upgrade and not _is_upgrade(request):
                return
            response = _prelude(protocol, request, policy)
            if response is None:
                response = protocol.accept(request)
            if response.status_code == 101:
                for name, value in policy.extra_headers:
                    response.headers[name] = value
            protocol.send_response(response)
            session = _Session(stream, protocol)
            await session.flush()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return
        if response.status_code != 101:
            return
        await _serve_open(session, handler, events, capacity=capacity, close_timeout=close_timeout)


async def _serve_open(
    session: _Session,
    handler: ConnectionHandler,
    events: list[Event],
    *,
    capacity: int,
    close_timeout: float,
) -> None:
    inbound_send, inbound_recv = anyio.create_memory_object_stream[InboundItem](0)
    outbound_send, outbound_recv = anyio.create_memory_object_stream[OutboundItem](capacity)
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.read, inbound_send, events)
        tg.start_soon(session.write, outbound_recv)
        try:
            await handler((inbound_recv, outbound_send))
        finally:
            outbound_send.close()
            inbound_recv.close()
            with anyio.CancelScope(shield=True):
                await session.wait_writer(close_timeout)
            tg.cancel_scope.cancel()
