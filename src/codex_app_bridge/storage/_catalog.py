"""The catalog of stored threads under a ``CODEX_HOME``: scan, find, load, name, archive, delete.

* A thread is the set of rollout files named after its id (its first rollout plus the revert
  segments, ``_layout``); its *current* file (``Thread.path``) is the one whose ``session_meta``
  is the newest. Its history is that file resolved through its chain of ``history_base`` s
  (``mapping.resolve_rollout_history``), bases found by rollout id anywhere in the home.
* The summary ``thread/list`` shows (:class:`StoredThread`) comes from the resolved lines: the
  first file's ``session_meta`` (cwd, originator, source, provider, fork origin), the newest
  ``thread_settings_applied`` / ``turn_context`` (model, reasoning effort; the last
  ``turn_context``'s approval policy and reviewer), the first user message
  (preview), the file's modification time (``updatedAt``) and the name from ``session_index.jsonl``.
  Summaries are cached by (path, size, mtime), so a listing reads only files that changed.
* A file without a ``session_meta`` or whose name is not a rollout name is not a thread.

Boundary: file I/O under one home; no JSON-RPC. Failures to write or move raise ``StorageError``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import orjson

from codex_app_bridge.mapping.thread_history import resolve_rollout_history
from codex_app_bridge.protocol import core
from codex_app_bridge.storage._errors import RolloutUnavailable, StorageError
from codex_app_bridge.storage._layout import CodexHome, RolloutName, parse_rollout_name
from codex_app_bridge.storage._reader import LoadedRollout, load_rollout
from codex_app_bridge.storage._writer import rollout_timestamp

__all__ = ["StoredThread", "ThreadCatalog", "parse_rollout_timestamp"]

_log = logging.getLogger(__name__)


def parse_rollout_timestamp(value: str) -> datetime | None:
    """An RFC 3339 rollout timestamp as an aware datetime (``None`` if it is not one)."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class StoredThread:
    """What the catalog knows of one stored thread without building its turns."""

    thread_id: str
    path: Path
    """The current rollout file (``Thread.path``)."""
    files: tuple[Path, ...]
    archived: bool
    meta: core.SessionMeta
    """The ``session_meta`` of the thread's first rollout."""
    created_at: str
    """``session_meta.timestamp`` (RFC 3339, UTC, milliseconds): the sort key of ``created_at``."""
    updated_at: str
    """The current file's modification time, same format."""
    preview: str
    model: str | None
    reasoning_effort: str | None
    name: str | None
    approval_policy: str | None = None
    """The last ``turn_context``'s ``approval_policy`` when it is a plain mode (not granular)."""
    approvals_reviewer: str | None = None
    """The last ``turn_context``'s ``approvals_reviewer``."""

    @property
    def created_at_s(self) -> int:
        moment = parse_rollout_timestamp(self.created_at)
        return 0 if moment is None else int(moment.timestamp())

    @property
    def updated_at_s(self) -> int:
        moment = parse_rollout_timestamp(self.updated_at)
        return 0 if moment is None else int(moment.timestamp())

    @property
    def forked_from_id(self) -> str | None:
        return self.meta.forked_from_id

    @property
    def source_kind(self) -> str:
        """``ThreadSourceKind`` of the ``session_meta.source`` (sub-agents and unknowns folded)."""
        source = self.meta.source
        if isinstance(source, str):
            return {"mcp": "appServer", "app_server": "appServer"}.get(source, source)
        if isinstance(source, dict) and "subagent" in source:
            return "subAgent"
        return "unknown"


@dataclass(frozen=True)
class _File:
    path: Path
    name: RolloutName
    archived: bool


def _user_text(item: core.UserMessageItem) -> str:
    parts = [piece.text for piece in item.content if isinstance(piece, core.TextUserInput)]
    return "\n".join(parts)


def _summary_fields(lines: Sequence[core.RolloutLine]) -> tuple[str, str | None, str | None]:
    """``(preview, model, reasoning_effort)`` of a thread's resolved lines."""
    preview: str | None = None
    model: str | None = None
    effort: str | None = None
    for line in lines:
        if isinstance(line, core.EventMsgLine):
            msg = line.payload
            if preview is None and isinstance(msg, core.ItemCompletedEvent):
                if isinstance(msg.item, core.UserMessageItem):
                    preview = _user_text(msg.item)
            elif preview is None and isinstance(msg, core.UserMessageEvent):
                preview = msg.message
            elif msg.type == "thread_settings_applied":
                settings = (msg.model_extra or {}).get("thread_settings")
                if isinstance(settings, Mapping):
                    values = cast("Mapping[str, Any]", settings)
                    if isinstance(values.get("model"), str):
                        model = values["model"]
                    effort = _reasoning_effort(values, effort)
        elif isinstance(line, core.TurnContextLine):
            model = line.payload.model
            extra = line.payload.model_extra or {}
            if isinstance(extra.get("effort"), str):
                effort = cast("str", extra["effort"])
    return preview or "", model, effort


