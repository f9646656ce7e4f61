"""``SharedThreads``: the thread registry's hook for threads other servers hold too (a cluster).

Role: the one extension point through which threads are shared beyond this process. The server
knows nothing of how (``cluster/`` implements it over NATS JetStream); it only tells the hook of
every thread it loads, and asks it for a thread that is neither loaded here nor stored under
``CODEX_HOME``:

* ``loaded(record)``: a thread's runtime was just made (``thread/start``, fork, a load from the
  rollout or from the hook, a reload): the hook may tap its events (``ThreadRuntime.tap``) or
  make it follow events that come from elsewhere (``ThreadRuntime.follow``).
* ``find(thread_id)``: a thread another server holds, as a ``SharedThread`` (its settings and
  its history log), or ``None``.

Boundary: an interface and a value; no I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from codex_app_bridge.protocol.core import EventEnvelope
    from codex_app_bridge.server._threads import ThreadRecord, ThreadSettings

__all__ = ["SharedThread", "SharedThreads"]


@dataclass(frozen=True, slots=True)
class SharedThread:
    """A thread as another server shares it: what a ``ThreadRecord`` is loaded with."""

    thread_id: str
    settings: ThreadSettings
    history: list[EventEnvelope] = field(default_factory=list["EventEnvelope"])
    """Its history log (``HISTORY_EVENT_TYPES`` only), oldest first."""
    originator: str | None = None
    name: str | None = None
    preview: str = ""
    created_at: int = 0
    updated_at: int = 0
    forked_from_id: str | None = None


class SharedThreads(Protocol):
    """Threads shared with other servers (see the module docstring)."""

    def loaded(self, record: ThreadRecord) -> None:
        """A thread's runtime was made here (and is about to run)."""
        ...

    async def find(self, thread_id: str) -> SharedThread | None:
        """A thread another server holds, or ``None``."""
        ...
