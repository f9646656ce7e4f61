"""Stored threads against the real 0.163.0 binary, both directions, with scratch CODEX_HOMEs:
the binary lists, resumes and continues a thread the bridge's writer stored, with the same turns;
the bridge's catalog reads a thread the binary stored, with the turns the binary reads."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from codex_app_bridge.mapping.thread_history import build_turns
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import dump_dict
from codex_app_bridge.storage import CodexHome, RolloutWriter, ThreadCatalog, session_meta
from tests.conformance._realpeer import MockModel, Peer, bridge_peer, listed_pages, real_peer
from tests.conftest import CAPTURES_DIR
from tests.storage._homes import list_order_home

pytestmark = pytest.mark.conformance


def _write_capture_events(home: Path, capture: str, cwd: Path) -> tuple[str, Path]:
    """Store the events of a captured thread through the bridge's writer, as the runtime does."""
    lines = list(core.iter_rollout_jsonl((CAPTURES_DIR / capture / "rollout.jsonl").read_bytes()))
    meta = next(line for line in lines if isinstance(line, core.SessionMetaLine)).payload
    created = datetime.now(UTC)
    path = CodexHome(home).new_rollout_path(meta.thread_id, created.astimezone())
    writer = RolloutWriter.create(
        path,
        session_meta(
            thread_id=meta.thread_id,
            created=created,
            cwd=str(cwd),
            originator="codex-app-bridge",
            model_provider="mock",
        ),
    )
    for line in lines:
        if isinstance(line, core.EventMsgLine):
            writer.append_event(line.payload)
    writer.close()
    return meta.thread_id, path


@pytest.mark.parametrize("capture", ["plain", "shell", "interrupt", "error_fatal"])
def test_real_binary_lists_resumes_and_continues_what_the_bridge_stored(
    capture: str, tmp_path: Path
) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    thread_id, path = _write_capture_events(home, capture, cwd)
    catalog = ThreadCatalog(CodexHome(home))
    stored = catalog.find(thread_id)
    assert stored is not None
    ours = [dump_dict(t) for t in build_turns(catalog.history(stored), interrupt_stale=True)]
    with MockModel() as model:
        model.write_config(home)
        with real_peer(home, cwd) as real:
            listed = real.result("thread/list", {})["data"]
            assert [(t["id"], t["path"]) for t in listed] == [(thread_id, str(path))]
            resumed = real.result("thread/resume", {"threadId": thread_id})["thread"]
            assert resumed["turns"] == ours
            turn = real.run_turn(thread_id, "and one more")
            assert turn["status"] == "completed"
            read = real.result("thread/read", {"threadId": thread_id, "includeTurns": True})
            assert read["thread"]["turns"][: len(ours)] == ours
            assert len(read["thread"]["turns"]) == len(ours) + 1


