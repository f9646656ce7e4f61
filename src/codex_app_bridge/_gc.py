"""The cyclic garbage collector tuned for streaming events, and memory given back when idle.

Role: one function the commands call once their modules are loaded (``tune_collector``), one the
server calls when it has gone quiet (``release_memory``), and a hold of the collector over
``serve``'s first requests, which load the rest of the package (``hold_collector``,
``resume_collector``). Boundary: process-wide ``gc`` settings,
the interpreter's attribute cache and the C allocator only.

Why: a thread's events are short-lived and acyclic (freed by reference counting), but up to a
queue's worth of them (``EVENT_HIGH_WATER`` envelopes, four or five tracked objects each) are
alive at any moment. With CPython's default first-generation threshold (700 allocations) every
collection finds a batch in flight and promotes it, so the old generation grows by tens of
thousands of objects a second and a full collection, which walks every model class and schema the
process has built, runs every few thousand events: measured on a 400,000-delta turn, 28 full
collections took 2.6 s of a 10.9 s turn (16.0 us of CPU per delta against 11.4 us tuned).

A first-generation threshold well above what is in flight lets a batch die young, and freezing
what exists once the modules are loaded (imported classes, built schemas) keeps full collections
from walking it again. Cyclic garbage still gets collected, only after more allocations.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "MALLOC_ARENAS",
    "YOUNG_THRESHOLD",
    "drop_empty_storage",
    "forget_on_release",
    "hold_collector",
    "limit_malloc_arenas",
    "release_memory",
    "reserve_future_iterators",
    "resume_collector",
    "tune_collector",
    "use_system_allocator",
]

YOUNG_THRESHOLD = 20_000
"""Allocations between first-generation collections: more than four times the tracked objects
of the events a full queue holds."""


def tune_collector() -> None:
    """Raise the first-generation threshold and freeze what exists now (idempotent); and, for
    the process's own command, hold glibc to ``MALLOC_ARENAS`` heaps (``limit_malloc_arenas``)."""
    global _tuned
    _tuned = True
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    # not imported for it: ``serve`` answers its first requests before asyncio is loaded, and
    # reserves once its event loop's modules are (``cli._serve``)
    if "asyncio" in sys.modules:
        reserve_future_iterators()
    gc.freeze()
    limit_malloc_arenas()


_tuned = False
"""``tune_collector`` ran: the collector is the process's own command's to tune."""
_held = False


def hold_collector() -> None:
    """Stop the cyclic collector until ``resume_collector``: for ``serve`` on stdio, whose
    first requests (a ``thread/start`` right behind ``initialize``) import most of the package
    and build its models, objects that all live as long as the process. Collecting among them
    found nothing: about 5 first-generation collections, 10-15 ms of the ~270 ms of CPU from
    the ``initialize`` answer to the ``thread/start`` answer (bench/startup.py's spawns).
    Only once ``tune_collector`` ran: an embedding caller of ``main(argv)`` keeps its
    settings."""
    global _held
    if _tuned and gc.isenabled():
        gc.disable()
        _held = True


