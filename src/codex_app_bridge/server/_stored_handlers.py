"""Handlers over stored threads: ``thread/list`` across memory and ``CODEX_HOME``, reads and
resumes of threads that are not loaded, the history pages, names, archive, delete, metadata.

Rules (0.163.0, probed on the binary with scratch homes):

* ``thread/list`` shows the loaded threads that have a turn and the stored threads that are not
  loaded (``status: notLoaded``); archived ones only with ``archived: true``. Filters: ``cwd``,
  ``modelProviders``, ``sourceKinds`` (default: the interactive ``cli`` and ``vscode``),
  ``originators``, ``excludedThreadIds``, ``searchTerm`` (in the name or preview, case-folded);
  ``sectionId`` matches nothing (no sections here). Sorting and cursors: ``storage.page_threads``.
* ``thread/read`` of a stored thread that is not loaded answers it ``notLoaded``, with its turns
  when asked (the binary itself answers ``[]`` until it has resumed a rollout it did not write;
  the bridge reads the rollout); ``thread/resume`` loads it (listener, event log, writer on the
  same file) and subscribes the caller.
* ``thread/turns/list`` / ``thread/items/list``: see ``_pages``; unknown threads answer
  ``-32600 thread not loaded: <id>`` / ``-32601 thread/items/list is not supported yet``.
* ``thread/name/set``: appended to ``session_index.jsonl`` (stored threads), the loaded record
  renamed, ``thread/name/updated`` to every connection. ``thread/archive`` moves the files to
  ``archived_sessions/`` and unloads the thread (``thread/archived``); ``thread/unarchive`` moves
  them back and answers the thread (``thread/unarchived``); ``thread/delete`` removes them
  (``thread/deleted``). Unknown or unstored: ``-32600 no rollout found for thread id <id>``
  (``no archived rollout found ...`` for unarchive).
* ``thread/metadata/update {gitInfo}``: the fields given replace the thread's (``null`` clears
  one, an absent one stays); no ``gitInfo``, or one without a field, is ``-32600 thread metadata
  update must include at least one field`` / ``-32600 gitInfo must include at least one field``.
  Shown by later ``thread/read``, ``thread/list``, ``thread/resume``, also after a restart:
  0.163.0 keeps it in its state database, the bridge in ``GIT_INFO_FILE`` of the home (the
  binary does not read that file, nor the bridge the binary's database).

Boundary: request handling only; files are ``storage``'s, writers ``_stored``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Final, cast

import anyio
import anyio.to_thread

from codex_app_bridge._version import CODEX_PROTOCOL_VERSION
from codex_app_bridge.listener import read_state_of_history
from codex_app_bridge.mapping.thread_history import build_turns
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import (
    AskForApproval,
    GitInfo,
    NotLoadedThreadStatus,
    Thread,
    ThreadArchivedNotification,
    ThreadArchiveParams,
    ThreadArchiveResponse,
    ThreadDeletedNotification,
    ThreadDeleteParams,
    ThreadDeleteResponse,
    ThreadItemsListParams,
    ThreadItemsListResponse,
    ThreadListParams,
    ThreadListResponse,
    ThreadMetadataUpdateParams,
    ThreadMetadataUpdateResponse,
    ThreadNameUpdatedNotification,
    ThreadReadResponse,
    ThreadRevertedNotification,
    ThreadRevertParams,
    ThreadRevertResponse,
    ThreadSetNameParams,
    ThreadSetNameResponse,
    ThreadStatusChangedNotification,
    ThreadTurnsListParams,
    ThreadTurnsListResponse,
    ThreadUnarchivedNotification,
    ThreadUnarchiveParams,
    ThreadUnarchiveResponse,
    Turn,
    dump_json,
)
from codex_app_bridge.rpc import METHOD_NOT_FOUND, RequestContext, RpcError, invalid_request
from codex_app_bridge.server._errors import (
    invalid_cursor,
    no_rollout,
    thread_not_found,
    thread_not_loaded,
)
from codex_app_bridge.server._ids import parse_thread_id
from codex_app_bridge.server._pages import HistoryPages, positioned_events
from codex_app_bridge.server._runtime import HISTORY_EVENT_TYPES
from codex_app_bridge.server._stored import ThreadStorage, envelopes_of
from codex_app_bridge.server._thread_extras import (
    list_extras,
    read_extras,
    read_state_json,
    thread_extras,
)
from codex_app_bridge.server._threads import THREAD_SOURCE, ThreadRecord, ThreadSettings
from codex_app_bridge.storage import InvalidCursor, StorageError, StoredThread, page_threads

if TYPE_CHECKING:
    from codex_app_bridge.server._services import ServerServices

__all__ = ["StoredThreadMethods"]

THREAD_LIST_DEFAULT_LIMIT: Final = 25
_INTERACTIVE_SOURCES: Final = frozenset({"cli", "vscode"})
_PLAIN_APPROVAL_POLICIES: Final = frozenset({"untrusted", "on-request", "never"})
"""Approval policies a stored `turn_context` gives back to a resumed thread (not granular)."""


@dataclass(frozen=True)
class _Row:
    """One thread/list candidate, loaded or stored."""

    thread_id: str
    cwd: str
    model_provider: str | None
    source_kind: str
    originator: str | None
    text: str
    created_at: str
    updated_at: str
    thread: Callable[[], Thread]
    read_state: Callable[[], dict[str, Any]]


def _iso(seconds: int) -> str:
    moment = datetime.fromtimestamp(seconds, UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.000Z"


def _names_turn(msg: core.EventMsg, turn_id: str) -> bool:
    """Whether ``msg`` belongs to turn ``turn_id`` (lifecycle events and items name it)."""
    return getattr(msg, "turn_id", None) == turn_id


def _storage_error(exc: StorageError) -> RpcError:
    return RpcError(-32603, f"codex-app-bridge could not store the thread: {exc}")


class StoredThreadMethods:
    """Mixed into ``Handlers``: the methods that see stored threads."""

    server: ServerServices

    def new_record_for_storage(
        self, settings: ThreadSettings, *, thread_id: str, history: list[core.EventEnvelope]
    ) -> ThreadRecord:
        """A loaded record with this id and history (``Handlers._new_record``, not stored yet)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers

    @property
    def _storage(self) -> ThreadStorage | None:
        return self.server.storage

    def _find_stored(self, thread_id: str) -> StoredThread | None:
        storage = self._storage
        return None if storage is None else storage.catalog.find(thread_id)

    def stored_thread_object(self, stored: StoredThread, turns: list[Turn] | None = None) -> Thread:
        """The v2 ``Thread`` of a stored thread that is not loaded."""
        meta = stored.meta
        source: Any = meta.source if isinstance(meta.source, str) else THREAD_SOURCE
        return Thread(
            id=stored.thread_id,
            session_id=stored.thread_id,
            forked_from_id=stored.forked_from_id,
            parent_thread_id=None,
            preview=stored.preview,
            ephemeral=False,
            project_id=None,
            history_mode="paginated",
            model_provider=meta.model_provider or self.server.source.defaults.model_provider,
            model=stored.model or self.server.source.defaults.model,
            reasoning_effort=stored.reasoning_effort,
            created_at=stored.created_at_s,
            updated_at=stored.updated_at_s,
            recency_at=stored.updated_at_s,
            status=NotLoadedThreadStatus(),
            path=str(stored.path),
            cwd=meta.cwd,
            cli_version=meta.cli_version or CODEX_PROTOCOL_VERSION,
            originator=meta.originator,
            source=source,
            thread_source=None,
            agent_nickname=None,
            agent_role=None,
            git_info=self._stored_git_info(stored.thread_id),
            name=stored.name,
            turns=turns or [],
            **thread_extras(meta.cwd, loaded=False),
        )

    def _stored_git_info(self, thread_id: str) -> GitInfo | None:
        storage = self._storage
        info = None if storage is None else storage.catalog.git_infos().get(thread_id)
        return None if info is None else GitInfo.model_validate(info)

    def _stored_read_state(self, stored: StoredThread) -> dict[str, Any]:
        """The read state of a thread that is not loaded, rebuilt from its rollout."""
        storage = self._storage
        try:
            lines = [] if storage is None else storage.catalog.history(stored)
        except LookupError:
            lines = []
        history = read_state_of_history(stored.thread_id, envelopes_of(lines))
        return read_state_json(stored.thread_id, history)

    def load_stored(self, thread_id: str) -> ThreadRecord | None:
        """Load a stored, unarchived thread that is not loaded yet (``None`` if there is none)."""
        storage = self._storage
        stored = None if storage is None else storage.catalog.find(thread_id)
        if storage is None or stored is None or stored.archived:
            return None
        try:
            lines = storage.catalog.history(stored)
        except LookupError:
            return None
        defaults = self.server.source.defaults
        history = [e for e in envelopes_of(lines) if e.msg.type in HISTORY_EVENT_TYPES]
        settings = ThreadSettings(
            cwd=stored.meta.cwd,
            model=stored.model or defaults.model,
            model_provider=stored.meta.model_provider or defaults.model_provider,
            reasoning_effort=stored.reasoning_effort,
        )
        if stored.approval_policy in _PLAIN_APPROVAL_POLICIES:
            settings.approval_policy = cast("AskForApproval", stored.approval_policy)
        if stored.approvals_reviewer is not None:
            settings.approvals_reviewer = stored.approvals_reviewer
        record = self.new_record_for_storage(settings, thread_id=thread_id, history=history)
        record.originator = stored.meta.originator
        record.forked_from_id = stored.forked_from_id
        record.name = stored.name
        record.git_info = self._stored_git_info(thread_id)
        record.preview = stored.preview
        record.created_at = stored.created_at_s
        record.updated_at = stored.updated_at_s
        record.turns_started = sum(
            1 for e in history if e.msg.type in ("task_started", "turn_started")
        )
        record.listener.seed_read_state(read_state_of_history(thread_id, history))
        storage.attach(record, stored)
        return record

    def loaded_or_stored(self, raw_id: str, missing: Callable[[str], Exception]) -> ThreadRecord:
        """The loaded thread, else the stored one, loaded now (else ``missing``)."""
        thread_id = parse_thread_id(raw_id)
        record = self.server.store.get(thread_id) or self.load_stored(thread_id)
        if record is None:
            raise missing(thread_id)
        return record

    def _pages(self, raw_id: str, missing: Callable[[str], Exception]) -> tuple[HistoryPages, bool]:
        thread_id = parse_thread_id(raw_id)
        record = self.server.store.get(thread_id)
        if record is not None:
            running = record.active_turn_id is not None
            stored = None if running or record.path is None else self._find_stored(thread_id)
            storage = self._storage
            if stored is not None and storage is not None and str(stored.path) == record.path:
                # positions are the rollout's ordinals, as for a thread that is not loaded
                lines = storage.catalog.history(stored)
                return HistoryPages(thread_id, positioned_events(lines)), False
            return HistoryPages(thread_id, positioned_events(record.history)), running
        stored = self._find_stored(thread_id)
        storage = self._storage
        if stored is None or storage is None:
            raise missing(thread_id)
        return HistoryPages(thread_id, positioned_events(storage.catalog.history(stored))), False

    # ------------------------------------------------------------------ thread/list, read

    def _rows(self, archived: bool, stored_threads: list[StoredThread]) -> list[_Row]:
        rows: dict[str, _Row] = {}
        if not archived:
            for record in self.server.store.list_materialized():
                rows[record.id] = _Row(
                    thread_id=record.id,
                    cwd=record.settings.cwd,
                    model_provider=record.settings.model_provider,
                    source_kind=THREAD_SOURCE,
                    originator=record.originator,
                    text=(record.name or "") + "\n" + record.preview,
                    created_at=_iso(record.created_at),
                    updated_at=_iso(record.updated_at),
                    thread=partial(record.thread, listed=True),
                    read_state=record.read_state,
                )
        if stored_threads:
            for stored in stored_threads:
                if stored.archived != archived or stored.thread_id in rows:
                    continue
                if self.server.store.get(stored.thread_id) is not None:
                    continue  # loaded but without a turn yet: not listed
                rows[stored.thread_id] = _Row(
                    thread_id=stored.thread_id,
                    cwd=stored.meta.cwd,
                    # a rollout without one is the default provider's (shown and filtered so)
                    model_provider=stored.meta.model_provider
                    or self.server.source.defaults.model_provider,
                    source_kind=stored.source_kind,
                    originator=stored.meta.originator,
                    text=(stored.name or "") + "\n" + stored.preview,
                    created_at=stored.created_at,
                    updated_at=stored.updated_at,
                    thread=lambda stored=stored: self.stored_thread_object(stored),
                    read_state=partial(self._stored_read_state, stored),
                )
        return list(rows.values())

    async def thread_list(
        self, ctx: RequestContext, params: ThreadListParams
    ) -> ThreadListResponse:
        storage = self._storage
        # reading the rollouts (the first time, or after they changed) is blocking file I/O
        stored = [] if storage is None else await anyio.to_thread.run_sync(storage.catalog.threads)
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
        return ThreadListResponse(
            data=[row.thread() for row in page.rows],
            **list_extras({row.thread_id: row.read_state() for row in page.rows}),
            next_cursor=page.next_cursor,
            backwards_cursor=page.backwards_cursor,
        )

    def read_stored(self, thread_id: str, *, include_turns: bool) -> ThreadReadResponse:
        """``thread/read`` of a thread that is not loaded: from its rollout, or ``thread not
        loaded`` when there is none."""
        stored = self._find_stored(thread_id)
        storage = self._storage
        if stored is None or storage is None:
            raise thread_not_loaded(thread_id)
        turns = None
        if include_turns:
            turns = build_turns(storage.catalog.history(stored), interrupt_stale=True)
        return ThreadReadResponse(
            thread=self.stored_thread_object(stored, turns),
            **read_extras(self._stored_read_state(stored)),
        )

    # ------------------------------------------------------------------ history pages

    async def thread_turns_list(
        self, ctx: RequestContext, params: ThreadTurnsListParams
    ) -> ThreadTurnsListResponse:
        pages, running = self._pages(params.thread_id, thread_not_loaded)
        page = pages.turns(
            items_view=params.items_view,
            direction=params.sort_direction,
            cursor=params.cursor,
            limit=params.limit,
            running=running,
        )
        return ThreadTurnsListResponse(
            data=page.rows, next_cursor=page.next_cursor, backwards_cursor=page.backwards_cursor
        )

    async def thread_items_list(
        self, ctx: RequestContext, params: ThreadItemsListParams
    ) -> ThreadItemsListResponse:
        def unsupported(_thread_id: str) -> RpcError:
            return RpcError(METHOD_NOT_FOUND, "thread/items/list is not supported yet")

        pages, _ = self._pages(params.thread_id, unsupported)
        page = pages.items(
            turn_id=params.turn_id,
            direction=params.sort_direction,
            cursor=params.cursor,
            limit=params.limit,
        )
        return ThreadItemsListResponse(
            data=page.rows, next_cursor=page.next_cursor, backwards_cursor=page.backwards_cursor
        )

    def backwards_cursors(self, thread_id: str) -> tuple[str | None, str | None]:
        """The ``turnsBackwardsCursor`` and ``itemsBackwardsCursor`` of a thread/resume or
        thread/revert answer: from the first turn, and from the last item, backwards."""
        pages, _ = self._pages(thread_id, no_rollout)
        turns = pages.turns(items_view=None, direction=None, cursor=None, limit=1)
        items = pages.items(turn_id=None, direction="desc", cursor=None, limit=1)
        return turns.backwards_cursor, items.backwards_cursor

    # ------------------------------------------------------------------ revert

    async def thread_revert(
        self, ctx: RequestContext, params: ThreadRevertParams
    ) -> ThreadRevertResponse:
        record = self.loaded_or_stored(params.thread_id, thread_not_found)
        if not record.materialized:
            raise no_rollout(record.id)
        before = params.before_turn_id
        if record.active_turn_id is not None:
            raise invalid_request(f"cannot revert thread {record.id} while a turn is running")
        history = record.history
        cut = next((i for i, e in enumerate(history) if _names_turn(e.msg, before)), None)
        if cut is None or record.runtime is None:
            raise invalid_request(f"turn not found: {before}")
        storage = self._storage
        stored = None if storage is None else self._find_stored(record.id)
        if storage is not None and stored is not None and str(stored.path) == record.path:
            lines = storage.catalog.history(stored)
            ordinal = next(
                (
                    position
                    for position, msg in positioned_events(lines)
                    if _names_turn(msg, before)
                ),
                None,
            )
            if ordinal is not None:
                try:
                    storage.revert(record, ordinal)
                except StorageError as exc:
                    raise _storage_error(exc) from None
        record.runtime.history[:] = history[:cut]
        # turns_started still counts every turn/start (a source's turn index): the n-th
        # turn/start after a revert plays recorded turn n, and a fork continues from there
        record.touch()
        # the real server unloads and reloads the thread to cut it: both statuses, to every
        # connection, before the answer
        kept = {e.id for e in record.runtime.history}
        unloaded = ThreadStatusChangedNotification(
            thread_id=record.id, status=NotLoadedThreadStatus()
        )
        await self.server.hub.broadcast("thread/status/changed", unloaded)
        record.listener.revert_read_state(kept)  # a dropped unread turn is forgotten
        reloaded = ThreadStatusChangedNotification(thread_id=record.id, status=record.status())
        await self.server.hub.broadcast("thread/status/changed", reloaded)
        turns_cursor, items_cursor = self.backwards_cursors(record.id)
        notification = ThreadRevertedNotification(thread_id=record.id)
        ctx.after_response(
            lambda: self.server.hub.broadcast("thread/reverted", dump_json(notification))
        )
        return ThreadRevertResponse(
            thread=record.thread(),
            turns_backwards_cursor=turns_cursor,
            items_backwards_cursor=items_cursor,
        )

    # ------------------------------------------------------------------ name, archive, delete

    async def thread_name_set(
        self, ctx: RequestContext, params: ThreadSetNameParams
    ) -> ThreadSetNameResponse:
        thread_id = parse_thread_id(params.thread_id)
        record = self.server.store.get(thread_id)
        stored = self._find_stored(thread_id)
        if stored is not None and stored.archived:
            raise no_rollout(thread_id)
        if record is None and stored is None:
            raise no_rollout(thread_id)
        storage = self._storage
        if storage is not None and (stored is not None or (record is not None and record.path)):
            try:
                storage.catalog.set_name(thread_id, params.name)
            except StorageError as exc:
                raise _storage_error(exc) from None
        if record is not None:
            record.name = params.name
        notification = ThreadNameUpdatedNotification(thread_id=thread_id, thread_name=params.name)
        ctx.after_response(
            lambda: self.server.hub.broadcast("thread/name/updated", dump_json(notification))
        )
        return ThreadSetNameResponse()

    def _unload(self, thread_id: str) -> None:
        storage = self._storage
        if storage is not None:
            storage.forget(thread_id)
        record = self.server.store.remove(thread_id)
        if record is not None and record.runtime is not None:
            record.runtime.stop()
        self.server.hub.remove_thread(thread_id)

    async def thread_archive(
        self, ctx: RequestContext, params: ThreadArchiveParams
    ) -> ThreadArchiveResponse:
        thread_id = parse_thread_id(params.thread_id)
        stored = self._find_stored(thread_id)
        storage = self._storage
        if stored is None or stored.archived or storage is None:
            raise no_rollout(thread_id)
        record = self.server.store.get(thread_id)
        if record is not None and record.active_turn_id is not None:
            raise invalid_request(f"cannot archive thread {thread_id} while a turn is running")
        try:
            storage.catalog.archive(stored)
        except StorageError as exc:
            raise _storage_error(exc) from None
        self._unload(thread_id)  # once the files are moved: a failed move changes nothing
        notification = ThreadArchivedNotification(thread_id=thread_id)
        ctx.after_response(
            lambda: self.server.hub.broadcast("thread/archived", dump_json(notification))
        )
        return ThreadArchiveResponse()

    async def thread_unarchive(
        self, ctx: RequestContext, params: ThreadUnarchiveParams
    ) -> ThreadUnarchiveResponse:
        thread_id = parse_thread_id(params.thread_id)
        stored = self._find_stored(thread_id)
        storage = self._storage
        if stored is None or not stored.archived or storage is None:
            raise invalid_request(f"no archived rollout found for thread id {thread_id}")
        try:
            storage.catalog.unarchive(stored)
        except StorageError as exc:
            raise _storage_error(exc) from None
        back = storage.catalog.find(thread_id)
        assert back is not None
        notification = ThreadUnarchivedNotification(thread_id=thread_id)
        ctx.after_response(
            lambda: self.server.hub.broadcast("thread/unarchived", dump_json(notification))
        )
        return ThreadUnarchiveResponse(thread=self.stored_thread_object(back))

    async def thread_delete(
        self, ctx: RequestContext, params: ThreadDeleteParams
    ) -> ThreadDeleteResponse:
        thread_id = parse_thread_id(params.thread_id)
        stored = self._find_stored(thread_id)
        storage = self._storage
        if stored is None or storage is None:
            raise no_rollout(thread_id)
        try:
            storage.catalog.delete(stored)
        except StorageError as exc:
            raise _storage_error(exc) from None
        self._unload(thread_id)
        notification = ThreadDeletedNotification(thread_id=thread_id)
        ctx.after_response(
            lambda: self.server.hub.broadcast("thread/deleted", dump_json(notification))
        )
        return ThreadDeleteResponse()

    async def thread_metadata_update(
        self, ctx: RequestContext, params: ThreadMetadataUpdateParams
    ) -> ThreadMetadataUpdateResponse:
        update = params.git_info
        if update is None:
            raise invalid_request("thread metadata update must include at least one field")
        changes = {name: getattr(update, name) for name in update.model_fields_set}
        if not changes:
            raise invalid_request("gitInfo must include at least one field")
        thread_id = parse_thread_id(params.thread_id)
        record = self.server.store.get(thread_id)
        stored = None
        if record is None:
            stored = self._find_stored(thread_id)
            if stored is None or stored.archived:
                raise no_rollout(thread_id)
            current = self._stored_git_info(thread_id)
        else:
            current = record.git_info
        merged = (current or GitInfo(sha=None, branch=None, origin_url=None)).model_copy(
            update=changes
        )
        storage = self._storage
        if storage is not None and (stored is not None or (record is not None and record.path)):
            try:
                fields = {
                    "sha": merged.sha,
                    "branch": merged.branch,
                    "originUrl": merged.origin_url,
                }
                storage.catalog.set_git_info(thread_id, fields)
            except StorageError as exc:
                raise _storage_error(exc) from None
        if record is not None:
            record.git_info = merged
            return ThreadMetadataUpdateResponse(thread=record.thread())
        assert stored is not None
        return ThreadMetadataUpdateResponse(thread=self.stored_thread_object(stored))
