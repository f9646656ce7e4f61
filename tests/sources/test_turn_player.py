"""``TurnPlayer`` around a turn's end: the source's own clean-up, and input that arrives while
it runs (after the terminal event, before the player is done with the turn)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from codex_app_bridge.protocol.core import (
    EventEnvelope,
    EventMsg,
    RateLimitSnapshot,
    Submission,
    TaskCompleteEvent,
    TextUserInput,
    TokenCountEvent,
    TokenUsage,
    TokenUsageInfo,
    UserInputOp,
    UserTurnOp,
)
from codex_app_bridge.sources import (
    SessionConfig,
    SourceDefaults,
    TurnPlayer,
    TurnRequest,
    input_text,
)
from codex_app_bridge.sources._base import task_started_event

pytestmark = pytest.mark.anyio

TIMEOUT = 10


class ClosingSource:
    """Each turn starts and completes at once, then cleans up until ``cleaned`` is allowed."""

    defaults = SourceDefaults(model="m", model_provider="p")

    def __init__(self) -> None:
        self.may_clean = anyio.Event()
        self.cleaning = anyio.Event()
        self.log: list[str] = []

    async def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        self.log.append(f"play {request.turn_id}: {input_text(request.input)}")
        try:
            yield task_started_event(request.turn_id, request.started_at_ms)
            yield TaskCompleteEvent(turn_id=request.turn_id, last_agent_message=None)
            yield TaskCompleteEvent(turn_id=request.turn_id, last_agent_message="never pulled")
        finally:
            self.cleaning.set()
            await self.may_clean.wait()
            self.log.append(f"cleaned {request.turn_id}")


def _text(text: str) -> list[TextUserInput]:
    return [TextUserInput(text=text)]


async def _play(
    source: ClosingSource, during_clean_up: list[Submission]
) -> tuple[TurnPlayer, list[EventEnvelope]]:
    """Play turn ``t1``; submit ``during_clean_up`` once its source is cleaning up; return once
    every turn that gives has ended."""
    player = TurnPlayer(source, SessionConfig("thread", "m", "/"))
    seen: list[EventEnvelope] = []
    ended = anyio.Event()
    expected = 1 + len(during_clean_up)

    def ready() -> None:
        seen.extend(player.take_events())
        if sum(e.msg.type == "task_complete" for e in seen) >= expected:
            ended.set()

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(player.run, ready)
            turn = UserTurnOp(
                items=_text("first"),
                cwd="/",
                approval_policy="never",
                sandbox_policy={"type": "read-only"},
                model="m",
            )
            player.submit(Submission(id="t1", op=turn))
            await source.cleaning.wait()
            for submission in during_clean_up:
                player.submit(submission)
            source.may_clean.set()
            await ended.wait()
            tg.cancel_scope.cancel()
    return player, seen


async def test_a_turn_sources_clean_up_ends_before_the_next_turn_plays() -> None:
    source = ClosingSource()
    steer = Submission(id="t2", op=UserInputOp(items=_text("next")))
    _, seen = await _play(source, [steer])
    assert source.log[:3] == ["play t1: first", "cleaned t1", "play t2: next"]
    assert [e.msg.type for e in seen if e.id == "t1"] == ["task_started", "task_complete"]


async def test_input_sent_after_the_terminal_event_while_the_source_cleans_up_is_not_lost() -> None:
    # the runtime steers into the turn it still believes running (same id): once the terminal
    # event is out, core takes user input as the next turn, and so does the player, under a
    # new id (issue 23.2: a second turn of the same id made live and stored reads disagree)
    source = ClosingSource()
    steer = Submission(id="t1", op=UserInputOp(items=_text("late")))
    _, seen = await _play(source, [steer])
    assert source.log[:2] == ["play t1: first", "cleaned t1"]
    assert source.log[2].startswith("play ")
    assert source.log[2].endswith(": late")
    assert [e.msg.type for e in seen] == ["task_started", "task_complete"] * 2
    first, second = {e.id for e in seen[:2]}, {e.id for e in seen[2:]}
    assert first == {"t1"}
    assert len(second) == 1
    assert second != first


class CountingSource:
    """Each turn reports 10 tokens on top of the total its request carries."""

    defaults = SourceDefaults(model="m", model_provider="p")

    def __init__(self) -> None:
        self.carried: list[int | None] = []

    async def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        before = request.token_total
        self.carried.append(None if before is None else before.total_tokens)
        last = TokenUsage(total_tokens=10)
        total = TokenUsage(total_tokens=10 + (0 if before is None else before.total_tokens))
        yield task_started_event(request.turn_id, request.started_at_ms)
        yield TokenCountEvent(
            info=TokenUsageInfo(total_token_usage=total, last_token_usage=last),
            rate_limits=RateLimitSnapshot(limit_id="codex"),
        )
        yield TaskCompleteEvent(turn_id=request.turn_id, last_agent_message=None)


class CountedTurns:
    """A player over a ``CountingSource`` whose thread has used 100 tokens, and the end of the
    turn it plays (``ready`` sets ``done`` at a ``task_complete``; ``submit`` renews it)."""

    def __init__(self) -> None:
        self.source = CountingSource()
        config = SessionConfig("thread", "m", "/", token_total=TokenUsage(total_tokens=100))
        self.player = TurnPlayer(self.source, config)
        self.done = anyio.Event()

    def ready(self) -> None:
        if sum(e.msg.type == "task_complete" for e in self.player.take_events()):
            self.done.set()

    def submit(self, turn_id: str) -> None:
        self.done = anyio.Event()
        self.player.submit(Submission(id=turn_id, op=UserInputOp(items=_text(turn_id))))


async def test_each_turn_gets_the_sessions_token_total_seeded_from_its_history() -> None:
    turns = CountedTurns()
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(turns.player.run, turns.ready)
            for turn_id in ("t1", "t2"):
                turns.submit(turn_id)
                await turns.done.wait()
            tg.cancel_scope.cancel()
    assert turns.source.carried == [100, 110]


async def test_a_parked_session_ends_its_task_and_plays_on_when_run_again() -> None:
    # an idle loaded thread holds no task (the runtime parks its session, server._runtime)
    turns = CountedTurns()
    player = turns.player
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(player.run, turns.ready)
            turns.submit("t1")
            await turns.done.wait()
            assert player.park()
        # the task group ended: run returned by itself, the session still open
        assert not any(isinstance(v, TokenUsage) for v in vars(player).values())
        turns.submit("t2")  # waits, queued
        assert not player.park()  # something waits: it runs on
        async with anyio.create_task_group() as tg:
            tg.start_soon(player.run, turns.ready)
            await turns.done.wait()
            tg.cancel_scope.cancel()
    assert turns.source.carried == [100, 110]
