"""The rollout index of one ``CODEX_HOME``: which rollout files it holds, what each says, and
the thread rows ``thread/list`` pages through, in a SQLite database of the bridge's own
(``INDEX_FILE``; not 0.163.0's state database, which the bridge neither reads nor writes).

The files are the truth; the index is a cache of them that is checked cheaply and never trusted
past what it checked:

* **Which files**: every directory under ``sessions/`` and ``archived_sessions/`` is kept with its
  modification time; a refresh stats the directories only (a few hundred for years of threads)
  and lists again those that changed, so a file added, removed or moved by anyone (another
  server, the real binary, a user deleting files) is seen. Where the kernel watches them
  (``_dirwatch``: inotify), a directory listed under the watch is never listed again while the
  watch can vouch for it: the names of the entries that changed since are ``stat``-ed instead
  (a busy server's day directory holds tens of thousands of rollouts, and one changes with
  each thread); what follows here is for a directory the watch cannot vouch for (no inotify,
  a queue that overflowed, a rolled-back transaction). A directory modified less than
  :data:`RACY_NS` before it was listed is listed again (a change within the same timestamp tick
  would not move its time). A directory the server's own notes changed since it was listed
  (it creates, moves or removes rollouts there: today's directory on a busy server) is listed
  again, while its modification time is not later than the server's last change there, at
  most once per :data:`RELIST_NS` (or :data:`RELIST_SHARE` times what its last listing took,
  if longer): what the server did there is known from its notes, and a listing costs as many
  entries as the directory holds (a busy server would list the whole day's directory for every
  request). A change made there by someone else moves the time past the server's own and is
  listed at once, unless it fell in the same timestamp tick: then it is seen within that
  interval. When a note was lost (the queue overflowed, a transaction
  rolled back), nothing is taken from the notes: every changed directory is listed.
* **Day directories** (``sessions/YYYY/MM/DD``) seen for the first time are not listed by the
  refresh: they are kept :data:`UNLISTED` until a listing needs them, newest first
  (``list_unlisted``), as 0.163.0 reads only its newest days for a first page. What a thread
  in a directory not listed yet can be is bounded by the directory's date
  (:meth:`RolloutIndex.unlisted_bound`): a home never indexed answers its first page from its
  newest days, and the catalog lists the others in the background.
* **What each file says**: its :class:`~._facts.RolloutFacts`, tied to the size and modification
  time they were folded at. What ``thread/list`` filters on (``session_meta``, preview) never
  changes as a rollout grows, so it is read once; the rest is checked against the file (a
  ``stat``) where it is shown, and the fold continued from where it stopped.
* **Modification times** (a thread's ``updatedAt`` is its current file's): each file's is
  stored when it is listed (stat-ed by its name in the open directory) and when it is read; an
  ``updatedAt`` order stats every file again, once (``restat``: an append by another process
  moves no directory's time), and stores those that moved.
* **This server's own writes** are told to the index as they happen (``noted_*``), from the event
  loop: a note is queued and applied by the next reader, so the loop never waits for the index
  and the index never reads back what the server wrote. A note that does not fit what the index
  knows is dropped: the next ``stat`` decides.
* **Names and git info** (``session_index.jsonl``, ``GIT_INFO_FILE``: append-only) are read from
  where they were last read, as they grow; from their start when they shrank or were rewritten.
* **A crash** loses at most what a transaction had not committed: the database is only a cache,
  any file it describes wrongly is described again when its ``stat`` differs, and a database
  that cannot be read (torn, corrupt, another version) is deleted and built again from the files.
  Several processes may share it (SQLite's locking; WAL).

The thread rows themselves are computed by the catalog (``_catalog``), which owns the lock every
method here is called under (from worker threads; ``noted_*`` from anywhere).

Boundary: the database, directory listings and file facts; threads are ``_catalog``'s.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sqlite3
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from stat import S_ISDIR
from typing import Any, Final, NamedTuple, cast

import orjson

from codex_app_bridge.storage._dirwatch import DirWatch
from codex_app_bridge.storage._facts import RolloutFacts, scan
from codex_app_bridge.storage._layout import (
    ARCHIVED_SESSIONS_SUBDIR,
    GIT_INFO_FILE,
    INDEX_FILE,
    SESSION_INDEX_FILE,
    SESSIONS_SUBDIR,
    CodexHome,
    RolloutName,
    parse_rollout_name,
)

__all__ = ["RACY_NS", "IndexedFile", "RolloutIndex", "local_name_key", "name_key"]

_log = logging.getLogger(__name__)

RACY_NS: Final = 2_000_000_000
"""A directory modified this close to its listing is listed again next time."""
RELIST_NS: Final = 1_000_000_000
"""A directory whose changes since its listing the server's notes tell is listed again at most
this often (see the module docstring), or less often for a directory whose listing is long
(:data:`RELIST_SHARE`)."""
RELIST_SHARE: Final = 20
"""Such a directory is listed again at most once per this many times its last listing took, so
that relisting it takes at most a twentieth of the index's time however many files it holds
(issue 23's soak: today's directory of a busy server grew to 45,000 rollouts, and listing it
every second took a third of the process's time by the tenth minute, the requests' p99 rising
with it)."""
INDEX_VERSION: Final = "5"
"""Bumped whenever the schema, or what a fold or a row computes, changes: an index of another
version is built again."""

UNREAD: Final = 0
"""A file listed, never read: its thread has no row until it is (``fill``)."""
PARTIAL: Final = 1
"""Read, but its list fields are not all known yet (a file being written): read again."""
READ: Final = 2
"""Its list fields are known (or it cannot be read: skipped until its directory changes)."""
UNLISTED: Final = -1
"""``dirs.mtime_ns`` of a day directory seen in its month's listing, its files not listed yet
(``list_unlisted``)."""
_DAY_US: Final = 86_400 * 1_000_000

_ROOTS: Final = (SESSIONS_SUBDIR, ARCHIVED_SESSIONS_SUBDIR)
_ROOT_NAMES: Final = frozenset(_ROOTS)
_CHUNK: Final = 500
"""Thread ids per ``IN (...)`` query."""
_MAX_NOTES: Final = 512
"""Notes of the server's writes kept until a reader applies them (the oldest go first)."""
_MAX_NOTED_BYTES: Final = 64 << 10
"""A longer line is not noted: the index reads it from the file when it needs it."""
LOGS: Final = (SESSION_INDEX_FILE, GIT_INFO_FILE)

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dirs (
    rel TEXT PRIMARY KEY, parent TEXT, mtime_ns INTEGER NOT NULL, listed_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
    rel TEXT PRIMARY KEY, dir TEXT NOT NULL, thread_id TEXT NOT NULL, rollout_id TEXT NOT NULL,
    archived INTEGER NOT NULL, segment INTEGER NOT NULL, stamp_key INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, state INTEGER NOT NULL, facts BLOB
);
CREATE INDEX IF NOT EXISTS files_thread ON files (thread_id);
CREATE INDEX IF NOT EXISTS files_dir ON files (dir);
CREATE INDEX IF NOT EXISTS files_unread ON files (stamp_key) WHERE state = 0;
CREATE INDEX IF NOT EXISTS files_partial ON files (state) WHERE state = 1;
CREATE INDEX IF NOT EXISTS files_unread_threads ON files (thread_id) WHERE state = 0;
CREATE INDEX IF NOT EXISTS files_mtimes ON files (rel, mtime_ns);
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY, archived INTEGER NOT NULL, cwd TEXT NOT NULL,
    model_provider TEXT, source_kind TEXT NOT NULL, originator TEXT, name TEXT,
    preview TEXT NOT NULL, created_at TEXT NOT NULL, created_key INTEGER NOT NULL,
    updated_at TEXT NOT NULL, updated_key INTEGER NOT NULL, current TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS threads_created ON threads (archived, created_key, thread_id);
