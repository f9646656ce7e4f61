"""Bridge nodes in the test's event loop, each a ``BridgeServer`` joined to one NATS server.

``spawn_node(url, name)`` runs a ``serve --cluster`` process instead, which a test may kill.
``jetstream(url)`` is the test's own connection, to look at the log (``read_log``) and leases.
``open_node(url, name)`` yields an e2e ``Bridge`` (``tests.e2e._harness``: in-memory client
sessions, every message checked against the 0.163.0 schemas) whose server shares its threads
through a ``ClusterNode``; the node leaves the cluster when the block ends.
``open_client(url, name, client=...)`` yields one client session of such a node, initialized,
and the node.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import Process

from codex_app_bridge.cluster import ClusterNode, ClusterOptions
from codex_app_bridge.cluster._subjects import EVENT_HEADER, LEASE_TTL, STREAM, events_subject
from codex_app_bridge.sources import DefaultAgent, EventSource, TurnSource
from tests.conftest import bridge_command, bridge_env
from tests.e2e._harness import (
    TIMEOUT,
    Bridge,
    Session,
    _memory_bridge,  # pyright: ignore[reportPrivateUsage]
    _pump_lines,  # pyright: ignore[reportPrivateUsage]
)

if TYPE_CHECKING:
    from nats.js.client import JetStreamContext


@asynccontextmanager
async def open_node(
    url: str,
    name: str,
    source: EventSource | TurnSource | None = None,
    *,
    lease_ttl: float = LEASE_TTL,
    **server_options: Any,
) -> AsyncIterator[tuple[Bridge, ClusterNode]]:
    async with ClusterNode(ClusterOptions.parse(url, name=name, lease_ttl=lease_ttl)) as node:
        wrapped = node.source(source or DefaultAgent(delay=0.0), None)
        async with _memory_bridge(wrapped, shared=node, **server_options) as bridge:  # pyright: ignore[reportArgumentType]
            yield bridge, node


@asynccontextmanager
async def open_client(
    url: str,
    name: str,
    source: EventSource | TurnSource | None = None,
    *,
    client: str,
    **options: Any,
) -> AsyncGenerator[tuple[Session, ClusterNode]]:
    """A node as :func:`open_node` and one client session of it, initialized as ``client``."""
    async with open_node(url, name, source, **options) as (bridge, node):
        session = await bridge.connect()
        await session.initialize(name=client)
        yield session, node


async def join(bridge: Bridge, name: str, thread_id: str) -> Session:
    """A client of ``bridge`` subscribed to the thread (``thread/resume`` without its turns),
    with nothing pending."""
    client = await bridge.connect()
    await client.initialize(name=name)
    await client.result("thread/resume", {"threadId": thread_id, "excludeTurns": True})
    await client.drain_pending()
    return client


@asynccontextmanager
async def spawn_node(url: str, name: str, *args: str) -> AsyncIterator[tuple[Process, Session]]:
    """A ``serve --cluster`` process on stdio and its one client session; the test may
    ``kill -9`` it (the process is killed, if still running, when the block ends)."""
    command = [*bridge_command(), "serve", "--cluster", url, "--cluster-name", name, *args]
    process = await anyio.open_process(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=bridge_env(),
    )
    async with process, anyio.create_task_group() as tg:
        assert process.stdin is not None
        assert process.stdout is not None
        lines_send, lines_recv = anyio.create_memory_object_stream[bytes](1 << 16)
        tg.start_soon(_pump_lines, process.stdout, lines_send)
        try:
            yield process, Session(process.stdin.send, lines_recv, _close=process.stdin.aclose)
        finally:
            if process.returncode is None:
                process.kill()
            with anyio.fail_after(TIMEOUT):
                await process.wait()
            lines_recv.close()
            tg.cancel_scope.cancel()


@asynccontextmanager
async def jetstream(url: str) -> AsyncGenerator[JetStreamContext]:
    """The test's own connection to NATS, to look at the log and the leases."""
    import nats

    nc = await nats.connect(url, connect_timeout=int(TIMEOUT), max_reconnect_attempts=3)  # pyright: ignore[reportUnknownMemberType]
    try:
        yield nc.jetstream()  # pyright: ignore[reportUnknownMemberType]
    finally:
        await nc.close()


@dataclass(frozen=True)
class LogMessage:
    writer: str
    """The node that wrote it (its name in the lease bucket's holder ``NAME/...``)."""
    first: int
    """The number of its first event in the thread's log (``Codex-Event``)."""
    count: int
    """How many events it holds (a take-over's fence: none)."""


async def read_log(js: JetStreamContext, thread_id: str) -> list[LogMessage]:
    """Every message of the thread's log, in order."""
    subject = events_subject(thread_id)
    last = (await js.get_last_msg(STREAM, subject)).seq or 0
    sub = await js.subscribe(subject, ordered_consumer=True)
    messages: list[LogMessage] = []
    try:
        while True:
            msg = await sub.next_msg(timeout=TIMEOUT)
            headers = msg.headers or {}
            messages.append(
                LogMessage(
                    writer=headers["Nats-Msg-Id"].split("/")[0],
                    first=int(headers[EVENT_HEADER]),
                    count=msg.data.count(b"\n") + 1 if msg.data else 0,
                )
            )
            if msg.metadata.sequence.stream >= last:
                return messages
    finally:
        await sub.unsubscribe()


def events_in(log: list[LogMessage]) -> int:
    """How many events the log holds, checking that their numbers run 1..N: none lost, none
    twice."""
    expected = 1
    for message in log:
        assert message.first == expected, log
        expected += message.count
    return expected - 1
