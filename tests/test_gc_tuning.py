"""The collector tuning of ``_gc``: the process's own command applies it, an embedding caller of
``main(argv)`` (the tests, a library user) keeps its own settings; ``release_memory`` collects
and trims; the process's command holds glibc to a few heaps shared by its threads."""

from __future__ import annotations

import asyncio
import gc
import os
import platform
import subprocess
import sys
import tracemalloc
import weakref
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from codex_app_bridge._gc import (
    MALLOC_ARENAS,
    YOUNG_THRESHOLD,
    hold_collector,
    release_memory,
    reserve_future_iterators,
    resume_collector,
)

# history needs a rollout (an empty input is refused)
_ROLLOUT = Path(__file__).resolve().parent / "data" / "captures" / "plain" / "rollout.jsonl"

_PROBE = """
import gc, sys
sys.argv = ["codex-app-bridge", {command}]
from codex_app_bridge.cli import main
before = gc.get_threshold()[0]
code = main({argv})
print(code, before, gc.get_threshold()[0], gc.get_freeze_count() > 0)
"""


def _probe(command: str, argv: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(command=command, argv=argv)],
        input=b"",
        capture_output=True,
        timeout=60,
        check=True,
    )
    return done.stdout.decode().splitlines()[-1].split()  # after what the command printed


def test_the_process_command_tunes_the_collector() -> None:
    code, before, after, frozen = _probe(f'"history", "{_ROLLOUT}"', "")
    assert code == "0"
    assert int(before) < YOUNG_THRESHOLD
    assert int(after) == YOUNG_THRESHOLD
    assert frozen == "True"


def test_an_embedding_caller_keeps_its_settings() -> None:
    code, before, after, frozen = _probe('"history"', f'["history", "{_ROLLOUT}"]')
    assert code == "0"
    assert after == before
    assert frozen == "False"


class _Node:
    next: object = None


def test_an_embedding_caller_keeps_its_collector_running() -> None:
    # the hold of ``serve``'s first requests is the process's own command's (tune_collector)
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    hold_collector()
    try:
        assert gc.isenabled()
    finally:
        resume_collector()
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen


def test_release_memory_collects_cycles_and_trims_glibc() -> None:
    freed: list[str] = []
    cycle = _Node()
    cycle.next = cycle
    weakref.finalize(cycle, freed.append, "cycle")
    del cycle
    collecting = gc.isenabled()
    gc.disable()
    try:
        trimmed = release_memory()
    finally:
        if collecting:
            gc.enable()
    assert freed == ["cycle"]
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert trimmed is glibc


def _grown_then_emptied() -> tuple[dict[str, int], set[int]]:
    table = {f"thread-{n}": n for n in range(40)}
    for key in list(table):
        del table[key]
    members = set(range(40))
    for n in range(40):
        members.discard(n)
    return table, members


class _Holder:
    def __init__(self) -> None:
        self.table, self.members = _grown_then_emptied()
        self.full = {"kept": 1}


class _PackageHolder(_Holder):
    __module__ = "codex_app_bridge.holder"  # as if the package's own


def test_release_memory_drops_the_room_the_packages_empty_containers_grew() -> None:
    # issue 23's soak: a map keyed by thread or connection keeps the table it grew to under
    # load once its entries go; such tables were among the few blocks left in otherwise empty
    # 1 MiB arenas of the allocator after the load
    from codex_app_bridge.rpc.scopes import SerialScopes

    scopes = SerialScopes()
    for ticket in [scopes.enter(f"thread-{n}") for n in range(40)]:
        ticket.release()
    ours, theirs = _PackageHolder(), _Holder()
    empty = (sys.getsizeof({}), sys.getsizeof(set[object]()))
    sizes = (sys.getsizeof(ours.table), sys.getsizeof(ours.members))
    assert sizes[0] > empty[0]
    assert sizes[1] > empty[1]
    assert sys.getsizeof(scopes._queues) > empty[0]  # pyright: ignore[reportPrivateUsage]
    release_memory()
    assert (sys.getsizeof(ours.table), sys.getsizeof(ours.members)) == empty
    assert sys.getsizeof(scopes._queues) == empty[0]  # pyright: ignore[reportPrivateUsage]
    assert ours.full == {"kept": 1}
    # the same containers held by anything else are left as they are
    assert sys.getsizeof(theirs.table) > empty[0]
    assert sys.getsizeof(theirs.members) > empty[1]


def _format_aware(moment: datetime, times: int) -> None:
    for _ in range(times):
        moment.strftime("%Y")  # datetime's C code looks ``dst`` up on the tzinfo by a new name


def test_release_memory_drops_the_names_the_type_cache_kept() -> None:
    # issue 23's soak: CPython's attribute cache (4096 slots) keeps a reference to the name of
    # the last lookup of each slot, chosen by the name's address; the names datetime's C code
    # makes for every ``utcoffset``/``dst`` call stayed, a few hundred of them made under load
    # and spread over the allocator's arenas, each keeping its 1 MiB arena resident
    moment = datetime.now(timezone(timedelta(hours=1)))
    line = _format_aware.__code__.co_firstlineno + 2
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start(1)
    try:
        _format_aware(moment, 2000)
        gc.collect()
        kept = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, __file__, line)])
        release_memory()
        left = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, __file__, line)])
    finally:
        if not tracing:
            tracemalloc.stop()
    assert len(kept.traces) > 10  # what the cache kept (the test proves nothing otherwise)
    assert len(left.traces) == 0


