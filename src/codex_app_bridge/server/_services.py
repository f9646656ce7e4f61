"""``ServerServices``: what the request handlers and the idle unloader use of the server.

Role: the process-wide pieces one ``BridgeServer`` lends to every connection (listener hub,
thread registry, the stored threads' list, event source, identity) and ``initialize``, which the server answers itself, as
a protocol. ``BridgeServer`` is the one implementation.

Boundary: an interface only. It sits below the handlers (``_handlers`` and its namespaces,
``_idle``) and above what it names, so the handlers need not import ``_server``, which builds
the method table from them: no module of ``server/`` needs one that needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from codex_app_bridge.config import ConfigLayers
from codex_app_bridge.listener import ListenerHub
from codex_app_bridge.rpc import RequestContext
from codex_app_bridge.server._handshake import ClientHello
from codex_app_bridge.server._registry import ThreadRegistry
from codex_app_bridge.server._stored_list import StoredThreadList
from codex_app_bridge.sources import EventSource, ThreadGoals, TurnSource

__all__ = ["GoalTurnStarter", "ServerServices"]


class GoalTurnStarter(Protocol):
    """What starts goal-continuation turns (``_goal_turns.GoalTurns``)."""

    async def continue_goal(self, thread_id: str) -> None: ...


class ServerServices(Protocol):
    """The server as the handlers see it (``BridgeServer`` satisfies it)."""

    default_cwd: str
    originator: str | None
    """The first client name that initialized (``initialize`` sets it once)."""
    server_name: str
    installation_id: str
    announced_config_warnings: set[str]
    """``configWarning`` summaries already sent (each is sent once per process)."""

    # built on first use by ``BridgeServer`` (nothing of the domain before ``initialize``)
    @property
    def source(self) -> EventSource | TurnSource: ...

    @property
    def config(self) -> ConfigLayers:
        """The configuration layers threads resolve their settings from."""
        ...

    @property
    def hub(self) -> ListenerHub: ...

    @property
    def goals(self) -> ThreadGoals:
        """Every thread's goal (the one owner, ``sources.ThreadGoals``)."""
        ...

    @property
    def goal_turns(self) -> GoalTurnStarter:
        """Starts goal-continuation turns (``_goal_turns``)."""
        ...

    @property
    def threads(self) -> ThreadRegistry:
        """Every thread of the server, and the one owner of their lives."""
        ...

    def known_threads(self) -> ThreadRegistry | None:
        """The registry if it was built (``None``: no thread was made or loaded yet)."""
        ...

    @property
    def stored_threads(self) -> StoredThreadList | None:
        """Stored threads as ``thread/list`` pages them, without the registry (``None``: no
        ``CODEX_HOME``)."""
        ...

    def start_task(self, run: Callable[[], Coroutine[Any, Any, object]]) -> None:
        """Run ``run`` in the server's task group (cancelled when the server stops)."""
        ...

    async def initialize(self, ctx: RequestContext, params: ClientHello) -> bytes:
        """Answer ``initialize`` (the server does it itself, before the domain is loaded)."""
        ...
