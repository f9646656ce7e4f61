"""The catalog of stored threads under a ``CODEX_HOME``: list, find, read, name, archive, delete.

* A thread is the set of rollout files named after its id (its first rollout plus the revert
  segments, ``_layout``); its *current* file (``Thread.path``) is the one whose ``session_meta``
  is the newest. Its history is that file resolved through its chain of ``history_base`` s
  (``mapping.resolve_rollout_history``), bases found by rollout id anywhere in the home.
* What ``thread/list`` shows of it (:class:`ThreadRow`, :class:`StoredThread`) comes from the
  facts of its files (``_facts``) kept by the rollout index (``_index``): the first file's
  ``session_meta`` (cwd, originator, source, provider, fork origin, ``createdAt``), the time in
  the first file's name (its place in a ``created_at`` order, :attr:`ThreadRow.created_key`),
  the current file's modification time (``updatedAt``) and the fold of its lines, resolved through its bases
  when it has some: the first user message (preview), the newest ``thread_settings_applied`` /
  ``turn_context`` (model, reasoning effort), the last ``turn_context``'s approval policy and
  reviewer, the first and last turn that ended (the read state). Names come from
  ``session_index.jsonl``, git info from ``GIT_INFO_FILE``, both read as they grow.
* A file without a ``session_meta`` or whose name is not a rollout name is not a thread.
* Every method may be called from any thread (the server calls the readers from worker threads,
  off its event loop); one lock keeps the index consistent. Day directories no request needed
  yet (a home never indexed) are listed by a thread of the catalog's own, one at a time, each
  request waiting for the lock going first; ``find`` lists them all first unless the thread's
  row shows its files are listed (``_all_listed``). Writes (names, git info, moves,
  removals) happen where they are asked for and are told to the index, which never waits for
  them (``_index``).

Boundary: file I/O under one home; no JSON-RPC. Failures to write or move raise ``StorageError``.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar, cast

import orjson

from codex_app_bridge._clock import utc_now
from codex_app_bridge.storage._errors import RolloutUnavailable, StorageError
from codex_app_bridge.storage._facts import RolloutFacts
from codex_app_bridge.storage._index import IndexedFile, RolloutIndex, name_key
from codex_app_bridge.storage._layout import (
    GIT_INFO_FILE,
    SESSION_INDEX_FILE,
    CodexHome,
    parse_rollout_name,
    rollout_timestamp,
)

if TYPE_CHECKING:
    # the core models (and the reader, the history resolver, which use them) are loaded where
    # a rollout is read whole: listing and finding threads answers from the index alone
    from codex_app_bridge.protocol import core
    from codex_app_bridge.storage._reader import LoadedRollout

__all__ = [
    "RowFilter",
    "StoredThread",
    "ThreadCatalog",
    "ThreadRow",
    "key_stamp",
    "parse_rollout_timestamp",
    "timestamp_micros",
]

_log = logging.getLogger(__name__)

_FILL_BATCH: Final = 128
"""Files never read that a listing reads at most at a time before it looks again whether it
can stop: first as many as rows are missing (each file read may be one), twice as many each
time after (rows the filter leaves out), up to this."""
_BACKGROUND_DAYS: Final = 1
"""Day directories the background listing lists at a time (one transaction)."""
_BACKGROUND_PAUSE: Final = 0.005
"""Seconds the background listing rests between two of its transactions."""
_PARSED_FILES: Final = 4
"""Rollouts kept parsed (the last ones read in full: a thread being paged)."""

V = TypeVar("V")
_NONE_READ: Final[Mapping[str, Any]] = {}
"""``_compute_rows``' default: no thread's files fetched by the caller."""


def parse_rollout_timestamp(value: str) -> datetime | None:
    """An RFC 3339 rollout timestamp as an aware datetime (``None`` if it is not one)."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def timestamp_micros(value: str) -> int:
    """An RFC 3339 timestamp as microseconds since the epoch (0 if it is not one): the sort
    key of ``thread/list``."""
    moment = parse_rollout_timestamp(value)
    if moment is None:
        return 0
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _source_kind(source: object) -> str:
    """``ThreadSourceKind`` of a ``session_meta.source`` (sub-agents and unknowns folded)."""
    if isinstance(source, str):
        return {"mcp": "appServer", "app_server": "appServer"}.get(source, source)
    if isinstance(source, dict) and "subagent" in source:
        return "subAgent"
    return "unknown"