def _iterators(future: asyncio.Future[None], count: int) -> list[object]:
    return [future.__await__() for _ in range(count)]


def test_release_memory_gives_back_the_future_iterators_asyncio_kept() -> None:
    # issue 23's soak: every task waiting on a future holds an iterator, and asyncio's C module
    # keeps up to 255 freed ones for reuse, never given back; after the load, those made under
    # it stayed in the list, scattered over 12 of the 15 arenas the load left resident
    reserve_future_iterators()  # at start-up in the server (``tune_collector``)
    loop = asyncio.new_event_loop()
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start(1)
    try:
        future: asyncio.Future[None] = loop.create_future()
        future.set_result(None)
        before = _iterators(future, 255)  # empties the free list, whatever it held
        made = _iterators(future, 600)  # "under load", where the list has none to give
        line = _iterators.__code__.co_firstlineno + 1
        del made  # 255 go to the free list, the others are freed
        del before  # freed: the list is full
        only_made = [tracemalloc.Filter(True, __file__, line)]
        kept = tracemalloc.take_snapshot().filter_traces(only_made)
        release_memory()
        left = tracemalloc.take_snapshot().filter_traces(only_made)
    finally:
        if not tracing:
            tracemalloc.stop()
        loop.close()
    assert len(kept.traces) >= 200  # what the list kept (the test proves nothing otherwise)
    assert len(left.traces) == 0


_ARENAS_PROBE = """
import ctypes, os, sys, tempfile, threading
sys.argv = ["codex-app-bridge", "history", {rollout!r}]
from codex_app_bridge.cli import main
main()
kept = []
together = threading.Barrier(6)
def allocate():
    together.wait()  # all alive at once: none hands its heap on to the next
    kept.append([bytearray(65536) for _ in range(4)])  # from the thread's glibc heap
    together.wait()
threads = [threading.Thread(target=allocate) for _ in range(6)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
path = tempfile.mktemp()
stream = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, stream)
libc.fclose(stream)
with open(path) as info:
    print(info.read().count("<heap nr="))
os.unlink(path)
"""


@pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"),
    reason="glibc's heaps",
)
def test_the_process_command_shares_a_few_glibc_heaps_between_its_threads() -> None:
    """Six threads that allocate get no heap each (which would stay, resident, after them)."""
    env = {key: value for key, value in os.environ.items() if key != "MALLOC_ARENA_MAX"}
    done = subprocess.run(
        [sys.executable, "-c", _ARENAS_PROBE.format(rollout=str(_ROLLOUT))],
        input=b"",
        capture_output=True,
        timeout=60,
        check=True,
        env=env,
    )
    heaps = int(done.stdout.decode().splitlines()[-1])
    assert heaps <= MALLOC_ARENAS


_GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

_STARTED_AGAIN = """
import os, subprocess, sys
print("pid", os.getpid(), flush=True)
from codex_app_bridge._gc import use_system_allocator
again = use_system_allocator()
with open("/proc/self/environ", "rb") as f:
    initial = f.read().split(b"\\0")
child = subprocess.run(
    [sys.executable, "-c", "import os; print(os.environ.get('PYTHONMALLOC'))"],
    capture_output=True, check=True, timeout=60,
).stdout.decode().strip()
print("again", again, b"PYTHONMALLOC=malloc" in initial, os.environ.get("PYTHONMALLOC"), child)
print("pid", os.getpid(), flush=True)
"""


@pytest.mark.skipif(not _GLIBC, reason="the system allocator is used with glibc only")
def test_use_system_allocator_starts_the_process_again_in_place_under_malloc() -> None:
    # issue 23's soak: CPython's arenas stayed resident after the load, held by a few blocks
    # each; under glibc's malloc, release_memory gives back every free page
    env = {k: v for k, v in os.environ.items() if k != "PYTHONMALLOC"}
    run = subprocess.run(
        [sys.executable, "-c", _STARTED_AGAIN],
        capture_output=True,
        check=True,
        timeout=60,
        env=env,
    )
    lines = run.stdout.decode().splitlines()
    # the first line printed twice (before and after the new start), by the same pid
    assert lines[0] == lines[1] == lines[3]
    # started under malloc; neither variable left for what the process starts
    assert lines[2] == "again True True None None"


@pytest.mark.skipif(not _GLIBC, reason="the system allocator is used with glibc only")
def test_use_system_allocator_leaves_a_chosen_allocator_alone() -> None:
    env = {**os.environ, "PYTHONMALLOC": "pymalloc"}
    run = subprocess.run(
        [sys.executable, "-c", _STARTED_AGAIN],
        capture_output=True,
        check=True,
        timeout=60,
        env=env,
    )
    lines = run.stdout.decode().splitlines()
    assert len(lines) == 3  # not started again
    assert lines[1] == "again False False pymalloc pymalloc"
