"""What a loaded thread holds once its turn has completed and it waits, idle, to be unloaded.

The server's memory after a load follows the load's peak (``README``, issue 23: each allocator
arena made under load keeps a block alive at the release), and the peak is mostly idle loaded
threads, so what one of them holds is the figure that matters: measured with ``tracemalloc``
over many threads, each started and played one turn of the built-in agent."""

from __future__ import annotations

import gc
import tracemalloc

import anyio

from codex_app_bridge.testing import in_process_bridge

THREADS = 60

IDLE_THREAD_BYTES = 20 * 1024
"""A generous bound: 43 KiB before a finished turn's history was kept encoded (``HistoryLog``),
the listener stopped keeping the last token usage, storage the last ``task_started`` and the
sessions their bounded deques; 25 KiB with them; 13 KiB once an idle thread's runtime and
session let their tasks go (``ParkableSession``)."""


def _idle_thread_bytes() -> float:
    async def run() -> float:
        async with in_process_bridge() as client:

            async def one() -> None:
                thread = await client.start_thread()
                (await client.run_turn(thread, "alpha beta gamma delta " * 10)).assert_completed()
                client.received.clear()

            for _ in range(10):  # models, caches and free lists filled once: not in the figure
                await one()
            gc.collect()
            tracemalloc.start()
            try:
                for _ in range(THREADS):
                    await one()
                gc.collect()
                held, _ = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            return held / THREADS

    return anyio.run(run)


def test_an_idle_loaded_thread_holds_little() -> None:
    held = _idle_thread_bytes()
    print(f"idle loaded thread: {held:.0f} bytes")
    assert held < IDLE_THREAD_BYTES, f"an idle loaded thread holds {held:.0f} bytes"
