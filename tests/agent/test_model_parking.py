"""A model-backed thread parks while idle (``ModelSession.park``): it holds no task between
turns, its next turn sends the model the request it would have sent without parking, and a
command left running for a later ``write_stdin`` keeps it from parking (leaving its machine
tools would kill the command)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from codex_app_bridge.agent._session import ModelSession
from codex_app_bridge.protocol.core import TextUserInput
from codex_app_bridge.server._runtime import ThreadRuntime, TurnOrder
from tests.agent._harness import model_bridge
from tests.conftest import all_blocked
from tests.e2e._harness import is_turn_completed

pytestmark = pytest.mark.anyio

TIMEOUT = 60

JsonObject = dict[str, Any]


def _thread_tasks(thread_id: str) -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == f"thread {thread_id}"]


async def _two_turns(tmp_path: Path) -> tuple[list[JsonObject], list[JsonObject], list[bool]]:
    """The bodies of the requests the mock received for two turns of one thread, the thread's
    token usage notifications, and whether the thread held a task after each turn."""
    running: list[bool] = []
    usage: list[JsonObject] = []
    async with model_bridge(tmp_path, "multi_turn") as (server, client, mock):
        thread_id = await client.start_thread()
        record = server.threads.get(thread_id)
        assert record is not None
        for text in ("first", "second"):
            _, messages = await client.run_turn(thread_id, text)
            assert messages[-1]["params"]["turn"]["status"] == "completed", messages[-1]
            usage += [m for m in messages if m.get("method") == "thread/tokenUsage/updated"]
            await all_blocked()
            assert record.runtime is not None
            running.append(record.runtime.running or bool(_thread_tasks(thread_id)))
        return [r["body"] for r in mock.model_requests()], usage, running


def _never(session: ModelSession) -> bool:
    return False


async def test_an_idle_model_thread_holds_no_task_and_its_next_turn_sends_the_same_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parked, parked_usage, running = await _two_turns(tmp_path)
    assert running == [False, False]
    monkeypatch.setattr(ModelSession, "park", _never)
    unparked, unparked_usage, running = await _two_turns(tmp_path)
    assert running == [True, True]
    assert len(parked) == 2
    assert parked == unparked  # the same history, settings and turn metadata
    assert len(parked_usage) == 2
    assert parked_usage == unparked_usage  # the same token totals


def _is_command_completed(message: JsonObject) -> bool:
    if message.get("method") != "item/completed":
        return False
    item: JsonObject = message["params"]["item"]
    return item["type"] == "commandExecution"


async def test_a_command_left_running_keeps_the_model_thread_from_parking_until_it_is_read(
    tmp_path: Path,
) -> None:
    waits = "while [ ! -e stop ]; do sleep 0.05; done; echo finished"
    steps = [{"cmd": waits, "args": {"yield_time_ms": 250}}]
    async with model_bridge(tmp_path, "steps", steps=steps, text="Started.") as (
        server,
        client,
        mock,
    ):
        thread_id = await client.start_thread()
        record = server.threads.get(thread_id)
        assert record is not None
        runtime = record.runtime
        assert runtime is not None
        _, messages = await client.run_turn(thread_id, "start it")
        assert messages[-1]["params"]["turn"]["status"] == "completed"
        await all_blocked()
        assert runtime.running  # a command session lives: leaving its tools would kill it
        (tmp_path / "work" / "stop").touch()
        await client.until(_is_command_completed)  # it ran to its end, nobody killed it
        await all_blocked()
        assert runtime.running  # its output waits for the model's write_stdin
        mock.set_scenario("steps", steps=[{"stdin": ""}], text="Read it.")
        _, messages = await client.run_turn(thread_id, "read it")
        assert messages[-1]["params"]["turn"]["status"] == "completed"
        outputs = [
            item["output"]
            for item in mock.model_requests()[-1]["body"]["input"]
            if item.get("type") == "function_call_output"
        ]
        assert "finished" in outputs[-1]
        assert "exited with code 0" in outputs[-1]
        await all_blocked()
        assert not runtime.running
        assert not _thread_tasks(thread_id)


def _start_held(runtime: ThreadRuntime, kind: str, cwd: Path) -> None:
    """Start, as a turn of ``kind``, something that runs until it is interrupted."""
    if kind == "turn":
        order = TurnOrder(
            "turn-held",
            [TextUserInput(text="hold on")],
            cwd=str(cwd),
            model="mock-model",
            approval_policy="never",
            sandbox_policy={"type": "dangerFullAccess"},
        )
        runtime.start_turn(order)
    elif kind == "shell command":
        runtime.shell_command("turn-held", "sleep 60", None)
    else:
        runtime.compact("turn-held")


@pytest.mark.parametrize("kind", ["turn", "shell command", "compaction"])
async def test_a_turn_started_and_interrupted_at_once_on_a_parked_model_thread_is_aborted(
    tmp_path: Path, kind: str
) -> None:
    # both reach the session's queue before its task runs again: the interrupt acts on the
    # turn as it starts (without it, the turn ran until the runtime's grace ran out and the
    # runtime aborted it itself, dropping the session)
    async with model_bridge(tmp_path, "plain") as (server, client, mock):
        thread_id = await client.start_thread()
        record = server.threads.get(thread_id)
        assert record is not None
        runtime = record.runtime
        assert runtime is not None
        await client.run_turn(thread_id, "first")
        await all_blocked()
        assert not runtime.running
        mock.set_scenario("hold")  # a model request is answered in part, never ended
        _start_held(runtime, kind, tmp_path / "work")
        runtime.interrupt(None)
        messages = await client.until(is_turn_completed("turn-held"))
        assert messages[-1]["params"]["turn"]["status"] == "interrupted"
        recorded = [
            e.msg.model_dump_json() for e in record.history if e.msg.type == "raw_response_item"
        ]
        assert "<turn_aborted>" in recorded[-1]  # the session ended it, as core does
        await all_blocked()
        assert not runtime.running


def _asks_or_ends(message: JsonObject) -> bool:
    return message.get("method") in {"item/commandExecution/requestApproval", "turn/completed"}


async def test_what_the_user_approved_for_the_session_outlives_a_park(tmp_path: Path) -> None:
    # a parked session leaves its machine tools; the approvals in them come back with it
    async with model_bridge(tmp_path, "steps", steps=[{"cmd": "touch approved"}]) as (
        server,
        client,
        mock,
    ):
        thread_id = await client.start_thread(approvalPolicy="untrusted")
        record = server.threads.get(thread_id)
        assert record is not None
        runtime = record.runtime
        assert runtime is not None
        await client.start_turn(thread_id, "ask")
        asked = (await client.until(_asks_or_ends))[-1]
        assert asked["method"] == "item/commandExecution/requestApproval"
        await client.send({"id": asked["id"], "result": {"decision": "acceptForSession"}})
        ended = (await client.until(_asks_or_ends))[-1]
        assert ended["params"]["turn"]["status"] == "completed"
        await all_blocked()
        assert not runtime.running
        mock.set_scenario("steps", steps=[{"cmd": "touch approved"}])
        await client.start_turn(thread_id, "again")
        ended = (await client.until(_asks_or_ends))[-1]
        assert ended["method"] == "turn/completed"  # not asked again
        assert ended["params"]["turn"]["status"] == "completed"