class ThreadRow(NamedTuple):
    """What ``thread/list`` filters and sorts a stored thread by, without reading it again."""

    thread_id: str
    archived: bool
    cwd: str
    model_provider: str | None
    source_kind: str
    originator: str | None
    name: str | None
    preview: str
    created_at: str
    """``session_meta.timestamp`` of its first file, as written."""
    updated_at: str
    """Its current file's modification time (RFC 3339, UTC, milliseconds), as last seen: read
    again in an ``updatedAt`` order (``rows(by_updated=True)``) and where the thread is shown
    (``find``)."""
    created_key: int
    """Its place in a ``created_at`` order: the time in its first file's name (local time,
    read as UTC, ``_index.name_key``), in micros, not ``created_at``. 0.163.0 orders its files
    by their names (``YYYY-MM-DDThh-mm-ss``, then the id, newest first) and shows the
    ``session_meta`` time, which is later by up to the machine's UTC offset west (a
    ``tests/data/list_order`` home: a thread named at 10:00 created at 20:00 UTC comes after
    one named at 11:00); its cursors hold that name's time."""
    updated_key: int

    @property
    def text(self) -> str:
        """What ``searchTerm`` looks in."""
        return (self.name or "") + "\n" + self.preview


class RowFilter(NamedTuple):
    """Which rows ``thread/list`` asks for (``None``: no filter on that field)."""

    archived: bool = False
    cwds: frozenset[str] | None = None
    providers: frozenset[str] | None = None
    default_provider: str | None = None
    """What a rollout without a provider counts as."""
    source_kinds: frozenset[str] | None = None
    originators: frozenset[str] | None = None
    excluded: frozenset[str] = frozenset()
    search: str | None = None
    """A case-folded term looked for in the name and preview."""

    def matches(self, row: ThreadRow) -> bool:
        return (
            row.archived == self.archived
            and (self.cwds is None or row.cwd in self.cwds)
            and (
                self.providers is None
                or (row.model_provider or self.default_provider) in self.providers
            )
            and (self.source_kinds is None or row.source_kind in self.source_kinds)
            and (self.originators is None or row.originator in self.originators)
            and row.thread_id not in self.excluded
            and (self.search is None or self.search in row.text.casefold())
        )

    def where(
        self, key: str, after: tuple[int, str | None] | None, descending: bool
    ) -> tuple[str, list[object]]:
        """The SQL condition on the ``threads`` table (all but ``excluded`` and ``search``)."""
        clauses = ["archived = ?"]
        params: list[object] = [int(self.archived)]

        def among(column: str, values: frozenset[str]) -> None:
            clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
            params.extend(sorted(values))

        if self.cwds is not None:
            among("cwd", self.cwds)
        if self.providers is not None:
            params.append(self.default_provider)
            clauses.append(
                f"COALESCE(model_provider, ?) IN ({', '.join('?' * len(self.providers))})"
            )
            params.extend(sorted(self.providers))
        if self.source_kinds is not None:
            among("source_kind", self.source_kinds)
        if self.originators is not None:
            among("originator", self.originators)
        if after is not None:
            at, thread_id = after
            if thread_id is None:
                clauses.append(f"{key} {'<=' if descending else '>='} ?")
                params.append(at)
            else:
                clauses.append(f"({key}, thread_id) {'<' if descending else '>'} (?, ?)")
                params.extend((at, thread_id))
        return " AND ".join(clauses), params


@dataclass(frozen=True)
class StoredThread:
    """What the catalog knows of one stored thread without building its turns."""

    thread_id: str
    path: Path
    """The current rollout file (``Thread.path``)."""
    files: tuple[Path, ...]
    archived: bool
    meta_fields: Mapping[str, Any]
    """The ``session_meta`` payload of the thread's first rollout (no ``base_instructions``)."""
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
    sandbox_mode: str | None = None
    """The last ``turn_context``'s sandbox mode (``read-only``, ``workspace-write``,
    ``danger-full-access``)."""
    first_completed: str | None = None
    """The first turn that ended (``task_complete``): the read state's first unread."""
    last_completed: str | None = None
    """The last turn that ended: the read state's revision."""
    next_ordinal: int = 0
    """The ordinal the next line appended to ``path`` gets."""
    git_info: Mapping[str, str | None] | None = None
    """As ``thread/metadata/update`` last set it (``sha``, ``branch``, ``originUrl``)."""

    @cached_property
    def meta(self) -> core.SessionMeta:
        """The first rollout's ``session_meta`` (``base_instructions`` left out)."""
        from codex_app_bridge.protocol import core

        return core.SessionMeta.model_validate(dict(self.meta_fields))

    @property
    def cwd(self) -> str:
        return cast("str", self.meta_fields["cwd"])

    @property
    def originator(self) -> str:
        return cast("str", self.meta_fields["originator"])

    @property
    def model_provider(self) -> str | None:
        return cast("str | None", self.meta_fields.get("model_provider"))

    @property
    def cli_version(self) -> str:
        return cast("str", self.meta_fields["cli_version"])

    @property
    def source(self) -> object:
        return self.meta_fields.get("source", "vscode")

    @property
    def created_at_s(self) -> int:
        return timestamp_micros(self.created_at) // 1_000_000

    @property
    def updated_at_s(self) -> int:
        return timestamp_micros(self.updated_at) // 1_000_000

    @property
    def forked_from_id(self) -> str | None:
        return cast("str | None", self.meta_fields.get("forked_from_id"))

    @property
    def source_kind(self) -> str:
        """``ThreadSourceKind`` of the ``session_meta.source`` (sub-agents and unknowns folded)."""
        return _source_kind(self.source)