def _approvals(lines: Sequence[core.RolloutLine]) -> tuple[str | None, str | None]:
    """``(approval_policy, approvals_reviewer)`` of the last ``turn_context`` line."""
    for line in reversed(lines):
        if isinstance(line, core.TurnContextLine):
            policy = line.payload.approval_policy
            reviewer = (line.payload.model_extra or {}).get("approvals_reviewer")
            return (
                policy if isinstance(policy, str) else None,
                reviewer if isinstance(reviewer, str) else None,
            )
    return None, None


def _reasoning_effort(settings: Mapping[str, Any], current: str | None) -> str | None:
    if "reasoning_effort" in settings:
        value = settings["reasoning_effort"]
        return value if isinstance(value, str) else None
    mode = settings.get("collaboration_mode")
    if isinstance(mode, Mapping):
        inner = cast("Mapping[str, Any]", mode).get("settings")
        if isinstance(inner, Mapping):
            value = cast("Mapping[str, Any]", inner).get("reasoning_effort")
            return value if isinstance(value, str) else None
    return current


class ThreadCatalog:
    """Stored threads of one ``CODEX_HOME`` (see the module docstring)."""

    def __init__(self, home: CodexHome) -> None:
        self.home = home
        self._loaded: dict[Path, tuple[tuple[int, int], LoadedRollout]] = {}

    # ------------------------------------------------------------------ files

    def _files(self) -> Iterator[_File]:
        for root, archived in ((self.home.sessions, False), (self.home.archived_sessions, True)):
            if not root.is_dir():
                continue
            for dirpath, _dirs, names in os.walk(root):
                for file_name in names:
                    name = parse_rollout_name(file_name)
                    if name is not None:
                        yield _File(Path(dirpath) / file_name, name, archived)

    def _by_thread(self) -> dict[str, list[_File]]:
        threads: dict[str, list[_File]] = {}
        for entry in self._files():
            threads.setdefault(entry.name.thread_id, []).append(entry)
        return threads

    def load(self, path: Path) -> LoadedRollout | None:
        """A rollout file's lines (cached until the file changes); ``None`` if unreadable."""
        try:
            stat = path.stat()
        except OSError:
            self._loaded.pop(path, None)
            return None
        key = (stat.st_size, stat.st_mtime_ns)
        cached = self._loaded.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            loaded = load_rollout(path)
        except OSError as exc:
            _log.warning("cannot read %s: %s", path, exc)
            return None
        self._loaded[path] = (key, loaded)
        return loaded

    def _current(self, files: Sequence[_File]) -> tuple[_File, LoadedRollout] | None:
        best: tuple[tuple[str, int], _File, LoadedRollout] | None = None
        for entry in files:
            loaded = self.load(entry.path)
            meta = None if loaded is None else loaded.session_meta
            if loaded is None or meta is None:
                continue
            rank = (meta.payload.timestamp, meta.ordinal or 0)
            if best is None or rank > best[0]:
                best = (rank, entry, loaded)
        return None if best is None else (best[1], best[2])

    def _first_meta(self, files: Sequence[_File]) -> core.SessionMeta | None:
        for entry in files:
            if entry.name.segment_id is None:
                loaded = self.load(entry.path)
                if loaded is not None and loaded.session_meta is not None:
                    return loaded.session_meta.payload
        return None

    def _resolve(self, lines: Sequence[core.RolloutLine]) -> list[core.RolloutLine]:
        index: dict[str, Path] | None = None

        def by_rollout_id(rollout_id: str) -> Sequence[core.RolloutLine] | None:
            nonlocal index
            if index is None:
                index = {entry.name.rollout_id: entry.path for entry in self._files()}
            path = index.get(rollout_id)
            loaded = None if path is None else self.load(path)
            return None if loaded is None else loaded.lines

        return resolve_rollout_history(lines, by_rollout_id)

    # ------------------------------------------------------------------ queries

    def _stored(
        self, thread_id: str, files: Sequence[_File], names: Mapping[str, str]
    ) -> StoredThread | None:
        current = self._current(files)
        if current is None:
            return None
        entry, loaded = current
        first_meta = (
            self._first_meta(files) or cast("core.SessionMetaLine", loaded.session_meta).payload
        )
        try:
            lines = self._resolve(loaded.lines)
        except LookupError as exc:
            _log.warning("%s: %s", entry.path, exc)
            lines = loaded.lines
        preview, model, effort = _summary_fields(lines)
        approval_policy, approvals_reviewer = _approvals(lines)
        try:
            mtime = datetime.fromtimestamp(entry.path.stat().st_mtime, UTC)
        except OSError:
            mtime = datetime.now(UTC)
        return StoredThread(
            thread_id=thread_id,
            path=entry.path,
            files=tuple(sorted(f.path for f in files)),
            archived=entry.archived,
            meta=first_meta,
            created_at=first_meta.timestamp,
            updated_at=rollout_timestamp(mtime),
            preview=preview,
            model=model,
            reasoning_effort=effort,
            name=names.get(thread_id),
            approval_policy=approval_policy,
            approvals_reviewer=approvals_reviewer,
        )

    def threads(self) -> list[StoredThread]:
        """Every stored thread, archived ones included (``StoredThread.archived``)."""
        names = self.names()
        stored: list[StoredThread] = []
        for thread_id, files in self._by_thread().items():
            thread = self._stored(thread_id, files, names)
            if thread is not None:
                stored.append(thread)
        return stored

    def find(self, thread_id: str) -> StoredThread | None:
        """The stored thread with this (canonical) id, archived or not."""
        files = [entry for entry in self._files() if entry.name.thread_id == thread_id]
        if not files:
            return None
        return self._stored(thread_id, files, self.names())

    def history(self, thread: StoredThread) -> list[core.RolloutLine]:
        """The thread's full history: its current file resolved through its history bases
        (``LookupError`` when the file or a base is missing: ``RolloutUnavailable``, or
        ``mapping.resolve_rollout_history``'s)."""
        loaded = self.load(thread.path)
        if loaded is None:
            raise RolloutUnavailable(thread.path)
        return self._resolve(loaded.lines)

    # ------------------------------------------------------------------ names

    def names(self) -> dict[str, str]:
        """Thread names from ``session_index.jsonl`` (the last entry of each thread wins)."""
        try:
            data = self.home.session_index.read_bytes()
        except OSError:
            return {}
        names: dict[str, str] = {}
        for raw in data.splitlines():
            try:
                entry = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(entry, dict):
                record = cast("dict[str, Any]", entry)
                thread_id, name = record.get("id"), record.get("thread_name")
                if isinstance(thread_id, str) and isinstance(name, str):
                    names[thread_id] = name
        return names

    def set_name(self, thread_id: str, name: str) -> None:
        """Append the thread's new name to ``session_index.jsonl`` (one whole-line write)."""
        now = datetime.now(UTC)
        stamp = f"{now:%Y-%m-%dT%H:%M:%S}.{now.microsecond:06d}Z"
        line = orjson.dumps({"id": thread_id, "thread_name": name, "updated_at": stamp}) + b"\n"
        self._append(self.home.session_index, line)

    # ------------------------------------------------------------------ git info

    def git_infos(self) -> dict[str, dict[str, str | None]]:
        """Each thread's git info as ``thread/metadata/update`` last set it (``sha``,
        ``branch``, ``originUrl``), from the bridge's ``GIT_INFO_FILE``; the last entry wins."""
        try:
            data = self.home.git_info.read_bytes()
        except OSError:
            return {}
        found: dict[str, dict[str, str | None]] = {}
        for raw in data.splitlines():
            try:
                entry = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue  # a torn line of a crashed writer
            if not isinstance(entry, dict):
                continue
            record = cast("dict[str, Any]", entry)
            thread_id, info = record.get("id"), record.get("git_info")
            if isinstance(thread_id, str) and isinstance(info, dict):
                fields = cast("dict[str, Any]", info)
                found[thread_id] = {
                    key: fields[key] if isinstance(fields.get(key), str) else None
                    for key in ("sha", "branch", "originUrl")
                }
        return found

    def set_git_info(self, thread_id: str, git_info: dict[str, str | None]) -> None:
        """Append the thread's whole git info (one whole-line write)."""
        self._append(
            self.home.git_info, orjson.dumps({"id": thread_id, "git_info": git_info}) + b"\n"
        )

    @staticmethod
    def _append(path: Path, line: bytes) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StorageError("append to", path, exc) from exc

    # ------------------------------------------------------------------ moves

    def archive(self, thread: StoredThread) -> None:
        """Move the thread's files, flat, into ``archived_sessions/`` (all or none)."""
        target = self.home.archived_sessions
        self._move_all(
            [(path, target / path.name) for path in thread.files if path.parent != target]
        )

    def unarchive(self, thread: StoredThread) -> None:
        """Move the thread's archived files back under ``sessions/YYYY/MM/DD`` (all or none)."""
        moves: list[tuple[Path, Path]] = []
        for path in thread.files:
            name = parse_rollout_name(path.name)
            if name is not None and path.parent == self.home.archived_sessions:
                moves.append((path, self.home.unarchived_path(name, path.name)))
        self._move_all(moves)

    def _move_all(self, moves: Sequence[tuple[Path, Path]]) -> None:
        """Make every move, or, when one fails, put back those made before it and raise."""
        done: list[tuple[Path, Path]] = []
        try:
            for source, target in moves:
                self._move(source, target)
                done.append((source, target))
        except StorageError:
            for source, target in reversed(done):
                try:
                    self._move(target, source)
                except StorageError as exc:  # nothing more to do than say where it is
                    _log.error("%s", exc)
            raise

    def delete(self, thread: StoredThread) -> None:
        """Remove the thread's files."""
        for path in thread.files:
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                raise StorageError("delete", path, exc) from exc
            self._loaded.pop(path, None)

    def _move(self, source: Path, target: Path) -> None:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
        except OSError as exc:
            raise StorageError("move", source, exc) from exc
        self._loaded.pop(source, None)
