"""The seam between the in-memory benchmarks (``latency.py``, ``fanout.py``) and the server's
thread runtime: the only code in ``bench/`` that knows how a server is built in memory and how an
event is handed to a thread. When the runtime changes, re-point ``open_server`` and
``push_event``; the scripts stay as they are.

Today: a ``BridgeServer`` (built-in agent, no pacing) in the caller's event loop; each
``connect()`` is an in-memory connection (the transport's twin: same framing as stdio, a queue of
128 per direction), initialized; ``push_event`` hands one ``EventEnvelope`` to the thread's
``ThreadListener`` (reduce, encode, offer; then wait while a connection is congested), as the
thread runtime does for each event it takes from its source.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from codex_app_bridge import EVENT_ENVELOPE_ADAPTER
from codex_app_bridge.protocol.core import EventEnvelope
from codex_app_bridge.server import BridgeServer
from codex_app_bridge.sources import DefaultAgent
from codex_app_bridge.transport import TransportKind, create_memory_transport_pair

Message = dict[str, Any]


class Client:
    """One in-memory connection: requests answered in order; ``receive`` gives every message."""

    def __init__(
        self, read: MemoryObjectReceiveStream[Any], write: MemoryObjectSendStream[Any]
    ) -> None:
        self._read = read
        self._write = write
        self._next_id = 0

    async def receive(self) -> Any:
        return await self._read.receive()

    async def call(self, method: str, params: Message) -> Message:
        request_id = self._next_id
        self._next_id += 1
        await self._write.send({"id": request_id, "method": method, "params": params})
        while True:
            message = await self._read.receive()
            if message.get("id") == request_id and "method" not in message:
                if "result" not in message:
                    raise RuntimeError(f"{method} failed: {message}")
                return message["result"]

    async def until(self, method: str) -> None:
        while (await self._read.receive()).get("method") != method:
            pass


class Server:
    """A running server and the way to connect to it (see ``open_server``)."""

    def __init__(
        self, server: BridgeServer, group: anyio.abc.TaskGroup, stack: AsyncExitStack
    ) -> None:
        self.bridge = server
        self._group = group
        self._stack = stack

    async def connect(self) -> Client:
        """A new in-memory connection, initialized (its ``remoteControl/status/changed``
        consumed)."""
        client_streams, server_streams = await self._stack.enter_async_context(
            create_memory_transport_pair()
        )
        self._group.start_soon(self.bridge.serve_connection, server_streams, TransportKind.MEMORY)
        client = Client(*client_streams)
        await client.call("initialize", {"clientInfo": {"name": "bench", "version": "1.0"}})
        await client.until("remoteControl/status/changed")
        return client

    async def start_thread(self, client: Client) -> str:
        """A thread started by ``client`` and materialized by one built-in turn, so that other
        connections can subscribe with ``thread/resume``."""
        thread_id = str((await client.call("thread/start", {}))["thread"]["id"])
        text = [{"type": "text", "text": "warm up"}]
        await client.call("turn/start", {"threadId": thread_id, "input": text})
        await client.until("turn/completed")
        return thread_id


@asynccontextmanager
async def open_server() -> AsyncIterator[Server]:
    """A server in this event loop; leaving it closes every connection."""
    async with AsyncExitStack() as stack:
        group = await stack.enter_async_context(anyio.create_task_group())
        bridge = await stack.enter_async_context(BridgeServer(DefaultAgent(delay=0.0)))
        yield Server(bridge, group, stack)
        group.cancel_scope.cancel()


def envelope(turn_id: str, msg: Message) -> EventEnvelope:
    """A validated envelope (built before the clock starts)."""
    return EVENT_ENVELOPE_ADAPTER.validate_python({"id": turn_id, "msg": msg})


async def push_event(server: Server, thread_id: str, event: EventEnvelope) -> None:
    """Hand one event to a thread, as the thread runtime does."""
    listener = server.bridge.hub.get(thread_id)
    assert listener is not None, thread_id
    await listener.handle(event)
