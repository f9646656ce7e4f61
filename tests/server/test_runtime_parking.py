"""A parking runtime meets a submission as its task winds down: ``_park`` has said yes, ``_loop``
has returned, and ``run`` waits for its session's task to return (parked) when a turn, an
interrupt or ``stop`` arrives. Each test stops the session at a chosen point and submits there;
the turn plays once, no event is lost or doubled, and the runtime ends parked (or ended) with no
task left behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import pytest

from codex_app_bridge.listener import ListenerHub
from codex_app_bridge.protocol.core import (
    EventEnvelope,
    EventMsg,
    Submission,
    TaskCompleteEvent,
    TextUserInput,
)
from codex_app_bridge.rpc import DeferredReply
from codex_app_bridge.server._runtime import ThreadRuntime, TurnOrder
from codex_app_bridge.sources import (
    CoreSession,
    SessionConfig,
    SourceDefaults,
    TurnPlayer,
    TurnRequest,
    input_text,
)
from codex_app_bridge.sources._base import task_started_event
from tests.conftest import all_blocked

pytestmark = pytest.mark.anyio

TIMEOUT = 10
THREAD = "thread-1"


class Turns:
    """Turns the test drives: ``wait`` plays until interrupted; a turn whose clean-up is gated
    (``clean_gate``) holds its session's task after its terminal event, until the gate opens."""

    defaults = SourceDefaults(model="m", model_provider="p")

    def __init__(self) -> None:
        self.played: list[str] = []
        self.cleaning = anyio.Event()
        self.clean_gate: anyio.Event | None = None

    async def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        self.played.append(f"{request.turn_id}: {input_text(request.input)}")
        gate = self.clean_gate
        self.clean_gate = None
        try:
            yield task_started_event(request.turn_id, request.started_at_ms)
            if input_text(request.input) == "wait":
                await anyio.sleep_forever()
            yield TaskCompleteEvent(turn_id=request.turn_id, last_agent_message="done")
        finally:
            if gate is not None:
                self.cleaning.set()
                await gate.wait()


class HeldSession:
    """A ``TurnPlayer`` whose ``run``, once it returns parked, waits for ``release`` (when
    ``hold`` is set): the runtime has parked and waits for the session's task to end."""

    def __init__(self, player: TurnPlayer) -> None:
        self.player = player
        self.hold = False
        self.returned = anyio.Event()
        self.release = anyio.Event()
        self.runs = 0

    def submit(self, submission: Submission) -> None:
        self.player.submit(submission)

    def take_events(self) -> list[EventEnvelope]:
        return self.player.take_events()

    def park(self) -> bool:
        return self.player.park()

    async def run(self, ready: Callable[[], None]) -> None:
        self.runs += 1
        await self.player.run(ready)
        if self.hold:
            self.hold = False
            self.returned.set()
            await self.release.wait()


@dataclass
class _Reply:
    """The connection a deferred reply answers on."""

    connection_id: int = 1
    sent: list[bytes] = field(default_factory=list[bytes])

    def offer(self, data: bytes) -> bool:
        self.sent.append(data)
        return True


@dataclass
class Harness:
    runtime: ThreadRuntime
    source: Turns
    sessions: list[HeldSession]
    seen: list[EventEnvelope]

    @property
    def session(self) -> HeldSession:
        return self.sessions[-1]

    def kinds(self, turn_id: str) -> list[str]:
        return [e.msg.type for e in self.seen if e.id == turn_id]

    def turn(self, turn_id: str, text: str) -> None:
        self.runtime.start_turn(
            TurnOrder(
                turn_id,
                [TextUserInput(text=text)],
                cwd="/",
                model="m",
                approval_policy="never",
                sandbox_policy={"type": "dangerFullAccess"},
            )
        )

    async def settled(self) -> None:
        """Everything has run that can: the runtime is parked (or ended) and holds no task."""
        await all_blocked()
        assert not self.runtime.running
        assert not _runtime_tasks()

    async def play(self, turn_id: str, text: str) -> None:
        self.turn(turn_id, text)
        await self.settled()
        assert self.kinds(turn_id)[-1] == "task_complete"


def _runtime_tasks() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "runtime"]


@asynccontextmanager
async def _parking_runtime() -> AsyncGenerator[Harness]:
    hub = ListenerHub()
    source = Turns()
    sessions: list[HeldSession] = []

    def open_session() -> CoreSession:
        session = HeldSession(TurnPlayer(source, SessionConfig(THREAD, "m", "/")))
        sessions.append(session)
        return session

    runtime: ThreadRuntime | None = None
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:

            def spawn(runtime: ThreadRuntime) -> None:
                tg.start_soon(runtime.run, name="runtime")

            runtime = ThreadRuntime(
                THREAD, hub.create_thread(THREAD), open_session, spawn=spawn, interrupt_grace=60
            )
            seen: list[EventEnvelope] = []
            runtime.tap = seen.append
            runtime.start()
            harness = Harness(runtime, source, sessions, seen)
            await harness.settled()
            yield harness
            runtime.stop()
    assert runtime is not None
    assert runtime.ended


async def _winding_down(harness: Harness) -> None:
    """Play a turn, then hold the session's task as it returns parked: the runtime has decided
    to park and its task waits for the session's."""
    harness.turn("t1", "one")
    harness.session.hold = True
    await harness.session.returned.wait()
    await all_blocked()
    assert harness.kinds("t1")[-1] == "task_complete"
    assert harness.runtime.running  # the task has not ended yet


