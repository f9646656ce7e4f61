"""The stored threads as ``thread/list`` reads them: rows and listed threads from the catalog.

Role: what ``thread/list`` needs of the threads under ``CODEX_HOME`` (the catalog's rows, the
``Thread`` JSON and read state of each stored thread of a page), answered from the index alone,
every read in a worker thread. It needs neither the thread registry nor what the registry loads
(listeners, runtimes, sources, the core and wire models): a process whose first request is
``thread/list`` answers it with this, the storage index and the list handler loaded, and
nothing else. The registry, once built, lists through the same object.

* ``THREAD_SOURCE``: the ``source`` a thread of this server reports (and a stored one whose
  ``session_meta.source`` is not a plain string).
* :func:`stored_thread_json`: the ``Thread`` of a listed stored thread as JSON data, from its
  stored values (no model built); one with git info is made by the ``Thread`` model instead
  (``_threads.stored_thread_object``, loaded then).
* The defaults (what a rollout that names no model or provider stands for) are asked for only
  when a listed thread or a provider filter needs them: they come from the turn source, which
  the first list then builds.

Boundary: reads through ``storage.ThreadCatalog``; which threads are known or loaded is the
registry's (``skip``), what a request means the handlers'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import anyio.to_thread

from codex_app_bridge._version import CODEX_PROTOCOL_VERSION
from codex_app_bridge.listener import read_state_of_turns
from codex_app_bridge.server._thread_extras import read_state_json, thread_extras

if TYPE_CHECKING:
    from codex_app_bridge.protocol.v2 import Thread, Turn
    from codex_app_bridge.sources import SourceDefaults
    from codex_app_bridge.storage import RowFilter, StoredThread, ThreadCatalog, ThreadRow

__all__ = [
    "THREAD_SOURCE",
    "StoredThreadList",
    "stored_read_state",
    "stored_thread_json",
    "stored_thread_model",
]

THREAD_SOURCE: Final = "vscode"
"""``Thread.source`` of every thread the app-server starts (what 0.163.0 reports)."""


def stored_thread_json(
    stored: StoredThread, defaults: Callable[[], SourceDefaults]
) -> dict[str, Any]:
    """The JSON of ``_threads.stored_thread_object`` with no turns and no git info (a listed
    stored thread), made from the stored values as they are: ``thread/list`` answers without
    building the ``Thread`` model (its validator is most of a first request's time).
    ``defaults()`` is asked only when the rollout names no model or no provider."""
    source: Any = stored.source if isinstance(stored.source, str) else THREAD_SOURCE
    model, provider = stored.model, stored.model_provider
    if model is None or provider is None:
        fallback = defaults()
        model, provider = model or fallback.model, provider or fallback.model_provider
    return {
        "agentNickname": None,
        "agentRole": None,
        "cliVersion": stored.cli_version or CODEX_PROTOCOL_VERSION,
        "createdAt": stored.created_at_s,
        "cwd": stored.cwd,
        "ephemeral": False,
        "forkedFromId": stored.forked_from_id,
        "gitInfo": None,
        "historyMode": "paginated",
        "id": stored.thread_id,
        "model": model,
        "modelProvider": provider,
        "name": stored.name,
        "originator": stored.originator,
        "parentThreadId": None,
        "path": str(stored.path),
        "preview": stored.preview,
        "projectId": None,
        "reasoningEffort": stored.reasoning_effort,
        "recencyAt": stored.updated_at_s,
        "section": None,
        "sectionEnteredAt": None,
        "sessionId": stored.thread_id,
        "source": source,
        "status": {"type": "notLoaded"},
        "threadSource": None,
        "turns": [],
        "updatedAt": stored.updated_at_s,
        **thread_extras(stored.cwd, loaded=False),
    }


class StoredThreadList:
    """The stored threads of one ``CODEX_HOME`` as ``thread/list`` pages them (see the module
    docstring)."""

    def __init__(self, catalog: ThreadCatalog, defaults: Callable[[], SourceDefaults]) -> None:
        """``defaults()``: what a thread runs with when nothing names a model or provider (the
        turn source's; asked for only when needed)."""
        self.catalog = catalog
        self.defaults = defaults

    async def rows(
        self,
        where: RowFilter,
        *,
        by_updated: bool,
        descending: bool,
        after: tuple[int, str | None] | None,
        limit: int,
        skip: frozenset[str] = frozenset(),
    ) -> list[ThreadRow]:
        """Stored threads but ``skip`` (those this process knows), as ``thread/list`` filters and
        sorts them (``storage.ThreadCatalog.rows``): at most ``limit``, in order, from
        ``after``."""
        rows = partial(
            self.catalog.rows,
            where,
            by_updated=by_updated,
            descending=descending,
            after=after,
            limit=limit,
            skip=skip,
        )
        return await anyio.to_thread.run_sync(rows)

    async def page(
        self, thread_ids: Iterable[str]
    ) -> dict[str, tuple[Thread | dict[str, Any], dict[str, Any]]]:
        """The v2 ``Thread`` s (as JSON data when they have no git info) and read states of
        stored threads that are not loaded, as their files are now (those still stored), in one
        read."""
        ids = list(thread_ids)
        if not ids:
            return {}
        found = await anyio.to_thread.run_sync(self.catalog.find_many, ids)
        return {
            thread_id: (
                stored_thread_model(stored, self.defaults())
                if stored.git_info is not None
                else stored_thread_json(stored, self.defaults),
                stored_read_state(stored),
            )
            for thread_id, stored in found.items()
        }


def stored_thread_model(
    stored: StoredThread, defaults: SourceDefaults, turns: list[Turn] | None = None
) -> Thread:
    """The v2 ``Thread`` of a stored thread that is not loaded, git info included (the models
    are loaded now)."""
    from codex_app_bridge.protocol.v2 import GitInfo
    from codex_app_bridge.server._threads import stored_thread_object

    git_info = None if stored.git_info is None else GitInfo.model_validate(stored.git_info)
    return stored_thread_object(stored, defaults, git_info=git_info, turns=turns)


def stored_read_state(stored: StoredThread) -> dict[str, Any]:
    """The read state of a thread that is not loaded, as its rollout leads to it."""
    state = read_state_of_turns(stored.thread_id, stored.first_completed, stored.last_completed)
    return read_state_json(stored.thread_id, state)
