"""The optional op hook of turn sources: ``TurnPlayer`` hands answer ops to the playing turn's
``TurnRequest.replies``, where a source that asked waits for the one that matches."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from codex_app_bridge.protocol.core import (
    EventEnvelope,
    EventMsg,
    ExecApprovalOp,
    ExecApprovalRequestEvent,
    PatchApprovalOp,
    Submission,
    TaskCompleteEvent,
    TextUserInput,
    UserInputOp,
    WarningEvent,
)
from codex_app_bridge.sources import SessionConfig, SourceDefaults, TurnPlayer, TurnRequest
from codex_app_bridge.sources._base import task_started_event

pytestmark = pytest.mark.anyio


class AskingSource:
    """Asks to run a command, then says what the answer was."""

    defaults = SourceDefaults(model="m", model_provider="p")

    async def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        yield task_started_event(request.turn_id, request.started_at_ms)
        ask = ExecApprovalRequestEvent(
            call_id="call_1", turn_id=request.turn_id, command=["ls"], cwd="/"
        )
        yield ask
        answer = await request.replies.wait_for(ask)
        assert isinstance(answer, ExecApprovalOp)
        yield WarningEvent(message=f"decision: {answer.decision}")
        yield TaskCompleteEvent(turn_id=request.turn_id, last_agent_message=None)


async def test_the_matching_answer_op_reaches_the_turn_that_waits_for_it() -> None:
    player = TurnPlayer(AskingSource(), SessionConfig("thread", "m", "/"))
    seen: list[EventEnvelope] = []
    asked = anyio.Event()
    done = anyio.Event()

    def ready() -> None:
        for envelope in player.take_events():
            seen.append(envelope)
            if envelope.msg.type == "exec_approval_request":
                asked.set()
            if envelope.msg.type == "task_complete":
                done.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(player.run, ready)
            player.submit(Submission(id="turn-1", op=UserInputOp(items=[TextUserInput(text="x")])))
            await asked.wait()
            # an answer to another request, and one to this request with another id, wait
            player.submit(Submission(id="turn-1", op=PatchApprovalOp(id="call_1", decision="x")))
            player.submit(Submission(id="turn-1", op=ExecApprovalOp(id="other", decision="x")))
            player.submit(
                Submission(id="turn-1", op=ExecApprovalOp(id="call_1", decision="denied"))
            )
            await done.wait()
            # an answer while no turn plays is dropped, never a new turn
            player.submit(Submission(id="x", op=ExecApprovalOp(id="call_1", decision="x")))
            tg.cancel_scope.cancel()
    warnings = [e.msg for e in seen if isinstance(e.msg, WarningEvent)]
    assert [w.message for w in warnings] == ["decision: denied"]
    assert {e.id for e in seen} == {"turn-1"}
