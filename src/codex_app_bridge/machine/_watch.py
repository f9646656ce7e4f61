"""``fs/watch``: changes under a path reported as 0.163.0 reports them, from inotify (no polling).

``Watcher`` owns one inotify descriptor (``codex_app_bridge._inotify``) read on the event loop. A watch of a
directory reports its direct children that were created, modified, moved or removed; a watch of a
file reports the file; a path that does not exist yet is watched through its parent and reported
once it appears. Changes are batched (``DEBOUNCE_S``) and each batch is one ``on_change(watch_id,
paths)`` per watch, paths sorted, as 0.163.0's debounced ``fs/changed``.

Boundary: no JSON-RPC; the server's handler turns batches into notifications.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

import anyio

from codex_app_bridge._inotify import (
    IN_ATTRIB,
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_MODIFY,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    INotify,
)

__all__ = ["DEBOUNCE_S", "Watcher"]

DEBOUNCE_S: Final = 0.5
_MASK: Final = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)


OnChange = Callable[[str, list[str]], Awaitable[None]]


@dataclass(eq=False)
class _Watch:
    watch_id: str
    path: str
    """The canonical path watched (reported back by ``fs/watch``)."""
    target: str
    """The directory inotify watches: ``path`` itself, or its parent for a file or a path that
    does not exist yet."""
    only: str | None
    """The name inside ``target`` this watch reports (a file watch), else ``None``."""


@dataclass(eq=False)
class Watcher:
    on_change: OnChange
    _inotify: INotify | None = None
    _watches: dict[str, _Watch] = field(default_factory=dict[str, _Watch])
    _by_wd: dict[int, set[str]] = field(default_factory=dict[int, set[str]])
    _wd_of: dict[str, int] = field(default_factory=dict[str, int])
    _pending: dict[str, set[str]] = field(default_factory=dict[str, set[str]])
    _wake: anyio.Event = field(default_factory=anyio.Event)
    _closed: bool = False

    def __contains__(self, watch_id: str) -> bool:
        return watch_id in self._watches

    def add(self, watch_id: str, path: str) -> str:
        """Watch ``path`` (absolute); its canonical form. ``OSError`` if inotify refuses."""
        canonical = os.path.realpath(path)
        if os.path.isdir(canonical):
            target, only = canonical, None
        else:
            target, only = os.path.dirname(canonical), os.path.basename(canonical)
        if self._inotify is None:
            self._inotify = INotify.open()
        watch = _Watch(watch_id, canonical, target, only)
        if os.path.isdir(target):
            wd = self._inotify.add_watch(target, _MASK)
            self._by_wd.setdefault(wd, set()).add(watch_id)
            self._wd_of[watch_id] = wd
        self._watches[watch_id] = watch
        self._wake.set()
        return canonical

    def remove(self, watch_id: str) -> None:
        self._watches.pop(watch_id, None)
        self._pending.pop(watch_id, None)
        wd = self._wd_of.pop(watch_id, None)
        if wd is None:
            return
        users = self._by_wd.get(wd, set())
        users.discard(watch_id)
        if not users:
            self._by_wd.pop(wd, None)
            if self._inotify is not None:
                with contextlib.suppress(OSError):
                    self._inotify.rm_watch(wd)

    def close(self) -> None:
        self._closed = True
        for watch_id in list(self._watches):
            self.remove(watch_id)
        if self._inotify is not None:
            with contextlib.suppress(OSError):
                self._inotify.close()
            self._inotify = None
        self._wake.set()

    async def run(self) -> None:
        """Read events until ``close``; report each batch after ``DEBOUNCE_S`` of quiet."""
        while not self._closed:
            inotify = self._inotify
            if inotify is None:
                await self._wake.wait()
                self._wake = anyio.Event()
                continue
            try:
                await anyio.wait_readable(inotify.fileno())
            except (OSError, anyio.ClosedResourceError):
                return
            if self._closed:
                return
            self._collect(inotify)
            with anyio.move_on_after(DEBOUNCE_S):
                while True:  # gather the rest of the burst
                    await anyio.wait_readable(inotify.fileno())
                    self._collect(inotify)
            pending, self._pending = self._pending, {}
            for watch_id, paths in pending.items():
                if watch_id in self._watches and paths:
                    await self.on_change(watch_id, sorted(paths))

    def _collect(self, inotify: INotify) -> None:
        try:
            events = inotify.read()
        except OSError:
            return
        for event in events:
            for watch_id in self._by_wd.get(event.wd, ()):
                watch = self._watches.get(watch_id)
                if watch is None:
                    continue
                name = event.name
                if watch.only is not None and name and name != watch.only:
                    continue
                path = os.path.join(watch.target, name) if name else watch.target
                self._pending.setdefault(watch_id, set()).add(path)
