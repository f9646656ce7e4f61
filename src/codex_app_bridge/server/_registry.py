"""``ThreadRegistry``: the one owner of a thread's life in this server.

A thread is known to the server in one of three states, and the registry alone moves it from one
to another:

* **loaded**: a ``ThreadRecord`` whose listener is in the hub and whose ``ThreadRuntime`` runs in
  the server's task group, feeding the thread's rollout writer when threads are stored;
* **unloaded**: an idle unload (``_idle``) stopped its runtime and removed its listener; the record
  stays, with its history log, status ``notLoaded``, until ``thread/resume`` reloads it;
* **stored**: only its rollout under ``CODEX_HOME`` (written by an earlier server, or archived and
  back); loading it reads the rollout once.

Life (each a method):

* ``create``: a new thread (``thread/start``; ``thread/fork``, whose history is written at once);
* ``get`` / ``loaded``: a thread this process knows / one that is loaded (``turn/*``);
* ``find_or_load``: a known thread, else the stored one, loaded now (``thread/resume``, ``fork``,
  ``revert``); ``reload``: an unloaded thread loaded again over its kept history;
* ``unload``: an idle thread unloaded, told to every connection (``notLoaded``, ``thread/closed``);
* ``archive`` / ``delete``: the files first, then the thread is forgotten (its runtime stopped,
  its listener and writer gone), so a move that fails changes nothing; ``unarchive``;
* ``revert``: the history cut before a turn, in the rollout (a new segment) and in memory.

It is also the one place that opens a thread's session (``_open_session``: the ``SessionConfig``
that tells the source about the thread) and the one place a thread's stored history is read
(``stored_history``, ``history_pages``, loading, reverting). What reads files is ``async``, so
that those reads can leave the event loop without changing a caller; names and git info are
written through it too (``write_name``, ``write_git_info``).

Boundary: no JSON-RPC (the handlers decide what a request means and answers); files are
``storage``'s, the writers ``_stored``'s, the running turn the runtime's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import anyio
import anyio.to_thread

from codex_app_bridge.listener import read_state_of_history
from codex_app_bridge.projection import model_history_json, model_history_of_events
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import AskForApproval, GitInfo, SandboxMode, Thread, Turn
from codex_app_bridge.server._history_log import HistoryLog
from codex_app_bridge.server._ids import new_uuid7
from codex_app_bridge.server._pages import HistoryPages, positioned_events
from codex_app_bridge.server._runtime import HISTORY_EVENT_TYPES, ThreadRuntime
from codex_app_bridge.server._stored import byte_offset_of, envelopes_of
from codex_app_bridge.server._stored_list import stored_read_state, stored_thread_model
from codex_app_bridge.server._threads import ThreadRecord, ThreadSettings, sandbox_policy
from codex_app_bridge.sources import TURN_START_TYPES, SessionConfig, open_session

if TYPE_CHECKING:
    from codex_app_bridge.listener import ListenerHub
    from codex_app_bridge.rpc import ServerRequests
    from codex_app_bridge.server._shared import SharedThread, SharedThreads
    from codex_app_bridge.server._stored import ThreadStorage
    from codex_app_bridge.sources import (
        CoreSession,
        EventSource,
        SourceDefaults,
        ThreadGoals,
        TurnSource,
    )
    from codex_app_bridge.storage import StoredThread, ThreadCatalog

__all__ = ["ThreadRegistry"]

logger = logging.getLogger(__name__)

_PLAIN_APPROVAL_POLICIES: Final = frozenset({"untrusted", "on-request", "never"})
"""Approval policies a stored ``turn_context`` gives back to a resumed thread (not granular)."""


def _names_turn(msg: core.EventMsg, turn_id: str) -> bool:
    """Whether ``msg`` belongs to turn ``turn_id`` (lifecycle events and items name it)."""
    return getattr(msg, "turn_id", None) == turn_id


def _last_token_total(history: list[core.EventEnvelope]) -> core.TokenUsage | None:
    """The ``total_token_usage`` of the history's last ``token_count`` that has one."""
    for envelope in reversed(history):
        msg = envelope.msg
        if isinstance(msg, core.TokenCountEvent) and msg.info is not None:
            return msg.info.total_token_usage
    return None


