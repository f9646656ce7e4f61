"""The outbound byte budget of a connection: encoded messages waiting for a peer that reads slowly.

A transport's write stream holds ``OUTBOUND_QUEUE_CAPACITY`` messages; behind it, ``OutboundBuffer``
keeps pulling them as long as fewer than ``budget`` bytes wait for the socket or pipe, and the
transport's writer takes them from there in batches. Only when the budget is used up does the
write stream fill, and then the rpc layer applies its policy: on stdio it waits (the bridge stops
reading its input), on socket kinds it disconnects the client. So a client that writes thousands
of requests before it reads anything gets every answer once it reads (stdio), and a socket client
that reads, even slower than a turn streams for a while, is not cut off until it is ``budget``
bytes behind, while one that stopped reading is.

Defaults: ``STDIO_OUTBOUND_BUDGET`` (64 MiB) and ``SOCKET_OUTBOUND_BUDGET`` (8 MiB, per
connection; the kernel's socket buffers come on top); ``serve --outbound-budget`` changes them.
"""

from __future__ import annotations

from collections import deque

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from codex_app_bridge.transport._framing import OutboundItem, encode_item

__all__ = ["SOCKET_OUTBOUND_BUDGET", "STDIO_OUTBOUND_BUDGET", "OutboundBuffer"]

STDIO_OUTBOUND_BUDGET = 64 * 1024 * 1024
"""Bytes held for a stdio client that is not reading before the bridge stops reading stdin."""

SOCKET_OUTBOUND_BUDGET = 8 * 1024 * 1024
"""Bytes held for a socket client that is not reading before it is disconnected."""


class OutboundBuffer:
    """A byte-counted FIFO between one write stream (``fill_from``) and one writer (``take``)."""

    def __init__(self, budget: int) -> None:
        if budget <= 0:
            raise ValueError("the outbound budget must be positive")
        self.budget = budget
        self.size = 0
        """Bytes waiting now."""
        self.peak = 0
        """The most bytes that ever waited."""
        self._chunks: deque[bytes] = deque()
        self._ended = False
        self._readable = anyio.Event()
        self._writable = anyio.Event()

    async def fill_from(self, source: MemoryObjectReceiveStream[OutboundItem]) -> None:
        """Move encoded messages in until ``source`` ends, pausing while the budget is used up."""
        try:
            async with source:
                async for item in source:
                    data = encode_item(item)
                    self._chunks.append(data)
                    self.size += len(data)
                    self.peak = max(self.peak, self.size)
                    self._readable.set()
                    while self.size >= self.budget:
                        self._writable = anyio.Event()
                        await self._writable.wait()
        except anyio.ClosedResourceError:
            pass  # the writer gave up (peer gone) and closed the stream
        finally:
            self._ended = True
            self._readable.set()

    async def take(self, max_bytes: int) -> list[bytes] | None:
        """The next messages (at least one, about ``max_bytes`` together); ``None`` at the end."""
        while not self._chunks:
            if self._ended:
                return None
            self._readable = anyio.Event()
            await self._readable.wait()
        batch: list[bytes] = []
        taken = 0
        while self._chunks and (not batch or taken < max_bytes):
            data = self._chunks.popleft()
            batch.append(data)
            taken += len(data)
        self.size -= taken
        if self.size < self.budget:
            self._writable.set()
        return batch
