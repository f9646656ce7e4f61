"""``thread/goal/get|set|clear`` as 0.163.0 answers them (probed from the binary): the shapes,
the errors, the notifications every connection gets, and a goal that outlives the process and
is announced by ``thread/resume``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e._harness import Message, open_bridge

pytestmark = pytest.mark.anyio

GOAL_KEYS = {
    "threadId",
    "objective",
    "status",
    "tokenBudget",
    "tokensUsed",
    "timeUsedSeconds",
    "createdAt",
    "updatedAt",
}


def _error(reply: Message) -> tuple[int, str]:
    assert "error" in reply, reply
    return reply["error"]["code"], reply["error"]["message"]


def _is(method: str) -> Callable[[Message], bool]:
    def match(message: Message) -> bool:
        return message.get("method") == method

    return match


@pytest.mark.parametrize("kind", ["stdio"])
async def test_goal_methods_answer_and_refuse_as_the_binary(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        await client.until(_is("thread/started"))

        assert await client.result("thread/goal/get", {"threadId": thread_id}) == {"goal": None}
        no_goal = f"cannot update goal for thread {thread_id}: no goal exists"
        assert _error(await client.call("thread/goal/set", {"threadId": thread_id})) == (
            -32600,
            no_goal,
        )
        paused = {"threadId": thread_id, "status": "paused"}
        assert _error(await client.call("thread/goal/set", paused)) == (-32600, no_goal)
        for blank in ("", "   "):
            reply = await client.call(
                "thread/goal/set", {"threadId": thread_id, "objective": blank}
            )
            assert _error(reply) == (-32600, "goal objective must not be empty")
        for budget in (0, -5):
            params = {"threadId": thread_id, "objective": "x", "tokenBudget": budget}
            reply = await client.call("thread/goal/set", params)
            assert _error(reply) == (-32600, "goal budgets must be positive when provided")

        params = {"threadId": thread_id, "objective": "  Write a haiku  ", "tokenBudget": 500}
        goal = (await client.result("thread/goal/set", params))["goal"]
        assert set(goal) == GOAL_KEYS
        assert goal["threadId"] == thread_id
        assert (goal["objective"], goal["status"]) == ("Write a haiku", "active")
        assert (goal["tokenBudget"], goal["tokensUsed"], goal["timeUsedSeconds"]) == (500, 0, 0)
        updated = (await client.until(_is("thread/goal/updated")))[-1]["params"]
        assert updated == {"threadId": thread_id, "turnId": None, "goal": goal}

        # without an objective: the status and the budget change, the rest stays
        params = {"threadId": thread_id, "status": "paused", "tokenBudget": 70}
        changed = (await client.result("thread/goal/set", params))["goal"]
        assert changed == {**goal, "status": "paused", "tokenBudget": 70}
        assert (await client.until(_is("thread/goal/updated")))[-1]["params"]["goal"] == changed
        got = await client.result("thread/goal/get", {"threadId": thread_id})
        assert got == {"goal": changed}
        cleared_budget = {"threadId": thread_id, "tokenBudget": None}
        unbudgeted = (await client.result("thread/goal/set", cleared_budget))["goal"]
        assert unbudgeted["tokenBudget"] is None

        assert await client.result("thread/goal/clear", {"threadId": thread_id}) == {
            "cleared": True
        }
        cleared = (await client.until(_is("thread/goal/cleared")))[-1]
        assert cleared["params"] == {"threadId": thread_id}
        assert await client.result("thread/goal/clear", {"threadId": thread_id}) == {
            "cleared": False
        }
        assert await client.result("thread/goal/get", {"threadId": thread_id}) == {"goal": None}
        # nothing announces a clear that cleared nothing: the next message is the next answer
        await client.drain_pending()
        mark = len(client.received)
        await client.result("thread/loaded/list", {})
        assert [m.get("method") for m in client.received[mark:]] == [None]

        unknown = "00000000-0000-0000-0000-000000000000"
        for method in ("thread/goal/get", "thread/goal/set", "thread/goal/clear"):
            reply = await client.call(method, {"threadId": unknown, "objective": "y"})
            assert _error(reply) == (-32600, f"thread not found: {unknown}")
        ephemeral = await client.start_thread(ephemeral=True)
        for method in ("thread/goal/get", "thread/goal/set", "thread/goal/clear"):
            reply = await client.call(method, {"threadId": ephemeral, "objective": "e"})
            message = f"ephemeral thread does not support goals: {ephemeral}"
            assert _error(reply) == (-32600, message)


async def test_goal_changes_reach_every_connection() -> None:
    async with open_bridge("memory") as bridge:
        first, second = await bridge.connect(), await bridge.connect()
        await first.initialize()
        await second.initialize()
        thread_id = await first.start_thread()
        params = {"threadId": thread_id, "objective": "Ship it"}
        goal = (await first.result("thread/goal/set", params))["goal"]
        # the second connection is not subscribed to the thread and still hears of it
        updated = (await second.until(_is("thread/goal/updated")))[-1]
        assert updated["params"] == {"threadId": thread_id, "turnId": None, "goal": goal}
        await first.result("thread/goal/clear", {"threadId": thread_id})
        cleared = (await second.until(_is("thread/goal/cleared")))[-1]
        assert cleared["params"] == {"threadId": thread_id}


@pytest.mark.parametrize("kind", ["stdio"])
async def test_a_goal_outlives_the_process_and_resume_announces_it(
    kind: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        await client.run_turn(thread_id, "one")
        params = {"threadId": thread_id, "objective": "Keep going", "tokenBudget": 9000}
        goal = (await client.result("thread/goal/set", params))["goal"]
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        assert await client.result("thread/goal/get", {"threadId": thread_id}) == {"goal": goal}
        await client.result("thread/resume", {"threadId": thread_id})
        seen = await client.until(_is("thread/goal/updated"))
        assert seen[-1]["params"] == {"threadId": thread_id, "turnId": None, "goal": goal}
        assert "thread/goal/cleared" not in [m.get("method") for m in seen]
        # cleared, it is gone for the next process too, and resume says so
        await client.result("thread/goal/clear", {"threadId": thread_id})
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        assert await client.result("thread/goal/get", {"threadId": thread_id}) == {"goal": None}
        await client.result("thread/resume", {"threadId": thread_id})
        seen = await client.until(_is("thread/goal/cleared"))
        assert "thread/goal/updated" not in [m.get("method") for m in seen]
