"""Threads over every transport: start, read, list, loaded/list, unsubscribe, resume and fork,
with the real server's response shapes, notification order and errors."""

from __future__ import annotations

import os

import pytest

from codex_app_bridge.server import READ_DEPRECATION, RESUME_DEPRECATION
from tests.e2e._harness import Session, methods, open_bridge

pytestmark = pytest.mark.anyio

ZERO = "00000000-0000-0000-0000-000000000000"
CWD = os.path.join(os.sep, "work", "project")


async def _started(client: Session, **params: object) -> str:
    """thread/start; its response must come before the thread/started broadcast."""
    await client.drain_pending()
    mark = len(client.received)
    thread_id = await client.start_thread(**params)
    await client.until(lambda m: m.get("method") == "thread/started")
    assert methods(client.received[mark:]) == ["response", "thread/started"]
    assert client.received[mark + 1]["params"]["thread"]["id"] == thread_id
    return thread_id


async def test_thread_start_answers_every_required_field_then_announces_the_thread(
    kind: str,
) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize(name="clientA")
        cwd = CWD
        reply = await client.call(
            "thread/start",
            {"cwd": cwd, "approvalPolicy": "never", "sandbox": "danger-full-access"},
        )
        result = reply["result"]
        assert result["approvalPolicy"] == "never"
        assert result["approvalsReviewer"] == "user"
        assert result["sandbox"] == {"type": "dangerFullAccess"}
        assert result["cwd"] == cwd
        thread = result["thread"]
        assert thread["cwd"] == cwd
        assert thread["status"] == {"type": "idle"}
        assert thread["turns"] == []
        assert (thread["source"], thread["cliVersion"], thread["originator"]) == (
            "vscode",
            "0.163.0",
            "clientA",
        )
        assert thread["sessionId"] == thread["id"]
        assert (thread["ephemeral"], thread["preview"]) == (False, "")
        started = await client.until(lambda m: m.get("method") == "thread/started")
        assert started[-1]["params"]["thread"] == thread
        ephemeral = await client.result("thread/start", {"ephemeral": True})
        assert (ephemeral["thread"]["ephemeral"], ephemeral["thread"]["path"]) == (True, None)


async def test_thread_read_list_and_loaded_list_follow_the_thread_through_a_turn(
    kind: str,
) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await _started(client)
        read = await client.result("thread/read", {"threadId": thread_id})
        assert read["thread"]["id"] == thread_id
        assert read["thread"]["turns"] == []
        hydrate = await client.call("thread/read", {"threadId": thread_id, "includeTurns": True})
        assert hydrate["error"] == {"code": -32601, "message": "list_turns is not supported yet"}
        listed = await client.result("thread/list", {})
        assert listed == {"data": [], "readStates": {}, "nextCursor": None, "backwardsCursor": None}
        loaded = await client.result("thread/loaded/list", {})
        assert loaded == {"data": [thread_id], "nextCursor": None}

        turn_id, _ = await client.run_turn(thread_id, "remember me")
        await client.drain_pending()
        mark = len(client.received)
        full = await client.result("thread/read", {"threadId": thread_id, "includeTurns": True})
        notice = client.received[mark]
        assert notice["method"] == "deprecationNotice"
        assert notice["params"] == {"summary": READ_DEPRECATION, "details": None}
        thread = full["thread"]
        assert thread["preview"] == "remember me"
        [turn] = thread["turns"]
        assert (turn["id"], turn["status"], turn["itemsView"]) == (turn_id, "completed", "full")
        assert [item["type"] for item in turn["items"]] == [
            "userMessage",
            "reasoning",
            "agentMessage",
        ]
        listed = await client.result("thread/list", {})
        assert [t["id"] for t in listed["data"]] == [thread_id]
        assert listed["data"][0]["turns"] == []


