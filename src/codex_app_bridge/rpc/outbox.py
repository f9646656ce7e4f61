"""The per-connection outbox: how upper layers (the listener, the server) send to one client.

A notification is encoded once (``OutboundNotification.encode``: method, pre-encoded params and
the emission time) and the same bytes are handed to every subscribed connection's outbox. Each
outbox applies its connection's ``optOutNotificationMethods`` (exact method names, from
``initialize``) to notifications only; responses, errors and server -> client requests are never
filtered.

Offering never waits (``offer_notification``): what happens when a connection's outbound queue is
full is the connection's policy. On stdio the message is kept behind the queue and the outbox
reports itself ``congested`` once that backlog passes its high-water mark, so a producer can
``await wait_writable()`` between batches (backpressure without a per-message await); on socket
kinds the slow connection is disconnected at once, so one slow client never slows the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol, TypeAlias

import orjson

from codex_app_bridge.protocol.jsonrpc import RequestId, encode_notification

__all__ = ["EncodedParams", "OutboundNotification", "Outbox"]

EncodedParams: TypeAlias = "orjson.Fragment | bytes | object"
"""Params as pre-encoded JSON (``orjson.Fragment`` or ``bytes``) or anything orjson encodes."""


@dataclass(frozen=True, slots=True)
class OutboundNotification:
    """A server notification encoded once: its method (for opt-out) and its wire bytes."""

    method: str
    data: bytes
    exact: ClassVar[bool] = True
    """Whether ``data`` sits in an allocation of its own length, as a delta line joined from its
    parts does. ``encode``'s (orjson's result, in a buffer of at least 4 KiB) does not: a
    connection that must queue one copies it to its size (``protocol.jsonrpc.right_sized``). A
    class attribute, not a field: a frozen dataclass's field costs ~70 ns a construction, once
    per delta."""

    @classmethod
    def encode(
        cls, method: str, params: EncodedParams, *, emitted_at_ms: int | None = None
    ) -> OutboundNotification:
        """``{"method","params","emittedAtMs"}``; ``emittedAtMs`` defaults to now."""
        return _Encoded(method, encode_notification(method, params, emitted_at_ms=emitted_at_ms))


class _Encoded(OutboundNotification):
    """A notification as orjson wrote it (``OutboundNotification.encode``): not ``exact``."""

    __slots__ = ()
    exact: ClassVar[bool] = False


class Outbox(Protocol):
    """What upper layers need from a connection to send it messages."""

    @property
    def connection_id(self) -> int: ...

    @property
    def closed(self) -> bool: ...

    def wants(self, method: str) -> bool:
        """False if the client opted out of notifications with this exact method name."""
        ...

    async def send_notification(self, notification: OutboundNotification) -> bool:
        """Queue a notification unless opted out, waiting while congested; True if queued."""
        ...

    def offer_notification(self, notification: OutboundNotification) -> bool:
        """Queue a notification unless opted out, without waiting; True if it was queued."""
        ...

    def offer(self, data: bytes) -> bool:
        """Queue one encoded message (a server -> client request) as is, without waiting and
        without opt-out; True if it was queued."""
        ...

    @property
    def congested(self) -> bool:
        """More is buffered for this client than its high-water mark: producers should wait."""
        ...

    async def wait_writable(self) -> None:
        """Return once the outbox is no longer congested (or is closed)."""
        ...

    async def send_server_request(
        self, request_id: RequestId, method: str, params: EncodedParams
    ) -> bool:
        """Queue a server -> client request with an id from ``ServerRequests``; True if queued."""
        ...