CREATE INDEX IF NOT EXISTS threads_updated ON threads (archived, updated_key, thread_id);
CREATE TABLE IF NOT EXISTS logs (
    log TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    offset INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS entries (
    log TEXT NOT NULL, thread_id TEXT NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (log, thread_id)
);
"""


class IndexedFile(NamedTuple):
    """A rollout file the index knows, by its path relative to the home."""

    rel: str
    name: RolloutName
    archived: bool


_EPOCH_ORDINAL: Final = date(1970, 1, 1).toordinal()


@functools.lru_cache(maxsize=1024)
def _day_seconds(day: str) -> int:
    """``YYYY-MM-DD`` at midnight, read as UTC, in seconds (``ValueError``: not a date), as
    ``calendar.timegm`` counts them (the day of the month added to the month's first), without
    importing ``calendar`` (and ``locale``) on the way to a first list's answer."""
    first = date(int(day[0:4]), int(day[5:7]), 1).toordinal()
    return (first - _EPOCH_ORDINAL + int(day[8:10]) - 1) * 86_400


def name_key(stamp: str) -> int:
    """The time in a rollout's name (``YYYY-MM-DDThh-mm-ss``, local) as micros, read as UTC (the
    day's part computed once per day: a new index reads every file's name): the order of
    ``thread/list`` by ``created_at``, as 0.163.0 walks the files (see ``_catalog``)."""
    try:
        clock = int(stamp[11:13]) * 3600 + int(stamp[14:16]) * 60 + int(stamp[17:19])
        return (_day_seconds(stamp[0:10]) + clock) * 1_000_000
    except ValueError:
        return 0


def local_name_key(seconds: int) -> int:
    """:func:`name_key` of a rollout named here at ``seconds`` (the machine's local time then,
    as ``CodexHome.new_rollout_path`` names one): a thread with no file name to read it from
    (not written yet, or another server's) ordered among those that have one."""
    return (seconds + time.localtime(seconds).tm_gmtoff) * 1_000_000


def _archived(rel: str) -> bool:
    return rel.startswith(ARCHIVED_SESSIONS_SUBDIR + "/")


def _parent(rel: str) -> str | None:
    return rel.rsplit("/", 1)[0] if "/" in rel else None


def _day_of(rel: str) -> str | None:
    """``YYYY-MM-DD`` of a day directory ``sessions/YYYY/MM/DD`` (``None``: another one)."""
    parts = rel.split("/")
    if (
        len(parts) != 4
        or parts[0] != SESSIONS_SUBDIR
        or not all(part.isdigit() for part in parts[1:])
        or [len(part) for part in parts[1:]] != [4, 2, 2]
    ):
        return None
    try:
        datetime(int(parts[1]), int(parts[2]), int(parts[3]), tzinfo=UTC)
    except ValueError:
        return None
    return "-".join(parts[1:])


class RolloutIndex:
    """The rollout files of one home, their facts and the logs beside them, in the index
    database (see the module docstring)."""

    def __init__(self, home: CodexHome) -> None:
        self.home = home
        self.root = str(home.root)
        self.path = home.root / INDEX_FILE
        self._db: sqlite3.Connection | None = None
        self._notes: deque[tuple[str, tuple[Any, ...]]] = deque(maxlen=_MAX_NOTES)
        self._log_notes: dict[str, deque[tuple[int, bytes, int, int]]] = {
            log: deque(maxlen=_MAX_NOTES) for log in LOGS
        }
        self._touched: dict[str, int] = {}
        self._relist_ns: dict[str, int] = {}
        """Each listed directory's interval between two listings the notes make needless
        (:data:`RELIST_NS`, :data:`RELIST_SHARE`)."""
        """Directories the applied notes changed since they were listed: when, at the latest
        (nanoseconds: a modification time up to this one may be the server's own)."""
        self._notes_lost = False
        """A note was dropped or rolled back: ``_touched`` cannot be trusted."""
        self.clock_ns: Callable[[], int] = time.time_ns
        self._watch: DirWatch | None = None
        self._watch_refused = False
        """inotify cannot be had here (or refused a directory): every refresh walks."""
        self._walks = 0
        self._settled = False
        """The last walk was watched throughout and left nothing for a later walk to see (see
        :meth:`_walk_needed`)."""
        self._walk_settled = False
        self._data_version = -1
        self._unlisted: tuple[str | None] | None = None
        """The newest day directory not listed yet, as this connection last saw it (``None``:
        not known; looked up again in each transaction and after each change to ``dirs``)."""
        self._logs: dict[str, tuple[int, int, int]] | None = None
        """Each log's ``(size, mtime_ns, offset)`` row as this connection last saw it (``None``:
        not known; read again, all at once, in each transaction)."""

    # ------------------------------------------------------------------ paths

    def abs(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def rel(self, path: Path | str) -> str | None:
        text = str(path)
        prefix = self.root + "/"
        return text[len(prefix) :] if text.startswith(prefix) else None

    # ------------------------------------------------------------------ the database

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = self._open()
        return self._db

    def _open(self) -> sqlite3.Connection:
        for attempt in (1, 2):
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                return self._connect(str(self.path))
            except sqlite3.DatabaseError as exc:
                if attempt == 1 and not isinstance(exc, sqlite3.OperationalError):
                    self._remove(exc)  # torn, corrupt or of another version: built again
                    continue
                _log.warning("thread index %s unusable (%s): kept in memory", self.path, exc)
            except (OSError, sqlite3.Error) as exc:
                _log.warning("thread index %s unusable (%s): kept in memory", self.path, exc)
            break
        return self._connect(":memory:")

    @staticmethod
    def _connect(target: str) -> sqlite3.Connection:
        db = sqlite3.connect(target, check_same_thread=False, isolation_level=None, timeout=30)
        try:
            # set up without waiting for the disk (a new database's switch to WAL and its
            # schema cost 10-40 ms of fsyncs): one a crash tore is built again from the files
            db.execute("PRAGMA synchronous=OFF")
            if target != ":memory:":
                db.execute("PRAGMA journal_mode=WAL")
            row = None
            with contextlib.suppress(sqlite3.OperationalError):  # no such table: a new one
                row = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
            if row is not None and row[0] != INDEX_VERSION:
                db.close()
                raise sqlite3.DatabaseError(f"index version {row[0]}")
            db.executescript(_SCHEMA)
            db.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('version', ?)", (INDEX_VERSION,)
            )
            db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error:
            db.close()
            raise
        return db

    def reset(self, cause: BaseException) -> None:
        """Forget a database that failed (corrupt, of another version): built again from the
        files on next use."""
        self._forget_seen()
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        if self._watch is not None:  # its followed directories are not in the new database
            self._watch.unfollow()
        self._settled = False
        self._remove(cause)

    def _remove(self, cause: BaseException) -> None:
        _log.warning("thread index %s built again: %s", self.path, cause)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def close(self) -> None:
        """Close the database and the directory watch (both made again on next use)."""
        self._forget_seen()
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        self._settled = False

    def transaction(self) -> _Transaction:
        db = self.db
        if not db.in_transaction:
            self._forget_seen()  # another process may have written the database since
        return _Transaction(db, self._forget_notes)

    def _forget_notes(self) -> None:
        """What the notes and the watch's names told is not in the database (rolled back):
        list what changed."""
        self._notes_lost = True
        self._forget_seen()
        if self._watch is not None:
            self._watch.unfollow()

    def _forget_seen(self) -> None:
        """Forget what this connection keeps of the ``dirs`` and ``logs`` tables."""
        self._unlisted = None
        self._logs = None

    # ------------------------------------------------------------------ files

    def file(self, rel: str) -> IndexedFile | None:
        name = parse_rollout_name(rel.rsplit("/", 1)[-1])
        return None if name is None else IndexedFile(rel, name, _archived(rel))

    def files_of(self, thread_id: str) -> list[tuple[IndexedFile, RolloutFacts | None]]:
        """A thread's files and their stored facts: under ``sessions/`` first, then archived,
        by path within each."""
        return self.files_of_many([thread_id]).get(thread_id, [])

    def files_of_many(
        self, thread_ids: Iterable[str]
    ) -> dict[str, list[tuple[IndexedFile, RolloutFacts | None]]]:
        """:meth:`files_of` of several threads, by thread id (those with files)."""
        out: dict[str, list[tuple[IndexedFile, RolloutFacts | None]]] = {}
        ids = list(thread_ids)
        for at in range(0, len(ids), _CHUNK):
            chunk = ids[at : at + _CHUNK]
            for rel, thread_id, rollout_id, archived, data in self.db.execute(
                "SELECT rel, thread_id, rollout_id, archived, facts FROM files "
                f"WHERE thread_id IN ({', '.join('?' * len(chunk))}) ORDER BY archived, rel",
                chunk,
            ):
                base = rel.rsplit("/", 1)[-1]
                name = RolloutName(
                    stamp=base[8:27],
                    thread_id=thread_id,
                    segment_id=None if rollout_id == thread_id else rollout_id,
                )
                file = IndexedFile(rel, name, bool(archived))
                out.setdefault(thread_id, []).append((file, _decode(data)))
        return out

    def file_of_rollout(self, rollout_id: str) -> str | None:
        """The file a ``history_base`` names (an archived copy wins over one in ``sessions``).
        Not indexed: bases are looked up only when a chained history is read."""
        row = self.db.execute(
            "SELECT rel FROM files WHERE rollout_id = ? ORDER BY archived DESC, rel DESC LIMIT 1",
            (rollout_id,),
        ).fetchone()
        return None if row is None else cast("str", row[0])

    def facts(
        self, rel: str, known: RolloutFacts | None, *, whole: bool = False, check: bool = False
    ) -> RolloutFacts | None:
        """The facts of a file (``None``: unreadable). What ``thread/list`` filters on is read
        once; ``whole`` folds every line, ``check`` stats the file first, so that what is
        returned holds for the file as it is now. New facts are stored."""
        if known is not None and not check and (known.whole or (not whole and known.listed)):
            return known
        try:
            facts = scan(self.abs(rel), known, until_listed=not whole)
        except OSError as exc:
            _log.debug("cannot read %s: %s", rel, exc)
            self.db.execute("UPDATE files SET state = ? WHERE rel = ?", (READ, rel))
            return None
        if facts is not known:
            self.db.execute(
                "UPDATE files SET facts = ?, state = ?, mtime_ns = ? WHERE rel = ?",
                (facts.encode(), READ if facts.listed else PARTIAL, facts.mtime_ns, rel),
            )
        return facts

    # ------------------------------------------------------------------ refresh

    def refresh(self) -> set[str]:
        """Bring the file set up to date (see the module docstring), applying queued notes;
        the threads whose files or facts changed (call inside :meth:`transaction`)."""
        changed: set[str] = set()
        lost, self._notes_lost = self._notes_lost, False
        self._apply_notes(changed)
        if lost:
            self._touched.clear()
        if self._walk_needed():
            self._walk(changed)
        # a file whose list fields are not known yet (being written as it was read) again
        for rel, thread_id, data in self.db.execute(
            f"SELECT rel, thread_id, facts FROM files WHERE state = {PARTIAL}"
        ).fetchall():
            known = _decode(data)
            if self.facts(rel, known, check=True) is not known:
                changed.add(thread_id)
        return changed

    def _walk_needed(self) -> bool:
        """Whether a file may have been added, removed or moved since the last walk: unless
        every directory was watched before that walk looked at it, the walk left none that
        only a later walk would list (one the server's notes told about, see ``_visit``), no
        other connection wrote the database since (``PRAGMA data_version``: another process
        sharing it may have listed a directory), and the kernel reported nothing since."""
        if not self._settled or self._watch is None:
            return True
        (version,) = self.db.execute("PRAGMA data_version").fetchone()
        return version != self._data_version or self._watch.changed()

    def _walk(self, changed: set[str]) -> None:
        """Stat every directory, listing again those that changed (module docstring); each
        watched first, from the second walk of the process on (the first is a start-up's
        first page: the watch waits for what the server imports anyway)."""
        (self._data_version,) = self.db.execute("PRAGMA data_version").fetchone()
        if self._watch is None and self._walks > 0 and not self._watch_refused:
            self._watch = DirWatch.open()
            self._watch_refused = self._watch is None
        self._walks += 1
        watch = self._watch
        if watch is not None:
            watch.changed()  # what happened before this walk, this walk sees
        self._walk_settled = watch is not None and watch.watch(self.root, _ROOT_NAMES)
        known = {
            rel: (parent, mtime_ns, listed_ns)
            for rel, parent, mtime_ns, listed_ns in self.db.execute(
                "SELECT rel, parent, mtime_ns, listed_ns FROM dirs"
            )
        }
        children: dict[str, list[str]] = {}
        for rel, (parent, _, _) in known.items():
            if parent is not None:
                children.setdefault(parent, []).append(rel)
        for root in _ROOTS:
            self._visit(root, known, children, changed)
        self._settled = self._walk_settled

    def unread(self, *, by_updated: bool, limit: int | None) -> list[tuple[str, str]]:
        """``(rel, thread id)`` of files never read, newest first: by the time in their name,
        or, ``by_updated``, by their modification time."""
        order = "mtime_ns" if by_updated else "stamp_key"
        return self.db.execute(
            f"SELECT rel, thread_id FROM files WHERE state = {UNREAD} "
            f"ORDER BY {order} DESC LIMIT ?",
            (-1 if limit is None else limit,),
        ).fetchall()

    def unread_bound(self, *, by_updated: bool) -> int | None:
        """The latest order key (:func:`name_key`; ``by_updated``: ``updatedAt`` in micros) a
        thread with a file never read can turn out to have (``None``: every file was read).

        A thread's key is the time in its first file's name, and a thread's later files (its
        segments) are named after it: at most the newest name of the files never read.
        ``updatedAt`` is its current file's modification time: at most the latest of all its
        files'."""
        db = self.db
        if by_updated:
            row = db.execute(  # each thread with a file never read, then its files
                "SELECT MAX(f.mtime_ns) FROM (SELECT DISTINCT thread_id FROM files INDEXED BY "
                f"files_unread_threads WHERE state = {UNREAD}) AS u CROSS JOIN files AS f "
                "USING (thread_id)"
            ).fetchone()
            return None if row[0] is None else int(row[0]) // 1000
        row = db.execute(f"SELECT MAX(stamp_key) FROM files WHERE state = {UNREAD}").fetchone()
        return None if row[0] is None else int(row[0])

    def unlisted_bound(self) -> int | None:
        """The latest order key (:func:`name_key`) a thread with a file in a day directory not
        listed yet can have (``None``: every one is listed): a rollout lies in the directory of
        the date in its name (0.163.0 writes it there, and unarchives it there), and every file
        of a thread is named after its first. So every file of a thread whose key is later than
        this is listed."""
        newest = self._newest_unlisted()
        day = None if newest is None else _day_of(newest)
        if day is None:
            return None
        return _day_seconds(day) * 1_000_000 + _DAY_US - 1

    def has_unread(self, thread_ids: Iterable[str]) -> set[str]:
        """Those of ``thread_ids`` with a file never read."""
        ids = list(thread_ids)
        if len(ids) > _CHUNK:
            everyone = self.db.execute(
                f"SELECT DISTINCT thread_id FROM files WHERE state = {UNREAD}"
            )
            return {thread_id for (thread_id,) in everyone}.intersection(ids)
        out: set[str] = set()
        for at in range(0, len(ids), _CHUNK):
            chunk = ids[at : at + _CHUNK]
            out.update(
                t
                for (t,) in self.db.execute(
                    f"SELECT DISTINCT thread_id FROM files WHERE state = {UNREAD} AND thread_id "
                    f"IN ({', '.join('?' * len(chunk))})",
                    chunk,
                )
            )
        return out

    def restat(self) -> dict[str, int]:
        """Every file's modification time now, by path (those gone left out), stored where it
        moved (an ``updatedAt`` order: 0.163.0 stats every rollout for it too). Each is stat-ed
        by its name in its open directory (the path walked once a directory, not once a file),
        in the order of the paths (one directory after another)."""
        out: dict[str, int] = {}
        moved: list[tuple[int, str]] = []
        stat = os.stat
        fd = -1
        folder: str | None = None
        try:
            for rel, seen in self.db.execute("SELECT rel, mtime_ns FROM files ORDER BY rel"):
                parent, _, name = rel.rpartition("/")
                if parent != folder:
                    if fd >= 0:
                        os.close(fd)
                        fd = -1
                    folder = parent
                    try:
                        fd = os.open(self.abs(parent), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                    except OSError:
                        continue  # gone since the refresh: the next one drops its files
                elif fd < 0:
                    continue
                try:
                    mtime_ns = stat(name, dir_fd=fd).st_mtime_ns
                except OSError:
                    continue
                out[rel] = mtime_ns
                if mtime_ns != seen:
                    moved.append((mtime_ns, rel))
        finally:
            if fd >= 0:
                os.close(fd)
        self.db.executemany("UPDATE files SET mtime_ns = ? WHERE rel = ?", moved)
        return out

    def _visit(
        self,
        rel: str,
        known: dict[str, tuple[str | None, int, int]],
        children: dict[str, list[str]],
        changed: set[str],
    ) -> None:
        path = self.abs(rel)
        watch = self._watch
        if watch is not None and not watch.watch(path):  # the per-user limit: as before
            _log.debug("inotify refused %s: every refresh stats the directories", path)
            watch.close()
            self._watch = None
            self._watch_refused = True
            self._walk_settled = False
        try:
            stat = os.stat(path)
        except OSError:
            if rel in known:
                self._drop_dir(rel, changed)
            return
        entry = known.get(rel)
        if entry is None and _day_of(rel) is not None:
            self._unlisted = None
            self.db.execute(  # its files are listed when a listing needs them (or in the back)
                "INSERT OR REPLACE INTO dirs (rel, parent, mtime_ns, listed_ns) "
                "VALUES (?, ?, ?, ?)",
                (rel, _parent(rel), UNLISTED, UNLISTED),
            )
            return
        if entry is not None and entry[1] == UNLISTED:
            return
        below = children.get(rel, [])
        watch = self._watch
        names = None if watch is None or entry is None else watch.names(path)
        if names is not None:  # the kernel tells which entries changed since the listing
            below = below + [
                sub for sub in self._apply_names(rel, names, changed) if sub not in below
            ]
        elif entry is None or entry[1] != stat.st_mtime_ns or entry[2] - entry[1] < RACY_NS:
            told = (
                entry is not None
                and stat.st_mtime_ns <= self._touched.get(rel, -1)
                and self.clock_ns() - entry[2] < self._relist_ns.get(rel, RELIST_NS)
            )
            if told:  # the notes tell what the server did there; a later walk lists it
                self._walk_settled = False
            else:
                if watch is not None:
                    watch.follow(path)
                subdirs = self._list(rel, stat.st_mtime_ns, changed)
                for gone in set(below) - {f"{rel}/{s}" for s in subdirs}:
                    self._drop_dir(gone, changed)
                below = [f"{rel}/{sub}" for sub in subdirs]
        for sub in below:
            self._visit(sub, known, children, changed)

    def _apply_names(self, rel_dir: str, names: set[str], changed: set[str]) -> list[str]:
        """Bring a listed directory's files up to date from the names of the entries that
        changed since (each ``stat``-ed by its name in the open directory: present and a
        rollout, indexed if it is not; gone, dropped); the subdirectories among them that are
        there (those gone are dropped by their visit)."""
        if not names:
            return []
        db = self.db
        subdirs: list[str] = []
        added: list[tuple[IndexedFile, int, RolloutFacts | None]] = []
        gone: list[str] = []
        try:
            fd = os.open(self.abs(rel_dir), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:  # gone since its stat: the next walk drops it
            _log.debug("cannot open %s: %s", rel_dir, exc)
            return []
        try:
            for name in sorted(names):
                rel = f"{rel_dir}/{name}"
                try:
                    stat = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    gone.append(rel)
                    continue
                if S_ISDIR(stat.st_mode):
                    subdirs.append(rel)
                    continue
                rollout = parse_rollout_name(name)
                if rollout is None:
                    continue
                if db.execute("SELECT 1 FROM files WHERE rel = ?", (rel,)).fetchone() is None:
                    added.append(
                        (IndexedFile(rel, rollout, _archived(rel)), stat.st_mtime_ns, None)
                    )
        finally:
            os.close(fd)
        for rel in gone:  # a row is a rollout's, its thread the one its name gives
            file = self.file(rel)
            if file is not None and db.execute("DELETE FROM files WHERE rel = ?", (rel,)).rowcount:
                changed.add(file.name.thread_id)
        self._insert(added, changed)
        return subdirs

    def has_unlisted(self) -> bool:
        """Whether a day directory's files are not listed yet."""
        return self._newest_unlisted() is not None

    def _newest_unlisted(self) -> str | None:
        """The newest day directory not listed yet (one query per transaction while ``dirs``
        does not change: a request asks several times)."""
        if self._unlisted is None:
            row = self.db.execute(
                f"SELECT MAX(rel) FROM dirs WHERE mtime_ns = {UNLISTED}"
            ).fetchone()
            self._unlisted = (cast("str | None", row[0]),)
        return self._unlisted[0]

    def list_unlisted(self, limit: int | None) -> set[str]:
        """List the files of the newest ``limit`` (``None``: all) day directories not listed yet
        (and of any directory below them); the threads whose files changed."""
        changed: set[str] = set()
        for (rel,) in self.db.execute(
            f"SELECT rel FROM dirs WHERE mtime_ns = {UNLISTED} ORDER BY rel DESC LIMIT ?",
            (-1 if limit is None else limit,),
        ).fetchall():
            self._list_day(rel, changed)
        return changed

    def _list_day(self, rel: str, changed: set[str]) -> None:
        try:
            mtime_ns = os.stat(self.abs(rel)).st_mtime_ns
        except OSError:
            self._drop_dir(rel, changed)
            return
        if self._watch is not None:  # watched since its month's walk saw it
            self._watch.follow(self.abs(rel))
        for sub in self._list(rel, mtime_ns, changed):  # none where Codex writes
            self._visit(f"{rel}/{sub}", {}, {}, changed)

    def _list(self, rel_dir: str, mtime_ns: int, changed: set[str]) -> list[str]:
        listed_ns = self.clock_ns()
        started = time.perf_counter_ns()
        self._touched.pop(rel_dir, None)
        subdirs: list[str] = []
        names: dict[str, RolloutName] = {}
        db = self.db
        present: dict[str, str] = dict(
            db.execute("SELECT rel, thread_id FROM files WHERE dir = ?", (rel_dir,))
        )
        added: list[tuple[IndexedFile, int, RolloutFacts | None]] = []
        try:
            fd = os.open(self.abs(rel_dir), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            _log.debug("cannot list %s: %s", rel_dir, exc)
        else:
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:
                        if entry.is_dir(follow_symlinks=False):
                            subdirs.append(entry.name)
                            continue
                        name = parse_rollout_name(entry.name)
                        if name is None:
                            continue
                        rel = f"{rel_dir}/{entry.name}"
                        names[rel] = name
                        if rel in present:
                            continue
                        # its modification time now, by its name in the open directory (an
                        # updatedAt order compares it with the file's, ``restat``): an
                        # index never stores every file's time at once
                        try:
                            file_mtime_ns = os.stat(entry.name, dir_fd=fd).st_mtime_ns
                        except OSError:
                            file_mtime_ns = 0  # gone meanwhile: its directory changed
                        added.append((IndexedFile(rel, name, _archived(rel)), file_mtime_ns, None))
            except OSError as exc:
                _log.debug("cannot list %s: %s", rel_dir, exc)
            finally:
                os.close(fd)
        self._unlisted = None
        db.execute(
            "INSERT OR REPLACE INTO dirs (rel, parent, mtime_ns, listed_ns) VALUES (?, ?, ?, ?)",
            (rel_dir, _parent(rel_dir), mtime_ns, listed_ns),
        )
        gone = [rel for rel in present if rel not in names]
        db.executemany("DELETE FROM files WHERE rel = ?", [(rel,) for rel in gone])
        changed.update(present[rel] for rel in gone)
        self._insert(added, changed)
        took = time.perf_counter_ns() - started
        self._relist_ns[rel_dir] = max(RELIST_NS, RELIST_SHARE * took)
        return sorted(subdirs)

    def _insert(
        self, files: list[tuple[IndexedFile, int, RolloutFacts | None]], changed: set[str]
    ) -> None:
        """Index files ``(file, mtime_ns, facts)``: never read when ``facts`` is ``None``."""
        rows: list[tuple[object, ...]] = []
        for file, mtime_ns, facts in files:
            state = UNREAD if facts is None else READ if facts.listed else PARTIAL
            rows.append(
                (
                    file.rel,
                    _parent(file.rel) or "",
                    file.name.thread_id,
                    file.name.rollout_id,
                    int(file.archived),
                    int(file.name.segment_id is not None),
                    name_key(file.name.stamp),
                    mtime_ns,
                    state,
                    None if facts is None else facts.encode(),
                )
            )
            changed.add(file.name.thread_id)
        self.db.executemany(
            "INSERT OR REPLACE INTO files (rel, dir, thread_id, rollout_id, archived, segment, "
            "stamp_key, mtime_ns, state, facts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )

    def _add_file(self, rel: str, changed: set[str], facts: RolloutFacts | None) -> None:
        file = self.file(rel)
        if file is not None:
            mtime_ns = 0 if facts is None else facts.mtime_ns
            self._insert([(file, mtime_ns, facts)], changed)

    def _drop_dir(self, rel_dir: str, changed: set[str]) -> None:
        db = self.db
        pattern = rel_dir.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"
        for (thread_id,) in db.execute(
            "SELECT DISTINCT thread_id FROM files WHERE dir = ? OR dir LIKE ? ESCAPE '\\'",
            (rel_dir, pattern),
        ).fetchall():
            changed.add(thread_id)
        db.execute("DELETE FROM files WHERE dir = ? OR dir LIKE ? ESCAPE '\\'", (rel_dir, pattern))
        db.execute("DELETE FROM dirs WHERE rel = ? OR rel LIKE ? ESCAPE '\\'", (rel_dir, pattern))
        self._unlisted = None
        self._relist_ns.pop(rel_dir, None)

    # ------------------------------------------------------------------ this server's writes

    def noted_append(self, path: Path, start: int, data: bytes, size: int, mtime_ns: int) -> None:
        """The server appended ``data`` at ``start`` of a rollout (any thread; queued). The
        queue is bounded (:data:`_MAX_NOTES`, a line up to :data:`_MAX_NOTED_BYTES`): a note
        left out costs a read of those bytes later, never a wrong answer."""
        if len(data) <= _MAX_NOTED_BYTES:
            self._note("append", (str(path), start, data, size, mtime_ns))
        elif start == 0:
            self._notes_lost = True  # a file created: its directory is listed

    def noted_move(self, source: Path, target: Path) -> None:
        """The server moved a rollout (archive, unarchive, or putting one back)."""
        self._note("move", (str(source), str(target), self.clock_ns()))

    def noted_removal(self, path: Path) -> None:
        self._note("remove", (str(path), self.clock_ns()))

    def _note(self, kind: str, args: tuple[Any, ...]) -> None:
        if len(self._notes) == _MAX_NOTES:
            self._notes_lost = True  # the oldest goes: it may have created, moved or removed
        self._notes.append((kind, args))

    def _touch(self, rel: str, at_ns: int) -> None:
        """A note changed ``rel``'s directory, at ``at_ns`` at the latest (see
        :data:`RELIST_NS`)."""
        parent = _parent(rel)
        if parent is not None:
            self._touched[parent] = max(at_ns, self._touched.get(parent, at_ns))

    def noted_log(self, log: str, start: int, data: bytes, size: int, mtime_ns: int) -> None:
        """The server appended ``data`` at ``start`` of one of :data:`LOGS` (bounded too)."""
        if len(data) <= _MAX_NOTED_BYTES:
            self._log_notes[log].append((start, data, size, mtime_ns))

    def _apply_notes(self, changed: set[str]) -> None:
        while self._notes:
            kind, args = self._notes.popleft()
            if kind == "append":
                self._apply_append(changed, *args)
            elif kind == "move":
                self._apply_move(changed, *args)
            else:
                rel = self.rel(args[0])
                if rel is not None:
                    self._touch(rel, args[1])
                    self._delete_file(rel, changed)

    def _stored_facts(self, rel: str) -> tuple[bool, RolloutFacts | None]:
        row = self.db.execute("SELECT facts FROM files WHERE rel = ?", (rel,)).fetchone()
        return (False, None) if row is None else (True, _decode(row[0]))

    def _apply_append(
        self, changed: set[str], path: str, start: int, data: bytes, size: int, mtime_ns: int
    ) -> None:
        rel = self.rel(path)
        if rel is None or self.file(rel) is None:
            return
        indexed, known = self._stored_facts(rel)
        if start == 0:
            self._touch(rel, mtime_ns)  # created: its directory changed before this write
            facts = RolloutFacts()
        elif known is not None and known.scanned == known.size == start:
            facts = replace(known)
        else:
            return  # someone else wrote too, or the index never read it: a stat will tell
        facts.fold_bytes(data)
        if facts.scanned != size:
            return
        facts.size, facts.mtime_ns = size, mtime_ns
        if indexed:
            self.db.execute(
                "UPDATE files SET facts = ?, state = ?, mtime_ns = ? WHERE rel = ?",
                (facts.encode(), READ if facts.listed else PARTIAL, mtime_ns, rel),
            )
            file = self.file(rel)
            assert file is not None
            changed.add(file.name.thread_id)
        else:
            self._add_file(rel, changed, facts)

    def _delete_file(self, rel: str, changed: set[str]) -> None:
        file = self.file(rel)
        self.db.execute("DELETE FROM files WHERE rel = ?", (rel,))
        if file is not None:
            changed.add(file.name.thread_id)

    def _apply_move(self, changed: set[str], source: str, target: str, at_ns: int) -> None:
        rel_source, rel_target = self.rel(source), self.rel(target)
        if rel_source is None or rel_target is None:
            return
        _, facts = self._stored_facts(rel_source)
        self._delete_file(rel_source, changed)
        self._touch(rel_source, at_ns)
        self._touch(rel_target, at_ns)
        self._add_file(rel_target, changed, facts)  # a rename keeps size and modification time

    # ------------------------------------------------------------------ logs

    def _log_state(self, log: str) -> tuple[int, int, int] | None:
        """``(size, mtime_ns, offset)`` of a log as last read (every log's in one query per
        transaction: a request refreshes both)."""
        if self._logs is None:
            self._logs = {
                name: (size, mtime_ns, offset)
                for name, size, mtime_ns, offset in self.db.execute(
                    "SELECT log, size, mtime_ns, offset FROM logs"
                )
            }
        return self._logs.get(log)

    def _log_note(self, log: str, start: int, data: bytes, size: int, mtime_ns: int) -> set[str]:
        state = self._log_state(log)
        if state is None or not (state[0] == state[2] == start):
            return set()  # not read yet, or read differently: a stat will tell
        used = self._fold_log(log, data)
        if used == len(data):
            self._set_log(log, size, mtime_ns, start + used)
        return self._ids_in(data[:used])

    def _set_log(self, log: str, size: int, mtime_ns: int, offset: int) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO logs (log, size, mtime_ns, offset) VALUES (?, ?, ?, ?)",
            (log, size, mtime_ns, offset),
        )
        if self._logs is not None:
            self._logs[log] = (size, mtime_ns, offset)

    def _fold_log(self, log: str, data: bytes, *, tail: bool = False) -> int:
        """Store the entries of the whole lines of ``data`` (and of an unterminated last line
        that parses, when ``tail``); the bytes of whole lines used."""
        used = data.rfind(b"\n") + 1
        lines = data[:used].split(b"\n")
        if tail and data[used:].strip():
            lines.append(data[used:])
        entries: dict[str, bytes] = {}
        for raw in lines:
            try:
                value = orjson.loads(raw) if raw.strip() else None
            except orjson.JSONDecodeError:
                continue  # a torn line of a crashed writer
            if isinstance(value, dict):
                record = cast("dict[str, Any]", value)
                thread_id = record.get("id")
                if isinstance(thread_id, str):
                    entries[thread_id] = raw
        self.db.executemany(
            "INSERT OR REPLACE INTO entries (log, thread_id, value) VALUES (?, ?, ?)",
            [(log, thread_id, raw) for thread_id, raw in entries.items()],
        )
        return used

    def refresh_log(self, log: str) -> set[str] | None:
        """Read what was appended to a log since (all of it if it shrank or was rewritten); the
        thread ids whose entry may have changed (``None``: every one may have)."""
        noted: set[str] = set()
        notes = self._log_notes[log]
        while notes:
            noted |= self._log_note(log, *notes.popleft())
        path = self.home.root / log
        state = self._log_state(log)
        try:
            stat = path.stat()
        except OSError:
            if state is None:
                return noted
            self.db.execute("DELETE FROM entries WHERE log = ?", (log,))
            self.db.execute("DELETE FROM logs WHERE log = ?", (log,))
            if self._logs is not None:
                self._logs.pop(log, None)
            return None
        size, mtime_ns = stat.st_size, stat.st_mtime_ns
        if state is not None and state[:2] == (size, mtime_ns):
            return noted
        offset = 0
        everything = state is None or size < state[2] or (size == state[0] and mtime_ns != state[1])
        if everything:
            self.db.execute("DELETE FROM entries WHERE log = ?", (log,))
        elif state is not None:
            offset = state[2]
        try:
            with path.open("rb") as f:
                f.seek(offset)
                data = f.read()
        except OSError:
            return noted
        used = self._fold_log(log, data, tail=True)
        self._set_log(log, offset + len(data), mtime_ns, offset + used)
        if everything:
            return None
        return noted | self._ids_in(data)

    @staticmethod
    def _ids_in(data: bytes) -> set[str]:
        ids: set[str] = set()
        for raw in data.split(b"\n"):
            try:
                value = orjson.loads(raw) if raw.strip() else None
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict):
                thread_id = cast("dict[str, Any]", value).get("id")
                if isinstance(thread_id, str):
                    ids.add(thread_id)
        return ids

    def log_entry(self, log: str, thread_id: str) -> dict[str, Any] | None:
        row = self.db.execute(
            "SELECT value FROM entries WHERE log = ? AND thread_id = ?", (log, thread_id)
        ).fetchone()
        return None if row is None else _record(row[0])

    def thread_entries(self, thread_id: str) -> dict[str, dict[str, Any]]:
        """A thread's entry in each of :data:`LOGS` that has one, by log (one query)."""
        out: dict[str, dict[str, Any]] = {}
        for log, raw in self.db.execute(
            f"SELECT log, value FROM entries WHERE log IN ({', '.join('?' * len(LOGS))}) "
            "AND thread_id = ?",
            (*LOGS, thread_id),
        ):
            record = _record(raw)
            if record is not None:
                out[log] = record
        return out

    def log_entries(self, log: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for thread_id, raw in self.db.execute(
            "SELECT thread_id, value FROM entries WHERE log = ?", (log,)
        ):
            record = _record(raw)
            if record is not None:
                yield thread_id, record


def _record(raw: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def _decode(data: object) -> RolloutFacts | None:
    if not isinstance(data, bytes | str):
        return None
    try:
        return RolloutFacts.decode(data)
    except ValueError:
        return None


class _Transaction:
    """``with index.transaction():`` one ``BEGIN`` ... ``COMMIT`` (``ROLLBACK`` on error);
    nested uses join the outer one."""

    def __init__(self, db: sqlite3.Connection, on_rollback: Callable[[], object]) -> None:
        self.db = db
        self.outer = False
        self.on_rollback = on_rollback

    def __enter__(self) -> sqlite3.Connection:
        self.outer = not self.db.in_transaction
        if self.outer:
            self.db.execute("BEGIN")
        return self.db

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if not self.outer:
            return
        if exc_type is None:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:
            self.on_rollback()
            self.db.execute("ROLLBACK")
