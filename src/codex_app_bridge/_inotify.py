"""The kernel's inotify (Linux), read without waiting: the one binding of the server's watchers
(``storage._dirwatch`` for the rollout index, ``machine._watch`` for ``fs/watch``).

Bound to the libc already in the process (``ctypes.CDLL(None)``): nothing is looked up on disk
and no helper process runs, as ``ctypes.util.find_library`` would (tens of milliseconds on the
way to a request). :meth:`INotify.open` raises :class:`OSError` where inotify is missing or
refused (another system, the per-user limit of instances).

Boundary: one descriptor, its watches and its raw events; what they mean is the caller's.
"""

from __future__ import annotations

import errno
import os
import struct
import weakref
from typing import Any, Final, NamedTuple

__all__ = [
    "IN_ATTRIB",
    "IN_CLOSE_WRITE",
    "IN_CREATE",
    "IN_DELETE",
    "IN_DELETE_SELF",
    "IN_IGNORED",
    "IN_MODIFY",
    "IN_MOVED_FROM",
    "IN_MOVED_TO",
    "IN_MOVE_SELF",
    "IN_ONLYDIR",
    "IN_Q_OVERFLOW",
    "Event",
    "INotify",
]

# linux/inotify.h
IN_MODIFY: Final = 0x2
IN_ATTRIB: Final = 0x4
IN_CLOSE_WRITE: Final = 0x8
IN_MOVED_FROM: Final = 0x40
IN_MOVED_TO: Final = 0x80
IN_CREATE: Final = 0x100
IN_DELETE: Final = 0x200
IN_DELETE_SELF: Final = 0x400
IN_MOVE_SELF: Final = 0x800
IN_Q_OVERFLOW: Final = 0x4000
"""The kernel's queue overflowed (``wd`` -1): events were lost."""
IN_IGNORED: Final = 0x8000
IN_ONLYDIR: Final = 0x1000000

_EVENT: Final = struct.Struct("iIII")
_READ_SIZE: Final = 1 << 16  # whole events only: one is at most 16 + NAME_MAX + 1 bytes


class Event(NamedTuple):
    wd: int
    """The watch it happened under."""
    mask: int
    cookie: int
    name: str
    """The entry of the watched directory it is about; empty: the directory itself."""


class INotify:
    """One non-blocking inotify descriptor. Closed by :meth:`close`, or when the object is
    garbage collected unclosed (each holds one of the user's limited instances)."""

    def __init__(self, libc: Any, fd: int) -> None:
        self._libc = libc
        self._fd = fd
        self._close = weakref.finalize(self, os.close, fd)

    @classmethod
    def open(cls) -> INotify:
        """A new descriptor; ``OSError`` where inotify cannot be had."""
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = int(libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
        except AttributeError as exc:  # no inotify_init1 in this libc
            raise OSError(errno.ENOSYS, "inotify is not available") from exc
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return cls(libc, fd)

    def fileno(self) -> int:
        return self._fd

    def add_watch(self, path: str, mask: int) -> int:
        """Watch ``path`` for ``mask``; its watch descriptor. ``OSError`` (with the kernel's
        errno) if refused: ``ENOENT``/``ENOTDIR`` for a path that is not there."""
        wd = int(self._libc.inotify_add_watch(self._fd, os.fsencode(path), mask))
        if wd < 0:
            import ctypes

            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), path)
        return wd

    def rm_watch(self, wd: int) -> None:
        if int(self._libc.inotify_rm_watch(self._fd, wd)) < 0:
            import ctypes

            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    def read(self) -> list[Event]:
        """Every event pending now (empty: none); never waits. ``OSError`` if the read fails."""
        events: list[Event] = []
        while True:
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                return events
            if not data:
                return events
            at = 0
            while at + _EVENT.size <= len(data):
                wd, mask, cookie, size = _EVENT.unpack_from(data, at)
                start = at + _EVENT.size
                name = data[start : start + size].split(b"\0", 1)[0]
                events.append(Event(wd, mask, cookie, os.fsdecode(name)))
                at = start + size

    def close(self) -> None:
        self._close()
