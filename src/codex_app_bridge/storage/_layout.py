"""Where Codex 0.163.0 keeps a thread on disk under ``CODEX_HOME`` (probed on the binary).

* A thread's first rollout is ``sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<thread id>.jsonl``,
  named after the *local* time the file was created (Codex's ``OffsetDateTime::now_local``).
* A revert starts a new segment ``rollout-<timestamp>-<thread id>_<segment id>.jsonl`` next to
  it (see ``mapping._rollout_chain``); a fork is a new thread with its own first rollout.
* ``thread/archive`` moves the thread's files, flat, into ``archived_sessions/``;
  ``thread/unarchive`` moves them back under ``sessions/`` by the date in their names;
  ``thread/delete`` removes them.
* ``thread/name/set`` appends ``{"id", "thread_name", "updated_at"}`` to ``session_index.jsonl``;
  the last entry of a thread wins. The rollout is not touched.

A rollout line's ``timestamp`` (:func:`rollout_timestamp`) is spelled here too: the catalog
stamps ``updatedAt`` with it without loading the writer.

Boundary: path and time-stamp arithmetic only, no I/O.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from codex_app_bridge._clock import utc_now

__all__ = [
    "ARCHIVED_SESSIONS_SUBDIR",
    "GIT_INFO_FILE",
    "INDEX_FILE",
    "SESSIONS_SUBDIR",
    "SESSION_INDEX_FILE",
    "CodexHome",
    "RolloutName",
    "parse_rollout_name",
    "rollout_file_name",
    "rollout_timestamp",
]

SESSIONS_SUBDIR = "sessions"
ARCHIVED_SESSIONS_SUBDIR = "archived_sessions"
SESSION_INDEX_FILE = "session_index.jsonl"
GIT_INFO_FILE = "codex-app-bridge/thread_git_info.jsonl"
"""The bridge's own record of ``thread/metadata/update`` git info (0.163.0 keeps it in its
state database, ``state_5.sqlite``, which the bridge does not write)."""
INDEX_FILE = "codex-app-bridge/thread_index.sqlite"
"""The bridge's index of the rollouts (``storage._index``, SQLite): a cache of the files."""

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_NAME = re.compile(
    rf"^rollout-(?P<stamp>\d{{4}}-\d{{2}}-\d{{2}}T\d{{2}}-\d{{2}}-\d{{2}})-(?P<thread>{_UUID})"
    rf"(?:_(?P<segment>{_UUID}))?\.jsonl$"
)


class RolloutName(NamedTuple):
    """What a rollout file name says: its creation stamp, thread and (for a segment) segment id.
    (A named tuple, as the other value types of the list path: a dataclass's generated methods
    cost ~0.35 ms each at import, a process's first ``thread/list`` pays them.)"""

    stamp: str
    thread_id: str
    segment_id: str | None

    @property
    def rollout_id(self) -> str:
        """The id ``history_base.thread_id`` uses for this file: the segment id, else the thread."""
        return self.segment_id or self.thread_id

    @property
    def date_parts(self) -> tuple[str, str, str]:
        return self.stamp[0:4], self.stamp[5:7], self.stamp[8:10]


def parse_rollout_name(name: str) -> RolloutName | None:
    """The parts of a rollout file name, or ``None`` for any other file."""
    match = _NAME.match(name)
    if match is None:
        return None
    return RolloutName(
        stamp=match.group("stamp"),
        thread_id=match.group("thread").lower(),
        segment_id=None if match.group("segment") is None else match.group("segment").lower(),
    )


def rollout_file_name(thread_id: str, created: datetime, segment_id: str | None = None) -> str:
    """``rollout-YYYY-MM-DDThh-mm-ss-<thread id>[_<segment id>].jsonl`` for a local time."""
    stamp = created.strftime("%Y-%m-%dT%H-%M-%S")
    suffix = "" if segment_id is None else f"_{segment_id}"
    return f"rollout-{stamp}-{thread_id}{suffix}.jsonl"


class CodexHome(NamedTuple):
    """A ``CODEX_HOME`` directory and the places Codex keeps threads in it."""

    root: Path

    @property
    def sessions(self) -> Path:
        return self.root / SESSIONS_SUBDIR

    @property
    def archived_sessions(self) -> Path:
        return self.root / ARCHIVED_SESSIONS_SUBDIR

    @property
    def session_index(self) -> Path:
        return self.root / SESSION_INDEX_FILE

    @property
    def git_info(self) -> Path:
        return self.root / GIT_INFO_FILE

    def new_rollout_path(
        self, thread_id: str, created: datetime, segment_id: str | None = None
    ) -> Path:
        """Where a rollout created at local time ``created`` goes (``sessions/YYYY/MM/DD``)."""
        day = self.sessions / f"{created:%Y}" / f"{created:%m}" / f"{created:%d}"
        return day / rollout_file_name(thread_id, created, segment_id)

    def unarchived_path(self, name: RolloutName, file_name: str) -> Path:
        """Where an archived rollout goes back to: ``sessions/`` by the date in its name."""
        year, month, day = name.date_parts
        return self.sessions / year / month / day / file_name


def rollout_timestamp(now: datetime | None = None) -> str:
    """A rollout line's ``timestamp``: UTC, milliseconds, ``Z`` (``2026-11-30T00:54:51.102Z``)."""
    moment = (now or utc_now()).astimezone(UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"
