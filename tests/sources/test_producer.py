"""``--producer``: the contract end to end (official SDK + the example producer) and each fault:
a producer that dies or is killed mid-turn, writes bad lines, floods, ignores an interrupt or a
shutdown, or never starts."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from codex_app_bridge.protocol.core import (
    EventEnvelope,
    ShutdownOp,
    Submission,
    TextUserInput,
    UserTurnOp,
)
from codex_app_bridge.sources import (
    EVENT_HIGH_WATER,
    ProducerError,
    ProducerSession,
    ProducerSource,
    SessionConfig,
)
from tests.conftest import bridge_command, bridge_env
from tests.e2e._harness import Message, Session, is_turn_completed, open_bridge

ROOT = Path(__file__).resolve().parents[2]
FAULTS = Path(__file__).with_name("fault_producer.py")
TIMEOUT = 120
"""Whole flows with producer processes (a flood of 2,048 events took 26 s at load 14 on 2 cores)."""


class RecordingProducer(ProducerSource):
    """A ``ProducerSource`` that keeps its sessions (to look at their processes)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.sessions: list[ProducerSession] = []

    def open_session(self, config: SessionConfig) -> ProducerSession:
        session = super().open_session(config)
        self.sessions.append(session)
        return session


def _faults(tmp_path: Path, **kwargs: object) -> RecordingProducer:
    env = {**bridge_env(), "FAULT_PRODUCER_STARTS": str(tmp_path / "starts")}
    return RecordingProducer([sys.executable, str(FAULTS)], env=env, **kwargs)


def _starts(tmp_path: Path) -> int:
    path = tmp_path / "starts"
    return len(path.read_text().splitlines()) if path.exists() else 0


async def _thread(client: Session) -> str:
    await client.initialize()
    thread_id = await client.start_thread()
    await client.until(lambda m: m.get("method") == "thread/started")
    return thread_id


def _turn(messages: list[Message]) -> dict[str, object]:
    turn: dict[str, object] = messages[-1]["params"]["turn"]
    return turn


def _errors(messages: list[Message]) -> list[str]:
    return [m["params"]["error"]["message"] for m in messages if m.get("method") == "error"]


# --- the contract, with the official SDK -----------------------------------------------------


@pytest.mark.conformance
def test_the_official_sdk_drives_the_example_producer_through_a_turn_an_interrupt_and_another(
    tmp_path: Path,
) -> None:
    log = tmp_path / "ops.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "tests.conformance._official_producer", str(log)],
        cwd=ROOT,
        env=bridge_env(),
        capture_output=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    report = json.loads(proc.stdout)
    assert report["first_methods"][0] == "turn/started"
    assert report["first_methods"][-1] == "turn/completed"
    assert report["unknown"] == []  # every notification is valid for the SDK's own models
    assert report["streamed"] == "Echo (turn 1): hello from the producer"
    assert report["first_status"] == "completed"
    assert report["interrupt_response"] == {}
    assert report["interrupt_tail"] == ["turn/completed"]
    assert report["second"]["status"] == "completed"
    assert report["second"]["final"] == "Echo (turn 3): and a second turn"
    assert report["second"]["total_tokens"] > 0
    assert report["turn_statuses"] == ["completed", "interrupted", "completed"]
    # what the producer received: Codex ops, the turn id as submission id
    ops = [json.loads(line) for line in log.read_text().splitlines()]
    first, interrupted, second = report["turn_ids"]
    assert [(s["id"], s["op"]["type"]) for s in ops] == [
        (first, "user_turn"),
        (interrupted, "user_turn"),
        (interrupted, "interrupt"),
        (second, "user_turn"),
    ]
    assert ops[0]["op"]["items"] == [
        {"type": "text", "text": "hello from the producer", "text_elements": []}
    ]


