"""Bridge nodes in the test's event loop, each a ``BridgeServer`` joined to one NATS server.

``open_node(url, name)`` yields an e2e ``Bridge`` (``tests.e2e._harness``: in-memory client
sessions, every message checked against the 0.163.0 schemas) whose server shares its threads
through a ``ClusterNode``; the node leaves the cluster when the block ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from codex_app_bridge.cluster import ClusterNode, ClusterOptions
from codex_app_bridge.sources import DefaultAgent, EventSource, TurnSource
from tests.e2e._harness import Bridge, _memory_bridge  # pyright: ignore[reportPrivateUsage]


@asynccontextmanager
async def open_node(
    url: str, name: str, source: EventSource | TurnSource | None = None, **server_options: Any
) -> AsyncIterator[tuple[Bridge, ClusterNode]]:
    async with ClusterNode(ClusterOptions.parse(url, name=name)) as node:
        wrapped = node.source(source or DefaultAgent(delay=0.0), None)
        async with _memory_bridge(wrapped, shared=node, **server_options) as bridge:  # pyright: ignore[reportArgumentType]
            yield bridge, node
