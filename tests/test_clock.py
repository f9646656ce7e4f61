"""The process clock: a seeded run is reproducible, byte for byte, in process and as a process."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from codex_app_bridge._clock import (
    SEEDED_EPOCH_MS,
    SeededClock,
    now_ms,
    use_clock,
    utc_now,
    uuid4,
    uuid7,
)
from codex_app_bridge.sources import DefaultAgent
from tests.conftest import bridge_command, bridge_env
from tests.e2e._harness import (  # pyright: ignore[reportPrivateUsage]
    Message,
    Session,
    _stdio_bridge,
    is_turn_completed,
    open_bridge,
)

TIMEOUT = 60


def test_a_seeded_clock_stands_still_and_repeats_its_ids() -> None:
    def draw() -> tuple[int, str, str, str]:
        with use_clock(SeededClock(5)):
            return now_ms(), str(uuid7()), str(uuid4()), utc_now().isoformat()

    first = draw()
    assert first == draw()
    assert first[0] == SEEDED_EPOCH_MS
    assert first[1].startswith("01941f29-7c00-7")  # 2025-01-01T00:00:00Z, version 7
    assert first[3] == "2025-01-01T00:00:00+00:00"
    with use_clock(SeededClock(6)):
        assert str(uuid7()) != first[1]
    assert now_ms() > SEEDED_EPOCH_MS  # outside, the real clock again


async def _one_run(kind: str, seed: int) -> list[Message]:
    if kind == "memory":
        with use_clock(SeededClock(seed)):
            async with open_bridge("memory", source=DefaultAgent(delay=0)) as bridge:
                return await _drive(await bridge.connect())
    async with _stdio_bridge(["--seed", str(seed), "--pace", "0"]) as bridge:
        return await _drive(await bridge.connect())


async def _drive(client: Session) -> list[Message]:
    await client.initialize()
    thread_id = await client.start_thread()
    for text in ("hello", "approve: ls"):
        turn_id = await client.start_turn(thread_id, text)
        while True:
            message = await client.next_message()
            if "method" in message and "id" in message:  # the approval: accept it
                await client.send({"id": message["id"], "result": {"decision": "accept"}})
            if is_turn_completed(turn_id)(message):
                break
    await client.result("thread/read", {"threadId": thread_id, "includeTurns": True})
    await client.close()
    return client.received


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["memory", "stdio"])
async def test_two_seeded_runs_of_the_same_flow_receive_the_same_messages(kind: str) -> None:
    with anyio.fail_after(TIMEOUT * 2):
        first = await _one_run(kind, 7)
        second = await _one_run(kind, 7)
        other = await _one_run(kind, 8)
    assert first == second
    assert first != other
    assert any(m.get("method") == "item/commandExecution/requestApproval" for m in first)


def test_replay_no_timestamps_prints_the_same_bytes_twice(tmp_path: Path) -> None:
    script = tmp_path / "s.jsonl"
    script.write_text(
        '{"id":"t1","msg":{"type":"task_started","turn_id":"t1"}}\n'
        '{"id":"t1","msg":{"type":"task_complete","turn_id":"t1","last_agent_message":"x"}}\n'
    )

    def run(*args: str) -> bytes:
        proc = subprocess.run(
            [*bridge_command(), "replay", *args, str(script)],
            capture_output=True,
            timeout=TIMEOUT,
            env=bridge_env(),
            check=True,
        )
        return proc.stdout

    first = run("--no-timestamps")
    assert first == run("--no-timestamps")
    assert b"emittedAtMs" not in first
    assert run("--seed", "3") == run("--seed", "3")
    assert b'"emittedAtMs":1735689600000' in run("--seed", "3")
