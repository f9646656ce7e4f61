"""The server's stored threads: one ``CODEX_HOME``, its catalog and a writer per loaded thread.

* A thread's rollout is created when its first persisted event arrives (the first turn's
  ``task_started``; 0.163.0 also writes the file only once a turn starts), under
  ``sessions/YYYY/MM/DD`` with the ``session_meta`` first; ``Thread.path`` is set then.
  ``ephemeral`` threads are never written.
* Every history event of the thread goes through :meth:`ThreadStorage.persist` (the thread
  runtime's ``sink``, called synchronously as the event is reduced): the events
  ``PERSISTED_EVENT_TYPES`` names become ``event_msg`` lines, in order; each recorded
  ``ResponseItem`` (``raw_response_item``) a ``response_item`` line and each compaction
  (``compacted``) a ``compacted`` line, where core writes them, so that the real binary
  resuming the thread sends its model the same history (and the other way round).
* A resumed thread (after a restart) gets its events from the rollout and appends to the same
  file; a fork gets a new rollout holding the fork's (truncated) events, ``forked_from_id`` set.
* ``thread/revert`` starts a new segment ``rollout-<time>-<thread id>_<segment id>.jsonl`` whose
  ``history_base`` names the current rollout, the ordinal of the reverted turn's first line and
  that line's byte offset; the segment's ordinals continue from there (0.163.0's layout). The
  0.163.0 binary itself finds a thread's newest segment through its own state database only:
  on a ``CODEX_HOME`` holding just the rollouts (its own revert capture included) it resumes
  the thread from its first file and shows no turns (probed), so a reverted thread is read back
  by the bridge, not by the binary.
* A write that fails (unwritable directory, full disk) is a :class:`StorageError`: it is logged
  (stderr, level ERROR) and sent as a ``warning`` notification naming the thread, once per thread and
  message; the thread goes on in memory and later events are tried again.

Boundary: owns the writers; the thread registry (``_registry``) decides when a thread is loaded,
read or moved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import orjson

from codex_app_bridge._clock import utc_now
from codex_app_bridge.projection import uuid7
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol._base import CoreModel
from codex_app_bridge.protocol.v2 import WarningNotification, dump_json
from codex_app_bridge.server._settings_line import settings_applied
from codex_app_bridge.server._threads import ThreadRecord
from codex_app_bridge.storage import (
    PERSISTED_EVENT_TYPES,
    CodexHome,
    RolloutWriter,
    StorageError,
    StoredThread,
    ThreadCatalog,
    parse_rollout_name,
    session_meta,
)

__all__ = ["ThreadStorage", "byte_offset_of", "compacted_line", "envelopes_of"]

_log = logging.getLogger(__name__)

Broadcast = Callable[[str, bytes], None]

_TURN_STARTS = frozenset({"task_started", "turn_started"})


def _kebab(name: str) -> str:
    return "".join("-" + c.lower() if c.isupper() else c for c in name)


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def turn_context(record: ThreadRecord, turn_id: str | None) -> core.TurnContextItem:
    """The ``turn_context`` line 0.163.0 writes after each turn's ``task_started``: the settings
    the turn runs with, in the core's spelling (``danger-full-access``, ``writable_roots``), so
    that a thread resumed after a restart gets its model back from the rollout; ``turn_id``:
    the turn's, when it started with ``task_started`` (``_started_turn``)."""
    settings = record.settings
    policy: dict[str, object] = orjson.loads(dump_json(settings.sandbox))
    payload: dict[str, object] = {
        "cwd": settings.cwd,
        "approval_policy": settings.approval_policy,
        "approvals_reviewer": settings.approvals_reviewer,
        "sandbox_policy": {
            _snake(k): (_kebab(v) if k == "type" and isinstance(v, str) else v)
            for k, v in policy.items()
        },
        "model": settings.model,
    }
    if turn_id is not None:
        payload = {"turn_id": turn_id, **payload}
    if settings.reasoning_effort is not None:
        payload["effort"] = settings.reasoning_effort
    return core.TurnContextItem.model_validate(payload)


def _started_turn(msg: core.EventMsg) -> str | None:
    """What ``turn_context`` needs of a turn's start: the id of a ``task_started``."""
    return msg.turn_id if isinstance(msg, core.TaskStartedEvent) else None