# --- faults -----------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("text", "status"), [("die", "exited with code 3"), ("kill", "was killed by SIGKILL")]
)
async def test_a_producer_that_stops_mid_turn_fails_the_turn_saying_why_and_the_next_turn_respawns(
    tmp_path: Path, text: str, status: str
) -> None:
    source = _faults(tmp_path)
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            client = await bridge.connect()
            thread_id = await _thread(client)
            _, messages = await client.run_turn(thread_id, text)
            expected = (
                f"codex-app-bridge: the producer `{source.name}` {status} before the turn ended"
            )
            assert _turn(messages)["status"] == "failed"
            error = _turn(messages)["error"]
            assert isinstance(error, dict)
            assert (error["message"], error["codexErrorInfo"]) == (expected, "other")
            assert _errors(messages) == [expected]
            # the next turn starts a new producer, which answers
            _, messages = await client.run_turn(thread_id, "hello")
            assert _turn(messages)["status"] == "completed"
            assert _starts(tmp_path) == 2


@pytest.mark.anyio
async def test_a_producer_dying_does_not_affect_another_thread(tmp_path: Path) -> None:
    source = _faults(tmp_path)
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            client = await bridge.connect()
            first = await _thread(client)
            second = await client.start_thread()
            await client.until(lambda m: m.get("method") == "thread/started")
            _, messages = await client.run_turn(second, "hello")
            assert _turn(messages)["status"] == "completed"
            _, messages = await client.run_turn(first, "die")
            assert _turn(messages)["status"] == "failed"
            _, messages = await client.run_turn(second, "still here")
            assert _turn(messages)["status"] == "completed"
            assert _starts(tmp_path) == 2  # one process per thread, the second one untouched


@pytest.mark.anyio
async def test_bad_producer_lines_are_reported_with_their_content_cut_and_the_turn_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="codex_app_bridge.sources._producer")
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=_faults(tmp_path)) as bridge:
            client = await bridge.connect()
            thread_id = await _thread(client)
            _, messages = await client.run_turn(thread_id, "garbage")
    assert _turn(messages)["status"] == "completed"
    warnings = [m["params"]["message"] for m in messages if m.get("method") == "warning"]
    assert len(warnings) == 3
    assert warnings[0].startswith("codex-app-bridge: skipped producer output line 2, not an event")
    assert warnings[0].endswith(": this is not json at all")
    long_line = warnings[1]
    assert '{"hello": "xxx' in long_line
    assert long_line.endswith("... (1013 characters)")  # cut to 200 characters
    assert "line 3, not an event envelope (id: Field required)" in warnings[1]
    assert (
        "line 4, not an event envelope (msg.item_started.thread_id: Field required)"
        in (warnings[2])
    )
    logged = [r.getMessage() for r in caplog.records if "is not an event envelope" in r.message]
    assert len(logged) == 3
    assert "this is not json at all" in logged[0]
    assert all(len(text) < 600 for text in logged)
    # the producer's stderr reached the bridge's log
    assert any("fault_producer: turn 'garbage'" in r.getMessage() for r in caplog.records)


@pytest.mark.anyio
async def test_a_flooding_producer_is_read_no_faster_than_events_are_taken(tmp_path: Path) -> None:
    count = 8 * EVENT_HIGH_WATER
    session = _faults(tmp_path).open_session(SessionConfig("thread-1", "m", "/"))
    available = anyio.Event()

    def ready() -> None:
        available.set()

    taken: list[EventEnvelope] = []
    batches: list[int] = []
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run, ready)
            session.submit(_user_turn("turn-1", f"flood {count}"))
            while not taken or taken[-1].msg.type != "task_complete":
                await available.wait()
                available = anyio.Event()
                # a slow reader: let the producer run ahead as far as it can before taking
                await anyio.wait_all_tasks_blocked()
                batch = session.take_events()
                batches.append(len(batch))
                taken.extend(batch)
            session.submit(Submission(id="bye", op=ShutdownOp()))
    assert len(taken) == count + 4  # task_started, item_started, deltas, item_completed, complete
    assert max(batches) <= EVENT_HIGH_WATER  # never more waiting than the high-water mark
    assert max(batches) == EVENT_HIGH_WATER  # ... and the flood did reach it


