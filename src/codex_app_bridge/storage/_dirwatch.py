"""Whether an entry of some directories may have changed since they were last asked about: the
kernel's inotify (Linux), read without waiting.

For the rollout index (``_index``): its refresh stats every directory of the home to see a file
added, removed or moved by anyone; with every directory watched before it was looked at, and no
event since, nothing of that can have happened, and the refresh skips the stats. Only entries
are watched (created, removed, moved in or out, the directory itself removed or moved): a write
into a file changes no directory.

And which entries: a directory the index lists is *followed* from just before that listing
(:meth:`DirWatch.follow`), and from then on :meth:`DirWatch.names` tells the names of its
entries that changed since it last asked, so that a directory of 45,000 rollouts where the
server creates one per request is brought up to date by a ``stat`` of the names, not a listing
(issue 23's soak: the listing of today's directory grew to a third of the process's time). What
the kernel cannot vouch for, it does not tell (``None``: list it): a queue that overflowed, a
watch that went away, more changed names than a listing costs (:data:`MAX_NAMES`).

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
    IN_Q_OVERFLOW,
    INotify,
)

__all__ = ["MAX_NAMES", "DirWatch"]

_log = logging.getLogger(__name__)

_MASK: Final = (
    IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
)
MAX_NAMES: Final = 4096
"""Changed names kept for one followed directory between two questions; past this many it is
no longer followed (listing it is then as cheap as a ``stat`` of each)."""


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
        self._followed: dict[int, set[str]] = {}
        """Followed directory's watch -> the names of its entries that changed since
        :meth:`names` last asked (or since :meth:`follow`)."""

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

    def follow(self, path: str) -> None:
        """Keep the names of ``path``'s changed entries from now on (call it just before
        listing the directory, after :meth:`watch`); a directory not watched is not followed."""
        wd = self._paths.get(path)
        if wd is not None:
            self._followed[wd] = set()

    def names(self, path: str) -> set[str] | None:
        """The names of ``path``'s entries that changed (created, removed, moved in or out)
        since the last call, as far as :meth:`changed` has read the kernel's reports, or since
        :meth:`follow`; ``None`` when they cannot be told (not followed, or no longer: list it
        and follow it again)."""
        wd = self._paths.get(path)
        if wd is None:
            return None
        names = self._followed.get(wd)
        if names is not None:
            self._followed[wd] = set()
        return names

    def unfollow(self) -> None:
        """Follow no directory (what their names told was lost: each is listed again)."""
        self._followed.clear()

    def changed(self) -> bool:
        """Whether anything was reported since the last call (everything pending is read,
        and the names of followed directories' entries kept)."""
        try:
            events = self._inotify.read()
        except OSError as exc:
            _log.debug("inotify read failed: %s", exc)
            self._followed.clear()
            return True
        changed = False
        followed = self._followed
        for event in events:
            mask = event.mask
            if mask & (IN_IGNORED | IN_MOVE_SELF | IN_Q_OVERFLOW):
                self._lost(event.wd, mask)
                changed = True
                continue
            names = self._names.get(event.wd)
            if names is None or event.name in names:
                changed = True
            kept = followed.get(event.wd)
            if kept is None:
                continue
            if event.name and len(kept) < MAX_NAMES:
                kept.add(event.name)
            else:  # the directory itself, or more than a listing costs
                del followed[event.wd]
        return changed

    def _lost(self, wd: int, mask: int) -> None:
        """What a watch told can no longer be trusted: its directory went away (``IN_IGNORED``),
        or moved (``IN_MOVE_SELF``: the watch follows the directory, not its path; dropped so
        that the path is watched again), or the queue overflowed (every watch)."""
        if mask & IN_Q_OVERFLOW:
            self._followed.clear()
            return
        self._followed.pop(wd, None)
        path = self._by_wd.pop(wd, None)
        if path is not None:
            del self._paths[path]
        self._names.pop(wd, None)
        if mask & IN_MOVE_SELF:
            try:
                self._inotify.rm_watch(wd)
            except OSError as exc:  # gone meanwhile
                _log.debug("inotify rm_watch failed: %s", exc)

    def close(self) -> None:
        self._inotify.close()
        self._paths.clear()
        self._by_wd.clear()
        self._names.clear()
        self._followed.clear()
