"""The one error the storage layer raises: a rollout could not be written or moved.

Boundary: no JSON-RPC here. The server turns a :class:`StorageError` into a client error and a
stderr line; the thread it concerns goes on in memory.
"""

from __future__ import annotations

import errno
from pathlib import Path

__all__ = ["StorageError"]


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
