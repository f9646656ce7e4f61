"""Connection close and unsubscribe drop subscriptions; a thread nobody is subscribed to is
unloaded after the idle timeout with ``thread/status/changed`` notLoaded then ``thread/closed``,
as 0.163.0; it can be read, not driven, and ``thread/resume`` loads it again."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import cast

import anyio
import anyio.to_thread
import orjson
import pytest

from codex_app_bridge.server._runtime import ThreadRuntime
from tests.e2e._harness import Bridge, Message, Session, methods, open_bridge
from tests.storage._homes import files_held, index_open

pytestmark = pytest.mark.anyio

IN_PROCESS = ("memory", "unix", "websocket")
IDLE = 0.05


def closed(thread_id: str) -> Callable[[Message], bool]:
    def check(message: Message) -> bool:
        return message.get("method") == "thread/closed" and (
            message["params"]["threadId"] == thread_id
        )

    return check


@asynccontextmanager
async def two_clients(
    kind: str = "memory", codex_home: Path | None = None
) -> AsyncIterator[tuple[Bridge, Session, Session]]:
    """A bridge that unloads after ``IDLE``, with an initialized client that drives threads
    and a watcher that sees every thread's ``thread/closed``."""
    async with open_bridge(kind, idle_unload=IDLE, codex_home=codex_home) as bridge:
        server = bridge.server
        if server is not None and server.idle_unloader is not None:
            server.idle_unloader.quiet = 0.0  # no worker threads to wait for (``server._idle``)
        client: Session = await bridge.connect()
        watcher: Session = await bridge.connect()
        await client.initialize(name="client")
        await watcher.initialize(name="watcher")
        yield bridge, client, watcher


async def unload(client: Session, watcher: Session, thread_id: str) -> None:
    """``client`` leaves ``thread_id`` and the watcher sees it unloaded."""
    await client.result("thread/unsubscribe", {"threadId": thread_id})
    await watcher.until(closed(thread_id))


@pytest.mark.parametrize("kind", IN_PROCESS)
async def test_an_unsubscribed_thread_is_unloaded_after_the_idle_timeout(kind: str) -> None:
    async with two_clients(kind) as (_, alice, watcher):
        idle = await alice.start_thread()
        await alice.run_turn(idle, "before unload")
        kept = await alice.start_thread()  # alice stays subscribed to this one
        status = await alice.result("thread/unsubscribe", {"threadId": idle})
        assert status == {"status": "unsubscribed"}

        seen = await watcher.until(closed(idle))
        tail = seen[-2:]
        assert methods(tail) == ["thread/status/changed", "thread/closed"]
        assert tail[0]["params"] == {"threadId": idle, "status": {"type": "notLoaded"}}
        assert tail[1]["params"] == {"threadId": idle}

        loaded = await watcher.result("thread/loaded/list", {})
        assert loaded["data"] == [kept]
        read = await watcher.result("thread/read", {"threadId": idle})
        assert read["thread"]["status"] == {"type": "notLoaded"}
        refused = await watcher.call(
            "turn/start", {"threadId": idle, "input": [{"type": "text", "text": "x"}]}
        )
        assert refused["error"] == {"code": -32600, "message": f"thread not found: {idle}"}
        gone = await watcher.result("thread/unsubscribe", {"threadId": idle})
        assert gone == {"status": "notLoaded"}

        # Resuming loads it again with its history, subscribed, and it runs turns.
        resumed = await watcher.result("thread/resume", {"threadId": idle})
        assert resumed["thread"]["status"] == {"type": "idle"}
        assert len(resumed["thread"]["turns"]) == 1
        assert sorted((await watcher.result("thread/loaded/list", {}))["data"]) == sorted(
            [idle, kept]
        )
        _, messages = await watcher.run_turn(idle, "after reload")
        assert messages[-1]["params"]["turn"]["status"] == "completed"
        read = await watcher.result("thread/read", {"threadId": idle, "includeTurns": True})
        assert len(read["thread"]["turns"]) == 2


