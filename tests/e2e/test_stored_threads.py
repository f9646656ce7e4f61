"""Stored threads over every transport: a thread run on one server is listed, read, paged,
resumed and continued by a new server on the same CODEX_HOME; names, archive and delete stick."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e._harness import open_bridge

pytestmark = pytest.mark.anyio


async def _first_server(kind: str, home: Path) -> tuple[str, list[str], dict[str, object]]:
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize(name="first")
        thread_id = await client.start_thread(cwd=str(home.parent))
        turns = [(await client.run_turn(thread_id, text))[0] for text in ("one", "two")]
        read = await client.result("thread/read", {"threadId": thread_id, "includeTurns": True})
    return thread_id, turns, read["thread"]


async def test_a_restarted_server_lists_reads_pages_and_resumes_a_stored_thread(
    kind: str, tmp_path: Path
) -> None:
    home = tmp_path / "codex-home"
    thread_id, turn_ids, before = await _first_server(kind, home)
    path = Path(str(before["path"]))
    assert path in set(home.rglob("rollout-*.jsonl"))
    assert path.relative_to(home).parts[0] == "sessions"
    assert path.name.endswith(f"-{thread_id}.jsonl")
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize(name="second")
        listed = await client.result("thread/list", {})
        assert [t["id"] for t in listed["data"]] == [thread_id]
        assert listed["data"][0]["status"] == {"type": "notLoaded"}
        assert listed["data"][0]["path"] == str(path)
        assert listed["data"][0]["preview"] == "one"
        read = await client.result("thread/read", {"threadId": thread_id, "includeTurns": True})
        assert read["thread"]["turns"] == before["turns"]
        page = await client.result("thread/turns/list", {"threadId": thread_id, "limit": 1})
        assert [t["id"] for t in page["data"]] == [turn_ids[1]]
        rest = await client.result(
            "thread/turns/list", {"threadId": thread_id, "cursor": page["nextCursor"]}
        )
        assert [t["id"] for t in rest["data"]] == [turn_ids[0]]
        assert rest["nextCursor"] is None
        assert json.loads(page["nextCursor"])["scope"] == {"kind": "turns"}
        everything = (await client.result("thread/items/list", {"threadId": thread_id}))["data"]
        assert [e["item"] for e in everything] == [
            item for turn in before["turns"] for item in turn["items"]
        ]
        paged, cursor = [], None
        while True:
            params = {"threadId": thread_id, "limit": 2, "cursor": cursor}
            page = await client.result("thread/items/list", params)
            paged += page["data"]
            cursor = page["nextCursor"]
            if cursor is None:
                break
        assert paged == everything
        second = await client.result(
            "thread/items/list", {"threadId": thread_id, "turnId": turn_ids[1]}
        )
        assert {e["turnId"] for e in second["data"]} == {turn_ids[1]}
        resumed = await client.result("thread/resume", {"threadId": thread_id})
        assert resumed["thread"]["turns"] == before["turns"]
        assert resumed["thread"]["status"] == {"type": "idle"}
        third, _ = await client.run_turn(thread_id, "three")
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize(name="third")
        read = await client.result("thread/read", {"threadId": thread_id, "includeTurns": True})
        assert [t["id"] for t in read["thread"]["turns"]] == [*turn_ids, third]
        assert read["thread"]["path"] == str(path)


async def test_name_archive_unarchive_and_delete_are_stored(kind: str, tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    thread_id, _, _ = await _first_server(kind, home)
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        assert await client.result("thread/name/set", {"threadId": thread_id, "name": "kept"}) == {}
        assert await client.result("thread/archive", {"threadId": thread_id}) == {}
        assert (await client.result("thread/list", {}))["data"] == []
        archived = await client.result("thread/list", {"archived": True})
        assert [t["name"] for t in archived["data"]] == ["kept"]
        assert "/archived_sessions/" in archived["data"][0]["path"]
        again = await client.call("thread/archive", {"threadId": thread_id})
        assert again["error"] == {
            "code": -32600,
            "message": f"no rollout found for thread id {thread_id}",
        }
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        back = await client.result("thread/unarchive", {"threadId": thread_id})
        assert back["thread"]["name"] == "kept"
        assert "/sessions/" in back["thread"]["path"]
        assert [t["id"] for t in (await client.result("thread/list", {}))["data"]] == [thread_id]
        assert await client.result("thread/delete", {"threadId": thread_id}) == {}
        gone = await client.call("thread/read", {"threadId": thread_id})
        assert gone["error"]["message"] == f"thread not loaded: {thread_id}"
    assert not list((home / "sessions").rglob("*.jsonl"))


async def test_ephemeral_threads_are_never_written(kind: str, tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread(ephemeral=True)
        await client.run_turn(thread_id, "hello")
        read = await client.result("thread/read", {"threadId": thread_id})
        assert read["thread"]["path"] is None
    assert not list(home.rglob("rollout-*.jsonl"))


async def test_a_fork_is_a_new_rollout_with_its_origin(kind: str, tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    thread_id, turn_ids, _ = await _first_server(kind, home)
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        fork = await client.result(
            "thread/fork", {"threadId": thread_id, "lastTurnId": turn_ids[0]}
        )
        fork_id = fork["thread"]["id"]
        assert fork["thread"]["forkedFromId"] == thread_id
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        read = await client.result("thread/read", {"threadId": fork_id, "includeTurns": True})
        assert read["thread"]["forkedFromId"] == thread_id
        assert [t["id"] for t in read["thread"]["turns"]] == turn_ids[:1]
        assert read["thread"]["path"].endswith(f"-{fork_id}.jsonl")


async def test_an_unwritable_home_is_a_warning_and_the_thread_goes_on_in_memory(
    kind: str, tmp_path: Path
) -> None:
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "sessions").write_text("a file where the sessions directory should be")
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        turn_id, messages = await client.run_turn(thread_id, "hello")
        warnings = [m["params"] for m in client.received if m.get("method") == "warning"]
        assert len(warnings) == 1, warnings
        assert warnings[0]["threadId"] == thread_id
        assert "is not stored (it goes on in memory)" in warnings[0]["message"]
        assert str(home / "sessions") in warnings[0]["message"]
        completed = [m for m in messages if m.get("method") == "turn/completed"]
        assert completed[-1]["params"]["turn"]["status"] == "completed"
        second, _ = await client.run_turn(thread_id, "again")
        read = await client.result("thread/read", {"threadId": thread_id, "includeTurns": True})
        assert [t["id"] for t in read["thread"]["turns"]] == [turn_id, second]
    if kind == "stdio":
        assert f"thread {thread_id} is not stored" in bridge.stderr.decode()


async def test_revert_is_stored_as_a_segment_and_a_later_read_agrees(
    kind: str, tmp_path: Path
) -> None:
    home = tmp_path / "codex-home"
    thread_id, turn_ids, _ = await _first_server(kind, home)
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        reverted = await client.result(
            "thread/revert", {"threadId": thread_id, "beforeTurnId": turn_ids[1]}
        )
        segment = reverted["thread"]["path"]
        assert f"-{thread_id}_" in segment
        assert json.loads(reverted["turnsBackwardsCursor"])["scope"] == {"kind": "turns"}
        await client.until(lambda m: m.get("method") == "thread/reverted")
        read = await client.result("thread/read", {"threadId": thread_id, "includeTurns": True})
        assert [t["id"] for t in read["thread"]["turns"]] == turn_ids[:1]
        resumed = await client.result("thread/resume", {"threadId": thread_id})
        assert [t["id"] for t in resumed["thread"]["turns"]] == turn_ids[:1]
        third, _ = await client.run_turn(thread_id, "three")
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        listed = await client.result("thread/list", {})
        assert [(t["id"], t["path"]) for t in listed["data"]] == [(thread_id, segment)]
        read = await client.result("thread/read", {"threadId": thread_id, "includeTurns": True})
        assert [t["id"] for t in read["thread"]["turns"]] == [turn_ids[0], third]
        missing = await client.call("thread/revert", {"threadId": thread_id, "beforeTurnId": "x"})
        assert missing["error"] == {"code": -32600, "message": "turn not found: x"}


async def test_archiving_a_loaded_thread_unloads_it(kind: str, tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        await client.run_turn(thread_id, "hello")
        assert await client.result("thread/archive", {"threadId": thread_id}) == {}
        await client.until(lambda m: m.get("method") == "thread/archived")
        loaded = await client.result("thread/loaded/list", {})
        assert thread_id not in loaded["data"]
        read = await client.result("thread/read", {"threadId": thread_id})
        assert read["thread"]["status"] == {"type": "notLoaded"}
        assert "/archived_sessions/" in read["thread"]["path"]
        back = await client.result("thread/unarchive", {"threadId": thread_id})
        resumed = await client.result("thread/resume", {"threadId": back["thread"]["id"]})
        assert len(resumed["thread"]["turns"]) == 1
        await client.run_turn(thread_id, "again")
        read = await client.result("thread/read", {"threadId": thread_id, "includeTurns": True})
        assert len(read["thread"]["turns"]) == 2


async def test_an_archive_that_cannot_move_the_files_leaves_the_thread_loaded_and_stored(
    tmp_path: Path,
) -> None:
    home = tmp_path / "codex-home"
    async with open_bridge("memory", codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        first, _ = await client.run_turn(thread_id, "hello")
        (home / "archived_sessions").write_text("a file where the archive directory should be")
        failed = await client.call("thread/archive", {"threadId": thread_id})
        assert failed["error"]["code"] == -32603
        assert "could not store the thread" in failed["error"]["message"]
        loaded = await client.result("thread/loaded/list", {})
        assert thread_id in loaded["data"]
        read = await client.result("thread/read", {"threadId": thread_id})
        assert read["thread"]["status"] == {"type": "idle"}
        second, _ = await client.run_turn(thread_id, "still here")
    async with open_bridge("memory", codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        read = await client.result("thread/read", {"threadId": thread_id, "includeTurns": True})
        assert [t["id"] for t in read["thread"]["turns"]] == [first, second]
        assert "/sessions/" in read["thread"]["path"]


async def test_a_thread_unloaded_when_idle_keeps_writing_its_rollout(tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    async with open_bridge("memory", codex_home=home, idle_unload=0.05) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        first, _ = await client.run_turn(thread_id, "before the unload")
        await client.result("thread/unsubscribe", {"threadId": thread_id})
        await client.until(
            lambda m: (
                m.get("method") == "thread/status/changed"
                and m["params"]["status"] == {"type": "notLoaded"}
            )
        )
        await client.result("thread/resume", {"threadId": thread_id})
        second, _ = await client.run_turn(thread_id, "after the unload")
    async with open_bridge("memory", codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        read = await client.result("thread/read", {"threadId": thread_id, "includeTurns": True})
        assert [t["id"] for t in read["thread"]["turns"]] == [first, second]


async def test_each_turn_stores_its_settings_and_a_restart_resumes_with_them(
    kind: str, tmp_path: Path
) -> None:
    # codex-app-server-sdk and codexed resume with no settings: the model comes from the rollout
    home = tmp_path / "codex-home"
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread(
            cwd=str(tmp_path),
            model="chosen-model",
            sandbox="workspace-write",
            approvalPolicy="never",
            approvalsReviewer="auto_review",
        )
        turn_id, _ = await client.run_turn(thread_id, "one")
    (path,) = home.rglob("rollout-*.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    kinds = [line["payload"].get("type") or line["type"] for line in lines]
    contexts = [line["payload"] for line in lines if line["type"] == "turn_context"]
    assert kinds.index("turn_context") == kinds.index("task_started") + 1
    assert len(contexts) == 1
    assert contexts[0]["turn_id"] == turn_id
    assert contexts[0]["model"] == "chosen-model"
    assert contexts[0]["cwd"] == str(tmp_path)
    assert contexts[0]["approval_policy"] == "never"
    assert contexts[0]["approvals_reviewer"] == "auto_review"
    assert contexts[0]["sandbox_policy"]["type"] == "workspace-write"
    assert contexts[0]["sandbox_policy"]["writable_roots"] == []  # the cwd is implicit, as 0.163.0
    async with open_bridge(kind, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        mark = len(client.received)
        resumed = await client.result("thread/resume", {"threadId": thread_id})
        assert (resumed["model"], resumed["thread"]["model"]) == ("chosen-model",) * 2
        assert (resumed["approvalPolicy"], resumed["approvalsReviewer"]) == ("never", "auto_review")
        assert resumed["sandbox"]["type"] == "workspaceWrite"  # the turn's, not the default
        assert resumed["collaborationMode"] == {
            "mode": "default",
            "settings": {
                "model": "chosen-model",
                "reasoning_effort": None,
                "developer_instructions": None,
            },
        }
        # then, as 0.163.0 does after every resume, the (absent) goal
        cleared = await client.until(lambda m: m.get("method") == "thread/goal/cleared")
        assert cleared[-1]["params"] == {"threadId": thread_id}
        # loaded from its rollout: the status goes notLoaded -> idle before the answer
        before_answer = client.received[mark:-1]
        assert {"threadId": thread_id, "status": {"type": "idle"}} in [
            m["params"] for m in before_answer if m.get("method") == "thread/status/changed"
        ]
        mark = len(client.received)  # already loaded: no status change this time
        again = await client.result("thread/resume", {"threadId": thread_id, "excludeTurns": True})
        assert again["thread"]["id"] == thread_id
        assert "thread/status/changed" not in [m.get("method") for m in client.received[mark:]]


async def test_a_restarted_server_reports_the_read_state_the_first_one_had(tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    async with open_bridge("memory", codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        first, _ = await client.run_turn(thread_id, "one")
        await client.run_turn(thread_id, "two")
        before = (await client.result("thread/read", {"threadId": thread_id}))["readState"]
    assert before["firstUnread"] == {"type": "turn", "turnId": first}
    async with open_bridge("memory", codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        listed = await client.result("thread/list", {})
        assert listed["readStates"] == {thread_id: before}
        read = await client.result("thread/read", {"threadId": thread_id})
        assert read["readState"] == before
        await client.result("thread/resume", {"threadId": thread_id, "excludeTurns": True})
        _, messages = await client.run_turn(thread_id, "three")
        changed = next(m for m in messages if m.get("method") == "thread/readState/changed")
        assert changed["params"]["readState"]["firstUnread"] == before["firstUnread"]
        assert changed["params"]["readState"]["revision"] != before["revision"]
