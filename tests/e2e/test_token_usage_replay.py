"""Token-usage replay: a connection attaching to a thread that has usage gets its last usage right
after the response (``thread/resume``, ``thread/fork``), as 0.163.0 does (see
``server/_token_replay``; ``tests/conformance/test_token_usage_replay_real.py`` compares with the
binary)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e._harness import Session, methods, open_bridge

pytestmark = pytest.mark.anyio

USAGE = "thread/tokenUsage/updated"
GOAL = "thread/goal/cleared"  # 0.163.0 tells every resuming client there is no goal
STATUS = "thread/status/changed"


def usage_of(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m["params"] for m in messages if m.get("method") == USAGE]


async def step(client: Session, method: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """What the request brings to this connection: its response and the notifications up to the
    answer of a following ``thread/loaded/list`` (which runs after every after-response step)."""
    await client.drain_pending()
    mark = len(client.received)
    reply = await client.call(method, params)
    assert "result" in reply, reply
    await client.result("thread/loaded/list", {})
    seen = client.received[mark:-1]
    return [m for m in seen if m.get("method") != "deprecationNotice"]


async def two_turns(client: Session) -> tuple[str, list[str], list[dict[str, Any]]]:
    thread_id = await client.start_thread()
    turns, live = [], []
    for text in ("one", "two"):
        turn_id, messages = await client.run_turn(thread_id, text)
        turns.append(turn_id)
        live.append(usage_of(messages)[-1])
    return thread_id, turns, live


async def test_resume_and_fork_replay_the_last_usage_only_with_turns(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id, turns, live = await two_turns(client)
        assert live[1]["turnId"] == turns[1]

        seen = await step(client, "thread/resume", {"threadId": thread_id})
        assert methods(seen) == ["response", USAGE, GOAL]
        assert usage_of(seen) == [live[1]]

        seen = await step(client, "thread/resume", {"threadId": thread_id, "excludeTurns": True})
        assert methods(seen) == ["response", GOAL]

        seen = await step(client, "thread/fork", {"threadId": thread_id})
        fork_id = seen[0]["result"]["thread"]["id"]
        assert methods(seen) == ["response", USAGE, "thread/started"]
        assert usage_of(seen) == [{**live[1], "threadId": fork_id}]

        seen = await step(client, "thread/fork", {"threadId": thread_id, "excludeTurns": True})
        assert methods(seen) == ["response", "thread/started"]

        seen = await step(client, "thread/fork", {"threadId": thread_id, "lastTurnId": turns[0]})
        fork_id = seen[0]["result"]["thread"]["id"]
        assert usage_of(seen) == [{**live[0], "threadId": fork_id}]


async def test_a_cold_resume_replays_the_stored_usage_even_without_turns(
    kind: str, tmp_path: Path
) -> None:
    home = tmp_path / "codex-home"
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id, _turns, live = await two_turns(client)
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        seen = await step(client, "thread/resume", {"threadId": thread_id, "excludeTurns": True})
        assert methods(seen) == [STATUS, "response", USAGE, GOAL]
        assert usage_of(seen) == [live[1]]
        # now loaded: without turns, no usage
        seen = await step(client, "thread/resume", {"threadId": thread_id, "excludeTurns": True})
        assert methods(seen) == ["response", GOAL]