@pytest.mark.parametrize("kind", IN_PROCESS)
async def test_closing_the_only_subscriber_lets_the_thread_unload(kind: str) -> None:
    async with two_clients(kind) as (bridge, owner, watcher):
        thread_id = await owner.start_thread()
        await owner.run_turn(thread_id, "hello")
        server = bridge.server
        assert server is not None
        listener = server.hub.get(thread_id)
        assert listener is not None
        assert len(listener.subscriber_ids()) == 1
        await owner.close()
        await watcher.until(closed(thread_id))
        assert listener.subscriber_ids() == []
        assert server.hub.loaded_thread_ids() == []


def _rollouts_open(home: Path) -> list[str]:
    """The rollout files of ``home`` this process holds a descriptor on."""
    return [path for path in files_held(home) if path.endswith(".jsonl")]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
async def test_an_unloaded_stored_thread_holds_no_descriptor_and_resumes_from_its_rollout(
    tmp_path: Path,
) -> None:
    # issue 23.1: every unloaded thread kept its rollout open (fds grew without bound)
    home = tmp_path / "home"
    async with two_clients(codex_home=home) as (bridge, client, watcher):
        threads = [await client.start_thread() for _ in range(5)]
        for thread_id in threads:
            await client.run_turn(thread_id, f"turn of {thread_id}")
        assert len(_rollouts_open(home)) == 5
        for thread_id in threads:
            await client.result("thread/unsubscribe", {"threadId": thread_id})
        for thread_id in threads:
            await watcher.until(closed(thread_id))
        assert _rollouts_open(home) == []
        server = bridge.server
        assert server is not None
        assert server.threads is not None
        assert len(server.threads) == 0  # nothing of them kept in memory: the rollout has it

        first = threads[0]
        read = await watcher.result("thread/read", {"threadId": first, "includeTurns": True})
        assert read["thread"]["status"] == {"type": "notLoaded"}
        assert len(read["thread"]["turns"]) == 1
        resumed = await watcher.result("thread/resume", {"threadId": first})
        assert len(resumed["thread"]["turns"]) == 1
        _, messages = await watcher.run_turn(first, "after reload")
        assert messages[-1]["params"]["turn"]["status"] == "completed"
        assert len(_rollouts_open(home)) == 1
        read = await watcher.result("thread/read", {"threadId": first, "includeTurns": True})
        assert [t["status"] for t in read["thread"]["turns"]] == ["completed", "completed"]
        # the rollout is one file, appended: ordinals continue across the unload
        (path,) = _rollouts_open(home)
        data = await anyio.Path(path).read_bytes()
        ordinals = [orjson.loads(line).get("ordinal") for line in data.splitlines()]
        assert ordinals[1:] == list(range(ordinals[1], ordinals[1] + len(ordinals) - 1))


async def test_an_unloaded_stored_thread_is_freed_by_reference_counting(tmp_path: Path) -> None:
    # issue 23's soak: an unloaded thread's record, runtime, session and history made a cycle
    # (the registry's callbacks hold the record, the session's queue wakes the runtime), freed
    # only by a full collection: 100,000 objects waited for it, and the allocator's arenas
    # they filled were never given back
    async with two_clients(codex_home=tmp_path / "home") as (bridge, client, watcher):
        thread_id = await client.start_thread()
        await client.run_turn(thread_id, "a turn to keep")
        server = bridge.server
        assert server is not None
        assert server.threads is not None
        record = server.threads.get(thread_id)
        assert record is not None
        assert record.runtime is not None
        freed = {"record": anyio.Event(), "runtime": anyio.Event(), "listener": anyio.Event()}
        weakref.finalize(record, freed["record"].set)
        weakref.finalize(record.runtime, freed["runtime"].set)
        weakref.finalize(record.listener, freed["listener"].set)
        del record
        collecting = gc.isenabled()
        gc.disable()  # only reference counting frees anything now
        try:
            await client.result("thread/unsubscribe", {"threadId": thread_id})
            await watcher.until(closed(thread_id))
            with anyio.fail_after(60):
                for event in freed.values():
                    await event.wait()
        finally:
            if collecting:
                gc.enable()
        # and it comes back from its rollout
        resumed = await watcher.result("thread/resume", {"threadId": thread_id})
        assert len(resumed["thread"]["turns"]) == 1
        _, messages = await watcher.run_turn(thread_id, "after reload")
        assert messages[-1]["params"]["turn"]["status"] == "completed"


