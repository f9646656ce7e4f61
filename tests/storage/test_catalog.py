"""The catalog over a CODEX_HOME the real 0.163.0 binary wrote (the captures, laid out as it
names its files): threads are found, summarized and rebuilt to exactly the real ``thread/read``."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from codex_app_bridge.mapping.thread_history import build_turns
from codex_app_bridge.protocol.v2 import dump_dict
from codex_app_bridge.storage import CodexHome, StorageError, ThreadCatalog
from codex_app_bridge.storage._reader import LoadedRollout
from tests.conftest import CAPTURE_NAMES
from tests.storage._homes import CAPTURE_HOME, captured_thread_read, home_from_capture, index_open

MAIN = "01a229f2-bbfe-7a20-9d7f-35a05b666f52"
SEGMENT = "01a229f2-bca3-7bb2-ab4f-f54b91abaab4"
FORK = "01a229f2-bccb-7130-8ebf-f9767e792672"


@pytest.mark.parametrize("capture", CAPTURE_NAMES)
def test_stored_thread_rebuilds_the_turns_the_real_server_read(
    capture: str, tmp_path: Path
) -> None:
    home_from_capture(capture, tmp_path)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    expected = captured_thread_read(capture)
    thread = catalog.find(expected["id"])
    assert thread is not None
    assert thread.path.name == Path(expected["path"]).name
    assert thread.preview == expected["preview"]
    assert thread.model == expected["model"]
    assert thread.created_at_s == expected["createdAt"]
    assert thread.meta.cwd == expected["cwd"]
    turns = build_turns(catalog.history(thread), interrupt_stale=True)
    assert [dump_dict(turn) for turn in turns] == expected["turns"]


def test_reverted_thread_is_one_thread_whose_path_is_its_newest_segment(tmp_path: Path) -> None:
    placed = home_from_capture("revert_fork", tmp_path)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    threads = {thread.thread_id: thread for thread in catalog.threads()}
    assert sorted(threads) == sorted([MAIN, FORK])
    assert threads[MAIN].path == placed[SEGMENT]
    assert set(threads[MAIN].files) == {placed[MAIN], placed[SEGMENT]}
    assert threads[FORK].forked_from_id == MAIN
    fork_read = captured_thread_read("revert_fork", f"thread_read-{FORK}.json")
    turns = build_turns(catalog.history(threads[FORK]), interrupt_stale=True)
    assert [dump_dict(turn) for turn in turns] == fork_read["turns"]


def test_archive_moves_every_file_flat_and_unarchive_puts_them_back(tmp_path: Path) -> None:
    placed = home_from_capture("revert_fork", tmp_path)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    thread = catalog.find(MAIN)
    assert thread is not None
    catalog.archive(thread)
    archived = catalog.find(MAIN)
    assert archived is not None
    assert archived.archived
    assert {path.parent for path in archived.files} == {tmp_path / "archived_sessions"}
    # the fork's base (the revert segment) is still found in archived_sessions
    fork = catalog.find(FORK)
    assert fork is not None
    assert len(build_turns(catalog.history(fork))) == 2
    catalog.unarchive(archived)
    back = catalog.find(MAIN)
    assert back is not None
    assert not back.archived
    assert set(back.files) == {placed[MAIN], placed[SEGMENT]}


def test_the_history_of_a_thread_whose_rollout_went_away_is_a_lookup_error(
    tmp_path: Path,
) -> None:
    # the file may go between ``find`` and ``history`` (another process archived it): callers
    # treat a thread they cannot read as one they cannot find, by catching ``LookupError``
    placed = home_from_capture("revert_fork", tmp_path)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    thread = catalog.find(MAIN)
    assert thread is not None
    placed[SEGMENT].unlink()
    with pytest.raises(LookupError):
        catalog.history(thread)


def test_an_archive_that_fails_halfway_puts_back_the_files_it_moved(tmp_path: Path) -> None:
    home_from_capture("revert_fork", tmp_path)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    thread = catalog.find(MAIN)
    assert thread is not None
    first, second = thread.files
    (catalog.home.archived_sessions / second.name).mkdir(parents=True)  # no file goes there
    with pytest.raises(StorageError):
        catalog.archive(thread)
    assert first.is_file()
    assert second.is_file()
    again = catalog.find(MAIN)
    assert again is not None
    assert not again.archived
    assert again.files == thread.files


def test_delete_removes_the_thread(tmp_path: Path) -> None:
    home_from_capture("plain", tmp_path)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    (thread,) = catalog.threads()
    catalog.delete(thread)
    assert catalog.threads() == []
    assert catalog.find(thread.thread_id) is None


def test_names_come_from_the_session_index_last_entry_wins(tmp_path: Path) -> None:
    home_from_capture("plain", tmp_path)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    (thread,) = catalog.threads()
    assert thread.name is None
    catalog.set_name(thread.thread_id, "first")
    catalog.set_name(thread.thread_id, "second")
    (named,) = catalog.threads()
    assert named.name == "second"
    index = (tmp_path / "session_index.jsonl").read_text().splitlines()
    assert len(index) == 2
    assert '"thread_name":"second"' in index[1]


def test_files_that_are_not_rollouts_are_ignored(tmp_path: Path) -> None:
    home_from_capture("plain", tmp_path)
    (tmp_path / "sessions" / "notes.txt").write_text("x")
    (tmp_path / "sessions" / "rollout-2026-01-01T00-00-00-garbage.jsonl").write_text("{}")
    assert len(ThreadCatalog(CodexHome(tmp_path)).threads()) == 1


def test_capture_paths_are_under_the_capture_home() -> None:
    # the layout the helper reproduces is the one the real binary reported
    assert captured_thread_read("plain")["path"].startswith(f"{CAPTURE_HOME}/sessions/")


def _parsed_rollouts() -> int:
    """Parsed rollouts alive in the process."""
    gc.collect()
    return sum(isinstance(obj, LoadedRollout) for obj in gc.get_objects())


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_shed_drops_what_the_catalog_keeps_and_the_next_request_answers_as_before(
    tmp_path: Path,
) -> None:
    # issue 23's soak: parsed rollouts, resolved folds, notes and SQLite's caches were what a
    # busy spell left allocated after it; a quiet server has the catalog shed them
    home_from_capture("revert_fork", tmp_path)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    fork = catalog.find(FORK)
    assert fork is not None
    turns = [dump_dict(turn) for turn in build_turns(catalog.history(fork))]
    assert index_open(tmp_path)
    assert _parsed_rollouts() >= 1  # the fork and its base, kept parsed
    catalog.shed()
    assert _parsed_rollouts() == 0
    assert not index_open(tmp_path)
    again = catalog.find(FORK)
    assert again is not None
    assert [dump_dict(turn) for turn in build_turns(catalog.history(again))] == turns
    assert {thread.thread_id for thread in catalog.threads()} == {MAIN, FORK}
    catalog.close()