async def test_a_turn_started_while_the_runtime_winds_down_plays_once() -> None:
    async with _parking_runtime() as harness:
        await _winding_down(harness)
        harness.turn("t2", "two")
        harness.session.release.set()
        await harness.settled()
        assert harness.source.played == ["t1: one", "t2: two"]
        assert harness.kinds("t2") == ["task_started", "task_complete"]
        assert harness.kinds("t1") == ["task_started", "task_complete"]
        assert len(harness.sessions) == 1
        assert harness.runtime.active_turn_id is None
        await harness.play("t3", "three")  # parked again, and starts again


async def test_an_interrupt_while_the_runtime_winds_down_is_answered_and_changes_nothing() -> None:
    async with _parking_runtime() as harness:
        await _winding_down(harness)
        connection = _Reply()
        harness.runtime.interrupt(DeferredReply(cast(Any, connection), 7))
        assert len(connection.sent) == 1  # no turn runs: answered at once
        harness.session.release.set()
        await harness.settled()
        assert harness.source.played == ["t1: one"]
        await harness.play("t2", "two")
        assert harness.kinds("t2") == ["task_started", "task_complete"]


async def test_a_turn_started_and_interrupted_while_the_runtime_winds_down_is_aborted() -> None:
    async with _parking_runtime() as harness:
        await _winding_down(harness)
        connection = _Reply()
        harness.turn("t2", "wait")
        harness.runtime.interrupt(DeferredReply(cast(Any, connection), 7))
        harness.session.release.set()
        await harness.settled()
        assert harness.kinds("t2") == ["task_started", "turn_aborted"]
        assert len(connection.sent) == 1
        assert harness.source.played == ["t1: one", "t2: wait"]
        await harness.play("t3", "three")
        assert len(harness.sessions) == 1  # the session was interrupted, not dropped


async def test_a_stop_while_the_runtime_winds_down_ends_it_cleanly() -> None:
    async with _parking_runtime() as harness:
        await _winding_down(harness)
        harness.runtime.stop()
        harness.session.release.set()
        await harness.settled()
        assert harness.runtime.ended
        assert [e.msg.type for e in harness.seen if e.id == "shutdown"] == ["shutdown_complete"]
        assert harness.source.played == ["t1: one"]


async def test_a_turn_then_a_stop_while_the_runtime_winds_down_play_in_order() -> None:
    async with _parking_runtime() as harness:
        await _winding_down(harness)
        harness.turn("t2", "two")
        harness.runtime.stop()
        harness.session.release.set()
        await harness.settled()
        assert harness.runtime.ended
        assert harness.kinds("t2") == ["task_started", "task_complete"]
        assert harness.kinds("shutdown") == ["shutdown_complete"]


async def _cleaning_up(harness: Harness) -> anyio.Event:
    """Play a turn and hold its source in its clean-up: the session has said it parks (the
    turn's terminal event is out) while its task still closes the source, and the runtime has
    parked and waits for that task. Returns the gate that ends the clean-up."""
    gate = anyio.Event()
    harness.source.clean_gate = gate
    harness.turn("t1", "one")
    await harness.source.cleaning.wait()
    await all_blocked()
    assert harness.kinds("t1") == ["task_started", "task_complete"]
    assert harness.runtime.running  # waiting for the session's task
    return gate


async def test_a_turn_started_while_the_previous_one_cleans_up_plays_once_after_it() -> None:
    async with _parking_runtime() as harness:
        gate = await _cleaning_up(harness)
        harness.turn("t2", "two")
        await all_blocked()
        assert harness.source.played == ["t1: one"]  # not before t1's clean-up is over
        gate.set()
        await harness.settled()
        assert harness.source.played == ["t1: one", "t2: two"]
        assert harness.kinds("t2") == ["task_started", "task_complete"]
        assert harness.kinds("t1") == ["task_started", "task_complete"]
        assert harness.session.runs == 2


async def test_a_stop_while_the_previous_turn_cleans_up_ends_the_runtime() -> None:
    async with _parking_runtime() as harness:
        gate = await _cleaning_up(harness)
        harness.runtime.stop()
        gate.set()
        await harness.settled()
        assert harness.runtime.ended
        assert harness.kinds("shutdown") == ["shutdown_complete"]


async def test_a_turn_started_and_interrupted_at_once_on_a_parked_runtime_is_aborted() -> None:
    # both are submitted before the runtime's task and its session's have run again: the
    # interrupt waits in the session's queue behind the turn it is for
    async with _parking_runtime() as harness:
        await harness.play("t1", "one")
        connection = _Reply()
        harness.turn("t2", "wait")
        harness.runtime.interrupt(DeferredReply(cast(Any, connection), 7))
        await harness.settled()
        assert harness.kinds("t2") == ["task_started", "turn_aborted"]
        assert len(connection.sent) == 1
        assert len(harness.sessions) == 1


async def test_input_steered_at_once_into_a_turn_on_a_parked_runtime_enters_that_turn() -> None:
    async with _parking_runtime() as harness:
        await harness.play("t1", "one")
        harness.turn("t2", "two")
        harness.runtime.steer([TextUserInput(text="more")])
        await harness.settled()
        assert harness.source.played == ["t1: one", "t2: two"]
        assert harness.kinds("t2") == [
            "task_started",
            "item_started",
            "item_completed",
            "task_complete",
        ]
        steered = next(e.msg for e in harness.seen if e.msg.type == "item_completed")
        assert "more" in steered.model_dump_json()
