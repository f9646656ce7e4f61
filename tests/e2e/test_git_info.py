"""``thread/metadata/update {gitInfo}``: merged into the thread's git info, stored in the home, and
shown by ``thread/read`` / ``thread/list`` after a restart (``test_git_info_real`` compares the
whole flow with the 0.163.0 binary)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e._harness import open_bridge

pytestmark = pytest.mark.anyio


async def test_git_info_is_merged_stored_and_shown_after_a_restart(
    kind: str, tmp_path: Path
) -> None:
    home = tmp_path / "codex-home"
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        await client.run_turn(thread_id, "one")
        update = {"threadId": thread_id, "gitInfo": {"sha": "abc", "branch": "main"}}
        answer = await client.result("thread/metadata/update", update)
        assert answer["thread"]["gitInfo"] == {"sha": "abc", "branch": "main", "originUrl": None}
        update = {"threadId": thread_id, "gitInfo": {"sha": None, "originUrl": "u"}}
        answer = await client.result("thread/metadata/update", update)
        assert answer["thread"]["gitInfo"] == {"sha": None, "branch": "main", "originUrl": "u"}
        empty = await client.call("thread/metadata/update", {"threadId": thread_id})
        assert empty["error"]["code"] == -32600
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        expected = {"sha": None, "branch": "main", "originUrl": "u"}
        listed = await client.result("thread/list", {})
        assert [t["gitInfo"] for t in listed["data"]] == [expected]
        read = await client.result("thread/read", {"threadId": thread_id})
        assert read["thread"]["gitInfo"] == expected
        resumed = await client.result("thread/resume", {"threadId": thread_id})
        assert resumed["thread"]["gitInfo"] == expected


async def test_git_info_of_a_thread_in_memory_lives_with_the_thread(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        await client.run_turn(thread_id, "one")
        update = {"threadId": thread_id, "gitInfo": {"branch": "b"}}
        await client.result("thread/metadata/update", update)
        read = await client.result("thread/read", {"threadId": thread_id})
        assert read["thread"]["gitInfo"] == {"sha": None, "branch": "b", "originUrl": None}
