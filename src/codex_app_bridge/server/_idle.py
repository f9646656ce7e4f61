"""Idle unload: a loaded thread nobody is subscribed to is unloaded after ``idle_timeout`` seconds.

As 0.163.0 (runtime spec 2.4): closing a connection or ``thread/unsubscribe`` never unloads by
itself; a thread with no subscriber and no running turn (nor one waiting on approval) stays loaded
until the timeout has passed since both became true, then it is unloaded
(``ThreadRegistry.unload``): its runtime is stopped, it leaves ``thread/loaded/list``, and every
initialized connection gets ``thread/status/changed`` ``{type: notLoaded}`` followed by
``thread/closed``. The registry keeps its record: ``thread/read`` still answers (status
``notLoaded``), ``turn/*`` answer ``thread not found``, ``thread/resume`` loads it again (a new
listener and runtime over the kept history) and subscribes the caller.

The real server waits 30 minutes (hard-coded there); ``serve --idle-unload SECONDS`` changes it
here (``0`` never unloads). ``IdleUnloader.run`` polls, at most every second (sooner for short
timeouts), so an unload happens between ``idle_timeout`` and ``idle_timeout`` + one poll.

When an unload leaves no thread loaded, the server has gone quiet: the process's free memory is
given back, at most once per ``RELEASE_INTERVAL`` (a later quiet moment waits for the interval,
never a request), once the server has stayed so ``RELEASE_QUIET`` seconds after the last
unload and the runtimes the unloads stopped have ended (``RUNTIMES_GRACE`` seconds at most).
Why wait: a stopped runtime's tasks and session wind down on the loop after the unload, and
anyio stops a worker thread only once it has been idle 10 s, at the next call that wants one;
released sooner, what they hold (the last threads' events, the idle workers' threads, locks and
queues, made under load) is freed after the release into the interpreter's free lists, or
stays, and keeps the allocator's arenas the load filled resident. First the stored threads'
catalog sheds what it keeps between requests (``ThreadCatalog.shed``, in a worker thread:
parsed rollouts, the notes of the server's writes, SQLite's page cache), then anyio's idle
worker threads are stopped (``stop_idle_workers``: anyio never stops the one its last call
took), then ``_gc.release_memory`` (the interpreter's attribute cache emptied, a full
collection, the package's empty maps shrunk, then glibc's ``malloc_trim``). The catalog and the
workers go first because what they keep was allocated under load, spread over the allocator's
arenas: while it lives, those arenas stay, however empty.
"""

from __future__ import annotations

import logging
import math
import weakref
from array import array
from typing import TYPE_CHECKING, Any, Final, cast

from codex_app_bridge._gc import release_memory

# anyio is imported where the unloader runs: ``serve`` reads DEFAULT_IDLE_UNLOAD_SECONDS before it
# answers ``initialize``, which it does without the event loop (``_first_initialize``)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from codex_app_bridge.server._registry import ThreadRegistry
    from codex_app_bridge.server._runtime import ThreadRuntime
    from codex_app_bridge.server._threads import ThreadRecord
    from codex_app_bridge.storage import ThreadCatalog

__all__ = [
    "DEFAULT_IDLE_UNLOAD_SECONDS",
    "RELEASE_INTERVAL",
    "IdleUnloader",
    "is_idle",
    "stop_idle_workers",
]

logger = logging.getLogger(__name__)

DEFAULT_IDLE_UNLOAD_SECONDS: Final = 30 * 60.0
"""The real server's ``THREAD_UNLOADING_DELAY``."""

_MAX_POLL = 1.0

RELEASE_INTERVAL: Final = 30.0
"""Seconds between two releases of free memory (each is a full collection)."""

RELEASE_QUIET: Final = 11.0
"""Seconds without an unload before a release: anyio's worker threads idle for 10 s then go."""

RUNTIMES_GRACE: Final = 30.0
"""Seconds after the last unload past which a release no longer waits for the runtimes the
unloads stopped to end."""


def is_idle(record: ThreadRecord) -> bool:
    """Loaded, nobody subscribed, and no turn running or waiting."""
    return (
        record.loaded
        and not record.listener.subscriber_ids()
        and record.active_turn_id is None
        and record.listener.status.type != "active"
    )


