"""What a loaded thread holds once its turn has completed and it waits, idle, to be unloaded.

The server's memory after a load follows the load's peak (``README``, issue 23: each allocator
arena made under load keeps a block alive at the release), and the peak is mostly idle loaded
threads, so what one of them holds is the figure that matters: measured with ``tracemalloc``
over many threads, each started and played one turn, of the built-in agent or of the model
source (against the in-repo mock Responses API, in this process: its request log is emptied
after each turn, so that only the server's holdings count)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import anyio

from codex_app_bridge.agent._session import ModelSession
from codex_app_bridge.testing import in_process_bridge
from tests.agent._harness import model_bridge

if TYPE_CHECKING:
    from codex_app_bridge.config import EffectiveConfig

THREADS = 60
PROMPT = "alpha beta gamma delta " * 10

IDLE_THREAD_BYTES = 20 * 1024
"""A generous bound: 43 KiB before a finished turn's history was kept encoded (``HistoryLog``),
the listener stopped keeping the last token usage, storage the last ``task_started`` and the
sessions their bounded deques; 25 KiB with them; 13 KiB once an idle thread's runtime and
session let their tasks go (``ParkableSession``)."""

IDLE_MODEL_THREAD_BYTES = 44 * 1024
"""A model-backed thread holds more (its session keeps the model's history, its settings and
prompt pieces): 55 KiB while its session's task, and the machine tools it held open, stayed for
the thread's life; 32 KiB once it parks (``ModelSession.park``); 29 KiB once the context key
it keeps holds its approval policy as text, not as orjson's bytes (below)."""


async def _held_per_thread(one: Callable[[], Awaitable[None]]) -> float:
    """Bytes still allocated per thread after ``THREADS`` calls of ``one``, once models,
    caches and free lists were filled by ten calls that are not in the figure."""
    for _ in range(10):
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


def _idle_thread_bytes() -> float:
    async def run() -> float:
        async with in_process_bridge() as client:

            async def one() -> None:
                thread = await client.start_thread()
                (await client.run_turn(thread, PROMPT)).assert_completed()
                client.received.clear()

            return await _held_per_thread(one)

    return anyio.run(run)


def _idle_model_thread_bytes(tmp_path: Path) -> float:
    async def run() -> float:
        async with model_bridge(tmp_path, "plain", limit=600, text=PROMPT) as (_, client, mock):

            async def one() -> None:
                thread = await client.start_thread()
                _, messages = await client.run_turn(thread, PROMPT)
                assert messages[-1]["params"]["turn"]["status"] == "completed"
                client.received.clear()
                mock.set_scenario("plain", text=PROMPT)  # empties the mock's request log

            return await _held_per_thread(one)

    return anyio.run(run)


def test_an_idle_loaded_thread_holds_little() -> None:
    held = _idle_thread_bytes()
    print(f"idle loaded thread: {held:.0f} bytes")
    assert held < IDLE_THREAD_BYTES, f"an idle loaded thread holds {held:.0f} bytes"


def test_an_idle_loaded_model_thread_holds_little(tmp_path: Path) -> None:
    held = _idle_model_thread_bytes(tmp_path)
    print(f"idle loaded model thread: {held:.0f} bytes")
    assert held < IDLE_MODEL_THREAD_BYTES, f"an idle loaded model thread holds {held:.0f} bytes"


def test_a_model_sessions_context_key_keeps_no_serializer_buffer() -> None:
    # the bytes orjson returns keep the whole buffer it wrote into (4 KiB for a policy name),
    # and a model session keeps its context key for as long as its thread is loaded
    settings = cast("EffectiveConfig", SimpleNamespace(approval_policy="never", sandbox_mode="x"))
    tracemalloc.start()
    try:
        keys = [ModelSession._key(settings, "/work") for _ in range(100)]  # pyright: ignore[reportPrivateUsage]
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held / len(keys) < 512, f"a context key holds {held / len(keys):.0f} bytes"
