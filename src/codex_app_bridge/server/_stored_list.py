"""The stored threads as ``thread/list`` reads them: rows and listed threads from the catalog.

Role: what ``thread/list`` needs of the threads under ``CODEX_HOME`` (the catalog's rows, the
``Thread`` JSON and read state of each stored thread of a page), answered from the index alone,
every read in a worker thread (or, before the server starts, where it is asked for:
``_first_list``). It needs neither the thread registry nor what the registry loads
(listeners, runtimes, sources, the core and wire models): a process whose first request is
``thread/list`` answers it with this, the storage index and the list handler loaded, and
nothing else. The registry, once built, lists through the same object.

* ``THREAD_SOURCE``: the ``source`` a thread of this server reports (and a stored one whose
  ``session_meta.source`` is not a plain string).
* :func:`not_loaded_thread_json`: the ``Thread`` of a thread that is not loaded here, as JSON
  data (its constant fields written once); :func:`stored_thread_json` that of a stored thread,
  from its stored values (no model built: a test holds it equal to what the ``Thread`` model
  writes); :func:`stored_thread_model` the model (``thread/read``, resume; loaded then).
* The defaults (what a rollout that names no model or provider stands for) are asked for only
  when a listed thread or a provider filter needs them: they come from the turn source, which
  the first list then builds.

Boundary: reads through ``storage.ThreadCatalog``; which threads are known or loaded is the
registry's (``skip``), what a request means the handlers'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar

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
    "not_loaded_thread_json",
    "stored_read_state",
    "stored_thread_json",
    "stored_thread_model",
]

T = TypeVar("T")

THREAD_SOURCE: Final = "vscode"
"""``Thread.source`` of every thread the app-server starts (what 0.163.0 reports)."""


def not_loaded_thread_json(
    *,
    thread_id: str,
    path: str | None,
    cwd: str,
    originator: str | None,
    source: object,
    model: str | None,
    model_provider: str | None,
    reasoning_effort: str | None,
    preview: str,
    name: str | None,
    created_at: int,
    updated_at: int,
    forked_from_id: str | None = None,
    cli_version: str = CODEX_PROTOCOL_VERSION,
    git_info: Mapping[str, str | None] | None = None,
    turns: list[Any] | None = None,
) -> dict[str, Any]:
    """The v2 ``Thread`` of a thread that is not loaded here, as JSON data: the one builder of
    its constant fields, for a stored thread (:func:`stored_thread_json`, listed without the
    models; :func:`stored_thread_model`) and a thread another server shares
    (``_shared.shared_thread_object``). ``source``: a ``session_meta.source`` (one that is
    not a plain string, a sub-agent's, is shown as :data:`THREAD_SOURCE`)."""
    return {
        "agentNickname": None,
        "agentRole": None,
        "cliVersion": cli_version,
        "createdAt": created_at,
        "cwd": cwd,
        "ephemeral": False,
        "forkedFromId": forked_from_id,
        "gitInfo": None if git_info is None else dict(git_info),
        "historyMode": "paginated",
        "id": thread_id,
        "model": model,
        "modelProvider": model_provider,
        "name": name,
        "originator": originator,
        "parentThreadId": None,
        "path": path,
        "preview": preview,
        "projectId": None,
        "reasoningEffort": reasoning_effort,
        "recencyAt": updated_at,
        "section": None,
        "sectionEnteredAt": None,
        "sessionId": thread_id,
        "source": source if isinstance(source, str) else THREAD_SOURCE,
        "status": {"type": "notLoaded"},
        "threadSource": None,
        "turns": [] if turns is None else turns,
        "updatedAt": updated_at,
        **thread_extras(cwd, loaded=False),
    }


def stored_thread_json(
    stored: StoredThread,
    defaults: Callable[[], SourceDefaults],
    turns: list[Any] | None = None,
) -> dict[str, Any]:
    """A stored thread that is not loaded as :func:`not_loaded_thread_json`, from its stored
    values as they are: ``thread/list`` answers without building the ``Thread`` model (its
    validator is most of a first request's time).
    ``defaults()`` is asked only when the rollout names no model or no provider."""
    model, provider = stored.model, stored.model_provider
    if model is None or provider is None:
        fallback = defaults()
        model, provider = model or fallback.model, provider or fallback.model_provider
    return not_loaded_thread_json(
        thread_id=stored.thread_id,
        path=str(stored.path),
        cwd=stored.cwd,
        originator=stored.originator,
        source=stored.source,
        model=model,
        model_provider=provider,
        reasoning_effort=stored.reasoning_effort,
        preview=stored.preview,
        name=stored.name,
        created_at=stored.created_at_s,
        updated_at=stored.updated_at_s,
        forked_from_id=stored.forked_from_id,
        cli_version=stored.cli_version or CODEX_PROTOCOL_VERSION,
        git_info=stored.git_info,
        turns=turns,
    )


class StoredThreadList:
    """The stored threads of one ``CODEX_HOME`` as ``thread/list`` pages them (see the module
    docstring)."""

    def __init__(
        self,
        catalog: ThreadCatalog,
        defaults: Callable[[], SourceDefaults],
        *,
        offload: bool = True,
    ) -> None:
        """``defaults()``: what a thread runs with when nothing names a model or provider (the
        turn source's; asked for only when needed). ``offload``: the catalog is read in a
        worker thread, off the event loop (else where it is asked for: a caller with no event
        loop, ``_first_list``, whose awaits then never suspend)."""
        self.catalog = catalog
        self.defaults = defaults
        self._offload = offload

    async def _read(self, work: Callable[[], T]) -> T:
        if not self._offload:
            return work()
        import anyio.to_thread

        return await anyio.to_thread.run_sync(work)

    async def rows(
        self,
        where: RowFilter,
        *,
        by_updated: bool,
        descending: bool,
        after: tuple[int, str | None] | None,
        limit: int,
        skip: frozenset[str] = frozenset(),
        fetch: int = 0,
    ) -> tuple[list[ThreadRow], dict[str, StoredThread]]:
        """Stored threads but ``skip`` (those this process knows), as ``thread/list`` filters and
        sorts them (``storage.ThreadCatalog.rows``): at most ``limit``, in order, from
        ``after``; and the first ``fetch`` of them as they are now, by id (for :meth:`page`),
        read in the same worker call: a list of stored threads alone hops to a worker once."""

        def work() -> tuple[list[ThreadRow], dict[str, StoredThread]]:
            rows = self.catalog.rows(
                where,
                by_updated=by_updated,
                descending=descending,
                after=after,
                limit=limit,
                skip=skip,
            )
            if not fetch or not rows:
                return rows, {}
            return rows, self.catalog.find_many(row.thread_id for row in rows[:fetch])

        return await self._read(work)

    async def page(
        self, thread_ids: Iterable[str], fetched: Mapping[str, StoredThread] | None = None
    ) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
        """The v2 ``Thread`` s (as JSON data) and read states of stored threads that are not
        loaded, as their files are now (those still stored), in one read (none for those
        ``fetched`` already by :meth:`rows`)."""
        found = dict(fetched or {})
        missing = [thread_id for thread_id in thread_ids if thread_id not in found]
        if missing:
            found.update(await self._read(partial(self.catalog.find_many, missing)))
        return {
            thread_id: (stored_thread_json(stored, self.defaults), stored_read_state(stored))
            for thread_id, stored in found.items()
        }


def stored_thread_model(
    stored: StoredThread, defaults: SourceDefaults, turns: list[Turn] | None = None
) -> Thread:
    """The v2 ``Thread`` of a stored thread that is not loaded (the models are loaded now)."""
    from codex_app_bridge.protocol.v2 import Thread

    return Thread.model_validate(stored_thread_json(stored, lambda: defaults, turns))


def stored_read_state(stored: StoredThread) -> dict[str, Any]:
    """The read state of a thread that is not loaded, as its rollout leads to it."""
    state = read_state_of_turns(stored.thread_id, stored.first_completed, stored.last_completed)
    return read_state_json(stored.thread_id, state)
