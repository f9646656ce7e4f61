"""Thread administration: ``thread/name/set``, ``thread/metadata/update``, ``thread/archive``,
``thread/unarchive``, ``thread/delete``, ``thread/revert``.

Rules (0.163.0, probed on the binary with scratch homes):

* ``thread/name/set``: appended to ``session_index.jsonl`` (stored threads), the loaded record
  renamed, ``thread/name/updated`` to every connection; in a cluster, the name shared with
  every server (``SharedThreads.renamed``).
* ``thread/archive`` moves the files to ``archived_sessions/`` and unloads the thread
  (``thread/archived``); not while a turn runs. ``thread/unarchive`` moves them back and answers
  the thread (``thread/unarchived``); ``thread/delete`` removes them (``thread/deleted``).
  Unknown or unstored: ``-32600 no rollout found for thread id <id>`` (``no archived rollout
  found ...`` for unarchive). A file that cannot be moved or removed is ``-32603`` and leaves
  the thread as it was (``ThreadRegistry.archive``). In a cluster the archive state is shared
  (``SharedThreads.set_archived``): a thread with no rollout here is archived and unarchived
  from any server, stays loaded where it is loaded (a difference: the real server unloads it),
  and is not resumed while archived.
* ``thread/metadata/update {gitInfo}``: the fields given replace the thread's (``null`` clears
  one, an absent one stays); no ``gitInfo``, or one without a field, is ``-32600 thread metadata
  update must include at least one field`` / ``-32600 gitInfo must include at least one field``.
  Shown by later ``thread/read``, ``thread/list``, ``thread/resume``, also after a restart:
  0.163.0 keeps it in its state database, the bridge in ``GIT_INFO_FILE`` of the home (the
  binary does not read that file, nor the bridge the binary's database).
* ``thread/revert {beforeTurnId}`` (a stored thread is loaded for it): the turns from that one on
  are cut, in memory and in the rollout (a new segment, ``_stored``); not while a turn runs. The
  real server unloads and reloads the thread to cut it: ``thread/status/changed`` ``notLoaded``
  then the thread's status go to every connection before the answer, ``thread/reverted`` after.

Boundary: what a request means and answers; files and a thread's life are the registry's.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from codex_app_bridge.protocol._base import WireModel
from codex_app_bridge.protocol.v2 import (
    GitInfo,
    NotLoadedThreadStatus,
    ThreadArchivedNotification,
    ThreadArchiveParams,
    ThreadArchiveResponse,
    ThreadDeletedNotification,
    ThreadDeleteParams,
    ThreadDeleteResponse,
    ThreadMetadataUpdateParams,
    ThreadMetadataUpdateResponse,
    ThreadNameUpdatedNotification,
    ThreadRevertedNotification,
    ThreadRevertParams,
    ThreadRevertResponse,
    ThreadSetNameParams,
    ThreadSetNameResponse,
    ThreadStatusChangedNotification,
    ThreadUnarchivedNotification,
    ThreadUnarchiveParams,
    ThreadUnarchiveResponse,
    dump_json,
)
from codex_app_bridge.rpc import RequestContext, RpcError, invalid_request
from codex_app_bridge.server._errors import no_rollout, thread_not_found
from codex_app_bridge.server._handlers_threads import materialized_thread
from codex_app_bridge.server._ids import parse_thread_id
from codex_app_bridge.server._pages import backwards_cursors
from codex_app_bridge.server._shared import shared_thread_object
from codex_app_bridge.storage import StorageError

if TYPE_CHECKING:
    from codex_app_bridge.server._services import ServerServices

__all__ = ["ThreadAdminHandlers"]


@contextmanager
def _storing() -> Generator[None]:
    """A ``StorageError`` inside is the request's ``-32603`` (nothing was changed)."""
    try:
        yield
    except StorageError as exc:
        raise RpcError(-32603, f"codex-app-bridge could not store the thread: {exc}") from None