def _stored_settings(stored: StoredThread, defaults: SourceDefaults) -> ThreadSettings:
    """The settings a stored thread is loaded with (its last turn's, as its rollout says)."""
    settings = ThreadSettings(
        cwd=stored.cwd,
        model=stored.model or defaults.model,
        model_provider=stored.model_provider or defaults.model_provider,
        reasoning_effort=stored.reasoning_effort,
    )
    if stored.approval_policy in _PLAIN_APPROVAL_POLICIES:
        settings.approval_policy = cast("AskForApproval", stored.approval_policy)
    if stored.approvals_reviewer is not None:
        settings.approvals_reviewer = stored.approvals_reviewer
    if stored.sandbox_mode is not None:
        settings.sandbox = sandbox_policy(cast("SandboxMode", stored.sandbox_mode), stored.cwd)
    return settings


class ThreadRegistry:
    """Every thread of this server, and the only code that loads or unloads one (see the
    module docstring)."""

    def __init__(
        self,
        hub: ListenerHub,
        source: EventSource | TurnSource,
        storage: ThreadStorage | None,
        *,
        server_requests: ServerRequests,
        run: Callable[[ThreadRuntime], None],
        pending_interrupts: Callable[[str], int],
        interrupt_grace: Callable[[], float],
        user_agent: Callable[[], str | None] = lambda: None,
        shared: SharedThreads | None = None,
        goals: ThreadGoals | None = None,
        turn_ended: Callable[[ThreadRecord, core.EventEnvelope], None] | None = None,
    ) -> None:
        """``run`` starts a runtime in the server's task group; ``pending_interrupts(thread_id)``
        counts the ``turn/interrupt`` requests received and not handled yet;
        ``interrupt_grace()`` is read when a runtime starts; ``goals`` go to every session
        (``SessionConfig.goals``); ``turn_ended(record, terminal)`` is told of every turn's end
        (goal-continuation turns, ``_goal_turns``)."""
        self.hub = hub
        self.source = source
        self.storage = storage
        """Stored threads under ``CODEX_HOME``; ``None``: threads live in memory only."""
        self._server_requests = server_requests
        self._run = run
        self._pending_interrupts = pending_interrupts
        self._interrupt_grace = interrupt_grace
        self._user_agent = user_agent
        self.shared = shared
        """Threads shared with other servers (``_shared``; ``None``: this server's alone)."""
        self.goals = goals
        self._turn_ended = turn_ended
        self._records: dict[str, ThreadRecord] = {}
        """Canonical id -> record, in creation order: loaded and unloaded threads."""

    @property
    def defaults(self) -> SourceDefaults:
        """What a thread runs with when nothing names a model or provider."""
        return self.source.defaults

    # ------------------------------------------------------------------ known threads

    def __iter__(self) -> Iterator[ThreadRecord]:
        return iter(list(self._records.values()))

    def __len__(self) -> int:
        return len(self._records)

    def get(self, thread_id: str) -> ThreadRecord | None:
        """A thread this process knows (loaded or unloaded), by canonical id."""
        return self._records.get(thread_id)

    def loaded(self, thread_id: str) -> ThreadRecord | None:
        """A loaded thread (an unloaded one is not, as for ``turn/*`` in the real server)."""
        record = self._records.get(thread_id)
        return record if record is not None and record.loaded else None

    def known_ids(self) -> frozenset[str]:
        """The threads this process knows (``thread/list`` shows them from memory, not from
        their files)."""
        return frozenset(self._records)

    def listed(self) -> list[ThreadRecord]:
        """Threads ``thread/list`` may show from memory: materialized and not ephemeral."""
        return [r for r in self._records.values() if r.materialized and not r.ephemeral]

    # ------------------------------------------------------------------ life

    def create(
        self,
        settings: ThreadSettings,
        *,
        originator: str | None,
        ephemeral: bool = False,
        forked_from_id: str | None = None,
        thread_source: str | None = None,
        history: list[core.EventEnvelope] | None = None,
        turns_started: int = 0,
        raw_events: bool = False,
    ) -> ThreadRecord:
        """A new loaded thread; with ``history`` (a fork's), stored with it at once."""
        thread_id = new_uuid7()
        record = ThreadRecord(
            id=thread_id,
            settings=settings,
            listener=self.hub.create_thread(thread_id),
            originator=originator,
            ephemeral=ephemeral,
            forked_from_id=forked_from_id,
            thread_source=thread_source,
            turns_started=turns_started,
            raw_events=raw_events,
        )
        if forked_from_id is not None:
            record.history_initialization = "warm_fork"
        self._start(record, history)
        if self.storage is not None:
            self.storage.attach(record)
            if history:
                self.storage.write_all(record)
        return record

    async def find_or_load(self, thread_id: str) -> ThreadRecord | None:
        """A known thread (loaded or not), else the stored, unarchived one, else one another
        server shares (``shared``), loaded now."""
        return (
            self._records.get(thread_id)
            or await self._load_stored(thread_id)
            or await self._load_shared(thread_id)
        )

    async def _load_shared(self, thread_id: str) -> ThreadRecord | None:
        if self.shared is None:
            return None
        found: SharedThread | None = await self.shared.find(thread_id)
        if found is None or thread_id in self._records:  # another request loaded it meanwhile
            return self._records.get(thread_id)
        history = found.history
        record = ThreadRecord(
            id=thread_id,
            settings=found.settings,
            listener=self.hub.create_thread(thread_id),
            originator=found.originator,
            forked_from_id=found.forked_from_id,
            name=found.name,
            preview=found.preview,
            created_at=found.created_at,
            updated_at=found.updated_at,
            turns_started=sum(1 for e in history if e.msg.type in TURN_START_TYPES),
            history_initialization="cold_resume",
        )
        record.listener.seed_read_state(read_state_of_history(thread_id, history))
        self._start(record, history)
        return record

    async def _load_stored(self, thread_id: str) -> ThreadRecord | None:
        stored = await self.find_stored(thread_id)
        if stored is None or stored.archived or self.storage is None:
            return None
        lines = await self.stored_history(stored)
        if lines is None:
            return None
        history = [e for e in envelopes_of(lines) if e.msg.type in HISTORY_EVENT_TYPES]
        git_info = None if stored.git_info is None else GitInfo.model_validate(stored.git_info)
        record = ThreadRecord(
            id=thread_id,
            settings=_stored_settings(stored, self.defaults),
            listener=self.hub.create_thread(thread_id),
            originator=stored.originator,
            forked_from_id=stored.forked_from_id,
            name=stored.name,
            git_info=git_info,
            preview=stored.preview,
            created_at=stored.created_at_s,
            updated_at=stored.updated_at_s,
            turns_started=sum(1 for e in history if e.msg.type in TURN_START_TYPES),
            history_initialization="cold_resume",
        )
        record.listener.seed_read_state(read_state_of_history(thread_id, history))
        self._start(record, history)
        self.storage.attach(record, stored)  # appends to the same rollout
        return record

    def reload(self, record: ThreadRecord) -> None:
        """Load an unloaded thread again: a new listener and runtime over its kept history."""
        if record.loaded:
            return
        history = None if record.runtime is None else record.runtime.log
        record.listener = self.hub.create_thread(record.id)
        record.loaded = True
        record.history_initialization = "cold_resume"
        self._start(record, history)

    async def unload(self, record: ThreadRecord) -> None:
        """Unload a thread (idle) and tell every initialized connection: ``notLoaded``, then
        ``thread/closed``. The record stays, with its history, for a later resume."""
        if not record.loaded:
            return
        record.loaded = False
        self.hub.remove_thread(record.id)
        if record.runtime is not None:
            record.runtime.stop()
        if self.storage is not None and not record.ephemeral and self.storage.detach(record):
            # Its rollout holds everything: the record, its history and its runtime go, so
            # memory and descriptors stay bounded by what is loaded. A later read or resume
            # finds it on disk, as after a restart.
            del self._records[record.id]
            if self.goals is not None:
                self.goals.unload(record.id)
        logger.info("thread %s unloaded (idle)", record.id)
        await self.hub.broadcast(
            "thread/status/changed", {"threadId": record.id, "status": {"type": "notLoaded"}}
        )
        await self.hub.broadcast("thread/closed", {"threadId": record.id})

    def archive(self, stored: StoredThread) -> None:
        """Move a stored thread's files to the archive, then forget it (``StorageError``: the
        files could not all be moved, and nothing changed)."""
        self._catalog().archive(stored)
        self._forget(stored.thread_id)

    def delete(self, stored: StoredThread) -> None:
        """Remove a stored thread's files, then forget it (``StorageError`` if one stays)."""
        self._catalog().delete(stored)
        self._forget(stored.thread_id)

    async def unarchive(self, stored: StoredThread) -> StoredThread:
        """Move an archived thread's files back; the thread as it is stored now."""
        self._catalog().unarchive(stored)
        back = await self.find_stored(stored.thread_id)
        assert back is not None
        return back

    def _forget(self, thread_id: str) -> None:
        if self.storage is not None:
            self.storage.forget(thread_id)
        record = self._records.pop(thread_id, None)
        if record is not None and record.runtime is not None:
            record.runtime.stop()
        self.hub.remove_thread(thread_id)

    async def revert(self, record: ThreadRecord, before_turn_id: str) -> set[str] | None:
        """Cut the thread's history before turn ``before_turn_id``, in its rollout (a new
        segment; ``StorageError`` changes nothing) and in memory; the ids of the events kept
        (``None``: the history names no such turn)."""
        runtime = record.runtime
        history = record.history
        cut = next((i for i, e in enumerate(history) if _names_turn(e.msg, before_turn_id)), None)
        if cut is None or runtime is None:
            return None
        lines = await self._current_rollout(record)
        if lines is not None and self.storage is not None:
            ordinal = next(
                (p for p, msg in positioned_events(lines) if _names_turn(msg, before_turn_id)),
                None,
            )
            if ordinal is not None:
                path = Path(record.path or "")
                try:
                    offset = await anyio.to_thread.run_sync(byte_offset_of, path, ordinal)
                except OSError as exc:
                    logger.warning("thread %s: %s", record.id, exc)
                else:
                    self.storage.revert(record, ordinal, offset)
        runtime.truncate_history(cut)
        record.history_initialization = "cold_resume"  # the real server reloads it
        # turns_started still counts every turn/start (a source's turn index): the n-th
        # turn/start after a revert plays recorded turn n, and a fork continues from there
        record.touch()
        return {e.id for e in runtime.history}

    # ------------------------------------------------------------------ runtimes and sessions

    def _start(
        self, record: ThreadRecord, history: list[core.EventEnvelope] | HistoryLog | None
    ) -> None:
        """Give a loaded record its runtime, feeding its writer, and run it."""
        record.runtime = ThreadRuntime(
            record.id,
            record.listener,
            partial(self._open_session, record),
            history=history,
            on_turn_end=partial(self._on_turn_end, record),
            interrupt_grace=self._interrupt_grace(),
            server_requests=self._server_requests,
            pending_interrupts=partial(self._pending_interrupts, record.id),
            spawn=self._run,
        )
        self._records[record.id] = record
        if self.storage is not None:
            self.storage.rebind(record)  # a reloaded thread keeps writing its rollout
        if self.shared is not None:
            self.shared.loaded(record)
        record.runtime.start()

    def _on_turn_end(self, record: ThreadRecord, terminal: core.EventEnvelope) -> None:
        record.touch()
        if self._turn_ended is not None:
            self._turn_ended(record, terminal)

    def _open_session(self, record: ThreadRecord) -> CoreSession:
        """The thread's session, opened by its first turn (and again after a session ended):
        what the source is told of the thread. The turns before it (a fork's, a stored
        thread's) count for the source's turn index; the model history they left (its
        history log's recorded items, compactions and rollbacks applied: what core rebuilds
        from the rollout, ``projection.model_history``) is where a model's context starts."""
        history = record.history
        config = SessionConfig(
            record.id,
            record.settings.model,
            record.settings.cwd,
            first_turn_index=max(0, record.turns_started - 1),
            settings=record.config,
            originator=record.originator,
            user_agent=self._user_agent(),
            dynamic_tools=record.dynamic_tools,
            prior_items=model_history_json(model_history_of_events(history)),
            history_initialization=record.history_initialization,
            token_total=_last_token_total(history),
            forked_from=(
                (record.forked_from_id, record.forked_from_ordinal)
                if record.history_initialization == "warm_fork"
                and record.forked_from_id is not None
                and record.forked_from_ordinal is not None
                else None
            ),
            goals=None if record.ephemeral else self.goals,
        )
        return open_session(self.source, config)

    # ------------------------------------------------------------------ stored threads
    # Every read of the files runs in a worker thread: a slow or large home never holds up
    # the event loop, and so another client's request (the catalog is safe to share).

    def _catalog(self) -> ThreadCatalog:
        if self.storage is None:
            raise RuntimeError("threads are not stored (no CODEX_HOME)")
        return self.storage.catalog

    async def find_stored(self, thread_id: str) -> StoredThread | None:
        """The stored thread with this id, archived or not (``None``: none, or not stored)."""
        if self.storage is None:
            return None
        return await anyio.to_thread.run_sync(self.storage.catalog.find, thread_id)

    async def stored_history(self, stored: StoredThread) -> list[core.RolloutLine] | None:
        """A stored thread's rollout lines, resolved through its history bases (``None``: its
        file or a base went away since it was found)."""
        if self.storage is None:
            return None
        try:
            return await anyio.to_thread.run_sync(self.storage.catalog.history, stored)
        except LookupError as exc:
            logger.warning("thread %s: %s", stored.thread_id, exc)
            return None

    async def _stored_lines(
        self, thread_id: str, path: str | None = None
    ) -> list[core.RolloutLine] | None:
        """A stored thread's history, found and read in one trip to a worker thread (``None``:
        not stored, its current file is not ``path`` when given, or it cannot be read)."""
        if self.storage is None:
            return None
        catalog = self.storage.catalog

        def read() -> list[core.RolloutLine] | None:
            stored = catalog.find(thread_id)
            if stored is None or (path is not None and str(stored.path) != path):
                return None
            try:
                return catalog.history(stored)
            except LookupError as exc:
                logger.warning("thread %s: %s", thread_id, exc)
                return None

        return await anyio.to_thread.run_sync(read)

    async def _current_rollout(self, record: ThreadRecord) -> list[core.RolloutLine] | None:
        """A known thread's rollout read back, when the file on disk is the one it writes
        (``None``: it has none yet, another is newer, or it cannot be read)."""
        if record.path is None:
            return None
        return await self._stored_lines(record.id, record.path)

    def stored_read_state(self, stored: StoredThread) -> dict[str, Any]:
        """The read state of a thread that is not loaded, as its rollout leads to it."""
        return stored_read_state(stored)

    def stored_thread(self, stored: StoredThread, turns: list[Turn] | None = None) -> Thread:
        """The v2 ``Thread`` of a stored thread that is not loaded."""
        return stored_thread_model(stored, self.defaults, turns)

    async def history_pages(self, thread_id: str) -> HistoryPages | None:
        """A thread's history as pages (``None``: no such thread).

        Positions are the rollout's ordinals when the thread's rollout can be read back and no
        turn runs (as for a thread that is not loaded), else its history log's (a thread
        another server of a cluster holds: its log's, ``SharedThreads.read``)."""
        record = self._records.get(thread_id)
        if record is not None:
            running = record.active_turn_id is not None
            lines = None if running else await self._current_rollout(record)
            if lines is not None:
                return HistoryPages(thread_id, positioned_events(lines))
            return HistoryPages(thread_id, positioned_events(record.history), running=running)
        lines = await self._stored_lines(thread_id)
        if lines is not None:
            return HistoryPages(thread_id, positioned_events(lines))
        if self.shared is None:
            return None
        # another server of the cluster holds it: its log, as a server that follows it has it
        found = await self.shared.read(thread_id, history=True)
        if found is None:
            return None
        return HistoryPages(thread_id, positioned_events(found.history), running=found.playing)

    def write_name(self, thread_id: str, name: str) -> None:
        """Store a thread's name (``StorageError`` if it cannot be)."""
        self._catalog().set_name(thread_id, name)

    def write_git_info(self, thread_id: str, info: dict[str, str | None]) -> None:
        """Store a thread's whole git info (``StorageError`` if it cannot be)."""
        self._catalog().set_git_info(thread_id, info)
