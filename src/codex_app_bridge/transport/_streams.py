"""The shape every transport hands to the rpc layer, and the kinds of transport.

A transport yields, per connection, a ``TransportStreams`` pair: a read stream of decoded inbound
items and a write stream of outbound items. The write stream's buffer *is* the connection's
outbound queue (``OUTBOUND_QUEUE_CAPACITY`` items, as the real server's writer queue); what the rpc
layer does when it is full depends on the ``TransportKind`` (stdio waits, socket kinds disconnect
the slow client).
"""

from __future__ import annotations

from enum import Enum
from typing import TypeAlias

from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from codex_app_bridge.transport._framing import InboundItem, OutboundItem

__all__ = ["OUTBOUND_QUEUE_CAPACITY", "TransportKind", "TransportStreams"]

OUTBOUND_QUEUE_CAPACITY = 128
"""Outbound messages buffered per connection (the real server bounds every queue at 128)."""

TransportStreams: TypeAlias = (
    "tuple[MemoryObjectReceiveStream[InboundItem], MemoryObjectSendStream[OutboundItem]]"
)


class TransportKind(Enum):
    """Where a connection comes from; decides the outbound policy of the rpc layer."""

    STDIO = "stdio"
    MEMORY = "memory"
    UNIX = "unix"
    WEBSOCKET = "websocket"
