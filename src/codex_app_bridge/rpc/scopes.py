"""FIFO serialization of requests that share a scope key, across every connection sharing it.

The real server queues requests whose method declares a serialization scope (the ``threadId`` of
thread/* and turn/* methods, ...) behind earlier requests with the same key, and runs all others
concurrently. Here each request takes a ``ScopeTicket`` *when it is accepted* (so order is arrival
order), waits for the previous ticket of its key to be released, runs, and releases its own.

Tickets chain through events, not through a queue-draining task, so a connection that goes away
cannot strand the requests of other connections queued behind it: its connection releases every
ticket it still holds when it closes.
"""

from __future__ import annotations

from collections.abc import Hashable

import anyio

__all__ = ["ScopeTicket", "SerialScopes"]


class ScopeTicket:
    """One request's place in the queue of its scope key."""

    __slots__ = ("_done", "_key", "_previous", "_scopes")

    def __init__(self, scopes: SerialScopes, key: Hashable, previous: anyio.Event | None) -> None:
        self._scopes = scopes
        self._key = key
        self._previous = previous
        self._done = anyio.Event()

    async def wait_turn(self) -> None:
        """Wait until every earlier request with the same key has released its ticket."""
        if self._previous is not None:
            await self._previous.wait()

    def release(self) -> None:
        """Let the next request with the same key run (idempotent)."""
        if not self._done.is_set():
            self._done.set()
            self._scopes._forget(self._key, self)  # pyright: ignore[reportPrivateUsage]


class SerialScopes:
    """Scope key -> the last ticket taken for it. Share one instance to serialize across
    connections (thread scopes are process-wide in the real server)."""

    def __init__(self) -> None:
        self._tails: dict[Hashable, ScopeTicket] = {}

    def enter(self, key: Hashable) -> ScopeTicket:
        """Take the next ticket for ``key`` (synchronously: arrival order is queue order)."""
        tail = self._tails.get(key)
        ticket = ScopeTicket(self, key, None if tail is None else tail._done)  # pyright: ignore[reportPrivateUsage]
        self._tails[key] = ticket
        return ticket

    def _forget(self, key: Hashable, ticket: ScopeTicket) -> None:
        if self._tails.get(key) is ticket:
            del self._tails[key]

    def __len__(self) -> int:
        """Number of keys with requests queued or running."""
        return len(self._tails)