class ThreadAdminHandlers:
    """Names, metadata, archive, unarchive, delete and revert of one server's threads."""

    def __init__(self, server: ServerServices) -> None:
        self.server = server

    def _after_response_broadcast(
        self, ctx: RequestContext, method: str, params: WireModel
    ) -> None:
        hub = self.server.hub
        data = dump_json(params)
        ctx.after_response(lambda: hub.broadcast(method, data))

    async def thread_name_set(
        self, ctx: RequestContext, params: ThreadSetNameParams
    ) -> ThreadSetNameResponse:
        threads = self.server.threads
        thread_id = parse_thread_id(params.thread_id)
        record = threads.get(thread_id)
        stored = await threads.find_stored(thread_id)
        if stored is not None and stored.archived:
            raise no_rollout(thread_id)
        shared = threads.shared
        if record is None and stored is None:
            # a thread another server of the cluster holds: its name is shared
            if shared is None or not await shared.renamed(thread_id, params.name):
                raise no_rollout(thread_id)
        elif shared is not None and record is not None and not record.ephemeral:
            await shared.renamed(thread_id, params.name)
        if stored is not None or (record is not None and record.path):
            with _storing():
                threads.write_name(thread_id, params.name)
        if record is not None:
            record.name = params.name
        notification = ThreadNameUpdatedNotification(thread_id=thread_id, thread_name=params.name)
        self._after_response_broadcast(ctx, "thread/name/updated", notification)
        return ThreadSetNameResponse()

    async def thread_metadata_update(
        self, ctx: RequestContext, params: ThreadMetadataUpdateParams
    ) -> ThreadMetadataUpdateResponse:
        update = params.git_info
        if update is None:
            raise invalid_request("thread metadata update must include at least one field")
        changes = {name: getattr(update, name) for name in update.model_fields_set}
        if not changes:
            raise invalid_request("gitInfo must include at least one field")
        threads = self.server.threads
        thread_id = parse_thread_id(params.thread_id)
        record = threads.get(thread_id)
        stored = None
        if record is None:
            stored = await threads.find_stored(thread_id)
            if stored is None or stored.archived:
                raise no_rollout(thread_id)
            current = None if stored.git_info is None else GitInfo.model_validate(stored.git_info)
        else:
            current = record.git_info
        merged = (current or GitInfo(sha=None, branch=None, origin_url=None)).model_copy(
            update=changes
        )
        fields = {"sha": merged.sha, "branch": merged.branch, "originUrl": merged.origin_url}
        if stored is not None or (record is not None and record.path):
            with _storing():
                threads.write_git_info(thread_id, fields)
        if record is not None:
            record.git_info = merged
            return ThreadMetadataUpdateResponse(thread=record.thread())
        assert stored is not None
        return ThreadMetadataUpdateResponse(
            thread=threads.stored_thread(replace(stored, git_info=fields))
        )

    async def thread_archive(
        self, ctx: RequestContext, params: ThreadArchiveParams
    ) -> ThreadArchiveResponse:
        threads = self.server.threads
        thread_id = parse_thread_id(params.thread_id)
        stored = await threads.find_stored(thread_id)
        shared = threads.shared
        if (stored is None and shared is None) or (stored is not None and stored.archived):
            raise no_rollout(thread_id)
        record = threads.get(thread_id)
        if record is not None and record.active_turn_id is not None:
            raise invalid_request(f"cannot archive thread {thread_id} while a turn is running")
        if stored is not None:
            with _storing():
                threads.archive(stored)
        if shared is not None and not await shared.set_archived(thread_id, True) and not stored:
            raise no_rollout(thread_id)  # not a thread of the cluster either
        notification = ThreadArchivedNotification(thread_id=thread_id)
        self._after_response_broadcast(ctx, "thread/archived", notification)
        return ThreadArchiveResponse()

    async def thread_unarchive(
        self, ctx: RequestContext, params: ThreadUnarchiveParams
    ) -> ThreadUnarchiveResponse:
        threads = self.server.threads
        thread_id = parse_thread_id(params.thread_id)
        stored = await threads.find_stored(thread_id)
        shared = threads.shared
        if stored is None and shared is not None:
            # a thread of the cluster with no rollout here: its archive state is shared
            if not await shared.set_archived(thread_id, False):
                raise invalid_request(f"no archived rollout found for thread id {thread_id}")
            record = threads.get(thread_id)
            found = None if record is not None else await shared.read(thread_id, history=False)
            if record is not None:
                thread = record.thread()
            elif found is not None:
                thread = shared_thread_object(found)
            else:  # removed meanwhile
                raise invalid_request(f"no archived rollout found for thread id {thread_id}")
        else:
            if stored is None or not stored.archived:
                raise invalid_request(f"no archived rollout found for thread id {thread_id}")
            with _storing():
                back = await threads.unarchive(stored)
            if shared is not None:
                await shared.set_archived(thread_id, False)
            thread = threads.stored_thread(back)
        notification = ThreadUnarchivedNotification(thread_id=thread_id)
        self._after_response_broadcast(ctx, "thread/unarchived", notification)
        return ThreadUnarchiveResponse(thread=thread)

    async def thread_delete(
        self, ctx: RequestContext, params: ThreadDeleteParams
    ) -> ThreadDeleteResponse:
        threads = self.server.threads
        thread_id = parse_thread_id(params.thread_id)
        stored = await threads.find_stored(thread_id)
        if stored is None:
            raise no_rollout(thread_id)
        with _storing():
            threads.delete(stored)
        notification = ThreadDeletedNotification(thread_id=thread_id)
        self._after_response_broadcast(ctx, "thread/deleted", notification)
        return ThreadDeleteResponse()

    async def thread_revert(
        self, ctx: RequestContext, params: ThreadRevertParams
    ) -> ThreadRevertResponse:
        threads = self.server.threads
        hub = self.server.hub
        record = await materialized_thread(threads, params.thread_id, thread_not_found)
        before = params.before_turn_id
        if record.active_turn_id is not None:
            raise invalid_request(f"cannot revert thread {record.id} while a turn is running")
        with _storing():
            kept = await threads.revert(record, before)
        if kept is None:
            raise invalid_request(f"turn not found: {before}")
        # the real server unloads and reloads the thread to cut it: both statuses, to every
        # connection, before the answer
        unloaded = ThreadStatusChangedNotification(
            thread_id=record.id, status=NotLoadedThreadStatus()
        )
        await hub.broadcast("thread/status/changed", unloaded)
        record.listener.revert_read_state(kept)  # a dropped unread turn is forgotten
        reloaded = ThreadStatusChangedNotification(thread_id=record.id, status=record.status())
        await hub.broadcast("thread/status/changed", reloaded)
        pages = await threads.history_pages(record.id)
        assert pages is not None  # a known thread has a history
        turns_cursor, items_cursor = backwards_cursors(pages)
        self._after_response_broadcast(
            ctx, "thread/reverted", ThreadRevertedNotification(thread_id=record.id)
        )
        return ThreadRevertResponse(
            thread=record.thread(),
            turns_backwards_cursor=turns_cursor,
            items_backwards_cursor=items_cursor,
        )
