"""In-memory twin of the line transports: a connected client/server pair for tests.

Each direction runs through the same framing as stdio (encode, ``\\n``-terminate, split, decode), so
what one side writes reaches the other exactly as it would through a pipe: raw bytes that are not
JSON arrive as ``DecodeError`` items, blank lines vanish, one ``bytes`` item holding two lines
arrives as two messages.

Buffering mirrors a real connection: each side's write stream holds ``capacity`` items (the
per-connection outbound queue, 128 as in the real server), one more item can be in flight inside
the pump, and the reader's stream has no buffer, so a side that stops reading makes the other
side's write queue fill up.

Closing a side's write stream is end-of-input for the other side; closing a side's read stream
makes the other side's writes fail with ``anyio.BrokenResourceError`` (peer gone).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from codex_app_bridge.transport._framing import (
    InboundItem,
    LineSplitter,
    OutboundItem,
    decode_line,
    encode_item,
)
from codex_app_bridge.transport._streams import OUTBOUND_QUEUE_CAPACITY, TransportStreams

__all__ = ["create_memory_transport_pair"]


async def _pump(
    source: MemoryObjectReceiveStream[OutboundItem],
    sink: MemoryObjectSendStream[InboundItem],
) -> None:
    splitter = LineSplitter()
    async with source, sink:
        try:
            async for item in source:
                for line in splitter.feed(encode_item(item) + b"\n"):
                    decoded = decode_line(line)
                    if decoded is not None:
                        await sink.send(decoded)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            # The reading side went away: closing ``source`` (by leaving the ``async with``)
            # turns the writer's next send into BrokenResourceError, as a closed pipe would.
            return


@asynccontextmanager
async def create_memory_transport_pair(
    *, capacity: int = OUTBOUND_QUEUE_CAPACITY
) -> AsyncGenerator[tuple[TransportStreams, TransportStreams]]:
    """Yield ``(client_streams, server_streams)``, each a ``(read_stream, write_stream)`` pair."""
    client_write, client_to_server = anyio.create_memory_object_stream[OutboundItem](capacity)
    server_write, server_to_client = anyio.create_memory_object_stream[OutboundItem](capacity)
    server_read_send, server_read = anyio.create_memory_object_stream[InboundItem](0)
    client_read_send, client_read = anyio.create_memory_object_stream[InboundItem](0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump, client_to_server, server_read_send)
        tg.start_soon(_pump, server_to_client, client_read_send)
        try:
            yield (client_read, client_write), (server_read, server_write)
        finally:
            tg.cancel_scope.cancel()
            for stream in (client_read, client_write, server_read, server_write):
                stream.close()
