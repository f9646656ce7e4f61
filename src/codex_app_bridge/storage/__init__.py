"""Storage layer: threads persisted to ``CODEX_HOME`` as Codex 0.163.0 lays them out.

Role: the persistence policy (which events a rollout holds), the on-disk layout
(``sessions/YYYY/MM/DD/rollout-<timestamp>-<thread id>.jsonl``), an append-only rollout writer
and a reader/catalog over stored threads. Boundary: file I/O and rollout lines only; it knows
nothing of connections or JSON-RPC. The server owns the writers of its loaded threads and turns
:class:`StorageError` into client errors.
"""

from __future__ import annotations

from codex_app_bridge.storage._policy import PERSISTED_EVENT_TYPES, is_persisted_event_type

__all__ = ["PERSISTED_EVENT_TYPES", "is_persisted_event_type"]