# ---------------------------------------------------------------------------- the logs


def _append_line(path: Path, record: dict[str, Any]) -> tuple[int, bytes, int, int]:
    """Append one JSON line to an append-only log: a whole-line write under ``flock``, after a
    newline if the file ends in a torn line (a crashed writer's bytes stay a line of their
    own). ``(start, bytes written, size, mtime_ns)``; ``StorageError`` if it fails."""
    line = orjson.dumps(record) + b"\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            start = os.fstat(fd).st_size
            if start and os.pread(fd, 1, start - 1) != b"\n":
                line = b"\n" + line
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(28, f"short write ({written} of {len(line)} bytes)")
            stat = os.fstat(fd)
        finally:
            os.close(fd)  # closing releases the lock
    except OSError as exc:
        raise StorageError("append to", path, exc) from exc
    return start, line, stat.st_size, stat.st_mtime_ns


def _name_of(record: dict[str, Any]) -> str | None:
    name = record.get("thread_name")
    return name if isinstance(name, str) else None


def _git_info_of(record: dict[str, Any]) -> dict[str, str | None] | None:
    info = record.get("git_info")
    if not isinstance(info, dict):
        return None
    values = cast("dict[str, Any]", info)
    return {
        key: values[key] if isinstance(values.get(key), str) else None
        for key in ("sha", "branch", "originUrl")
    }


def key_stamp(key: int) -> str:
    """A time in micros (a sort key, a file's modification time) as a rollout line's timestamp
    and a cursor hold it (RFC 3339, UTC, milliseconds): what :func:`timestamp_micros` reads
    back (a ``created_at`` order's keys are whole seconds: the time in a rollout's name)."""
    seconds, micros = divmod(key, 1_000_000)
    return rollout_timestamp(datetime.fromtimestamp(seconds, UTC).replace(microsecond=micros))


# ---------------------------------------------------------------------------- the catalog

_ROW_COLUMNS: Final = (
    "thread_id, archived, cwd, model_provider, source_kind, originator, name, preview, "
    "created_at, updated_at, created_key, updated_key"
)