async def test_memory_is_given_back_once_the_last_thread_is_unloaded() -> None:
    # issue 23's soak: what a busy spell left free stayed in the process; once no thread is
    # loaded, the unloader collects and trims (``_gc.release_memory``), not before
    async with two_clients() as (bridge, client, watcher):
        server = bridge.server
        assert server is not None
        unloader = server.idle_unloader
        assert unloader is not None
        released = anyio.Event()
        loaded_then: list[list[str]] = []
        runtimes_then: list[list[bool]] = []
        runtimes: list[ThreadRuntime] = []

        async def release() -> None:
            assert server.threads is not None
            loaded_then.append([r.id for r in server.threads if r.loaded])
            runtimes_then.append([runtime.ended for runtime in runtimes])
            released.set()

        unloader.release = release
        first, second = await client.start_thread(), await client.start_thread()
        for thread_id in (first, second):
            await client.run_turn(thread_id, "some work")
            record = server.threads.get(thread_id) if server.threads is not None else None
            assert record is not None
            assert record.runtime is not None
            runtimes.append(record.runtime)
        del record
        await unload(client, watcher, first)
        await unload(client, watcher, second)
        with anyio.fail_after(60):
            await released.wait()
        assert loaded_then == [[]]
        # after the runtimes the unloads stopped have ended: what they held (the threads' last
        # events) was freed before the release, not after it into the interpreter's free lists
        assert runtimes_then == [[True, True]]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
async def test_the_stored_threads_index_is_closed_once_the_last_thread_is_unloaded(
    tmp_path: Path,
) -> None:
    # issue 23's soak: what the index keeps between requests (SQLite's caches, parsed
    # rollouts, the notes of the server's writes) was allocated under load and outlived it,
    # holding the allocator's arenas it is spread over; a quiet server gives it back
    home = tmp_path / "home"
    async with two_clients(codex_home=home) as (bridge, client, watcher):
        released = _told_of_releases(bridge)
        thread_id = await client.start_thread()
        await client.run_turn(thread_id, "stored")
        await client.result("thread/list", {})  # the index is opened
        assert index_open(home)
        await unload(client, watcher, thread_id)
        with anyio.fail_after(60):
            await released.wait()
        assert not index_open(home)
        # and opened again on the next use, which answers as before
        listed = await client.result("thread/list", {})
        assert [thread["id"] for thread in listed["data"]] == [thread_id]
        resumed = await watcher.result("thread/resume", {"threadId": thread_id})
        assert len(resumed["thread"]["turns"]) == 1


def _told_of_releases(bridge: Bridge) -> anyio.Event:
    """An event set once the server's next release of memory (``server._idle``) has ended."""
    server = bridge.server
    assert server is not None
    unloader = server.idle_unloader
    assert unloader is not None
    release, released = unloader.release, anyio.Event()

    async def release_then_tell() -> None:
        await release()
        released.set()

    unloader.release = release_then_tell
    return released