@pytest.mark.anyio
async def test_a_flood_streams_through_the_bridge_to_the_end(tmp_path: Path) -> None:
    count = 2 * EVENT_HIGH_WATER
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=_faults(tmp_path)) as bridge:
            client = await bridge.connect()
            thread_id = await _thread(client)
            _, messages = await client.run_turn(thread_id, f"flood {count}")
    deltas = [m for m in messages if m.get("method") == "item/agentMessage/delta"]
    assert len(deltas) == count
    assert _turn(messages)["status"] == "completed"


@pytest.mark.anyio
async def test_a_producer_that_ignores_an_interrupt_is_aborted_in_bounded_time_and_killed(
    tmp_path: Path,
) -> None:
    source = _faults(tmp_path)
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            assert bridge.server is not None
            bridge.server.interrupt_grace = 0.3
            client = await bridge.connect()
            thread_id = await _thread(client)
            turn_id = await client.start_turn(thread_id, "deaf")
            await client.until(lambda m: m.get("method") == "turn/started")
            reply = await client.call("turn/interrupt", {"threadId": thread_id, "turnId": turn_id})
            assert reply["result"] == {}
            done = await client.until(is_turn_completed(turn_id))
            assert _turn(done)["status"] == "interrupted"
            process = source.sessions[0].process
            assert process is not None
            await process.wait()  # the dropped session killed it
            assert process.returncode is not None
            assert process.returncode < 0
            _, messages = await client.run_turn(thread_id, "hello")
            assert _turn(messages)["status"] == "completed"
            assert len(source.sessions) == 2


@pytest.mark.anyio
async def test_an_interrupted_turn_whose_producer_closes_stdout_and_lingers_ends_interrupted(
    tmp_path: Path,
) -> None:
    # issue 23.5: the session ended (stdout closed, the process killed after the stop grace)
    # before the runtime's interrupt grace, and the turn ended failed ("killed by SIGKILL")
    source = _faults(tmp_path, stop_grace=0.1)
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            assert bridge.server is not None
            bridge.server.interrupt_grace = TIMEOUT  # the session's end decides, not the runtime
            client = await bridge.connect()
            thread_id = await _thread(client)
            turn_id = await client.start_turn(thread_id, "mute")
            await client.until(lambda m: m.get("method") == "turn/started")
            reply = await client.call("turn/interrupt", {"threadId": thread_id, "turnId": turn_id})
            assert reply["result"] == {}
            done = await client.until(is_turn_completed(turn_id))
            assert _turn(done)["status"] == "interrupted"
            assert _errors(done) == []
            _, messages = await client.run_turn(thread_id, "hello")
            assert _turn(messages)["status"] == "completed"


@pytest.mark.anyio
async def test_shutdown_ends_the_session_and_a_producer_that_ignores_it_is_killed(
    tmp_path: Path,
) -> None:
    # The producer that obeys gets all the time a busy machine may need to exit on its own (a
    # short grace would kill it mid-exit); the deaf one never exits, so 0.3 s races nothing.
    for text, killed, grace in (("hello", False, TIMEOUT / 2), ("deaf", True, 0.3)):
        source = _faults(tmp_path, stop_grace=grace)
        session = source.open_session(SessionConfig("thread-1", "m", "/"))
        taken: list[EventEnvelope] = []
        available = anyio.Event()

        def ready(event: Callable[[], anyio.Event] = lambda: available) -> None:
            event().set()

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.run, ready)
                session.submit(_user_turn("turn-1", text))
                while not taken or taken[-1].msg.type not in ("task_complete", "task_started"):
                    await available.wait()
                    available = anyio.Event()
                    taken.extend(session.take_events())
                session.submit(Submission(id="bye", op=ShutdownOp()))
            taken.extend(session.take_events())
        process = session.process
        assert process is not None
        assert process.returncode is not None
        if killed:
            assert process.returncode < 0
            # the turn the deaf producer never ended is failed, not left hanging
            assert taken[-1].msg.type == "task_complete"
        else:
            assert process.returncode == 0
            assert taken[-1] == EventEnvelope.model_validate(
                {"id": "bye", "msg": {"type": "shutdown_complete"}}
            )