def test_bridge_reads_what_the_real_binary_stored(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    with MockModel() as model:
        model.write_config(home)
        with real_peer(home, cwd) as real:
            thread = real.result("thread/start", {})["thread"]
            real.run_turn(thread["id"], "first question")
            real.run_turn(thread["id"], "second question")
            real.result("thread/name/set", {"threadId": thread["id"], "name": "named by codex"})
            read = real.result("thread/read", {"threadId": thread["id"], "includeTurns": True})
            listed = real.result("thread/list", {})["data"]
    catalog = ThreadCatalog(CodexHome(home))
    (stored,) = catalog.threads()
    assert stored.thread_id == thread["id"]
    assert str(stored.path) == read["thread"]["path"]
    assert stored.name == "named by codex" == listed[0]["name"]
    assert stored.preview == listed[0]["preview"]
    assert stored.model == listed[0]["model"]
    assert stored.created_at_s == listed[0]["createdAt"]
    turns = build_turns(catalog.history(stored), interrupt_stale=True)
    assert [dump_dict(turn) for turn in turns] == read["thread"]["turns"]


def test_real_binary_resumes_and_continues_a_thread_the_bridge_server_stored(
    tmp_path: Path,
) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    with MockModel() as model:
        # a provider both servers' config knows (the binary resumes with the stored one)
        model.write_config(home)
        with bridge_peer(home, cwd) as bridge:
            started = bridge.result(
                "thread/start", {"modelProvider": "mock", "model": "mock-model"}
            )
            thread_id = started["thread"]["id"]
            bridge.run_turn(thread_id, "first")
            bridge.run_turn(thread_id, "second")
            bridge.result("thread/name/set", {"threadId": thread_id, "name": "from the bridge"})
            ours = bridge.result("thread/read", {"threadId": thread_id, "includeTurns": True})
        with real_peer(home, cwd) as real:
            listed = real.result("thread/list", {})["data"]
            assert [(t["id"], t["path"], t["preview"]) for t in listed] == [
                (thread_id, ours["thread"]["path"], "first")
            ]
            resumed = real.result("thread/resume", {"threadId": thread_id})["thread"]
            assert resumed["turns"] == ours["thread"]["turns"]
            assert real.run_turn(thread_id, "third")["status"] == "completed"
    # and the bridge reads the turn the binary appended
    with bridge_peer(home, cwd) as bridge:
        read = bridge.result("thread/read", {"threadId": thread_id, "includeTurns": True})
        assert read["thread"]["turns"][:2] == ours["thread"]["turns"]
        assert read["thread"]["turns"][2]["items"][0]["content"][0]["text"] == "third"


def _pages(peer: Peer, method: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every page of a paged method, following ``nextCursor`` (the whole responses)."""
    pages: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = peer.result(method, {**params, "cursor": cursor})
        pages.append(page)
        cursor = page["nextCursor"]
        if cursor is None:
            return pages


def test_turns_and_items_page_exactly_as_the_real_server_pages_them(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    queries: list[tuple[str, dict[str, Any]]] = [
        ("thread/turns/list", {"limit": 1}),
        ("thread/turns/list", {"limit": 2, "sortDirection": "asc"}),
        ("thread/turns/list", {"itemsView": "full"}),
        ("thread/turns/list", {"itemsView": "notLoaded", "limit": 0}),
        ("thread/items/list", {"limit": 2}),
        ("thread/items/list", {"limit": 1, "sortDirection": "desc"}),
    ]
    with MockModel() as model:
        model.write_config(home)
        with real_peer(home, cwd) as real:
            thread_id = real.result("thread/start", {})["thread"]["id"]
            for text in ("one", "two", "three"):
                real.run_turn(thread_id, text)
            expected = [
                _pages(real, method, {"threadId": thread_id, **params})
                for method, params in queries
            ]
            turn_id = expected[0][0]["data"][0]["id"]
            by_turn = real.result("thread/items/list", {"threadId": thread_id, "turnId": turn_id})
    with bridge_peer(home, cwd) as bridge:
        got = [
            _pages(bridge, method, {"threadId": thread_id, **params}) for method, params in queries
        ]
        assert got == expected
        assert (
            bridge.result("thread/items/list", {"threadId": thread_id, "turnId": turn_id})
            == by_turn
        )


def test_both_servers_list_rollouts_by_the_time_in_their_names(tmp_path: Path) -> None:
    # names and session_meta times that disagree (tests/data/list_order): both servers list
    # and page them in the same order (the names', then the ids), each following its own cursors
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    list_order_home(home)
    with MockModel() as model:
        model.write_config(home)
        with real_peer(home, cwd) as real:
            (everything,) = listed_pages(real, 25)
            pages = listed_pages(real, 2)
    with bridge_peer(home, cwd) as bridge:
        assert listed_pages(bridge, 25) == [everything]
        ours = listed_pages(bridge, 2)
    assert ours[:2] == pages[:2]
    # 0.163.0's cursor is the last row's name time alone, and its next page starts before that
    # second: E, named in the same second as F (the last row of page 2), is never shown there.
    # The bridge's cursor holds the id too (README "Known differences"): nothing is skipped
    assert [row["id"] for row in pages[2]] == [everything[5]["id"]]
    assert ours[2] == everything[4:]
