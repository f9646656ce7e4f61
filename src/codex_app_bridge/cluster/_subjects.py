"""Names in NATS: the stream, its subjects, the metadata bucket; and how values are written.

Boundary: names and pure conversions; no I/O.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "CONTROL_PREFIX",
    "EVENTS_PREFIX",
    "LEASE_BUCKET",
    "LEASE_TTL",
    "META_BUCKET",
    "STREAM",
    "control_subject",
    "events_subject",
]

STREAM: Final = "CODEX_THREADS"
"""The JetStream stream that holds every thread's log (file storage)."""
EVENTS_PREFIX: Final = "codex.thread."
META_BUCKET: Final = "codex_threads"
"""KV bucket: thread id -> the thread's metadata (``_meta``)."""
LEASE_BUCKET: Final = "codex_leases"
"""KV bucket: thread id -> the node that owns it, while it renews the lease (``LEASE_TTL``)."""
LEASE_TTL: Final = 3.0
"""Seconds a lease lives unless renewed (the owner renews it three times as often)."""
CONTROL_PREFIX: Final = EVENTS_PREFIX

STREAM_SUBJECTS: Final = ("codex.thread.*.events",)


def events_subject(thread_id: str) -> str:
    """Where a thread's core events go, in order (``{id, msg}`` envelopes)."""
    return f"codex.thread.{thread_id}.events"


def control_subject(thread_id: str) -> str:
    """Where another node sends a thread's submissions to its owner (request/reply)."""
    return f"codex.thread.{thread_id}.control"


def ok_reply() -> bytes:
    return b'{"ok":true}'


def error_reply(message: str) -> bytes:
    import orjson

    data: dict[str, Any] = {"ok": False, "error": message}
    return orjson.dumps(data)
