"""``ServerServices``: what the request handlers and the idle unloader use of the server.

Role: the process-wide pieces one ``BridgeServer`` lends to every connection (listener hub,
thread store, stored threads, event source, server -> client request ids, identity) and the two
things it does for them (count a thread's unhandled requests across connections, run a
thread's runtime in its task group), as a protocol. ``BridgeServer`` is the one implementation.

Boundary: an interface only. It sits below the handlers (``_handlers``, ``_stored_handlers``,
``_idle``) and above what it names, so the handlers need not import ``_server``, which builds
the method table from them: no module of ``server/`` needs one that needs it.
"""

from __future__ import annotations

from typing import Protocol

from codex_app_bridge.listener import ListenerHub
from codex_app_bridge.protocol.v2 import InitializeParams, InitializeResponse
from codex_app_bridge.rpc import RequestContext, ServerRequests
from codex_app_bridge.server._runtime import ThreadRuntime
from codex_app_bridge.server._stored import ThreadStorage
from codex_app_bridge.server._threads import ThreadStore
from codex_app_bridge.sources import EventSource, TurnSource

__all__ = ["ServerServices"]


class ServerServices(Protocol):
    """The server as the handlers see it (``BridgeServer`` satisfies it)."""

    default_cwd: str
    server_requests: ServerRequests
    originator: str | None
    """The first client name that initialized (``initialize`` sets it once)."""
    server_name: str
    installation_id: str

    # built on first use by ``BridgeServer`` (nothing of the domain before ``initialize``)
    @property
    def source(self) -> EventSource | TurnSource: ...

    @property
    def hub(self) -> ListenerHub: ...

    @property
    def store(self) -> ThreadStore: ...

    @property
    def storage(self) -> ThreadStorage | None:
        """Stored threads under ``codex_home``; ``None``: threads live in memory only."""
        ...

    @property
    def interrupt_grace(self) -> float: ...

    async def initialize(self, ctx: RequestContext, params: InitializeParams) -> InitializeResponse:
        """Answer ``initialize`` (the server does it itself, before the domain is loaded)."""
        ...

    def unhandled_requests(self, method: str, thread_id: str) -> int:
        """Requests for ``method`` on ``thread_id`` received and not handled yet."""
        ...

    def start_runtime(self, runtime: ThreadRuntime) -> None:
        """Run a thread's runtime until the server stops."""
        ...