def byte_offset_of(path: Path, ordinal: int) -> int:
    """Where the first line at or past ``ordinal`` starts in a rollout (its size if none)."""
    offset = 0
    with path.open("rb") as lines:
        for position, raw in enumerate(lines):
            line_ordinal = position
            try:
                value = orjson.loads(raw).get("ordinal")
                if isinstance(value, int):
                    line_ordinal = value
            except (orjson.JSONDecodeError, AttributeError):
                pass
            if line_ordinal >= ordinal:
                return offset
            offset += len(raw)
    return offset


def envelopes_of(lines: list[core.RolloutLine]) -> list[core.EventEnvelope]:
    """A stored thread's event log: its ``event_msg`` lines, each under its own turn id, and its
    model history (``response_item`` lines as ``raw_response_item`` events, ``compacted`` lines
    as ``compacted`` events) under the turn that recorded it."""
    envelopes: list[core.EventEnvelope] = []
    current = ""
    for line in lines:
        if isinstance(line, core.EventMsgLine):
            turn_id = getattr(line.payload, "turn_id", None)
            if isinstance(line.payload, core.TaskStartedEvent):
                current = line.payload.turn_id
            envelopes.append(
                core.EventEnvelope.trusted(
                    turn_id if isinstance(turn_id, str) else "", line.payload
                )
            )
        elif isinstance(line, core.ResponseItemLine):
            event = core.RawResponseItemEvent(item=line.payload)
            envelopes.append(core.EventEnvelope.trusted(current, event))
        elif isinstance(line, core.CompactedLine):
            compacted = core.CompactedEvent(
                message=line.payload.message,
                replacement_history=line.payload.replacement_history,
            )
            envelopes.append(core.EventEnvelope.trusted(current, compacted))
    return envelopes


def token_usage_line(event: core.TokenUsageRecordEvent) -> core.TokenUsageRecord:
    """The ``token_usage_record`` line's payload for the bridge's record of a response's usage
    (the event's own fields, already valid: none is validated again)."""
    fields = {name: getattr(event, name) for name in core.TokenUsageRecord.model_fields}
    return core.TokenUsageRecord.model_construct(**fields)


def compacted_line(event: core.CompactedEvent) -> core.CompactedItem:
    """The ``compacted`` line's payload for the bridge's record of a compaction."""
    return core.CompactedItem(message=event.message, replacement_history=event.replacement_history)


def _settings_applied(record: ThreadRecord) -> core.ThreadSettingsAppliedEvent:
    config = record.config
    summary = None if config is None else config.model_reasoning_summary
    return settings_applied(record.id, record.settings, summary)


@dataclass(slots=True)
class _Owed:
    """A turn whose ``turn_context`` is not written yet, and the response items after it."""

    record: ThreadRecord
    turn_id: str | None
    """The turn's id if it started with ``task_started`` (``_started_turn``)."""
    items: list[core.ResponseItem] = field(default_factory=list[core.ResponseItem])


