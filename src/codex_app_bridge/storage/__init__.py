"""Storage layer: threads persisted to ``CODEX_HOME`` as Codex 0.163.0 lays them out.

Role: the persistence policy (which events a rollout holds), the on-disk layout
(``sessions/YYYY/MM/DD/rollout-<timestamp>-<thread id>.jsonl``), an append-only rollout writer,
a tolerant reader, and a catalog over stored threads backed by an index of the rollouts (a cache
kept current by the writer and checked against the files, ``INDEX_FILE``). Boundary: file I/O and
rollout lines only; it knows nothing of connections or JSON-RPC. The server owns the writers of its loaded threads and turns
:class:`StorageError` into client errors.

The reader and the writer (which need the core models) are imported when one of their names is
first used: listing stored threads needs neither (a process's first ``thread/list``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codex_app_bridge._reexports import import_reexport as _import_reexport
from codex_app_bridge.storage._catalog import (
    RowFilter,
    StoredThread,
    ThreadCatalog,
    ThreadRow,
    key_stamp,
    parse_rollout_timestamp,
    timestamp_micros,
)
from codex_app_bridge.storage._errors import RolloutUnavailable, StorageError
from codex_app_bridge.storage._index import local_name_key, name_key
from codex_app_bridge.storage._layout import (
    ARCHIVED_SESSIONS_SUBDIR,
    INDEX_FILE,
    SESSION_INDEX_FILE,
    SESSIONS_SUBDIR,
    CodexHome,
    RolloutName,
    parse_rollout_name,
    rollout_file_name,
    rollout_timestamp,
)
from codex_app_bridge.storage._paging import (
    InvalidCursor,
    Page,
    cursor_position,
    page_threads,
)
from codex_app_bridge.storage._policy import PERSISTED_EVENT_TYPES, is_persisted_event_type

if TYPE_CHECKING:
    from codex_app_bridge.storage._reader import LoadedRollout, load_rollout, parse_rollout_bytes
    from codex_app_bridge.storage._writer import RolloutWriter, session_meta

__all__ = [
    "ARCHIVED_SESSIONS_SUBDIR",
    "INDEX_FILE",
    "PERSISTED_EVENT_TYPES",
    "SESSIONS_SUBDIR",
    "SESSION_INDEX_FILE",
    "CodexHome",
    "InvalidCursor",
    "LoadedRollout",
    "Page",
    "RolloutName",
    "RolloutUnavailable",
    "RolloutWriter",
    "RowFilter",
    "StorageError",
    "StoredThread",
    "ThreadCatalog",
    "ThreadRow",
    "cursor_position",
    "is_persisted_event_type",
    "key_stamp",
    "load_rollout",
    "local_name_key",
    "name_key",
    "page_threads",
    "parse_rollout_bytes",
    "parse_rollout_name",
    "parse_rollout_timestamp",
    "rollout_file_name",
    "rollout_timestamp",
    "session_meta",
    "timestamp_micros",
]

_SOURCES: dict[str, str] = {
    "LoadedRollout": "codex_app_bridge.storage._reader",
    "load_rollout": "codex_app_bridge.storage._reader",
    "parse_rollout_bytes": "codex_app_bridge.storage._reader",
    "RolloutWriter": "codex_app_bridge.storage._writer",
    "session_meta": "codex_app_bridge.storage._writer",
}


def __getattr__(name: str) -> object:
    return _import_reexport(__name__, globals(), _SOURCES, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
