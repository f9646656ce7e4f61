"""FIFO serialization of requests that share a scope key, across every connection sharing it.

The real server queues requests whose method declares a serialization scope (the ``threadId`` of
thread/* and turn/* methods, ...) behind earlier requests with the same key, and runs all others
concurrently. Here each request takes a ``ScopeTicket`` *when it is accepted* (so order is arrival
order), waits until it is at the head of its key's queue, runs, and releases its ticket.

A ticket may be released before its turn comes: its connection closed while the request was still
queued (a connection releases every ticket it holds when it closes). It then simply leaves the
queue: the requests behind it keep waiting for the ones before it, so a closing connection can
neither strand the requests of other connections nor let them overtake a request still running.
"""

from __future__ import annotations

from collections.abc import Hashable

import anyio

__all__ = ["ScopeTicket", "SerialScopes"]


class ScopeTicket:
    """One request's place in the queue of its scope key."""

    __slots__ = ("_key", "_released", "_scopes", "_turn")

    def __init__(self, scopes: SerialScopes, key: Hashable) -> None:
        self._scopes = scopes
        self._key = key
        self._turn = anyio.Event()
        self._released = False

    async def wait_turn(self) -> None:
        """Wait until every earlier request with the same key has released its ticket."""
        await self._turn.wait()

    def release(self) -> None:
        """Leave the queue, letting the next request run if this one was running (idempotent)."""
        if not self._released:
            self._released = True
            self._scopes._leave(self._key, self)  # pyright: ignore[reportPrivateUsage]


class SerialScopes:
    """Scope key -> the tickets queued for it, head first. Share one instance to serialize across
    connections (thread scopes are process-wide in the real server)."""

    def __init__(self) -> None:
        # A dict per key is an ordered set: appending and removing anywhere are O(1).
        self._queues: dict[Hashable, dict[ScopeTicket, None]] = {}

    def enter(self, key: Hashable) -> ScopeTicket:
        """Take the next ticket for ``key`` (synchronously: arrival order is queue order)."""
        queue = self._queues.setdefault(key, {})
        ticket = ScopeTicket(self, key)
        if not queue:
            ticket._turn.set()  # pyright: ignore[reportPrivateUsage]
        queue[ticket] = None
        return ticket

    def busy(self, key: Hashable) -> bool:
        """Whether requests with ``key`` are queued or running (a new one would have to wait)."""
        return key in self._queues

    def _leave(self, key: Hashable, ticket: ScopeTicket) -> None:
        queue = self._queues[key]
        was_head = next(iter(queue)) is ticket
        del queue[ticket]
        if not queue:
            del self._queues[key]
        elif was_head:
            next(iter(queue))._turn.set()  # pyright: ignore[reportPrivateUsage]

    def __len__(self) -> int:
        """Number of keys with requests queued or running."""
        return len(self._queues)
