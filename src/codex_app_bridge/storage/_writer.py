"""The rollout writer: one thread's ``rollout-*.jsonl``, appended a whole line at a time.

Rules:

* The first line is the ``session_meta`` (every field 0.163.0 writes for a paginated thread; see
  :func:`session_meta`). A new file is created with ``O_EXCL``: a writer never clobbers a file.
* Every later line gets the next ``ordinal`` (0.163.0's reader refuses to resume a paginated
  rollout whose last record has none) and a UTC millisecond ``timestamp``.
* Each line, newline included, is one ``write(2)`` on an ``O_APPEND`` descriptor under an
  exclusive ``flock``: another process appending to the same file (a second bridge resuming the
  thread) interleaves whole lines, never bytes.
* A write that fails part-way (``ENOSPC``) is cut back to where the line began; if even that fails,
  the next line starts with a newline, so the torn bytes stay a line of their own that readers
  skip, and are never extended into something that parses. The same applies to a file found
  ending in a torn line (someone else's crash) when the writer reopens it: it is never rewritten.
* Failures raise :class:`StorageError`; the writer stays usable (the next append tries again).
* ``on_write(path, start, data, size, mtime_ns)``, when given, is told every line written (where
  it starts, its bytes, the file's size and modification time after it): the rollout index
  follows the writer without reading the file back.

Boundary: file I/O of one file; which events to write is the caller's (``PERSISTED_EVENT_TYPES``).
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeAlias

from codex_app_bridge._version import CODEX_PROTOCOL_VERSION
from codex_app_bridge.projection import new_item_id
from codex_app_bridge.protocol._base import CoreModel
from codex_app_bridge.protocol.core import (
    CompactedItem,
    EventMsg,
    ResponseItem,
    RolloutLine,
    SessionMeta,
    TurnContextItem,
    dump_rollout_line,
    dump_rollout_record,
)
from codex_app_bridge.storage._errors import StorageError
from codex_app_bridge.storage._layout import rollout_timestamp
from codex_app_bridge.storage._policy import PERSISTED_EVENT_TYPES

__all__ = ["OnWrite", "RolloutWriter", "rollout_timestamp", "session_meta"]

OnWrite: TypeAlias = Callable[[Path, int, bytes, int, int], None]
"""``(path, start, data, size, mtime_ns)`` of each line written."""

_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC


def session_meta(
    *,
    thread_id: str,
    created: datetime,
    cwd: str,
    originator: str,
    model_provider: str | None,
    source: str = "vscode",
    forked_from_id: str | None = None,
    history_base: dict[str, Any] | None = None,
    base_instructions: Any = None,
) -> SessionMeta:
    """The ``session_meta`` payload 0.163.0 writes for a paginated thread (or a segment / fork
    when ``history_base`` is given; a fork also names ``forked_from_id`` and the ordinal it was
    cut at)."""
    extra: dict[str, Any] = {"runtime_workspace_roots": [cwd]}
    if forked_from_id is not None and history_base is not None:
        extra["forked_from_ordinal_exclusive"] = history_base["end_ordinal_exclusive"]
    extra["history_mode"] = "paginated"
    if history_base is not None:
        extra["history_base"] = history_base
        extra["multi_agent_version"] = "v1"
    extra["context_window"] = {"window_id": new_item_id()}
    return SessionMeta(
        session_id=thread_id,
        id=thread_id,
        forked_from_id=forked_from_id,
        timestamp=rollout_timestamp(created),
        cwd=cwd,
        originator=originator,
        cli_version=CODEX_PROTOCOL_VERSION,
        source=source,
        model_provider=model_provider,
        base_instructions=base_instructions,
        **extra,
    )


class RolloutWriter:
    """Appends lines to one rollout file (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        fd: int,
        *,
        next_ordinal: int,
        needs_newline: bool,
        on_write: OnWrite | None = None,
    ) -> None:
        self.path = path
        self._fd: int | None = fd
        self.next_ordinal = next_ordinal
        self._needs_newline = needs_newline
        self._on_write = on_write

    # ------------------------------------------------------------------ opening

    @classmethod
    def create(
        cls,
        path: Path,
        meta: SessionMeta,
        *,
        first_ordinal: int = 0,
        now: datetime | None = None,
        on_write: OnWrite | None = None,
    ) -> RolloutWriter:
        """Create ``path`` (and its directories) and write the ``session_meta`` line."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, _OPEN_FLAGS | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as exc:
            raise StorageError("create", path, exc) from exc
        writer = cls(path, fd, next_ordinal=first_ordinal, needs_newline=False, on_write=on_write)
        try:
            writer.append_record("session_meta", meta, now=now)
        except StorageError:
            writer.close()
            path.unlink(missing_ok=True)
            raise
        return writer

    @classmethod
    def reopen(
        cls, path: Path, *, next_ordinal: int, on_write: OnWrite | None = None
    ) -> RolloutWriter:
        """Append to an existing rollout; a torn last line is left alone (see the docstring)."""
        try:
            with path.open("rb") as existing:
                existing.seek(0, os.SEEK_END)
                needs_newline = existing.tell() > 0
                if needs_newline:
                    existing.seek(-1, os.SEEK_END)
                    needs_newline = existing.read(1) != b"\n"
            fd = os.open(path, _OPEN_FLAGS)
        except OSError as exc:
            raise StorageError("open", path, exc) from exc
        return cls(
            path, fd, next_ordinal=next_ordinal, needs_newline=needs_newline, on_write=on_write
        )

    @property
    def closed(self) -> bool:
        return self._fd is None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # ------------------------------------------------------------------ appending

    def append_line(self, line: RolloutLine) -> None:
        """Write one line; it gets the next ordinal (and keeps its own timestamp)."""
        line.ordinal = self.next_ordinal
        self._write(dump_rollout_line(line) + b"\n")
        self.next_ordinal += 1

    def append_record(self, kind: str, payload: CoreModel, *, now: datetime | None = None) -> None:
        """Write the ``kind`` line of a payload model that is already valid, with the next
        ordinal: the same bytes as :meth:`append_line` of that line, without validating a line
        model around the payload (``dump_rollout_record``)."""
        data = dump_rollout_record(
            kind, payload, timestamp=rollout_timestamp(now), ordinal=self.next_ordinal
        )
        self._write(data + b"\n")
        self.next_ordinal += 1

    def append_event(self, msg: EventMsg, *, now: datetime | None = None) -> bool:
        """Write an ``event_msg`` line if 0.163.0 persists this event type; whether it did."""
        if msg.type not in PERSISTED_EVENT_TYPES:
            return False
        self.append_record("event_msg", msg, now=now)
        return True

    def append_response_item(self, item: ResponseItem, *, now: datetime | None = None) -> None:
        self.append_record("response_item", item, now=now)

    def append_compacted(self, compacted: CompactedItem, *, now: datetime | None = None) -> None:
        self.append_record("compacted", compacted, now=now)

    def append_turn_context(self, context: TurnContextItem, *, now: datetime | None = None) -> None:
        self.append_record("turn_context", context, now=now)

    def _write(self, data: bytes) -> None:
        fd = self._fd
        if fd is None:
            raise StorageError("append to", self.path, OSError(9, "writer is closed"))
        if self._needs_newline:
            data = b"\n" + data
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            raise StorageError("lock", self.path, exc) from exc
        start: int | None = None
        after: os.stat_result | None = None
        try:
            start = os.fstat(fd).st_size
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, f"short write ({written} of {len(data)} bytes)")
            after = os.fstat(fd) if self._on_write is not None else None
        except OSError as exc:
            self._cut_back(fd, start)
            raise StorageError("append to", self.path, exc) from exc
        else:
            self._needs_newline = False
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        if self._on_write is not None and after is not None:
            self._on_write(self.path, start, data, after.st_size, after.st_mtime_ns)

    def _cut_back(self, fd: int, start: int | None) -> None:
        """Undo a partial line; if the file cannot be cut, end the torn bytes with a newline."""
        try:
            if start is None:
                self._needs_newline = True
            elif os.fstat(fd).st_size > start:
                os.ftruncate(fd, start)
        except OSError:
            self._needs_newline = True
