"""The model source's session and the ops queued behind a turn's ``user_turn`` before its
task took it: they act on that turn as it starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from codex_app_bridge.protocol.core import TextUserInput
from codex_app_bridge.server._runtime import TurnOrder
from tests.agent._harness import model_bridge
from tests.e2e._harness import is_turn_completed

pytestmark = pytest.mark.anyio

TIMEOUT = 60

JsonObject = dict[str, Any]


async def _all_blocked() -> None:
    """``wait_all_tasks_blocked``, again after the callbacks of tasks that just finished."""
    for _ in range(3):
        await anyio.wait_all_tasks_blocked()
        await anyio.lowlevel.checkpoint()
    await anyio.wait_all_tasks_blocked()


async def test_a_turn_started_and_interrupted_at_once_on_a_model_thread_is_aborted(
    tmp_path: Path,
) -> None:
    # both reach the session's queue before its task runs again: the interrupt acts on the
    # turn as it starts (it waited behind it: the turn ran until the runtime's grace ran out
    # and the runtime aborted it itself, dropping the session)
    async with model_bridge(tmp_path, "plain") as (server, client, mock):
        thread_id = await client.start_thread()
        record = server.threads.get(thread_id)
        assert record is not None
        runtime = record.runtime
        assert runtime is not None
        await client.run_turn(thread_id, "first")
        await _all_blocked()
        mock.set_scenario("hold")
        order = TurnOrder(
            "turn-held",
            [TextUserInput(text="hold on")],
            cwd=str(tmp_path / "work"),
            model="mock-model",
            approval_policy="never",
            sandbox_policy={"type": "dangerFullAccess"},
        )
        runtime.start_turn(order)
        runtime.interrupt(None)
        messages = await client.until(is_turn_completed("turn-held"))
        assert messages[-1]["params"]["turn"]["status"] == "interrupted"
        recorded = [
            e.msg.model_dump_json() for e in record.history if e.msg.type == "raw_response_item"
        ]
        assert "<turn_aborted>" in recorded[-1]  # the session ended it, as core does