class ThreadStorage:
    """Stored threads of one ``CODEX_HOME`` (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        broadcast: Broadcast | None = None,
        *,
        catalog: ThreadCatalog | None = None,
    ) -> None:
        """``catalog``: the home's catalog when the server made it already (for
        ``thread/list``, ``_stored_list``); closed with the storage."""
        self.home = CodexHome(root)
        self.catalog = catalog if catalog is not None else ThreadCatalog(self.home)
        self._broadcast = broadcast
        self._writers: dict[str, RolloutWriter] = {}
        self._resume_at: dict[str, StoredThread] = {}
        self._reported: set[tuple[str, str]] = set()
        self._planned: dict[str, datetime] = {}
        self._owed: dict[str, _Owed] = {}
        self._started: dict[str, str | None] = {}
        """Each thread's last turn start, as ``_started_turn`` (the ``turn_context`` after a
        compaction's): its id, not its event, which would keep a model alive per loaded
        thread."""

    def close(self) -> None:
        for thread_id in list(self._owed):
            self._flush(thread_id)
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        self.catalog.close()

    # ------------------------------------------------------------------ writing

    def attach(self, record: ThreadRecord, stored: StoredThread | None = None) -> None:
        """Store this thread's events from now on (``stored``: append to that rollout)."""
        if record.ephemeral or record.runtime is None:
            return
        if stored is not None:
            self._resume_at[record.id] = stored
            record.path = str(stored.path)
        else:
            now = utc_now()
            self._planned[record.id] = now
            record.path = str(self.home.new_rollout_path(record.id, now.astimezone()))
        record.runtime.sink = lambda envelope: self.persist(record, envelope)

    def rebind(self, record: ThreadRecord) -> None:
        """A stored thread got a new runtime (reloaded after an idle unload): feed its writer."""
        if record.ephemeral or record.runtime is None or record.path is None:
            return
        record.runtime.sink = lambda envelope: self.persist(record, envelope)

    def _writer(self, record: ThreadRecord) -> RolloutWriter:
        writer = self._writers.get(record.id)
        if writer is not None:
            return writer
        stored = self._resume_at.get(record.id)
        noted = self.catalog.index.noted_append
        if stored is not None:
            writer = RolloutWriter.reopen(
                stored.path, next_ordinal=stored.next_ordinal, on_write=noted
            )
            del self._resume_at[record.id]
        else:
            now = self._planned.get(record.id) or utc_now()
            meta = session_meta(
                thread_id=record.id,
                created=now,
                cwd=record.settings.cwd,
                originator=record.originator or "codex-app-bridge",
                model_provider=record.settings.model_provider,
                forked_from_id=record.forked_from_id,
            )
            path = self.home.new_rollout_path(record.id, now.astimezone())
            writer = RolloutWriter.create(path, meta, now=now, on_write=noted)
            self._planned.pop(record.id, None)
        self._writers[record.id] = writer
        record.path = str(writer.path)
        return writer

    def persist(self, record: ThreadRecord, envelope: core.EventEnvelope) -> None:
        """Write one envelope of the thread, if Codex persists it (the runtime's sink): an
        event of ``PERSISTED_EVENT_TYPES`` as an ``event_msg`` line, a recorded response item
        as a ``response_item`` line, a compaction as a ``compacted`` line, a response's usage
        as a ``token_usage_record`` line, a context baseline's ``world_state`` as that line
        followed by the turn's ``turn_context``.

        A turn's ``turn_context`` goes where 0.163.0 writes it: after the context a first turn
        (or a compaction) records and its ``world_state``, else right after ``task_started``:
        the response items that follow a turn's start wait (:class:`_Owed`) until the next
        other line tells which."""
        msg = envelope.msg
        if record.ephemeral:
            return
        try:
            owed = self._owed.get(record.id)
            if isinstance(msg, core.RawResponseItemEvent):
                if owed is not None:
                    owed.items.append(msg.item)
                else:
                    self._writer(record).append_response_item(msg.item)
                return
            if isinstance(msg, core.WorldStateEvent):
                writer = self._writer(record)
                self._owed.pop(record.id, None)
                for item in owed.items if owed is not None else ():
                    writer.append_response_item(item)
                writer.append_record(
                    "world_state", core.WorldStateItem(full=msg.full, state=msg.state)
                )
                started = owed.turn_id if owed is not None else self._started.get(record.id)
                writer.append_turn_context(turn_context(record, started))
                if msg.full:
                    writer.append_record("event_msg", _settings_applied(record))
                return
            line = self._line(msg)
            if line is None:
                return
            fresh = record.id not in self._writers and record.id not in self._resume_at
            writer = self._writer(record)
            if owed is not None:
                del self._owed[record.id]
                writer.append_turn_context(turn_context(record, owed.turn_id))
                for item in owed.items:
                    writer.append_response_item(item)
            kind, payload = line
            writer.append_record(kind, payload)
            if msg.type in _TURN_STARTS:
                started = _started_turn(msg)
                self._owed[record.id] = _Owed(record, started)
                self._started[record.id] = started
            elif fresh and kind == "event_msg" and msg.type == "thread_goal_updated":
                # a goal set before the first turn: 0.163.0 checkpoints the settings after it
                writer.append_record("event_msg", _settings_applied(record))
        except StorageError as exc:
            self._report(record.id, exc)

    def checkpoint(self, record: ThreadRecord) -> None:
        """The settings checkpoint 0.163.0 writes when ``thread/resume`` loads a thread back, or
        a ``turn/start`` overrides settings: a ``thread_settings_applied`` line of the thread's
        settings (nothing for an ephemeral thread)."""
        if record.path is not None and not record.ephemeral:
            self.persist(record, core.EventEnvelope.trusted("", _settings_applied(record)))

    @staticmethod
    def _line(msg: core.EventMsg) -> tuple[str, CoreModel] | None:
        """The line an event is written as (``None``: not persisted)."""
        if isinstance(msg, core.CompactedEvent):
            return "compacted", compacted_line(msg)
        if isinstance(msg, core.TokenUsageRecordEvent):
            return "token_usage_record", token_usage_line(msg)
        if msg.type in PERSISTED_EVENT_TYPES:
            return "event_msg", msg
        if isinstance(msg, core.ThreadGoalUpdatedEvent) and msg.turn_id is None:
            return "event_msg", msg  # thread/goal/set's (a turn's goal updates are not kept)
        return None

    def _flush(self, thread_id: str) -> None:
        """Write what waits for a turn's ``turn_context`` (the thread stops being written)."""
        owed = self._owed.pop(thread_id, None)
        writer = self._writers.get(thread_id)
        if owed is None or writer is None:
            return
        try:
            writer.append_turn_context(turn_context(owed.record, owed.turn_id))
            for item in owed.items:
                writer.append_response_item(item)
        except StorageError as exc:
            self._report(thread_id, exc)

    def write_all(self, record: ThreadRecord) -> None:
        """Store a new thread's whole log at once (a fork starts with its source's turns)."""
        for envelope in record.history:
            self.persist(record, envelope)

    def _report(self, thread_id: str, exc: StorageError) -> None:
        message = f"thread {thread_id} is not stored (it goes on in memory): {exc}"
        if (thread_id, str(exc)) in self._reported:
            _log.debug("%s", message)
            return
        self._reported.add((thread_id, str(exc)))
        _log.error("%s", message)
        if self._broadcast is not None:
            warning = WarningNotification(message=message, thread_id=thread_id)
            self._broadcast("warning", dump_json(warning))

    def revert(self, record: ThreadRecord, end_ordinal: int, offset: int) -> None:
        """Persist a revert as 0.163.0 does: a new segment of the thread whose history is the
        current rollout's lines below ``end_ordinal`` (which end at byte ``offset``,
        :func:`byte_offset_of`); later lines go to the segment."""
        if record.ephemeral or record.path is None:
            return
        current = Path(record.path)
        name = parse_rollout_name(current.name)
        if name is None:
            return
        now = utc_now()
        segment_id = str(uuid7())
        meta = session_meta(
            thread_id=record.id,
            created=now,
            cwd=record.settings.cwd,
            originator=record.originator or "codex-app-bridge",
            model_provider=record.settings.model_provider,
            history_base={
                "thread_id": name.rollout_id,
                "end_ordinal_exclusive": end_ordinal,
                "end_byte_offset": offset,
            },
        )
        path = self.home.new_rollout_path(record.id, now.astimezone(), segment_id)
        writer = RolloutWriter.create(
            path,
            meta,
            first_ordinal=end_ordinal,
            now=now,
            on_write=self.catalog.index.noted_append,
        )
        old = self._writers.pop(record.id, None)
        if old is not None:
            old.close()
        self._resume_at.pop(record.id, None)
        self._writers[record.id] = writer
        record.path = str(path)

    def detach(self, record: ThreadRecord) -> bool:
        """Stop writing a thread that is being unloaded: its descriptor is closed (a later
        load reopens the rollout). ``True``: the thread has a rollout on disk to be read back
        from (``False``: nothing of it was written yet)."""
        if record.runtime is not None:
            record.runtime.sink = None
        self._planned.pop(record.id, None)
        self._flush(record.id)
        self._started.pop(record.id, None)
        writer = self._writers.pop(record.id, None)
        if writer is not None:
            writer.close()
            return True
        return self._resume_at.pop(record.id, None) is not None

    def forget(self, thread_id: str) -> None:
        """Stop writing a thread (archived or deleted)."""
        self._flush(thread_id)
        self._started.pop(thread_id, None)
        writer = self._writers.pop(thread_id, None)
        if writer is not None:
            writer.close()
        self._resume_at.pop(thread_id, None)
