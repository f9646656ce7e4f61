"""Fresh item ids the way Codex 0.163.0 mints them: time-ordered UUIDs (version 7).

Python 3.11 has no ``uuid.uuid7``, so this module builds one from RFC 9562: a 48-bit Unix
timestamp in milliseconds, the version nibble ``7``, 12 random bits, the ``10`` variant and 62
random bits. Turn item ids are the bare hyphenated string (``01a229f2-8bf8-77e3-…``); response item
ids carry a kind prefix (``msg_01a229f2-…``), as 0.163.0 writes them into rollouts.
"""

from __future__ import annotations

import uuid

from codex_app_bridge._clock import uuid7 as _clock_uuid7

__all__ = ["new_item_id", "new_response_item_id", "uuid7"]


def uuid7(unix_ms: int | None = None) -> uuid.UUID:
    """A version 7 UUID for ``unix_ms`` (default: now), with 74 random bits (the process
    clock's: ``codex_app_bridge._clock``)."""
    return _clock_uuid7(unix_ms)


def new_item_id() -> str:
    """A fresh turn item id: a lowercase hyphenated UUIDv7 string (36 characters)."""
    return str(uuid7())


def new_response_item_id(prefix: str) -> str:
    """A fresh response item id with Codex's kind prefix, e.g. ``msg_<uuid7>``."""
    return f"{prefix}_{uuid7()}"