async def test_thread_list_pages_newest_first_and_refuses_unknown_cursors(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        threads = []
        for index in range(3):
            thread_id = await _started(client)
            await client.run_turn(thread_id, f"thread {index}")
            threads.append(thread_id)
        first = await client.result("thread/list", {"limit": 2})
        assert [t["id"] for t in first["data"]] == [threads[2], threads[1]]
        assert first["nextCursor"] is not None
        rest = await client.result("thread/list", {"limit": 2, "cursor": first["nextCursor"]})
        assert [t["id"] for t in rest["data"]] == [threads[0]]
        assert rest["nextCursor"] is None
        oldest = await client.result("thread/list", {"sortDirection": "asc", "limit": 1})
        assert [t["id"] for t in oldest["data"]] == [threads[0]]
        assert (await client.result("thread/list", {"archived": True}))["data"] == []
        assert (await client.result("thread/list", {"searchTerm": "THREAD 1"}))["data"][0][
            "id"
        ] == threads[1]
        bad = await client.call("thread/list", {"cursor": "garbage"})
        assert bad["error"] == {"code": -32600, "message": "invalid cursor: garbage"}
        page = await client.result("thread/loaded/list", {"limit": 2})
        assert page == {"data": threads[:2], "nextCursor": threads[1]}


async def test_thread_unsubscribe_reports_each_status(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await _started(client)
        statuses = [
            (await client.result("thread/unsubscribe", {"threadId": tid}))["status"]
            for tid in (thread_id, thread_id, ZERO)
        ]
        assert statuses == ["unsubscribed", "notSubscribed", "notLoaded"]
        loaded = await client.result("thread/loaded/list", {})
        assert loaded["data"] == [thread_id]
        bad = await client.call("thread/unsubscribe", {"threadId": "bad"})
        assert bad["error"]["message"] == (
            "invalid thread id: invalid length: expected length 32 for simple format, found 3"
        )


async def test_thread_resume_needs_a_materialized_thread_and_subscribes_again(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        unknown = await client.call("thread/resume", {"threadId": ZERO})
        assert unknown["error"] == {
            "code": -32600,
            "message": f"no rollout found for thread id {ZERO}",
        }
        thread_id = await _started(client)
        fresh = await client.call("thread/resume", {"threadId": thread_id, "excludeTurns": True})
        assert fresh["error"]["message"] == f"no rollout found for thread id {thread_id}"
        await client.drain_pending()
        mark = len(client.received)
        # with turns asked for too, and before any deprecation notice (as the real binary)
        hydrate = await client.call("thread/resume", {"threadId": thread_id})
        assert hydrate["error"] == {
            "code": -32600,
            "message": f"no rollout found for thread id {thread_id}",
        }
        assert [m for m in client.received[mark:] if m.get("method")] == []

        turn_id, _ = await client.run_turn(thread_id, "first")
        await client.result("thread/unsubscribe", {"threadId": thread_id})
        resumed = await client.result("thread/resume", {"threadId": thread_id, "model": "other"})
        assert resumed["model"] == "other"
        assert [turn["id"] for turn in resumed["thread"]["turns"]] == [turn_id]
        light = await client.result("thread/resume", {"threadId": thread_id, "excludeTurns": True})
        assert light["thread"]["turns"] == []
        # Subscribed again: the next turn's traffic arrives.
        _, messages = await client.run_turn(thread_id, "second")
        assert "turn/started" in methods(messages)


async def test_thread_fork_copies_the_history_into_a_new_thread(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        unknown = await client.call("thread/fork", {"threadId": ZERO})
        assert unknown["error"]["message"] == f"no rollout found for thread id {ZERO}"
        source_id = await _started(client)
        turn_id, _ = await client.run_turn(source_id, "original")
        await client.drain_pending()
        mark = len(client.received)
        reply = await client.call("thread/fork", {"threadId": source_id})
        await client.until(lambda m: m.get("method") == "thread/started")
        assert methods(client.received[mark:]) == [
            "deprecationNotice",
            "response",
            "thread/tokenUsage/updated",  # the source's usage, replayed for the fork
            "thread/started",
        ]
        fork = reply["result"]["thread"]
        assert fork["id"] != source_id
        assert fork["forkedFromId"] == source_id
        assert fork["preview"] == ""  # as the real server: none until the fork's own turn
        assert [turn["id"] for turn in fork["turns"]] == [turn_id]
        _, messages = await client.run_turn(fork["id"], "on the fork")
        answer = messages[-1]["params"]["turn"]["items"][0]["text"]
        assert "turn 2 of this thread" in answer
        listed = await client.result("thread/loaded/list", {})
        assert listed["data"] == [source_id, fork["id"]]


async def test_a_renamed_feature_in_the_thread_config_gets_the_real_deprecation_notice(
    kind: str,
) -> None:
    # codexed sends config.features.codex_hooks in thread/start and thread/resume
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        config = {"features": {"codex_hooks": True, "realtime_conversation": True}}
        thread_id = await client.start_thread(config=config)
        notices = await client.until(lambda m: m.get("method") == "deprecationNotice")
        kinds = [m.get("method") for m in notices]
        assert kinds.index("thread/started") < kinds.index("deprecationNotice")
        assert notices[-1]["params"]["summary"] == (
            "`[features].codex_hooks` is deprecated. Use `[features].hooks` instead."
        )
        assert notices[-1]["params"]["details"].startswith("Enable it with `--enable hooks`")
        await client.result("thread/start", {"config": {"features": {"hooks": True}}})
        await client.run_turn(thread_id, "one")
        mark = len(client.received)
        await client.result("thread/resume", {"threadId": thread_id, "config": config})
        summaries = [
            m["params"]["summary"]
            for m in client.received[mark:]
            if m.get("method") == "deprecationNotice"
        ]
        assert summaries == [RESUME_DEPRECATION, notices[-1]["params"]["summary"]]