async def test_the_release_leaves_no_worker_thread_nor_a_time_made_under_load(
    tmp_path: Path,
) -> None:
    # issue 23's soak: anyio stops an idle worker only at a later call that wants one, never
    # the one it takes, so the worker that ran the release's shedding, made under load,
    # outlived every release; it and the unloader's last unload time (a float) were among the
    # few blocks left in otherwise empty 1 MiB arenas of the allocator
    async with two_clients(codex_home=tmp_path / "home") as (bridge, client, watcher):
        server = bridge.server
        assert server is not None
        unloader = server.idle_unloader
        assert unloader is not None
        floats_kept = {id(value) for value in vars(unloader).values() if type(value) is float}
        released = _told_of_releases(bridge)
        thread_id = await client.start_thread()
        await client.run_turn(thread_id, "some work")
        both = threading.Barrier(2, timeout=30)
        async with anyio.create_task_group() as group:  # two workers at once, as under load
            for _ in range(2):
                group.start_soon(anyio.to_thread.run_sync, both.wait)
        assert len(_workers()) >= 2
        await unload(client, watcher, thread_id)
        with anyio.fail_after(60):
            await released.wait()
        for worker in _workers():  # stopped threads end at once; the join only waits for that
            worker.join(5)
        assert _workers() == []
        new = {id(v) for v in vars(unloader).values() if type(v) is float} - floats_kept
        assert new == set()
        # the next call that wants a worker gets a new one
        assert await anyio.to_thread.run_sync(lambda: threading.current_thread().name) == (
            "AnyIO worker thread"
        )


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "AnyIO worker thread" and t.is_alive()]


async def test_nothing_of_a_resumed_then_unloaded_thread_stays_in_a_table(tmp_path: Path) -> None:
    # issue 23's soak: a resume asked the thread's goal, and the answer (none) stayed cached
    # for every thread ever resumed
    async with two_clients(codex_home=tmp_path / "home") as (bridge, client, watcher):
        released = _told_of_releases(bridge)
        thread_id = await client.start_thread()
        await client.run_turn(thread_id, "before unload")
        await unload(client, watcher, thread_id)
        with anyio.fail_after(60):  # the release that follows (its worker's locals are not tables)
            await released.wait()
        await client.result("thread/resume", {"threadId": thread_id})
        await client.run_turn(thread_id, "after the resume")
        await unload(client, watcher, thread_id)
        assert _tables_keyed_by({thread_id}) == []


def _tables_keyed_by(thread_ids: set[str]) -> list[str]:
    """Every live dict or set of the process with one of ``thread_ids`` as a key or member
    (alone or in a tuple key): the per-thread tables that still hold those threads."""
    gc.collect()
    found: list[str] = []
    for obj in gc.get_objects():
        if obj is not thread_ids and isinstance(obj, dict | set | frozenset):
            keys = cast("Iterable[object]", obj)
            for key in keys:
                parts = key if isinstance(key, tuple) else (key,)
                if any(isinstance(p, str) and p in thread_ids for p in parts):
                    found.append(f"{type(obj).__name__} of {len(obj)} with {key!r}")
                    break
    return found


async def test_nothing_of_an_unloaded_stored_thread_stays_in_a_table(tmp_path: Path) -> None:
    # issue 23.2: the built-in agent kept every thread's token total, RSS grew with each thread
    async with two_clients(codex_home=tmp_path / "home") as (bridge, client, watcher):
        released = _told_of_releases(bridge)
        threads = [await client.start_thread() for _ in range(5)]
        for thread_id in threads:
            await client.run_turn(thread_id, f"turn of {thread_id}")
            await client.result("thread/unsubscribe", {"threadId": thread_id})
        for thread_id in threads:
            await watcher.until(closed(thread_id))
        with anyio.fail_after(60):  # the release that follows (its worker's locals are not tables)
            await released.wait()
        assert _tables_keyed_by(set(threads)) == []

        # what the agent no longer keeps, the session gets from the history: the usage total
        # goes on after a resume (core seeds it from the rollout's last token_count)
        first = threads[0]
        await watcher.result("thread/resume", {"threadId": first})
        _, messages = await watcher.run_turn(first, "after reload")
        usage = [m for m in messages if m.get("method") == "thread/tokenUsage/updated"][-1]
        total, last = usage["params"]["tokenUsage"]["total"], usage["params"]["tokenUsage"]["last"]
        assert total["totalTokens"] > last["totalTokens"] > 0
