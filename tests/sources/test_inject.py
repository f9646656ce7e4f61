"""``InjectedSource``: a harness pushes a running bridge's events itself and reads the Ops its
threads received (in process)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from codex_app_bridge.protocol.core import EventEnvelope, InterruptOp, UserTurnOp
from codex_app_bridge.sources import (
    EVENT_HIGH_WATER,
    InjectedSource,
    SessionConfig,
    UnknownEventError,
)
from tests.e2e._harness import Session, is_turn_completed, methods, open_bridge

pytestmark = pytest.mark.anyio

TIMEOUT = 60


def _message(thread_id: str, turn_id: str, kind: str, text: str | None) -> dict[str, Any]:
    content = [] if text is None else [{"type": "Text", "text": text}]
    msg: dict[str, Any] = {
        "type": kind,
        "thread_id": thread_id,
        "turn_id": turn_id,
        "item": {"type": "AgentMessage", "id": "msg_1", "content": content},
        "started_at_ms": 1,
    }
    if kind == "item_completed":
        msg["completed_at_ms"] = 2
    return {"id": turn_id, "msg": msg}


async def _thread(client: Session) -> str:
    await client.initialize()
    thread_id = await client.start_thread()
    await client.until(lambda m: m.get("method") == "thread/started")
    return thread_id


async def test_a_harness_plays_a_turn_by_pushing_its_events() -> None:
    source = InjectedSource()
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            client = await bridge.connect()
            thread_id = await _thread(client)
            with pytest.raises(LookupError, match="has no running session"):
                await source.push(thread_id, {"id": "t", "msg": {"type": "task_started"}})
            turn_id = await client.start_turn(thread_id, "hello")
            submission = await source.next_submission(thread_id)
            assert submission.id == turn_id
            assert isinstance(submission.op, UserTurnOp)
            assert submission.op.items[0].model_dump()["text"] == "hello"
            await source.push(
                thread_id, {"id": turn_id, "msg": {"type": "task_started", "turn_id": turn_id}}
            )
            await source.push(thread_id, _message(thread_id, turn_id, "item_started", None))
            delta = {
                "type": "agent_message_content_delta",
                "thread_id": thread_id,
                "turn_id": turn_id,
                "item_id": "msg_1",
                "delta": "Hi!",
            }
            await source.push(
                thread_id, EventEnvelope.model_validate({"id": turn_id, "msg": delta})
            )
            await source.push(thread_id, _message(thread_id, turn_id, "item_completed", "Hi!"))
            await source.push(
                thread_id,
                b'{"id": "%s", "msg": {"type": "task_complete", "turn_id": "%s"}}'
                % (turn_id.encode(), turn_id.encode()),
            )
            messages = await client.until(is_turn_completed(turn_id))
            assert [m for m in methods(messages) if m.startswith(("item/", "turn/"))] == [
                "turn/started",
                "item/started",
                "item/agentMessage/delta",
                "item/completed",
                "turn/completed",
            ]
            assert messages[-1]["params"]["turn"]["status"] == "completed"
            with pytest.raises(ValidationError):
                await source.push(thread_id, {"id": turn_id, "msg": {"type": "item_started"}})
            with pytest.raises(UnknownEventError, match="unknown event type 'nope'"):
                await source.push(thread_id, {"id": turn_id, "msg": {"type": "nope"}})


async def test_an_interrupt_reaches_the_harness_as_an_op_and_end_fails_a_running_turn() -> None:
    source = InjectedSource()
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            client = await bridge.connect()
            thread_id = await _thread(client)
            turn_id = await client.start_turn(thread_id, "long")
            await source.next_submission(thread_id)
            await source.push(
                thread_id, {"id": turn_id, "msg": {"type": "task_started", "turn_id": turn_id}}
            )
            await client.until(lambda m: m.get("method") == "turn/started")
            params = {"threadId": thread_id, "turnId": turn_id}
            await client.send({"id": "int", "method": "turn/interrupt", "params": params})
            interrupt = await source.next_submission(thread_id)
            assert (interrupt.id, type(interrupt.op)) == (turn_id, InterruptOp)
            aborted = {"type": "turn_aborted", "turn_id": turn_id, "reason": "interrupted"}
            await source.push(thread_id, {"id": turn_id, "msg": aborted})
            done = await client.until(is_turn_completed(turn_id))
            assert done[-1]["params"]["turn"]["status"] == "interrupted"
            assert [s.op.type for s in source.submissions(thread_id)] == ["user_turn", "interrupt"]

            second = await client.start_turn(thread_id, "again")
            await source.next_submission(thread_id)
            source.end(thread_id)  # as a producer that dies
            done = await client.until(is_turn_completed(second))
            assert done[-1]["params"]["turn"]["status"] == "failed"
            # the next turn opens a new session the harness can push into
            third = await client.start_turn(thread_id, "third")
            await source.wait_session(thread_id)
            assert (await source.next_submission(thread_id)).id == third


async def test_push_waits_while_the_high_water_mark_of_events_is_waiting() -> None:
    source = InjectedSource()
    session = source.open_session(SessionConfig("thread-1", "m", "/"))
    event = {"id": "t", "msg": {"type": "warning", "message": "x"}}
    pushed = anyio.Event()
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run, lambda: None)
            for _ in range(EVENT_HIGH_WATER):
                await source.push("thread-1", event)

            async def one_more() -> None:
                await source.push("thread-1", event)
                pushed.set()

            tg.start_soon(one_more)
            await anyio.wait_all_tasks_blocked()
            assert not pushed.is_set()  # held back: nobody took the waiting events
            assert len(session.take_events()) == EVENT_HIGH_WATER
            await pushed.wait()
            assert len(session.take_events()) == 1
            source.end("thread-1")