def resume_collector() -> None:
    """End ``hold_collector`` (once; nothing if it did not stop the collector): what exists
    now is frozen, as ``tune_collector`` froze the command's modules (a first collection would
    otherwise walk every object made meanwhile, the request path's tens of milliseconds; what
    few cycles were made in the hold, a few hundred objects, are never collected), and the
    collector runs again."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()


MALLOC_ARENAS = 2
"""glibc heaps the process allocates from (``M_ARENA_MAX``; glibc's default is 8 per core)."""

_M_ARENA_MAX = -8  # malloc.h


def limit_malloc_arenas() -> bool:
    """Have glibc share ``MALLOC_ARENAS`` heaps between threads instead of giving each thread
    that allocates one of its own (up to 8 per core), unless ``MALLOC_ARENA_MAX`` says
    otherwise. Why: the server's worker threads (rollout reads, the index's SQLite, imports)
    each got a heap, and a heap stays, with 1-2 MB resident, after its thread is idle or gone:
    after a soak of 30 clients, 13 such heaps held ~20 MB that ``release_memory`` cannot give
    back. Threads allocate under the GIL almost always, so sharing costs no contention worth
    the name. Call before threads start; true if glibc took the setting."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    libc = _libc()
    if libc is None:
        return False
    try:
        mallopt = libc.mallopt
    except AttributeError:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, MALLOC_ARENAS))


_SYSTEM_ALLOCATOR_MARK = "CODEX_APP_BRIDGE_SYSTEM_ALLOCATOR"
"""Set in the environment of the process ``use_system_allocator`` runs again (and only there)."""


def use_system_allocator() -> bool:
    """Run this process's command again, in place (same pid, same arguments, same descriptors),
    with CPython allocating its objects from the C library's malloc (``PYTHONMALLOC=malloc``)
    instead of its own arenas; true in the process that runs so. Nothing happens when
    ``PYTHONMALLOC`` is already set (the user chose), without glibc, or when the new start
    fails (logged; the process goes on as it is). The new process takes both variables out of
    its environment at once, so that what it starts (commands, producers) gets the default.

    Why: CPython's allocator gives a 1 MiB arena back only once every block in it is free, and
    after a busy spell a few blocks that outlive it (a cache entry, a worker's lock, a task's
    context) keep most of those arenas resident however empty: after 3 minutes of 30 soak
    clients, 11-16 arenas of 39-44. glibc's ``malloc_trim`` (``release_memory``) gives back
    every free 4 KiB page of its heaps instead: the same soak ended 3 % above its baseline
    against 17 % (``bench/soak.py``), for about a tenth more CPU per request. For a server
    that runs for weeks with many clients (``serve --listen``), not for a client's own."""
    if os.environ.pop(_SYSTEM_ALLOCATOR_MARK, None) is not None:  # the process started again
        os.environ.pop("PYTHONMALLOC", None)
        return True
    if "PYTHONMALLOC" in os.environ or _malloc_trim() is None or not sys.orig_argv:
        return False
    environment = {**os.environ, "PYTHONMALLOC": "malloc", _SYSTEM_ALLOCATOR_MARK: "1"}
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        os.execve(sys.executable, sys.orig_argv, environment)
    except OSError as exc:  # the interpreter cannot be started again: go on as we are
        import logging

        logging.getLogger(__name__).warning("kept CPython's allocator: %s", exc)
    return False


_FORGETTERS: list[Callable[[], None]] = []


def forget_on_release(forget: Callable[[], None]) -> Callable[[], None]:
    """Have ``release_memory`` call ``forget`` first, every time: a module that keeps the last
    values it saw (a memo of its last answer) registers how to let go of them. Why: what it
    keeps was made under load, in the arenas the load filled, and pymalloc frees a 1 MiB arena
    only once its last block is free: after 30 s of 30 soak clients, a memo's three strings,
    its tuples and its bytes were the only live blocks of 4 of the 14 arenas the load left.
    Returns ``forget`` (usable as a decorator)."""
    _FORGETTERS.append(forget)
    return forget


def release_memory() -> bool:
    """Empty the interpreter's attribute cache, collect every generation, then have glibc give
    its free heap pages back to the system (``malloc_trim(0)``): what a busy spell left free
    stays in the process otherwise (measured after a soak of 30 clients: 2-3 MB of RSS). Costs
    one full collection (tens of ms): call it when the server has gone quiet, never on a
    request's path. True if the allocator was trimmed (Linux with glibc; elsewhere only the
    collection runs).

    The attribute cache (``sys._clear_type_cache``; refilled by the next lookups) keeps a
    reference to the name of the last lookup in each of its 4096 slots, a slot chosen by the
    name's address: the names C code makes for a call (datetime's ``utcoffset`` and ``dst`` on
    a tzinfo, every time an aware datetime is formatted or converted) stay there. After a soak
    of 30 clients a few hundred such strings, made under load, were spread over the arenas the
    load had filled, and pymalloc frees a 1 MiB arena only once its last block is free.

    asyncio's free list of future iterators, which no collection empties, is renewed
    (``_FutureIterators``; it needs ``reserve_future_iterators`` first); what modules
    registered with ``forget_on_release`` is let go of first; the empty maps and sets
    the package's objects hold give back the room they grew (``drop_empty_storage``)."""
    for forget in _FORGETTERS:
        forget()
    sys._clear_type_cache()  # pyright: ignore[reportPrivateUsage]  # CPython, documented
    gc.collect()  # (also empties the free lists of dicts, lists, tuples, floats and contexts)
    drop_empty_storage()
    _FUTURE_ITERATORS.renew()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


_PACKAGE = __name__.rpartition(".")[0] + "."
_EMPTY_SIZE: dict[type, int] = {dict: sys.getsizeof({}), set: sys.getsizeof(set[object]())}


def drop_empty_storage() -> int:
    """Clear every empty ``dict`` and ``set`` that an object of this package holds
    (an attribute, or a value of a map it holds) and that kept the room it grew to; the number
    cleared. Clearing an empty container changes nothing a reader can see; it frees its table.

    Why: a map keyed by thread or connection (the storage's writers, the hub's routes, the
    index's notes) grows under load and keeps its table when its entries go; the table was
    allocated under load, and measured after a soak of 30 clients, such tables were among the
    few blocks left in otherwise empty 1 MiB arenas of pymalloc, which frees an arena only once
    its last block is free. Costs one walk of the collector's objects (a few ms): for
    ``release_memory`` only."""
    cleared = 0
    for owner in gc.get_objects():
        if not type(owner).__module__.startswith(_PACKAGE):
            continue
        for held in cast("list[object]", gc.get_referents(owner)):
            kind = type(held)
            if kind is dict and held:  # an instance's attributes, or a map it holds: one level in
                for value in cast("dict[object, object]", held).values():
                    cleared += _clear_if_grown_empty(value)
            else:
                cleared += _clear_if_grown_empty(held)
    return cleared


def _clear_if_grown_empty(value: object) -> int:
    kind = type(value)
    empty = _EMPTY_SIZE.get(kind)
    if empty is None or value or sys.getsizeof(value) <= empty:
        return 0
    cast("dict[object, object] | set[object]", value).clear()
    return 1


class _LoopStandIn:
    """What ``asyncio.Future`` asks of its loop when nothing is ever scheduled on it."""

    def get_debug(self) -> bool:
        return False


class _FutureIterators:
    """Renews the free list of future iterators that asyncio's C module keeps.

    Every ``await`` on an asyncio future holds an iterator (48 bytes) while the task waits;
    ``_asyncio`` keeps up to ``FREE_LIST`` of the freed ones for reuse and never gives them
    back. Under load (hundreds of tasks waiting at once: a loaded thread's runtime and session,
    every connection's reader and writer) the iterators beyond the list are allocated from the
    arenas the load fills, and once the load is gone, whichever ``FREE_LIST`` were freed first
    stay in the list, scattered over those arenas: measured after 60 s of 30 soak clients,
    about 210 of them in 12 of the 15 arenas (1 MiB each, freed only once empty) the load left.

    ``renew`` empties the list of what it holds: it takes every iterator out of the list, puts
    in the list instead the ``FREE_LIST`` iterators ``reserve`` made at start-up (in the
    arenas start-up filled), so that the ones it took, dropped while the list is full, are
    freed; then it takes its own back out. Without the C free list (another interpreter) it
    only allocates and frees."""

    FREE_LIST = 255  # _asyncio's FI_FREELIST_MAXLEN (CPython 3.11 and 3.12)

    def __init__(self) -> None:
        self._future: asyncio.Future[None] | None = None
        self._kept: list[object] = []

    def _take(self) -> list[object]:
        assert self._future is not None
        return [self._future.__await__() for _ in range(self.FREE_LIST)]

    def reserve(self) -> None:
        if self._future is not None:
            return
        import asyncio

        # a done future on no loop: nothing is ever scheduled on it
        self._future = asyncio.Future(loop=_LoopStandIn())  # pyright: ignore[reportArgumentType]
        self._future.set_result(None)
        self._kept = self._take()

    def renew(self) -> None:
        if self._future is None:
            return
        taken = self._take()  # the list is empty now
        self._kept.clear()  # the list holds ours now
        taken.clear()  # freed: the list is full
        self._kept = self._take()  # ours out again: the list is empty


_FUTURE_ITERATORS = _FutureIterators()


def reserve_future_iterators() -> None:
    """Make, once, the future iterators ``release_memory`` puts in asyncio's free list in place
    of those it holds (``_FutureIterators``); call it before a load, at start-up, so that they
    are in the arenas start-up filled (``tune_collector`` does once asyncio is loaded, ``serve``
    before its event loop starts)."""
    _FUTURE_ITERATORS.reserve()


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The process's C library on Linux with glibc (``malloc_trim`` is glibc's only)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.malloc_trim  # noqa: B018  # musl has none
    except (OSError, AttributeError):
        return None
    return libc


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    libc = _libc()
    if libc is None:
        return None
    trim = libc.malloc_trim
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return cast("Callable[[int], int]", trim)