class IdleUnloader:
    """Unloads threads idle for ``timeout`` seconds (see the module docstring)."""

    def __init__(
        self,
        threads: Callable[[], ThreadRegistry | None],
        timeout: float,
        catalog: Callable[[], ThreadCatalog | None] = lambda: None,
    ) -> None:
        """``threads()``: the server's registry, ``None`` until it has one (no thread yet);
        ``catalog()``: the stored threads' catalog, ``None`` while there is none."""
        if timeout <= 0:
            raise ValueError("the idle timeout must be positive")
        self._threads = threads
        self._catalog = catalog
        self.timeout = timeout
        self._idle_since: dict[str, float] = {}
        self._release_due = False
        self._moments = array("d", (-math.inf, -math.inf))
        """The last unload and the last release (``_unloaded_at``, ``_released_at``), kept as
        doubles, not as float objects: the last unload's time is made under load, and a float
        kept past the release held one of the allocator's 1 MiB arenas resident by itself."""
        self._stopping: weakref.WeakSet[ThreadRuntime] = weakref.WeakSet()
        """Runtimes the unloads stopped, until a release (or freed)."""
        self.quiet = RELEASE_QUIET
        """Seconds without an unload before a release (``RELEASE_QUIET``)."""
        self.release: Callable[[], Awaitable[object]] = self._release
        """What gives memory back once no thread is loaded (see the module docstring)."""

    @property
    def _unloaded_at(self) -> float:
        return self._moments[0]

    @_unloaded_at.setter
    def _unloaded_at(self, value: float) -> None:
        self._moments[0] = value

    @property
    def _released_at(self) -> float:
        return self._moments[1]

    @_released_at.setter
    def _released_at(self, value: float) -> None:
        self._moments[1] = value

    @property
    def poll_interval(self) -> float:
        return min(_MAX_POLL, self.timeout / 4)

    async def run(self) -> None:
        import anyio

        while True:
            await anyio.sleep(self.poll_interval)
            await self.check()

    async def check(self) -> None:
        """One pass: note newly idle threads, unload those idle for the whole timeout."""
        import anyio

        now = anyio.current_time()
        seen: set[str] = set()
        threads = self._threads()
        if threads is None:
            return
        for record in threads:
            if not is_idle(record):
                continue
            seen.add(record.id)
            since = self._idle_since.setdefault(record.id, now)
            if now - since >= self.timeout:
                del self._idle_since[record.id]
                if record.runtime is not None:
                    self._stopping.add(record.runtime)
                await threads.unload(record)
                self._release_due = True
                self._unloaded_at = now
        for thread_id in set(self._idle_since) - seen:
            del self._idle_since[thread_id]
        if self._release_due and now - self._released_at >= RELEASE_INTERVAL:
            if any(record.loaded for record in threads):
                self._release_due = False
            elif (
                now > self._unloaded_at
                and now - self._unloaded_at >= self.quiet
                and (
                    all(runtime.ended for runtime in self._stopping)
                    or now - self._unloaded_at >= RUNTIMES_GRACE
                )
            ):
                self._stopping.clear()
                await self.release()
                self._released_at = now
                self._release_due = False

    async def _release(self) -> None:
        import anyio.to_thread

        catalog = self._catalog()
        try:
            # in a worker thread even without a catalog: anyio stops the idle ones then
            await anyio.to_thread.run_sync(_shed, catalog)
        except Exception:  # the index is a cache: a failure here costs memory, nothing else
            logger.warning("the thread index kept its caches", exc_info=True)
        stop_idle_workers()
        release_memory()


def stop_idle_workers() -> int:
    """Stop anyio's idle worker threads on this event loop, and wait (1 s at most each) until
    they have ended; how many were stopped. anyio stops an idle worker only at a later call
    that wants one, and never the one that call takes, so one worker made under load outlived
    every release: its thread object, queue, locks and conditions, spread over arenas the load
    filled, kept about one 1 MiB arena resident apiece (after a soak of 30 clients, 3 of the
    14 arenas left). The next call that wants a worker starts a new one. Reaches into anyio's
    thread pool (``_threadpool_idle_workers``, anyio 4): with another anyio, stops none."""
    try:
        from anyio._backends._asyncio import (
            _threadpool_idle_workers,  # pyright: ignore[reportPrivateUsage]
        )

        idle = _threadpool_idle_workers.get()
    except (ImportError, LookupError):  # another anyio, or no worker ever started
        return 0
    stopped = cast("list[Any]", list(idle))  # anyio's WorkerThread
    for worker in stopped:
        worker.root_task.remove_done_callback(worker.stop)
        worker.stop()  # (takes it off the idle list)
    for worker in stopped:
        worker.join(1.0)  # it ends as soon as it reads the stop; the loop is quiet
    return len(stopped)


def _shed(catalog: ThreadCatalog | None) -> None:
    if catalog is not None:
        catalog.shed()
