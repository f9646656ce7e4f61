"""The cyclic garbage collector tuned for streaming events, and memory given back when idle.

Role: one function the commands call once their modules are loaded (``tune_collector``), one the
server calls when it has gone quiet (``release_memory``). Boundary: process-wide ``gc`` settings,
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
from typing import cast

__all__ = [
    "MALLOC_ARENAS",
    "YOUNG_THRESHOLD",
    "limit_malloc_arenas",
    "release_memory",
    "tune_collector",
]

YOUNG_THRESHOLD = 20_000
"""Allocations between first-generation collections: more than four times the tracked objects
of the events a full queue holds."""


def tune_collector() -> None:
    """Raise the first-generation threshold and freeze what exists now (idempotent); and, for
    the process's own command, hold glibc to ``MALLOC_ARENAS`` heaps (``limit_malloc_arenas``)."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    gc.freeze()
    limit_malloc_arenas()


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
    load had filled, and pymalloc frees a 1 MiB arena only once its last block is free."""
    sys._clear_type_cache()  # pyright: ignore[reportPrivateUsage]  # CPython, documented
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


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
