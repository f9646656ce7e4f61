"""Names in NATS: the stream, its subjects, the metadata bucket; and how values are written.

Boundary: names and pure conversions; no I/O.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "CONTROL_PREFIX",
    "EVENTS_PREFIX",
    "EVENT_HEADER",
    "INDEX_BUCKET",
    "INDEX_OBJECT",
    "LEASE_BUCKET",
    "LEASE_TTL",
    "META_BUCKET",
    "STREAM",
    "control_subject",
    "events_subject",
    "unseen",
]

STREAM: Final = "CODEX_THREADS"
"""The JetStream stream that holds every thread's log (file storage)."""
EVENTS_PREFIX: Final = "codex.thread."
META_BUCKET: Final = "codex_threads"
"""KV bucket: thread id -> the thread's metadata (``_meta``)."""
INDEX_BUCKET: Final = "codex_index"
"""Object store: the head of the nodes' ``ThreadIndex`` (``INDEX_OBJECT``), which a joining
node reads first (a page of ``thread/list`` before every ``META_BUCKET`` entry is read); its
description is the bucket sequence it reflects."""
INDEX_OBJECT: Final = "head"
LEASE_BUCKET: Final = "codex_leases"
"""KV bucket: thread id -> the node that owns it, while it renews the lease (``LEASE_TTL``)."""
LEASE_TTL: Final = 3.0
"""Seconds a lease lives unless renewed (the owner renews it three times as often)."""
CONTROL_PREFIX: Final = EVENTS_PREFIX

STREAM_SUBJECTS: Final = ("codex.thread.*.events",)

EVENT_HEADER: Final = "Codex-Event"
"""A log message's header: the number of its first event in the thread's log (1, 2, ...; the
message's JSON lines are that event and the ones after it). A node that applies the log checks
the numbers against what it has: none skipped, none twice."""


def events_subject(thread_id: str) -> str:
    """Where a thread's core events go, in order (``{id, msg}`` envelopes)."""
    return f"codex.thread.{thread_id}.events"


def control_subject(thread_id: str) -> str:
    """Where another node sends a thread's submissions to its owner (request/reply)."""
    return f"codex.thread.{thread_id}.control"


def unseen(lines: list[bytes], first: int | None, have: int) -> tuple[list[bytes], int]:
    """The lines of a log message whose first event is number ``first`` that come after the
    ``have`` events a node has applied, and how many events the log lacks before them (``0``:
    none lost). ``first`` ``None`` (no number): the message follows on."""
    if first is None:
        return lines, 0
    if first > have + 1:
        return lines, first - have - 1
    return lines[have + 1 - first :], 0


def ok_reply() -> bytes:
    return b'{"ok":true}'


def error_reply(message: str) -> bytes:
    import orjson

    data: dict[str, Any] = {"ok": False, "error": message}
    return orjson.dumps(data)
