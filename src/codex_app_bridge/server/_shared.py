"""``SharedThreads``: the thread registry's hook for threads other servers hold too (a cluster).

Role: the one extension point through which threads are shared beyond this process. The server
knows nothing of how (``cluster/`` implements it over NATS JetStream); it only tells the hook of
every thread it loads, and asks it for a thread that is neither loaded here nor stored under
``CODEX_HOME``:

* ``attach(notify)``: how the hook tells this server's clients of a change another server made.
* ``loaded(record)``: a thread's runtime was just made (``thread/start``, fork, a load from the
  rollout or from the hook, a reload): the hook may tap its events (``ThreadRuntime.tap``) or
  make it follow events that come from elsewhere (``ThreadRuntime.follow``).
* ``find(thread_id)``: a thread another server holds, as a ``SharedThread`` (its settings and
  its history log), or ``None``; the hook may then make it follow the others' events.
* ``read(thread_id, history=...)``: the same, for ``thread/read`` of a thread not loaded here
  (nothing is loaded or followed); ``renamed(thread_id, name)``: a name set here, for every
  server; ``set_archived(thread_id, archived)``, ``is_archived(thread_id)``: its archive state,
  for every server (a thread loaded somewhere stays loaded there); ``listed(thread_id)``: what ``thread/list`` shows of it,
  from what the hook keeps in memory; ``rows(...)``: the shared threads ``thread/list``
  filters and sorts with the stored ones (``storage.ThreadRow``), as ``ThreadCatalog.rows``
  gives them.

Boundary: an interface, a value and its ``Thread``; no I/O here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from codex_app_bridge.protocol.core import EventEnvelope
    from codex_app_bridge.protocol.v2 import Thread, Turn
    from codex_app_bridge.server._threads import ThreadRecord, ThreadSettings
    from codex_app_bridge.storage import RowFilter, ThreadRow

__all__ = ["SharedThread", "SharedThreads", "shared_thread_json", "shared_thread_object"]


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
    read_state: dict[str, Any] | None = None
    """Its ``readState`` as the server that plays it last wrote it (``None``: the initial)."""
    playing: bool = False
    """A turn of its history has not ended and its server is alive: the turn is in progress
    (else a turn left open reads back interrupted, as a crash-cut turn does)."""


class SharedThreads(Protocol):
    """Threads shared with other servers (see the module docstring)."""

    def attach(self, notify: Callable[[str, dict[str, Any]], None]) -> None:
        """``notify(method, params)`` sends a notification to every initialized connection of
        this server: what another server changed of a thread (its name, its archive state),
        told as a change made here is."""
        ...

    def loaded(self, record: ThreadRecord) -> None:
        """A thread's runtime was made here (and is about to run)."""
        ...

    async def find(self, thread_id: str) -> SharedThread | None:
        """A thread another server holds, or ``None``."""
        ...

    async def read(self, thread_id: str, *, history: bool) -> SharedThread | None:
        """A thread another server holds (its history log only with ``history``), or
        ``None``; nothing is loaded or followed."""
        ...

    async def renamed(self, thread_id: str, name: str) -> bool:
        """Store a thread's new name where every server reads it (``thread/name/set``);
        ``False``: no such shared thread."""
        ...

    async def set_archived(self, thread_id: str, archived: bool) -> bool:
        """Store a thread's archive state where every server reads it (``thread/archive``,
        ``thread/unarchive``); ``False``: no such shared thread, or it is in that state."""
        ...

    def is_archived(self, thread_id: str) -> bool:
        """Whether a shared thread is archived, as ``rows`` last listed it."""
        ...

    def listed(self, thread_id: str) -> SharedThread | None:
        """A shared thread as ``rows`` last listed it (no history; its settings as far as
        ``thread/list`` shows them), or ``None``."""
        ...

    async def rows(
        self,
        where: RowFilter,
        *,
        by_updated: bool,
        descending: bool,
        after: tuple[int, str | None] | None,
        limit: int,
        skip: frozenset[str],
    ) -> list[ThreadRow]:
        """Shared threads as ``thread/list`` filters and sorts them: those ``where`` matches,
        in order, strictly after ``after``, at most ``limit``, none of ``skip``."""
        ...


def shared_thread_json(found: SharedThread, turns: list[Turn] | None = None) -> dict[str, Any]:
    """The v2 ``Thread`` of a shared thread that is not loaded here, as JSON data
    (``thread/list``: no model built): ``notLoaded`` on this server, with no rollout path of
    its own."""
    from codex_app_bridge.server._stored_list import THREAD_SOURCE, not_loaded_thread_json

    settings = found.settings
    return not_loaded_thread_json(
        thread_id=found.thread_id,
        path=None,
        cwd=settings.cwd,
        originator=found.originator,
        source=THREAD_SOURCE,
        model=settings.model,
        model_provider=settings.model_provider,
        reasoning_effort=settings.reasoning_effort,
        preview=found.preview,
        name=found.name,
        created_at=found.created_at,
        updated_at=found.updated_at,
        forked_from_id=found.forked_from_id,
        turns=turns,
    )


def shared_thread_object(found: SharedThread, turns: list[Turn] | None = None) -> Thread:
    """The v2 ``Thread`` of a shared thread that is not loaded here (``thread/read``)."""
    from codex_app_bridge.protocol.v2 import Thread

    return Thread.model_validate(shared_thread_json(found, turns))
