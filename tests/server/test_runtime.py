"""The thread runtime's guarantees (in memory): interrupts answered before the turn ends, a
source that ignores an interrupt or dies mid-turn, history bounded by what a thread shows."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import orjson
import pytest

from codex_app_bridge.protocol.core import (
    AgentMessageContentDeltaEvent,
    EventEnvelope,
    EventMsg,
    Submission,
    TaskStartedEvent,
    UserTurnOp,
)
from codex_app_bridge.sources import (
    CoreSession,
    SessionConfig,
    SourceDefaults,
    TurnRequest,
    load_script,
)
from tests.e2e._harness import Session, is_turn_completed, methods, open_bridge

pytestmark = pytest.mark.anyio

TIMEOUT = 60
DELTAS = 2_000
FLOW_TIMEOUT = 300


class FakeSource:
    def __init__(self, script: Callable[[TurnRequest], AsyncIterator[EventMsg]]) -> None:
        self.script = script

    @property
    def defaults(self) -> SourceDefaults:
        return SourceDefaults(model="fake", model_provider="test")

    def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        return self.script(request)


class DeafSession:
    """A ``CoreSession`` that starts turns and then ignores everything, or dies mid-turn."""

    def __init__(self, *, die: bool) -> None:
        self.die = die
        self.submitted: list[Submission] = []
        self._out: list[EventEnvelope] = []
        self._ready: Callable[[], None] = lambda: None
        self._turn = anyio.Event()

    def submit(self, submission: Submission) -> None:
        self.submitted.append(submission)
        if isinstance(submission.op, UserTurnOp):
            self._out.append(
                EventEnvelope(
                    id=submission.id,
                    msg=TaskStartedEvent(turn_id=submission.id, started_at=1),
                )
            )
            self._ready()
            self._turn.set()

    def take_events(self) -> list[EventEnvelope]:
        events, self._out = self._out, []
        return events

    async def run(self, ready: Callable[[], None]) -> None:
        self._ready = ready
        await self._turn.wait()
        if self.die:
            return
        await anyio.sleep_forever()


class DeafSource:
    def __init__(self, *, die: bool = False) -> None:
        self.die = die
        self.sessions: list[DeafSession] = []

    @property
    def defaults(self) -> SourceDefaults:
        return SourceDefaults(model="deaf", model_provider="test")

    def open_session(self, config: SessionConfig) -> CoreSession:
        session = DeafSession(die=self.die)
        self.sessions.append(session)
        return session


async def _thread(client: Session) -> str:
    await client.initialize()
    thread_id = await client.start_thread()
    await client.until(lambda m: m.get("method") == "thread/started")
    return thread_id


async def _forever(request: TurnRequest) -> AsyncIterator[EventMsg]:
    yield TaskStartedEvent(turn_id=request.turn_id, started_at=request.started_at_ms // 1000)
    await anyio.Event().wait()


# every spelling of a thread id the real server accepts (``_ids.parse_thread_id``)
_ID_FORMS: dict[str, Callable[[str], str]] = {
    "canonical": lambda thread_id: thread_id,
    "uppercase": str.upper,
    "simple": lambda thread_id: thread_id.replace("-", ""),
    "braced": lambda thread_id: "{" + thread_id + "}",
    "urn": lambda thread_id: "urn:uuid:" + thread_id,
}


@pytest.mark.parametrize("form", list(_ID_FORMS))
async def test_two_interrupts_sent_back_to_back_are_both_answered_before_turn_completed(
    form: str,
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=FakeSource(_forever)) as bridge:
            client = await bridge.connect()
            thread_id = await _thread(client)
            turn_id = await client.start_turn(thread_id, "hi")
            await client.until(lambda m: m.get("method") == "turn/started")
            params = {"threadId": _ID_FORMS[form](thread_id), "turnId": turn_id}
            both = [{"id": i, "method": "turn/interrupt", "params": params} for i in ("i1", "i2")]
            for message in both:
                client._methods[message["id"]] = "turn/interrupt"  # pyright: ignore[reportPrivateUsage]
            await client.send_raw(b"".join(orjson.dumps(m) + b"\n" for m in both))
            rest = await client.until(is_turn_completed(turn_id))
            answers = [(m.get("id"), m.get("result")) for m in rest if "id" in m]
            assert answers == [("i1", {}), ("i2", {})]
            assert methods(rest)[-4:] == [
                "response",
                "response",
                "thread/status/changed",
                "turn/completed",
            ]
            assert rest[-1]["params"]["turn"]["status"] == "interrupted"
            late = await client.call("turn/interrupt", params)
            assert late["error"]["message"] == "no active turn to interrupt"


async def test_a_source_that_ignores_an_interrupt_is_aborted_after_the_grace_period() -> None:
    source = DeafSource()
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            assert bridge.server is not None
            bridge.server.interrupt_grace = 0.2
            client = await bridge.connect()
            thread_id = await _thread(client)
            turn_id = await client.start_turn(thread_id, "hi")
            await client.until(lambda m: m.get("method") == "turn/started")
            reply = await client.call("turn/interrupt", {"threadId": thread_id, "turnId": turn_id})
            assert reply["result"] == {}
            done = await client.until(is_turn_completed(turn_id))
            assert done[-1]["params"]["turn"]["status"] == "interrupted"
            assert [s.op.type for s in source.sessions[0].submitted] == [
                "user_turn",
                "interrupt",
            ]
            # the deaf session is dropped: the next turn opens a new one
            second = await client.start_turn(thread_id, "again")
            await client.until(lambda m: m.get("method") == "turn/started")
            assert len(source.sessions) == 2
            assert source.sessions[1].submitted[0].id == second


async def test_a_session_that_dies_mid_turn_fails_the_turn_and_the_next_turn_reopens() -> None:
    source = DeafSource(die=True)
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            client = await bridge.connect()
            thread_id = await _thread(client)
            for attempt in range(2):
                _, messages = await client.run_turn(thread_id, "hi")
                turn = messages[-1]["params"]["turn"]
                assert turn["status"] == "failed"
                assert turn["error"]["message"] == (
                    "codex-app-bridge: the event source stopped before the turn ended"
                )
                assert len(source.sessions) == attempt + 1


def _long_script(path: Path, deltas: int, turns: int = 2) -> Path:
    with path.open("wb") as out:
        for index in range(turns):
            out.writelines(_turn_lines(f"rec-turn-{index}", deltas))
    return path


def _turn_lines(turn: str, deltas: int) -> list[bytes]:
    thread = "rec-thread"
    lines = [
        {"id": turn, "msg": {"type": "task_started", "turn_id": turn, "started_at": 1}},
        {
            "id": turn,
            "msg": {
                "type": "item_started",
                "thread_id": thread,
                "turn_id": turn,
                "item": {"type": "AgentMessage", "id": "m", "content": []},
                "started_at_ms": 1,
            },
        },
        *(
            {
                "id": turn,
                "msg": {
                    "type": "agent_message_content_delta",
                    "thread_id": thread,
                    "turn_id": turn,
                    "item_id": "m",
                    "delta": f"w{k} ",
                },
            }
            for k in range(deltas)
        ),
        {
            "id": turn,
            "msg": {
                "type": "item_completed",
                "thread_id": thread,
                "turn_id": turn,
                "item": {
                    "type": "AgentMessage",
                    "id": "m",
                    "content": [{"type": "Text", "text": "x"}],
                },
                "started_at_ms": 1,
                "completed_at_ms": 2,
            },
        },
        {"id": turn, "msg": {"type": "task_complete", "turn_id": turn, "last_agent_message": "x"}},
    ]
    return [orjson.dumps(line) + b"\n" for line in lines]


def _alive(kind: type) -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if type(obj) is kind)


async def test_no_per_delta_object_survives_a_turn_and_history_keeps_only_what_a_thread_shows(
    tmp_path: Path,
) -> None:
    script = _long_script(tmp_path / "long.jsonl", DELTAS)
    source = load_script(script)
    # 4,000 deltas, each checked against the schemas as it arrives, and two scans of every live
    # object: 61 s under a loaded run of the whole suite, so the hang guard is longer
    with anyio.fail_after(FLOW_TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            assert bridge.server is not None
            client = await bridge.connect()
            thread_id = await _thread(client)
            before = _alive(AgentMessageContentDeltaEvent)
            for _ in range(2):
                _, messages = await client.run_turn(thread_id, "go")
                assert sum(m.get("method") == "item/agentMessage/delta" for m in messages) == DELTAS
            client.received.clear()
            record = bridge.server.threads.get(thread_id)
            assert record is not None
            kinds = [envelope.msg.type for envelope in record.history]
            assert "agent_message_content_delta" not in kinds
            assert len(kinds) <= 8  # two turns: started, the completed items, complete
            assert _alive(AgentMessageContentDeltaEvent) == before
            assert _alive(EventEnvelope) <= len(record.history) + 8


def _thread_tasks(thread_id: str) -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == f"thread {thread_id}"]


async def test_an_idle_threads_runtime_holds_no_task_and_starts_again_for_its_next_turn() -> None:
    # an idle loaded thread's tasks (the runtime's and its session's: coroutines, cancel scopes,
    # events) were a quarter of what it held; the allocator's arenas follow the load's peak
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory") as bridge:
            assert bridge.server is not None
            client = await bridge.connect()
            thread_id = await _thread(client)
            record = bridge.server.threads.get(thread_id)
            assert record is not None
            runtime = record.runtime
            assert runtime is not None
            await anyio.wait_all_tasks_blocked()
            assert not runtime.running  # no turn yet
            assert not _thread_tasks(thread_id)
            for ordinal in (1, 2):
                _, messages = await client.run_turn(thread_id, "hi")
                turn = messages[-1]["params"]["turn"]
                assert turn["status"] == "completed"
                text = [m for m in messages if m.get("method") == "item/completed"][-1]
                assert f"This is turn {ordinal} of this thread" in orjson.dumps(text).decode()
                await anyio.wait_all_tasks_blocked()
                assert not runtime.running
                assert not _thread_tasks(thread_id)
            assert record.runtime is runtime  # the same runtime and session, started again