class ThreadCatalog:
    """Stored threads of one ``CODEX_HOME`` (see the module docstring)."""

    def __init__(self, home: CodexHome, *, background: bool = True) -> None:
        """``background``: list the day directories no request needed in a thread of its own
        (else they are listed when a request needs them)."""
        self.home = home
        self.index = RolloutIndex(home)
        self._lock = threading.RLock()
        self._resolved: dict[str, tuple[tuple[tuple[str, int, int], ...], RolloutFacts]] = {}
        self._parsed: OrderedDict[tuple[str, int, int], LoadedRollout] = OrderedDict()
        self._late: set[str] = set()
        """Threads whose files a listing made while rows were computed changed (``_base_file``)."""
        self._background: threading.Thread | None = None
        self._stopped = not background
        self._turns = threading.Condition()
        self._waiting = 0
        """Requests waiting for the lock: the background listing lets them go first."""
        self._closed = False

    def _run(self, work: Callable[[], V], *, background: bool = True) -> V:
        """``work`` under the lock, in one transaction, after a refresh; a database that turns
        out unreadable is built again from the files, once. Day directories left unlisted are
        listed afterwards in the background (``_list_in_background``; not after a read ahead,
        ``background`` false: the first request starts it)."""
        with self._turns:
            self._waiting += 1
        try:
            self._lock.acquire()
        finally:
            with self._turns:
                self._waiting -= 1
                self._turns.notify_all()
        try:
            for attempt in (1, 2):
                try:
                    with self.index.transaction():
                        self._refresh()
                        done = work()
                    if (
                        background
                        and self._background is None
                        and not self._stopped
                        and self.index.has_unlisted()
                    ):
                        self._background = threading.Thread(
                            target=self._list_in_background,
                            name=f"thread index of {self.home.root}",
                            daemon=True,
                        )
                        self._background.start()
                    return done
                except sqlite3.OperationalError:
                    raise  # busy past the timeout, disk I/O: not the database's content
                except sqlite3.DatabaseError as exc:
                    if attempt == 2:
                        raise
                    self.index.reset(exc)
            raise AssertionError("unreachable")
        finally:
            self._lock.release()

    def _list_in_background(self) -> None:
        """List the day directories no request needed, newest first, one per transaction,
        letting every request that waits for the lock go first; until none is left or the
        catalog is closed."""
        while True:
            with self._turns:
                # a pause between days leaves the interpreter to the server's own work (the
                # event loop, the requests' reads): the listing holds it while it parses names
                self._turns.wait_for(lambda: self._stopped, timeout=_BACKGROUND_PAUSE)
                self._turns.wait_for(lambda: self._waiting == 0 or self._stopped)
            with self._lock:
                if self._stopped:
                    break
                try:
                    with self.index.transaction():
                        if not self.index.has_unlisted():
                            break
                        self._compute_rows(self.index.list_unlisted(_BACKGROUND_DAYS))
                except sqlite3.Error as exc:  # the next request lists what is left
                    _log.warning("thread index %s: %s", self.index.path, exc)
                    break
        with self._lock:
            self._background = None

    def wait_listed(self, timeout: float | None = None) -> bool:
        """Wait for the background listing to end; whether it did within ``timeout``."""
        background = self._background
        if background is not None:
            background.join(timeout)
            return not background.is_alive()
        return True

    def shed(self) -> None:
        """Give back what the catalog keeps between requests, for a server gone quiet (no
        thread loaded): the notes of the server's writes applied (the lines they carry go),
        the rollouts kept parsed and the resolved folds dropped, and the database closed (its
        page cache, its statements and the references its connection keeps to every cursor
        of the last 200 go with it; opened again on next use, a few milliseconds). Why: they
        are the last things allocated under load that outlive it, spread over the allocator's
        arenas, so each keeps an arena resident that is otherwise free. Nothing is lost: the
        index is on disk, a rollout is parsed again when it is read."""

        def drop() -> None:
            self._parsed.clear()
            self._resolved.clear()

        self._run(drop)
        with self._lock:
            self.index.close()

    def close(self) -> None:
        """Stop the background listing (what it listed is kept) and close the index."""
        with self._turns:
            self._stopped = True
            self._turns.notify_all()
        background = self._background
        if background is not None:
            background.join()
        with self._lock:
            self._closed = True
            self.index.close()

    # ------------------------------------------------------------------ refresh

    def _refresh(self) -> None:
        """Bring the index up to date with the files; the rows of changed threads again."""
        changed = self.index.refresh()
        names = self.index.refresh_log(SESSION_INDEX_FILE)
        if changed:
            self._compute_rows(changed)
        if names is None:  # the log was rewritten: every name again
            db = self.index.db
            db.execute("UPDATE threads SET name = NULL")
            db.executemany(
                "UPDATE threads SET name = ? WHERE thread_id = ?",
                [
                    (_name_of(record), thread_id)
                    for thread_id, record in self.index.log_entries(SESSION_INDEX_FILE)
                ],
            )
        else:
            self.index.db.executemany(
                "UPDATE threads SET name = ? WHERE thread_id = ?",
                [(self._name(thread_id), thread_id) for thread_id in names - changed],
            )

    def _name(self, thread_id: str) -> str | None:
        record = self.index.log_entry(SESSION_INDEX_FILE, thread_id)
        return None if record is None else _name_of(record)

    # ------------------------------------------------------------------ threads

    @staticmethod
    def _current(
        files: Sequence[tuple[IndexedFile, RolloutFacts]],
    ) -> tuple[IndexedFile, RolloutFacts] | None:
        best: tuple[tuple[str, int], IndexedFile, RolloutFacts] | None = None
        for file, facts in files:
            if facts.meta is None:
                continue
            rank = (cast("str", facts.meta["timestamp"]), facts.meta_ordinal)
            if best is None or rank > best[0]:
                best = (rank, file, facts)
        return None if best is None else (best[1], best[2])

    @staticmethod
    def _first_meta(
        files: Sequence[tuple[IndexedFile, RolloutFacts]], current: RolloutFacts
    ) -> dict[str, Any]:
        for file, facts in files:
            if file.name.segment_id is None and facts.meta is not None:
                return facts.meta
        return cast("dict[str, Any]", current.meta)

    def _summary(self, file: IndexedFile, facts: RolloutFacts) -> RolloutFacts:
        """The fold of the file's lines resolved through its history bases (its own fold when
        it has none, or when a base is missing: as ``history`` reads it then)."""
        facts = facts.view()
        if facts.history_base is None:
            return facts
        try:
            chain = self._chain(file.rel)
            cached = self._resolved.get(file.rel)
            if cached is not None and cached[0] == chain:
                return cached[1]
            lines = self._history_of(Path(self.index.abs(file.rel)))
        except LookupError as exc:
            _log.warning("%s: %s", file.rel, exc)
            return facts
        from codex_app_bridge.protocol import core

        resolved = RolloutFacts()
        resolved.fold_bytes(b"".join(core.dump_rollout_line(line) + b"\n" for line in lines))
        self._resolved[file.rel] = (chain, resolved)
        return resolved

    def _chain(self, rel: str) -> tuple[tuple[str, int, int], ...]:
        """``(path, size, mtime)`` of a file and its bases: what a resolved fold depends on."""
        out: list[tuple[str, int, int]] = []
        current = rel
        while len(out) < 64:
            try:
                stat = os.stat(self.index.abs(current))
            except OSError:
                raise RolloutUnavailable(Path(self.index.abs(current))) from None
            out.append((current, stat.st_size, stat.st_mtime_ns))
            facts = self.index.facts(current, None)
            base = None if facts is None else facts.history_base
            if base is None:
                break
            found = self._base_file(base[0])
            if found is None:
                raise LookupError(f"history base {base[0]}: rollout not found")
            current = found
        return tuple(out)

    def _base_file(self, rollout_id: str) -> str | None:
        """The file a ``history_base`` names, every day directory listed first when it is not
        among those listed (the threads that listing changed go to ``_late``)."""
        found = self.index.file_of_rollout(rollout_id)
        if found is None and self.index.has_unlisted():
            self._late |= self.index.list_unlisted(None)
            found = self.index.file_of_rollout(rollout_id)
        return found

    def _compute_rows(
        self,
        thread_ids: Collection[str],
        read: Mapping[str, tuple[list[tuple[IndexedFile, RolloutFacts]], str | None]] = _NONE_READ,
    ) -> None:
        """Store the threads' rows as their files say now (or drop those with no readable
        file), in bulk. ``read``: threads of ``thread_ids`` whose every file the caller has
        just read (none is left unread), with those files' facts and the thread's name: not
        looked up again."""
        db = self.index.db
        waiting = self.index.has_unread([t for t in thread_ids if t not in read])
        db.executemany("DELETE FROM threads WHERE thread_id = ?", [(t,) for t in waiting])
        ids = [thread_id for thread_id in thread_ids if thread_id not in waiting]
        files_by = self.index.files_of_many([t for t in ids if t not in read])
        old: dict[str, tuple[str, int]] = {}
        for at in range(0, len(ids), 500):
            chunk = ids[at : at + 500]
            for thread_id, current, mtime_ns in db.execute(
                "SELECT thread_id, current, mtime_ns FROM threads "
                f"WHERE thread_id IN ({', '.join('?' * len(chunk))})",
                chunk,
            ):
                old[thread_id] = (current, mtime_ns)
        names: Callable[[str], str | None] = self._name
        if len(ids) - len(read) > 50:
            everyone = {t: _name_of(r) for t, r in self.index.log_entries(SESSION_INDEX_FILE)}
            names = everyone.get
        if read:
            looked_up = names
            names = lambda t: read[t][1] if t in read else looked_up(t)  # noqa: E731
        rows: list[tuple[object, ...]] = []
        gone: list[tuple[str]] = []
        unlisted = self.index.has_unlisted()
        for thread_id in ids:
            files: list[tuple[IndexedFile, RolloutFacts]] = []
            if thread_id in read:
                files = read[thread_id][0]
            for file, known in files_by.get(thread_id, ()):
                facts = self.index.facts(file.rel, known)
                if facts is not None:
                    files.append((file, facts))
            found = self._current(files)
            if found is None or (
                # segments only: its first file may be in a day directory not listed yet
                unlisted and all(file.name.segment_id is not None for file, _ in files)
            ):
                gone.append((thread_id,))
                continue
            file, facts = found
            meta = self._first_meta(files, facts)
            summary = self._summary(file, facts)
            created = cast("str", meta["timestamp"])
            first = [f for f, _ in files if f.name.segment_id is None] or [f for f, _ in files]
            mtime_ns = facts.mtime_ns
            before = old.get(thread_id)
            if before is not None and before[0] == file.rel and before[1] > mtime_ns:
                mtime_ns = before[1]  # a stat saw it newer than its fold
            updated = key_stamp(mtime_ns // 1000)
            rows.append(
                (
                    thread_id,
                    int(file.archived),
                    cast("str", meta["cwd"]),
                    meta.get("model_provider"),
                    _source_kind(meta.get("source", "vscode")),
                    meta.get("originator"),
                    names(thread_id),
                    summary.preview or "",
                    created,
                    updated,
                    min(name_key(f.name.stamp) for f in first),
                    timestamp_micros(updated),
                    file.rel,
                    mtime_ns,
                )
            )
        db.executemany("DELETE FROM threads WHERE thread_id = ?", gone)
        db.executemany(
            f"INSERT OR REPLACE INTO threads ({_ROW_COLUMNS}, current, mtime_ns) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        if self._late:  # a history base looked for listed every directory: all of them again
            late, self._late = self._late, set()
            self._compute_rows(late.union(thread_ids))

    def _restat(self) -> None:
        """Every thread's ``updatedAt`` from its current file's modification time now (every
        file stat-ed once, ``RolloutIndex.restat``)."""
        now = self.index.restat()
        db = self.index.db
        updates: list[tuple[str, int, int, str]] = []
        for thread_id, current, seen in db.execute(
            "SELECT thread_id, current, mtime_ns FROM threads"
        ).fetchall():
            mtime_ns = now.get(current)  # None: gone since the refresh, the next one drops it
            if mtime_ns is not None and mtime_ns != seen:
                stamp = key_stamp(mtime_ns // 1000)
                updates.append((stamp, timestamp_micros(stamp), mtime_ns, thread_id))
        db.executemany(
            "UPDATE threads SET updated_at = ?, updated_key = ?, mtime_ns = ? WHERE thread_id = ?",
            updates,
        )

    def _list_all(self) -> None:
        """List the day directories not listed yet (every file of the home is then known)."""
        if self.index.has_unlisted():
            self._compute_rows(self.index.list_unlisted(None))

    def _fill(self, rels: Sequence[tuple[str, str]]) -> None:
        """Read files never read (their list fields) and make the rows that were waiting."""
        for rel, _ in rels:
            self.index.facts(rel, None)
        self._compute_rows({thread_id for _, thread_id in rels})

    def rows(
        self,
        where: RowFilter,
        *,
        by_updated: bool = False,
        descending: bool = True,
        after: tuple[int, str | None] | None = None,
        limit: int | None = None,
        skip: frozenset[str] = frozenset(),
    ) -> list[ThreadRow]:
        """Stored threads as ``thread/list`` filters and sorts them: those ``where`` matches,
        in order (``created_at`` or, ``by_updated``, ``updatedAt`` read now; ties by id), from
        the position ``after`` (``(key, id)``: strictly after; ``(key, None)``: from that
        timestamp on), at most ``limit``, none of ``skip``.

        Files never read (a home the index has not seen yet) are read newest first, and day
        directories not listed yet listed newest first, until none of them can belong to the
        answer (``RolloutIndex.unread_bound``, ``RolloutIndex.unlisted_bound``); an
        ``updatedAt`` order, an ascending one or no ``limit`` lists every directory first
        (a file's modification time says nothing of its name: 0.163.0 stats every file for
        an ``updated_at`` order too)."""
        work = self._rows(where, by_updated, descending, after, limit, skip)
        return self._run(work)

    def _rows(
        self,
        where: RowFilter,
        by_updated: bool,
        descending: bool,
        after: tuple[int, str | None] | None,
        limit: int | None,
        skip: frozenset[str],
    ) -> Callable[[], list[ThreadRow]]:
        """What :meth:`rows` runs under the lock."""
        key = "updated_key" if by_updated else "created_key"
        condition, params = where.where(key, after, descending)
        order = "DESC" if descending else "ASC"
        query = (
            f"SELECT {_ROW_COLUMNS} FROM threads WHERE {condition} "
            f"ORDER BY {key} {order}, thread_id {order}"
        )
        unwanted = skip | where.excluded

        def page() -> list[ThreadRow]:
            out: list[ThreadRow] = []
            for values in self.index.db.execute(query, params):
                row = ThreadRow._make(values)
                if row.thread_id in unwanted:
                    continue
                if where.search is not None and where.search not in row.text.casefold():
                    continue
                out.append(row._replace(archived=bool(row.archived)))
                if limit is not None and len(out) >= limit:
                    break
            return out

        def work() -> list[ThreadRow]:
            if by_updated or limit is None or not descending:
                self._list_all()
            if by_updated:
                self._restat()
            if limit is None or not descending:
                self._fill(self.index.unread(by_updated=by_updated, limit=None))
                return page()
            batch = shown = 0
            while True:
                rows = page()
                unread = self.index.unread_bound(by_updated=by_updated)
                unlisted = self.index.unlisted_bound()
                if unread is None and unlisted is None:
                    return rows
                bound = max(b for b in (unread, unlisted) if b is not None)
                if len(rows) >= limit:
                    last = rows[-1]
                    if bound < (last.updated_key if by_updated else last.created_key):
                        return rows
                if unlisted is not None and (unread is None or unlisted >= unread):
                    self._compute_rows(self.index.list_unlisted(1))
                else:
                    wanted = max(limit - len(rows), 1)
                    if len(rows) - shown < batch:  # the last files read gave fewer rows
                        wanted = max(wanted, 2 * batch)
                    files = self.index.unread(by_updated=by_updated, limit=min(_FILL_BATCH, wanted))
                    batch, shown = len(files), len(rows)
                    self._fill(files)

        return work

    def _stored(
        self,
        thread_id: str,
        files: list[tuple[IndexedFile, RolloutFacts]],
        fresh: Collection[str] = (),
    ) -> tuple[StoredThread | None, bool, list[tuple[IndexedFile, RolloutFacts]]]:
        """The thread as its files (read for their list fields) are now: its current file read
        to its end, checked against the file first unless it is among ``fresh`` (read to its
        end by the caller just now); whether its row may have changed (the file was modified
        since its list fields were read: reading the rest of a file that was not leaves its
        row as it is); and its files with the current one's facts as read now."""
        found = self._current(files)
        if found is None:
            return None, False, files
        file, _ = found
        facts = self.index.facts(file.rel, found[1], whole=True, check=file.rel not in fresh)
        if facts is None or facts.meta is None:
            return None, True, files
        files = [(f, facts if f.rel == file.rel else fs) for f, fs in files]
        meta = self._first_meta(files, facts)
        summary = self._summary(file, facts)
        entries = self.index.thread_entries(thread_id)
        git, named = entries.get(GIT_INFO_FILE), entries.get(SESSION_INDEX_FILE)
        first_completed, last_completed = summary.read_turns()
        stored = StoredThread(
            thread_id=thread_id,
            path=Path(self.index.abs(file.rel)),
            files=tuple(sorted(Path(self.index.abs(f.rel)) for f, _ in files)),
            archived=file.archived,
            meta_fields=meta,
            created_at=cast("str", meta["timestamp"]),
            updated_at=key_stamp(facts.mtime_ns // 1000),
            preview=summary.preview or "",
            model=summary.model,
            reasoning_effort=summary.effort,
            name=None if named is None else _name_of(named),
            approval_policy=summary.approval_policy,
            approvals_reviewer=summary.approvals_reviewer,
            sandbox_mode=summary.sandbox_mode,
            first_completed=first_completed,
            last_completed=last_completed,
            next_ordinal=facts.view().next_ordinal,
            git_info=None if git is None else _git_info_of(git),
        )
        known = found[1]  # a row shows list fields (never changed by appends) and the time
        changed = facts is not known and not (known.listed and known.mtime_ns == facts.mtime_ns)
        return stored, changed, files

    def _stored_many(self, thread_ids: Collection[str]) -> dict[str, StoredThread]:
        if not self._all_listed(thread_ids):
            self._list_all()
        self.index.refresh_log(GIT_INFO_FILE)
        files_by = self.index.files_of_many(thread_ids)
        found: dict[str, StoredThread] = {}
        read: list[str] = []
        rowed: dict[str, tuple[list[tuple[IndexedFile, RolloutFacts]], str | None]] = {}
        for thread_id in thread_ids:
            files: list[tuple[IndexedFile, RolloutFacts]] = []
            changed = False
            fresh: list[str] = []
            listing = files_by.get(thread_id, [])
            for file, known in listing:
                # a thread's only file is its current one: read to its end at once (not to its
                # list fields, then again to its end, each read stored)
                facts = self.index.facts(file.rel, known, whole=len(listing) == 1)
                if facts is not known:
                    changed = True
                    if facts is not None and facts.whole:
                        fresh.append(file.rel)
                if facts is not None:
                    files.append((file, facts))
            stored, row_changed, files = self._stored(thread_id, files, fresh)
            if stored is not None:
                found[thread_id] = stored
                rowed[thread_id] = (files, stored.name)
            if changed or row_changed:
                read.append(thread_id)
        if read:
            self._compute_rows(read, rowed)  # read now: their rows as they are
        return found

    def _all_listed(self, thread_ids: Collection[str]) -> bool:
        """Whether every file of these threads is listed: every day directory is, or each of
        them has a row created after the newest one that is not (``unlisted_bound``)."""
        bound = self.index.unlisted_bound()
        if bound is None:
            return True
        ids = list(thread_ids)
        newer = 0
        for at in range(0, len(ids), 500):
            chunk = ids[at : at + 500]
            (count,) = self.index.db.execute(
                "SELECT COUNT(*) FROM threads WHERE created_key > ? AND thread_id IN "
                f"({', '.join('?' * len(chunk))})",
                [bound, *chunk],
            ).fetchone()
            newer += count
        return newer == len(ids)

    def read_ahead(self, where: RowFilter, limit: int, fetch: int) -> None:
        """Read what a first page would: the files of the first ``limit`` rows ``where`` matches
        (``rows``, newest first) and the first ``fetch`` of those threads as they are now
        (``find_many``), keeping nothing but the index. For a process that expects that page
        as its first request (a server at start-up): the request then finds it read."""
        first = self._rows(where, False, True, None, limit, frozenset())
        with self._lock:  # each step, unless the catalog was closed first
            if self._closed:
                return
            rows = self._run(first, background=False)
        ids = [row.thread_id for row in rows[:fetch]]
        if ids:
            with self._lock:
                if not self._closed:
                    self._run(lambda: self._stored_many(ids), background=False)

    def find(self, thread_id: str) -> StoredThread | None:
        """The stored thread with this (canonical) id, archived or not, as its files are now."""
        return self._run(lambda: self._stored_many([thread_id]).get(thread_id))

    def find_many(self, thread_ids: Iterable[str]) -> dict[str, StoredThread]:
        """:meth:`find` of several threads (one refresh): those found, by id."""
        ids = list(dict.fromkeys(thread_ids))
        return self._run(lambda: self._stored_many(ids))

    def threads(self) -> list[StoredThread]:
        """Every stored thread, archived ones included (``StoredThread.archived``); every
        rollout is read to its end (``rows`` is what a listing needs)."""

        def work() -> list[StoredThread]:
            self._list_all()
            self._fill(self.index.unread(by_updated=False, limit=None))
            ids = [t for (t,) in self.index.db.execute("SELECT DISTINCT thread_id FROM files")]
            return list(self._stored_many(ids).values())

        return self._run(work)

    # ------------------------------------------------------------------ history

    def _parsed_file(self, path: Path) -> LoadedRollout | None:
        """A rollout's lines, parsed (the last few kept while they do not change)."""
        try:
            stat = path.stat()
        except OSError:
            return None
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        with self._lock:
            cached = self._parsed.get(key)
            if cached is not None:
                self._parsed.move_to_end(key)
                return cached
        from codex_app_bridge.storage._reader import load_rollout

        try:
            loaded = load_rollout(path)
        except OSError as exc:
            _log.warning("cannot read %s: %s", path, exc)
            return None
        with self._lock:
            self._parsed[key] = loaded
            while len(self._parsed) > _PARSED_FILES:
                self._parsed.popitem(last=False)
        return loaded

    def _history_of(self, path: Path) -> list[core.RolloutLine]:
        from codex_app_bridge.mapping.thread_history import resolve_rollout_history

        loaded = self._parsed_file(path)
        if loaded is None:
            raise RolloutUnavailable(path)

        def by_rollout_id(rollout_id: str) -> Sequence[core.RolloutLine] | None:
            with self._lock, self.index.transaction():
                base = self._base_file(rollout_id)
            parsed = None if base is None else self._parsed_file(Path(self.index.abs(base)))
            return None if parsed is None else parsed.lines

        return resolve_rollout_history(loaded.lines, by_rollout_id)

    def history(self, thread: StoredThread) -> list[core.RolloutLine]:
        """The thread's full history: its current file resolved through its history bases
        (``LookupError`` when the file or a base is missing: ``RolloutUnavailable``, or
        ``mapping.resolve_rollout_history``'s). The index is refreshed first when the file
        names bases (a new segment may have been written since)."""
        try:
            return self._history_of(thread.path)
        finally:
            with self._lock:
                if self._late:  # a base was looked for in every directory: their rows now
                    late, self._late = self._late, set()
                    with self.index.transaction():
                        self._compute_rows(late)

    # ------------------------------------------------------------------ names and git info

    def names(self) -> dict[str, str]:
        """Thread names from ``session_index.jsonl`` (the last entry of each thread wins)."""

        def work() -> dict[str, str]:
            out: dict[str, str] = {}
            for thread_id, record in self.index.log_entries(SESSION_INDEX_FILE):
                name = _name_of(record)
                if name is not None:
                    out[thread_id] = name
            return out

        return self._run(work)

    def set_name(self, thread_id: str, name: str) -> None:
        """Append the thread's new name to ``session_index.jsonl`` (one whole-line write)."""
        now = utc_now()
        stamp = f"{now:%Y-%m-%dT%H:%M:%S}.{now.microsecond:06d}Z"
        record = {"id": thread_id, "thread_name": name, "updated_at": stamp}
        self.index.noted_log(SESSION_INDEX_FILE, *_append_line(self.home.session_index, record))

    def _git_infos(self) -> dict[str, dict[str, str | None]]:
        self.index.refresh_log(GIT_INFO_FILE)
        out: dict[str, dict[str, str | None]] = {}
        for thread_id, record in self.index.log_entries(GIT_INFO_FILE):
            info = _git_info_of(record)
            if info is not None:
                out[thread_id] = info
        return out

    def git_infos(self) -> dict[str, dict[str, str | None]]:
        """Each thread's git info as ``thread/metadata/update`` last set it (``sha``,
        ``branch``, ``originUrl``), from the bridge's ``GIT_INFO_FILE``; the last entry wins."""
        return self._run(self._git_infos)

    def git_info(self, thread_id: str) -> dict[str, str | None] | None:
        """One thread's git info (see :meth:`git_infos`)."""

        def work() -> dict[str, str | None] | None:
            self.index.refresh_log(GIT_INFO_FILE)
            record = self.index.log_entry(GIT_INFO_FILE, thread_id)
            return None if record is None else _git_info_of(record)

        return self._run(work)

    def set_git_info(self, thread_id: str, git_info: dict[str, str | None]) -> None:
        """Append the thread's whole git info (one whole-line write)."""
        record = {"id": thread_id, "git_info": git_info}
        self.index.noted_log(GIT_INFO_FILE, *_append_line(self.home.git_info, record))

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
            self.index.noted_removal(path)

    def _move(self, source: Path, target: Path) -> None:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
        except OSError as exc:
            raise StorageError("move", source, exc) from exc
        self.index.noted_move(source, target)