@pytest.mark.anyio
async def test_a_producer_that_cannot_start_fails_the_turn_with_the_reason(tmp_path: Path) -> None:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    source = ProducerSource([str(script)])
    with pytest.raises(ProducerError, match="is not executable"):
        source.check()
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            client = await bridge.connect()
            thread_id = await _thread(client)
            _, messages = await client.run_turn(thread_id, "hello")
    message = f"codex-app-bridge: cannot start the producer `{script}`: Permission denied"
    assert _turn(messages)["status"] == "failed"
    assert _errors(messages) == [message]


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (
            "/nonexistent/producer --flag",
            "the producer program '/nonexistent/producer' was not found",
        ),
        (
            "no-such-producer-program-xyz",
            "the producer program 'no-such-producer-program-xyz' was not found",
        ),
        ("'unterminated", "invalid producer command"),
        ("", "the producer command is empty"),
    ],
)
def test_serve_refuses_a_producer_that_cannot_start_before_reading_stdin(
    command: str, reason: str
) -> None:
    proc = subprocess.run(
        [*bridge_command(), "serve", "--producer", command],
        env=bridge_env(),
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert proc.stderr.decode().startswith(f"codex-app-bridge serve: {reason}")


def _user_turn(turn_id: str, text: str) -> Submission:
    op = UserTurnOp(
        items=[TextUserInput(text=text)],
        cwd="/",
        approval_policy="never",
        sandbox_policy={"type": "read-only"},
        model="m",
    )
    return Submission(id=turn_id, op=op)


@pytest.mark.anyio
async def test_the_readme_producer_answers_a_turn(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("```python\n#!/usr/bin/env python3") + len("```python\n")
    producer = tmp_path / "producer.py"
    producer.write_text(readme[start : readme.index("```", start)], encoding="utf-8")
    source = ProducerSource([sys.executable, str(producer)])
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            client = await bridge.connect()
            thread_id = await _thread(client)
            _, messages = await client.run_turn(thread_id, "hi")
    deltas = [
        m["params"]["delta"] for m in messages if m.get("method") == "item/agentMessage/delta"
    ]
    assert deltas == ["You said: hi"]
    assert _turn(messages)["status"] == "completed"


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (["--script", "x.jsonl"], "--producer and --script cannot be combined"),
        (["--pace", "0.1"], "--pace does not apply to --producer"),
    ],
)
def test_serve_refuses_producer_flags_that_do_not_go_together(
    extra: list[str], reason: str
) -> None:
    proc = subprocess.run(
        [*bridge_command(), "serve", "--producer", sys.executable, *extra],
        env=bridge_env(),
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith(f"codex-app-bridge serve: {reason}")


@pytest.mark.anyio
async def test_an_unloaded_thread_shuts_its_producer_down(tmp_path: Path) -> None:
    log = tmp_path / "ops.jsonl"
    env = {**bridge_env(), "ECHO_PRODUCER_LOG": str(log), "ECHO_PRODUCER_DELAY": "0"}
    source = RecordingProducer(  # time to exit on its own, however busy the machine
        [sys.executable, str(ROOT / "examples" / "echo_producer.py")],
        env=env,
        stop_grace=TIMEOUT / 2,
    )
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source, idle_unload=0.2) as bridge:
            client = await bridge.connect()
            thread_id = await _thread(client)
            _, messages = await client.run_turn(thread_id, "hello")
            assert _turn(messages)["status"] == "completed"
            await client.result("thread/unsubscribe", {"threadId": thread_id})
            process = source.sessions[0].process
            assert process is not None
            await process.wait()  # shut down by the idle unload, not killed
            assert process.returncode == 0
    ops = [json.loads(line)["op"]["type"] for line in log.read_text().splitlines()]
    assert ops == ["user_turn", "shutdown"]
