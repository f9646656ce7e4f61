"""The thread lists: ``thread/list`` (loaded and stored threads) and ``thread/loaded/list``.

Rules (0.163.0, probed on the binary with scratch homes):

* ``thread/list`` shows the loaded threads that have a turn and the stored threads that are not
  loaded (``status: notLoaded``); archived ones only with ``archived: true``. Filters: ``cwd``,
  ``modelProviders``, ``sourceKinds`` (default: the interactive ``cli`` and ``vscode``),
  ``originators``, ``excludedThreadIds``, ``searchTerm`` (in the name or preview, case-folded);
  ``sectionId`` matches nothing (no sections here). Sorting and cursors: ``storage.page_threads``;
  each listed thread's read state goes in ``readStates``.
* ``thread/loaded/list``: the loaded thread ids in creation order, paged by an id cursor (answered
  from memory, without a task: ``Immediate``).

Boundary: what a request means and answers; the threads are the registry's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from codex_app_bridge.protocol.v2 import (
    Thread,
    ThreadListParams,
    ThreadListResponse,
    ThreadLoadedListParams,
    ThreadLoadedListResponse,
)
from codex_app_bridge.rpc import RequestContext
from codex_app_bridge.server._errors import invalid_cursor
from codex_app_bridge.server._thread_extras import list_extras
from codex_app_bridge.server._threads import THREAD_SOURCE, ThreadRecord
from codex_app_bridge.storage import InvalidCursor, StoredThread, page_threads

if TYPE_CHECKING:
    from codex_app_bridge.server._services import ServerServices

__all__ = ["THREAD_LIST_DEFAULT_LIMIT", "ThreadListHandlers"]

THREAD_LIST_DEFAULT_LIMIT: Final = 25
_INTERACTIVE_SOURCES: Final = frozenset({"cli", "vscode"})


@dataclass(frozen=True)
class _Row:
    """One thread/list candidate: a loaded thread (``record``) or a stored one (``stored``)."""

    thread_id: str
    cwd: str
    model_provider: str | None
    source_kind: str
    originator: str | None
    text: str
    created_at: str
    updated_at: str
    record: ThreadRecord | None = None
    stored: StoredThread | None = None


def _iso(seconds: int) -> str:
    moment = datetime.fromtimestamp(seconds, UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.000Z"


def _page(ids: list[str], cursor: str | None, limit: int | None) -> tuple[list[str], str | None]:
    """One page of ``ids`` after ``cursor`` (an id of the list; opaque to clients)."""
    start = 0
    if cursor is not None:
        if cursor not in ids:
            raise invalid_cursor(cursor)
        start = ids.index(cursor) + 1
    end = len(ids) if not limit else min(len(ids), start + limit)
    page = ids[start:end]
    next_cursor = page[-1] if end < len(ids) and page else None
    return page, next_cursor


class ThreadListHandlers:
    """``thread/list`` and ``thread/loaded/list`` of one server."""

    def __init__(self, server: ServerServices) -> None:
        self.server = server

    def _rows(self, archived: bool, stored_threads: list[StoredThread]) -> list[_Row]:
        threads = self.server.threads
        rows: dict[str, _Row] = {}
        if not archived:
            for record in threads.listed():
                rows[record.id] = _Row(
                    thread_id=record.id,
                    cwd=record.settings.cwd,
                    model_provider=record.settings.model_provider,
                    source_kind=THREAD_SOURCE,
                    originator=record.originator,
                    text=(record.name or "") + "\n" + record.preview,
                    created_at=_iso(record.created_at),
                    updated_at=_iso(record.updated_at),
                    record=record,
                )
        for stored in stored_threads:
            if stored.archived != archived or stored.thread_id in rows:
                continue
            if threads.get(stored.thread_id) is not None:
                continue  # loaded but without a turn yet: not listed
            rows[stored.thread_id] = _Row(
                thread_id=stored.thread_id,
                cwd=stored.meta.cwd,
                # a rollout without one is the default provider's (shown and filtered so)
                model_provider=stored.meta.model_provider or threads.defaults.model_provider,
                source_kind=stored.source_kind,
                originator=stored.meta.originator,
                text=(stored.name or "") + "\n" + stored.preview,
                created_at=stored.created_at,
                updated_at=stored.updated_at,
                stored=stored,
            )
        return list(rows.values())

    async def _listed(self, row: _Row) -> tuple[Thread, dict[str, Any]]:
        """A listed row's ``Thread`` and read state."""
        if row.record is not None:
            return row.record.thread(listed=True), row.record.read_state()
        assert row.stored is not None
        threads = self.server.threads
        return await threads.stored_thread(row.stored), await threads.stored_read_state(row.stored)

    async def thread_list(
        self, ctx: RequestContext, params: ThreadListParams
    ) -> ThreadListResponse:
        stored = await self.server.threads.stored_threads()
        rows = self._rows(bool(params.archived), stored)
        if params.cwd is not None:
            wanted = {params.cwd} if isinstance(params.cwd, str) else set(params.cwd)
            rows = [row for row in rows if row.cwd in wanted]
        # 0.163.0: absent or null lists only its configured provider's threads, [] every
        # provider's; the bridge, which has no configuration of its own, lists every provider's
        # for both (README "Known differences")
        if params.model_providers:
            providers = set(params.model_providers)
            rows = [row for row in rows if row.model_provider in providers]
        kinds = set(params.source_kinds or ()) or _INTERACTIVE_SOURCES
        rows = [row for row in rows if row.source_kind in kinds]
        if params.excluded_thread_ids:
            excluded = set(params.excluded_thread_ids)
            rows = [row for row in rows if row.thread_id not in excluded]
        if params.originators:
            originators = set(params.originators)
            rows = [row for row in rows if row.originator in originators]
        if params.search_term:
            term = params.search_term.casefold()
            rows = [row for row in rows if term in row.text.casefold()]
        if params.section_id is not None:
            rows = []
        by_updated = params.sort_key in ("updated_at", "recency_at")
        try:
            page = page_threads(
                rows,
                lambda row: (row.updated_at if by_updated else row.created_at, row.thread_id),
                direction=params.sort_direction,
                cursor=params.cursor,
                limit=params.limit or THREAD_LIST_DEFAULT_LIMIT,
            )
        except InvalidCursor as exc:
            raise invalid_cursor(exc.cursor) from None
        listed = [await self._listed(row) for row in page.rows]
        return ThreadListResponse(
            data=[thread for thread, _ in listed],
            **list_extras({thread.id: read_state for thread, read_state in listed}),
            next_cursor=page.next_cursor,
            backwards_cursor=page.backwards_cursor,
        )

    def thread_loaded_list(
        self, ctx: RequestContext, params: ThreadLoadedListParams
    ) -> ThreadLoadedListResponse:
        page, next_cursor = _page(
            list(self.server.hub.loaded_thread_ids()), params.cursor, params.limit
        )
        return ThreadLoadedListResponse(data=page, next_cursor=next_cursor)
