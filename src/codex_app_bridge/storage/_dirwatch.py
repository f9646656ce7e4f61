"""Whether an entry of some directories may have changed since they were last asked about: the
kernel's inotify (Linux), read without waiting.

For the rollout index (``_index``): its refresh stats every directory of the home to see a file
added, removed or moved by anyone; with every directory watched before it was looked at, and no
event since, nothing of that can have happened, and the refresh skips the stats. Only entries
are watched (created, removed, moved in or out, the directory itself removed or moved): a write
into a file changes no directory.

Over the server's one inotify binding (``codex_app_bridge._inotify``); ``DirWatch.open`` gives
``None`` where inotify is missing or refused (another system, the per-user limit of instances:
each watch holds one until it is closed or garbage collected).

Boundary: one inotify descriptor; no knowledge of what the directories hold.
"""

from __future__ import annotations

import errno
import logging
from typing import Final

from codex_app_bridge._inotify import (
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_ONLYDIR,
    INotify,
)

__all__ = ["DirWatch"]

_log = logging.getLogger(__name__)

_MASK: Final = (
    IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
)


class DirWatch:
    """Directories watched on one inotify descriptor; :meth:`changed` drains what happened.

    ``names`` limits what counts in a directory watched with it (the home's root: only its
    ``sessions`` and ``archived_sessions`` entries; the index database beside them changes all
    the time). Not thread-safe: its owner calls it under its own lock."""

    def __init__(self, inotify: INotify) -> None:
        self._inotify = inotify
        self._paths: dict[str, int] = {}
        """Watched directory -> its watch descriptor."""
        self._by_wd: dict[int, str] = {}
        self._names: dict[int, frozenset[str]] = {}

    @classmethod
    def open(cls) -> DirWatch | None:
        """A new watch, or ``None`` where inotify cannot be had."""
        try:
            return cls(INotify.open())
        except OSError as exc:
            _log.debug("no inotify: %s", exc)
            return None

    def watch(self, path: str, names: frozenset[str] | None = None) -> bool:
        """Watch the directory ``path`` (before it is looked at: what changes after is
        reported); whether it is watched, or is gone (then its parent's watch tells when it
        comes back). ``False``: the kernel refused it (the caller cannot rely on the watch)."""
        if path in self._paths:
            return True
        try:
            wd = self._inotify.add_watch(path, _MASK)
        except OSError as exc:
            return exc.errno in (errno.ENOENT, errno.ENOTDIR)
        self._paths[path] = wd
        self._by_wd[wd] = path
        if names is not None:
            self._names[wd] = names
        return True

    def changed(self) -> bool:
        """Whether anything was reported since the last call (everything pending is read)."""
        try:
            events = self._inotify.read()
        except OSError as exc:
            _log.debug("inotify read failed: %s", exc)
            return True
        changed = False
        for event in events:
            if event.mask & IN_IGNORED:  # the watch is gone (its directory removed or moved)
                path = self._by_wd.pop(event.wd, None)
                if path is not None:
                    del self._paths[path]
                self._names.pop(event.wd, None)
            names = self._names.get(event.wd)
            if names is None or event.name in names:
                changed = True
        return changed

    def close(self) -> None:
        self._inotify.close()
        self._paths.clear()
        self._by_wd.clear()
        self._names.clear()
