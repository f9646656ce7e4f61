"""Whether an entry of some directories may have changed since they were last asked about: the
kernel's inotify (Linux), read without waiting.

For the rollout index (``_index``): its refresh stats every directory of the home to see a file
added, removed or moved by anyone; with every directory watched before it was looked at, and no
event since, nothing of that can have happened, and the refresh skips the stats. Only entries
are watched (created, removed, moved in or out, the directory itself removed or moved): a write
into a file changes no directory.

Bound to libc through ``ctypes`` (no other module, nothing looked up on disk); ``DirWatch.open``
gives ``None`` where inotify is missing or refused (another system, the per-user limit of
instances: each watch holds one until it is closed or garbage collected).

Boundary: one inotify descriptor; no knowledge of what the directories hold.
"""

from __future__ import annotations

import errno
import logging
import os
import struct
import weakref
from typing import Any, Final

__all__ = ["DirWatch"]

_log = logging.getLogger(__name__)

# linux/inotify.h
_IN_MOVED_FROM: Final = 0x40
_IN_MOVED_TO: Final = 0x80
_IN_CREATE: Final = 0x100
_IN_DELETE: Final = 0x200
_IN_DELETE_SELF: Final = 0x400
_IN_MOVE_SELF: Final = 0x800
_IN_IGNORED: Final = 0x8000
_IN_ONLYDIR: Final = 0x1000000
_MASK: Final = (
    _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
)
_EVENT: Final = struct.Struct("iIII")
_READ_SIZE: Final = 1 << 16


class DirWatch:
    """Directories watched on one inotify descriptor; :meth:`changed` drains what happened.

    ``names`` limits what counts in a directory watched with it (the home's root: only its
    ``sessions`` and ``archived_sessions`` entries; the index database beside them changes all
    the time). Not thread-safe: its owner calls it under its own lock."""

    def __init__(self, libc: Any, fd: int) -> None:
        self._libc = libc
        self._fd = fd
        self._close = weakref.finalize(self, os.close, fd)  # or when the watch is lost
        self._paths: dict[str, int] = {}
        """Watched directory -> its watch descriptor."""
        self._by_wd: dict[int, str] = {}
        self._names: dict[int, frozenset[str]] = {}

    @classmethod
    def open(cls) -> DirWatch | None:
        """A new watch, or ``None`` where inotify cannot be had."""
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            fd = int(libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
        except (OSError, AttributeError) as exc:
            _log.debug("no inotify: %s", exc)
            return None
        if fd < 0:
            _log.debug("no inotify: %s", os.strerror(ctypes.get_errno()))
            return None
        return cls(libc, fd)

    def watch(self, path: str, names: frozenset[str] | None = None) -> bool:
        """Watch the directory ``path`` (before it is looked at: what changes after is
        reported); whether it is watched, or is gone (then its parent's watch tells when it
        comes back). ``False``: the kernel refused it (the caller cannot rely on the watch)."""
        if path in self._paths:
            return True
        import ctypes

        wd = int(self._libc.inotify_add_watch(self._fd, os.fsencode(path), _MASK))
        if wd < 0:
            code = ctypes.get_errno()
            return code in (errno.ENOENT, errno.ENOTDIR)
        self._paths[path] = wd
        self._by_wd[wd] = path
        if names is not None:
            self._names[wd] = names
        return True

    def changed(self) -> bool:
        """Whether anything was reported since the last call (everything pending is read)."""
        changed = False
        while True:
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                return changed
            except OSError as exc:
                _log.debug("inotify read failed: %s", exc)
                return True
            if not data:
                return changed
            at = 0
            while at + _EVENT.size <= len(data):
                wd, mask, _cookie, size = _EVENT.unpack_from(data, at)
                name = data[at + _EVENT.size : at + _EVENT.size + size].split(b"\0", 1)[0]
                at += _EVENT.size + size
                if mask & _IN_IGNORED:  # the watch is gone (its directory removed or moved)
                    path = self._by_wd.pop(wd, None)
                    if path is not None:
                        del self._paths[path]
                    self._names.pop(wd, None)
                names = self._names.get(wd)
                if names is None or os.fsdecode(name) in names:
                    changed = True

    def close(self) -> None:
        self._close()
        self._paths.clear()
        self._by_wd.clear()
        self._names.clear()
