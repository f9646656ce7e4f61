"""The errors the storage layer raises: a rollout could not be written or moved
(:class:`StorageError`), or a stored thread's rollout cannot be read back
(:class:`RolloutUnavailable`).

Boundary: no JSON-RPC here. The server turns a :class:`StorageError` into a client error and a
stderr line; the thread it concerns goes on in memory. A thread whose rollout is unavailable is
one the server cannot find.
"""

from __future__ import annotations

import errno
from pathlib import Path

__all__ = ["RolloutUnavailable", "StorageError"]


class StorageError(OSError):
    """Writing, creating or moving a stored thread's file failed (``errno`` from the OS)."""

    def __init__(self, action: str, path: Path, cause: OSError) -> None:
        reason = cause.strerror or str(cause)
        super().__init__(cause.errno or errno.EIO, f"cannot {action} {path}: {reason}")
        self.action = action
        self.path = path
        self.cause = cause

    def __str__(self) -> str:
        return str(self.args[1])


class RolloutUnavailable(LookupError):
    """A stored thread's rollout went away or cannot be read (found by a scan, gone since)."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"cannot read {path}")
        self.path = path
