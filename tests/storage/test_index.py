"""The rollout index: what the catalog answers from it always equals what the files say now.

Every check compares a long-lived catalog (its index kept current by the writer, by notes and by
``stat`` s) with a catalog built from scratch on a copy of the same files (no index): after the
server's own writes, after changes made under it by others, after crashes (a torn line, a process
killed while it built the index, a corrupt or stale index file)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_app_bridge.protocol import core
from codex_app_bridge.storage import (
    INDEX_FILE,
    CodexHome,
    RolloutWriter,
    RowFilter,
    StoredThread,
    ThreadCatalog,
    ThreadRow,
    session_meta,
)
from codex_app_bridge.storage import _catalog as catalog_module
from codex_app_bridge.storage import _index as index_module
from codex_app_bridge.storage._dirwatch import DirWatch
from codex_app_bridge.storage._facts import RolloutFacts
from tests.conftest import CAPTURES_DIR
from tests.storage._homes import home_from_capture, list_order_home

EVERYTHING = RowFilter(source_kinds=None)
ARCHIVED = RowFilter(archived=True, source_kinds=None)
START = datetime(2026, 11, 1, 12, 0, 0, tzinfo=UTC)
SRC = Path(__file__).resolve().parents[2] / "src"


def _events(capture: str = "plain") -> list[core.EventMsg]:
    lines = core.iter_rollout_jsonl((CAPTURES_DIR / capture / "rollout.jsonl").read_bytes())
    return [line.payload for line in lines if isinstance(line, core.EventMsgLine)]


def _thread_id(n: int) -> str:
    return f"01a2eeee-0000-7000-8000-{n:012d}"


def _write_thread(
    catalog: ThreadCatalog | None,
    home: Path,
    n: int,
    *,
    created: datetime | None = None,
    events: list[core.EventMsg] | None = None,
    local: tzinfo | None = None,
) -> Path:
    """A thread stored by the bridge's writer (told to ``catalog``'s index when given), named
    in the time zone ``local`` (this machine's when ``None``)."""
    created = created or START + timedelta(hours=n)
    path = CodexHome(home).new_rollout_path(_thread_id(n), created.astimezone(local))
    meta = session_meta(
        thread_id=_thread_id(n),
        created=created,
        cwd=f"/work/{n % 3}",
        originator="test",
        model_provider="mock",
    )
    on_write = None if catalog is None else catalog.index.noted_append
    writer = RolloutWriter.create(path, meta, now=created, on_write=on_write)
    for event in _events() if events is None else events:
        writer.append_event(event)
    writer.close()
    return path


def _view(catalog: ThreadCatalog) -> dict[str, Any]:
    """Everything the server asks the catalog, in one comparable value."""
    rows = catalog.rows(EVERYTHING)
    archived = catalog.rows(ARCHIVED)
    by_updated = catalog.rows(EVERYTHING, by_updated=True)
    ids = sorted({row.thread_id for row in (*rows, *archived)})
    found = catalog.find_many(ids)
    return {
        "rows": [_row(row) for row in rows],
        "archived": [_row(row) for row in archived],
        "by_updated": [tuple(row) for row in by_updated],
        "threads": {thread_id: _stored(found[thread_id]) for thread_id in sorted(found)},
        "names": catalog.names(),
        "git": catalog.git_infos(),
    }


def _row(row: ThreadRow) -> tuple[Any, ...]:
    """A row of a ``createdAt`` order: its ``updatedAt`` is as last seen (read again where it
    is shown, or where it is the order)."""
    return tuple(row._replace(updated_at="", updated_key=0))


def _stored(stored: StoredThread) -> dict[str, Any]:
    fields = {
        name: getattr(stored, name)
        for name in (
            "path",
            "files",
            "archived",
            "created_at",
            "updated_at",
            "preview",
            "model",
            "reasoning_effort",
            "name",
            "approval_policy",
            "approvals_reviewer",
            "sandbox_mode",
            "first_completed",
            "last_completed",
            "next_ordinal",
        )
    }
    fields["meta"] = dict(stored.meta_fields)
    return fields


def _from_scratch(home: Path) -> dict[str, Any]:
    """The view of a catalog that never saw ``home`` (a copy of its files, no index)."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "home"
        shutil.copytree(home, copy, ignore=shutil.ignore_patterns("thread_index.sqlite*"))
        view = _view(ThreadCatalog(CodexHome(copy)))
    return _relocated(view, copy, home)


def _relocated(value: Any, old: Path, new: Path) -> Any:
    if isinstance(value, Path):
        return new / value.relative_to(old) if value.is_relative_to(old) else value
    if isinstance(value, dict):
        return {k: _relocated(v, old, new) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list | tuple):
        items = [_relocated(v, old, new) for v in value]  # pyright: ignore[reportUnknownVariableType]
        return tuple(items) if isinstance(value, tuple) else items
    return value


def _assert_current(catalog: ThreadCatalog, home: Path) -> dict[str, Any]:
    view = _view(catalog)
    assert view == _from_scratch(home)
    return view


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The rollouts under ``tmp_path`` the index folds lines of (a ``scan`` that returns new
    facts; the scratch copies of ``_from_scratch`` are elsewhere)."""
    folded: list[str] = []
    original = index_module.scan

    def counting(path: str, facts: Any, *, until_listed: bool = False) -> Any:
        result = original(path, facts, until_listed=until_listed)
        if result is not facts and path.startswith(str(tmp_path)):
            folded.append(path)
        return result

    monkeypatch.setattr(index_module, "scan", counting)
    return folded


# ---------------------------------------------------------------------------- the writer


def test_the_index_follows_the_writer_without_reading_the_rollouts_back(
    tmp_path: Path, reads: list[str]
) -> None:
    catalog = ThreadCatalog(CodexHome(tmp_path))
    assert catalog.rows(EVERYTHING) == []
    paths = [_write_thread(catalog, tmp_path, n) for n in range(3)]
    catalog.set_name(_thread_id(1), "named")
    catalog.set_git_info(_thread_id(2), {"sha": "abc", "branch": "main", "originUrl": None})
    view = _assert_current(catalog, tmp_path)
    assert [t["name"] for t in view["threads"].values()] == [None, "named", None]
    assert [row[7] for row in view["rows"]] == ["Say hello in a long-ish streamed reply."] * 3
    assert reads == []  # every line came from the writer's notes
    # the writer resumes a stored thread: what it appends is told too
    stored = catalog.find(_thread_id(0))
    assert stored is not None
    writer = RolloutWriter.reopen(
        paths[0], next_ordinal=stored.next_ordinal, on_write=catalog.index.noted_append
    )
    for event in _events():
        writer.append_event(event)
    writer.close()
    again = catalog.find(_thread_id(0))
    assert again is not None
    assert again.next_ordinal == stored.next_ordinal + len(_events())
    _assert_current(catalog, tmp_path)
    assert reads == []


def test_writes_past_the_bounded_notes_cost_a_read_not_a_wrong_answer(tmp_path: Path) -> None:
    catalog = ThreadCatalog(CodexHome(tmp_path))
    _view(catalog)
    events = _events() * 60  # 600 lines, more than the queue keeps
    _write_thread(catalog, tmp_path, 0, events=events)
    assert len(catalog.index._notes) <= index_module._MAX_NOTES  # pyright: ignore[reportPrivateUsage]
    view = _assert_current(catalog, tmp_path)
    assert view["threads"][_thread_id(0)]["next_ordinal"] == len(events) + 1


def test_a_new_index_reads_each_rollout_once(tmp_path: Path, reads: list[str]) -> None:
    for n in range(4):
        _write_thread(None, tmp_path, n)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    _assert_current(catalog, tmp_path)
    first = len(reads)
    assert first >= 4
    _view(catalog)
    _view(ThreadCatalog(CodexHome(tmp_path)))  # the next process: the index file
    assert len(reads) == first


# ---------------------------------------------------------------------------- changes under it


def test_changes_made_by_others_are_seen_on_the_next_request(tmp_path: Path) -> None:
    catalog = ThreadCatalog(CodexHome(tmp_path))
    paths = [
        _write_thread(catalog, tmp_path, n, created=START + timedelta(days=n)) for n in range(3)
    ]
    _assert_current(catalog, tmp_path)
    # another process appends a turn to a stored thread (the real binary continuing it)
    with paths[1].open("ab") as rollout:
        for line in (CAPTURES_DIR / "shell" / "rollout.jsonl").read_bytes().splitlines()[1:]:
            rollout.write(line + b"\n")
    view = _assert_current(catalog, tmp_path)
    assert (
        view["threads"][_thread_id(1)]["last_completed"]
        != view["threads"][_thread_id(0)]["last_completed"]
    )
    # the real binary stores a thread of its own (a revert and a fork among them)
    home_from_capture("revert_fork", tmp_path)
    view = _assert_current(catalog, tmp_path)
    assert len(view["rows"]) == 5
    # a user deletes a rollout, then a whole day of them
    paths[0].unlink()
    assert len(_assert_current(catalog, tmp_path)["rows"]) == 4
    shutil.rmtree(paths[2].parent)
    _assert_current(catalog, tmp_path)
    # another server archives a thread, renames another
    archived = tmp_path / "archived_sessions"
    archived.mkdir()
    os.replace(paths[1], archived / paths[1].name)
    other = ThreadCatalog(CodexHome(tmp_path))
    other.set_name(_thread_id(1), "renamed elsewhere")
    view = _assert_current(catalog, tmp_path)
    assert [row[0] for row in view["archived"]] == [_thread_id(1)]
    assert view["names"] == {_thread_id(1): "renamed elsewhere"}


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The directories the index stats (``_visit``), in order."""
    visited: list[str] = []
    original = index_module.RolloutIndex._visit  # pyright: ignore[reportPrivateUsage]

    def counting(index: Any, rel: str, *args: Any) -> None:
        visited.append(rel)
        original(index, rel, *args)

    monkeypatch.setattr(index_module.RolloutIndex, "_visit", counting)
    return visited


def _inotify() -> bool:
    watch = DirWatch.open()
    if watch is not None:
        watch.close()
    return watch is not None


@pytest.mark.skipif(not _inotify(), reason="no inotify here")
def test_requests_stat_no_directory_until_the_kernel_reports_a_change_by_anyone(
    tmp_path: Path, walks: list[str]
) -> None:
    catalog = ThreadCatalog(CodexHome(tmp_path))
    paths = [_write_thread(None, tmp_path, n, created=START + timedelta(days=n)) for n in range(3)]
    _assert_current(catalog, tmp_path)
    walks.clear()
    for n in range(3):
        assert catalog.find(_thread_id(n)) is not None
    assert len(catalog.rows(EVERYTHING)) == 3
    assert walks == []
    # another process stores a thread in a day directory the index knows, one in a new day
    _write_thread(None, tmp_path, 3, created=START + timedelta(days=1, hours=1))
    assert catalog.find(_thread_id(3)) is not None
    _write_thread(None, tmp_path, 4, created=START + timedelta(days=9))
    assert catalog.find(_thread_id(4)) is not None
    # removes one, archives another into a directory it makes
    paths[0].unlink()
    assert catalog.find(_thread_id(0)) is None
    archived = tmp_path / "archived_sessions"
    archived.mkdir()
    os.replace(paths[1], archived / paths[1].name)
    moved = catalog.find(_thread_id(1))
    assert moved is not None
    assert moved.archived
    _assert_current(catalog, tmp_path)
    walks.clear()
    assert catalog.find(_thread_id(2)) is not None
    assert walks == []
    # another process writes the index (it may have listed a directory): the next request walks
    with contextlib.closing(sqlite3.connect(tmp_path / INDEX_FILE)) as other:
        other.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('elsewhere', '1')")
        other.commit()
    assert catalog.find(_thread_id(2)) is not None
    assert walks


def test_without_inotify_every_request_stats_the_directories(
    tmp_path: Path, walks: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module.DirWatch, "open", classmethod(lambda cls: None))
    catalog = ThreadCatalog(CodexHome(tmp_path))
    _write_thread(None, tmp_path, 0)
    _assert_current(catalog, tmp_path)
    for _ in range(2):
        walks.clear()
        assert catalog.find(_thread_id(0)) is not None
        assert walks
    _write_thread(None, tmp_path, 1)
    assert catalog.find(_thread_id(1)) is not None


def test_a_thread_listed_then_found_has_its_file_read_to_the_end_and_its_row_kept(
    tmp_path: Path,
) -> None:
    # thread/list read the heads; thread/read of one of them reads the rest of its rollout,
    # which did not change: its row stays as the listing wrote it
    paths = [_write_thread(None, tmp_path, n) for n in range(2)]
    catalog = ThreadCatalog(CodexHome(tmp_path))
    assert len(catalog.rows(EVERYTHING)) == 2
    statements: list[str] = []
    catalog.index.db.set_trace_callback(statements.append)
    stored = catalog.find(_thread_id(0))
    assert stored is not None
    assert stored.last_completed is not None  # read to its end
    assert any(statement.startswith("UPDATE files SET facts") for statement in statements)
    assert not [statement for statement in statements if "INTO threads" in statement]
    # one whose file changed since it was listed (another process touched it): written again
    os.utime(paths[1], ns=(1, 1))
    statements.clear()
    assert catalog.find(_thread_id(1)) is not None
    assert [statement for statement in statements if "INTO threads" in statement]
    catalog.index.db.set_trace_callback(None)
    _assert_current(catalog, tmp_path)


def test_a_thread_never_read_found_has_its_file_read_once_and_nothing_looked_up_twice(
    tmp_path: Path, reads: list[str]
) -> None:
    # thread/read of a thread whose file was listed, never read: its only file is read to its
    # end in one pass (its facts written once), and its row is made from the files and the
    # name the read just fetched (not looked up again)
    for n in range(3):
        _write_thread(None, tmp_path, n, created=START + timedelta(days=2 * n))
    catalog = ThreadCatalog(CodexHome(tmp_path))
    assert len(catalog.rows(EVERYTHING, limit=1)) == 1
    assert catalog.wait_listed(timeout=30)  # the other days listed, their files not read
    assert catalog.index.unread(by_updated=False, limit=None)
    reads.clear()
    statements: list[str] = []
    catalog.index.db.set_trace_callback(statements.append)
    stored = catalog.find(_thread_id(0))
    catalog.index.db.set_trace_callback(None)
    assert stored is not None
    assert stored.last_completed is not None  # read to its end
    assert len(reads) == 1

    def counted(prefix: str) -> int:
        return sum(statement.startswith(prefix) for statement in statements)

    assert counted("UPDATE files SET facts") == 1
    assert counted("SELECT rel, thread_id, rollout_id, archived, facts FROM files") == 1
    assert counted("SELECT log, value FROM entries") == 1  # its name and git info at once
    assert counted("SELECT log, size, mtime_ns, offset FROM logs") == 1  # both logs' state
    assert not counted("SELECT value FROM entries")
    unlisted = f"FROM dirs WHERE mtime_ns = {index_module.UNLISTED}"
    assert sum(unlisted in statement for statement in statements) == 1
    assert counted("SELECT DISTINCT thread_id FROM files WHERE state = 0") == 0
    assert [statement for statement in statements if "INTO threads" in statement]
    _assert_current(catalog, tmp_path)


def test_moves_and_removals_by_the_server_keep_what_the_index_read(
    tmp_path: Path, reads: list[str]
) -> None:
    catalog = ThreadCatalog(CodexHome(tmp_path))
    for n in range(3):
        _write_thread(catalog, tmp_path, n)
    stored = catalog.find(_thread_id(0))
    assert stored is not None
    catalog.archive(stored)
    view = _assert_current(catalog, tmp_path)
    assert [row[0] for row in view["archived"]] == [_thread_id(0)]
    archived = catalog.find(_thread_id(0))
    assert archived is not None
    catalog.unarchive(archived)
    catalog.delete(catalog.find(_thread_id(1)) or stored)
    view = _assert_current(catalog, tmp_path)
    assert [row[0] for row in view["rows"]] == [_thread_id(2), _thread_id(0)]
    assert reads == []


def test_files_changed_in_the_same_instant_as_their_listing_are_listed_again(
    tmp_path: Path,
) -> None:
    # a directory modified within the timestamp tick of its listing cannot be trusted by its
    # modification time: two threads created back to back are both seen
    catalog = ThreadCatalog(CodexHome(tmp_path))
    created = START
    _write_thread(None, tmp_path, 0, created=created)
    assert len(catalog.rows(EVERYTHING)) == 1
    _write_thread(None, tmp_path, 1, created=created)
    assert len(catalog.rows(EVERYTHING)) == 2


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The directories the index lists (each listing costs as many entries as it holds)."""
    listings: list[str] = []
    original = index_module.RolloutIndex._list  # pyright: ignore[reportPrivateUsage]

    def counting(index: Any, rel_dir: str, mtime_ns: int, changed: set[str]) -> list[str]:
        listings.append(rel_dir)
        return original(index, rel_dir, mtime_ns, changed)

    monkeypatch.setattr(index_module.RolloutIndex, "_list", counting)
    return listings


@pytest.mark.skipif(not _inotify(), reason="no inotify here")
def test_a_directory_listed_once_is_kept_up_to_date_by_the_names_the_kernel_reports(
    tmp_path: Path, listed: list[str]
) -> None:
    # issue 23's soak: today's directory of a busy server grew to 45,000 rollouts, and listing
    # it again (a change the notes had not told yet, or one in the server's own timestamp tick)
    # took a third of the process's time by the tenth minute. Once listed under the watch, a
    # directory is never listed again: the names of the entries that changed are stat-ed
    catalog = ThreadCatalog(CodexHome(tmp_path))
    day = _write_thread(catalog, tmp_path, 0, created=START).parent
    assert catalog.find(_thread_id(0)) is not None  # the first walk, not watched yet
    _write_thread(None, tmp_path, 1, created=START + timedelta(minutes=1))
    assert catalog.find(_thread_id(1)) is not None  # watched and listed: followed from now on
    rel_day = str(day.relative_to(tmp_path))
    listed.clear()
    archived = tmp_path / "archived_sessions"
    archived.mkdir()
    for n in range(2, 12):  # the server's threads, another process's, in the same tick or not
        path = _write_thread(
            catalog if n % 2 else None, tmp_path, n, created=START + timedelta(minutes=n)
        )
        if n % 3 == 0:
            os.utime(day, ns=(0, 0))  # a modification time that tells nothing
        assert catalog.find(_thread_id(n)) is not None
        if n % 4 == 0:  # removed, or archived, by another process
            if n % 8:
                path.unlink()
            else:
                os.replace(path, archived / path.name)
            found = catalog.find(_thread_id(n))
            assert (found is None) if n % 8 else (found is not None and found.archived)
    (day / "notes.txt").write_bytes(b"not a rollout")
    (day / "sub").mkdir()
    assert len(catalog.rows(EVERYTHING)) == 10
    assert rel_day not in listed
    _assert_current(catalog, tmp_path)  # (a fresh index lists everything)
    listed.clear()
    # what the kernel could not report (its queue overflowed, a transaction rolled back): the
    # directory is listed again, once, and followed again
    index = catalog.index
    assert index._watch is not None  # pyright: ignore[reportPrivateUsage]
    index._watch.unfollow()  # pyright: ignore[reportPrivateUsage]
    _write_thread(None, tmp_path, 12, created=START + timedelta(minutes=12))
    assert catalog.find(_thread_id(12)) is not None
    assert listed.count(rel_day) == 1
    _write_thread(None, tmp_path, 13, created=START + timedelta(minutes=13))
    assert catalog.find(_thread_id(13)) is not None
    assert listed.count(rel_day) == 1
    _assert_current(catalog, tmp_path)


def test_without_inotify_a_busy_server_lists_the_directory_it_writes_in_once_per_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listed: list[str]
) -> None:
    # a request after each thread the server creates in today's directory: what it created is
    # known from its notes; a listing (as many entries as the day's threads) is not repeated
    monkeypatch.setattr(index_module.DirWatch, "open", classmethod(lambda cls: None))
    catalog = ThreadCatalog(CodexHome(tmp_path))
    now = [time.time_ns() + 10 * index_module.RACY_NS]  # its parents' creation: not racy
    catalog.index.clock_ns = lambda: now[0]
    day = _write_thread(catalog, tmp_path, 0, created=START).parent
    assert catalog.find(_thread_id(0)) is not None
    listed.clear()
    for n in range(1, 6):
        _write_thread(catalog, tmp_path, n, created=START + timedelta(minutes=n))
        assert catalog.find(_thread_id(n)) is not None
    assert listed == []
    # another process creates a thread there: its change is later than the server's own
    _write_thread(None, tmp_path, 6, created=START + timedelta(minutes=6))
    latest = max(p.stat().st_mtime_ns for p in day.iterdir())
    os.utime(day, ns=(latest, latest + 1))
    assert catalog.find(_thread_id(6)) is not None
    assert listed == [str(day.relative_to(tmp_path))]
    # one in the same timestamp tick as the server's last change is seen within the interval
    _write_thread(catalog, tmp_path, 7, created=START + timedelta(minutes=7))
    assert catalog.find(_thread_id(7)) is not None
    ours = day.stat().st_mtime_ns
    _write_thread(None, tmp_path, 8, created=START + timedelta(minutes=8))
    os.utime(day, ns=(latest, ours))
    assert catalog.find(_thread_id(8)) is None
    now[0] += index_module.RELIST_NS
    assert catalog.find(_thread_id(8)) is not None
    # a note lost (more than the queue keeps): the directory is listed
    listed.clear()
    _write_thread(
        catalog, tmp_path, 9, created=START + timedelta(minutes=9), events=_events() * 100
    )
    assert catalog.find(_thread_id(9)) is not None
    assert listed == [str(day.relative_to(tmp_path))]
    _assert_current(catalog, tmp_path)


def test_without_inotify_a_directory_whose_listing_is_long_is_listed_again_less_often(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 23's soak: today's directory of a busy server grew to 45,000 rollouts, and its
    # listing once a second (a change in the server's own timestamp tick) took a third of the
    # process's time by the tenth minute; the interval now grows with what a listing takes
    monkeypatch.setattr(index_module.DirWatch, "open", classmethod(lambda cls: None))
    catalog = ThreadCatalog(CodexHome(tmp_path))
    now = [time.time_ns() + 10 * index_module.RACY_NS]  # its parents' creation: not racy
    catalog.index.clock_ns = lambda: now[0]
    ticks = [0]

    def perf_counter_ns() -> int:  # each listing "takes" a tenth of a second
        ticks[0] += 100_000_000
        return ticks[0]

    clock = SimpleNamespace(**vars(time))  # the index's ``time``, its listing's timer replaced
    clock.perf_counter_ns = perf_counter_ns
    monkeypatch.setattr(index_module, "time", clock)
    interval = 20 * 100_000_000  # RELIST_SHARE times the listing: twice RELIST_NS
    day = _write_thread(catalog, tmp_path, 0, created=START).parent
    assert catalog.find(_thread_id(0)) is not None
    _write_thread(catalog, tmp_path, 1, created=START + timedelta(minutes=1))
    assert catalog.find(_thread_id(1)) is not None
    ours = day.stat().st_mtime_ns
    # another process's thread in the same timestamp tick as the server's last change
    _write_thread(None, tmp_path, 2, created=START + timedelta(minutes=2))
    os.utime(day, ns=(ours, ours))
    assert catalog.find(_thread_id(2)) is None
    now[0] += index_module.RELIST_NS
    assert catalog.find(_thread_id(2)) is None  # a short listing's interval is not enough
    now[0] += interval - index_module.RELIST_NS
    assert catalog.find(_thread_id(2)) is not None
    _assert_current(catalog, tmp_path)


# ---------------------------------------------------------------------------- crashes


def test_a_torn_rollout_line_is_skipped_and_what_follows_it_is_read(tmp_path: Path) -> None:
    catalog = ThreadCatalog(CodexHome(tmp_path))
    path = _write_thread(catalog, tmp_path, 0, events=_events()[:2])
    _assert_current(catalog, tmp_path)
    with path.open("ab") as rollout:  # a writer died in the middle of a line
        rollout.write(b'{"timestamp":"2026-11-01T12:00:00.000Z","type":"event_msg","pay')
    _assert_current(catalog, tmp_path)
    stored = catalog.find(_thread_id(0))
    assert stored is not None
    writer = RolloutWriter.reopen(
        path, next_ordinal=stored.next_ordinal, on_write=catalog.index.noted_append
    )
    for event in _events()[2:]:
        writer.append_event(event)
    writer.close()
    view = _assert_current(catalog, tmp_path)
    assert view["threads"][_thread_id(0)]["preview"] == "Say hello in a long-ish streamed reply."


def test_a_torn_name_line_stays_a_line_of_its_own(tmp_path: Path) -> None:
    catalog = ThreadCatalog(CodexHome(tmp_path))
    _write_thread(catalog, tmp_path, 0)
    catalog.set_name(_thread_id(0), "before")
    with (tmp_path / "session_index.jsonl").open("ab") as names:
        names.write(b'{"id":"01a2eeee-0000-7000-8000-000000000000","thread_na')
    assert _assert_current(catalog, tmp_path)["names"] == {_thread_id(0): "before"}
    catalog.set_name(_thread_id(0), "after")
    assert _assert_current(catalog, tmp_path)["names"] == {_thread_id(0): "after"}


_KILLED_BUILD = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from codex_app_bridge.storage import CodexHome, RowFilter, ThreadCatalog
    from codex_app_bridge.storage import _catalog, _index

    _catalog._FILL_BATCH = 2

    original = _index.scan
    count = 0

    def dying(*args, **kwargs):
        global count
        count += 1
        if count == int(sys.argv[3]):
            os._exit(9)  # killed in the middle of building the index
        return original(*args, **kwargs)

    catalog = ThreadCatalog(CodexHome(Path(sys.argv[1])))
    catalog.rows(RowFilter(source_kinds=None), limit=2)  # committed: some files still unread
    _index.scan = dying
    catalog.rows(RowFilter(source_kinds=None))
    """
)


@pytest.mark.parametrize("after_files", [1, 7])
def test_a_process_killed_while_it_builds_the_index_leaves_nothing_wrong(
    tmp_path: Path, after_files: int
) -> None:
    for n in range(12):
        _write_thread(None, tmp_path, n, created=START + timedelta(days=n))
    died = subprocess.run(
        [sys.executable, "-c", _KILLED_BUILD, str(tmp_path), str(SRC), str(after_files)],
        timeout=60,
        check=False,
    )
    assert died.returncode == 9
    _assert_current(ThreadCatalog(CodexHome(tmp_path)), tmp_path)


def test_a_corrupt_index_is_built_again_from_the_files(tmp_path: Path) -> None:
    for n in range(3):
        _write_thread(None, tmp_path, n)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    expected = _view(catalog)
    catalog.close()
    index = tmp_path / INDEX_FILE
    data = bytearray(index.read_bytes())
    data[100:4000] = os.urandom(3900)
    index.write_bytes(bytes(data))
    assert _view(ThreadCatalog(CodexHome(tmp_path))) == expected
    index.write_bytes(b"not a database at all")
    assert _view(ThreadCatalog(CodexHome(tmp_path))) == expected


def test_an_index_of_another_version_is_built_again_on_disk(tmp_path: Path) -> None:
    _write_thread(None, tmp_path, 0)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    expected = _view(catalog)
    catalog.close()
    with sqlite3.connect(tmp_path / INDEX_FILE) as db:
        db.execute("UPDATE meta SET value = 'from another version' WHERE key = 'version'")
    assert _view(ThreadCatalog(CodexHome(tmp_path))) == expected
    with sqlite3.connect(tmp_path / INDEX_FILE) as db:
        (version,) = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    assert version == index_module.INDEX_VERSION


def test_an_index_older_than_the_files_is_brought_up_to_date(tmp_path: Path) -> None:
    catalog = ThreadCatalog(CodexHome(tmp_path))
    paths = [_write_thread(catalog, tmp_path, n) for n in range(3)]
    catalog.set_name(_thread_id(0), "old name")
    _view(catalog)
    catalog.close()
    old = (tmp_path / INDEX_FILE).read_bytes()
    later = ThreadCatalog(CodexHome(tmp_path))
    _write_thread(later, tmp_path, 3)
    paths[1].unlink()
    later.set_name(_thread_id(0), "new name")
    with paths[2].open("ab") as rollout:
        rollout.write(b'{"timestamp":"t","type":"event_msg","payload":{"type":"user_message",')
        rollout.write(b'"message":"more"}}\n')
    _view(later)
    later.close()
    (tmp_path / INDEX_FILE).write_bytes(old)  # as if the last writes of the index were lost
    for suffix in ("-wal", "-shm"):
        Path(f"{tmp_path / INDEX_FILE}{suffix}").unlink(missing_ok=True)
    view = _assert_current(ThreadCatalog(CodexHome(tmp_path)), tmp_path)
    assert view["names"] == {_thread_id(0): "new name"}


# ---------------------------------------------------------------------------- a cold index


def test_a_first_page_reads_only_the_newest_rollouts_and_is_exact(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog_module, "_FILL_BATCH", 4)
    for n in range(60):  # one thread every 6 hours, 15 days
        _write_thread(None, tmp_path, n, created=START + timedelta(hours=6 * n))
    expected = _from_scratch(tmp_path)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    first = catalog.rows(EVERYTHING, limit=5)
    assert [_row(row) for row in first] == expected["rows"][:5]
    assert len(reads) == 5  # the 5 newest names, in batches of 4 at most
    last = first[-1]
    later = catalog.rows(EVERYTHING, limit=5, after=(last.created_key, last.thread_id))
    assert [_row(row) for row in later] == expected["rows"][5:10]
    newest = catalog.rows(EVERYTHING, by_updated=True, limit=5)
    assert [tuple(row) for row in newest] == expected["by_updated"][:5]
    assert _view(catalog) == expected


def test_an_updated_at_order_sees_files_changed_since_they_were_listed(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the index keeps each file's modification time from its listing (never read yet) or its
    # last read; another process then continues an old thread and another thread's segment
    # while this one runs: an updatedAt order stats them again and puts them first
    monkeypatch.setattr(catalog_module, "_FILL_BATCH", 2)
    paths = [_write_thread(None, tmp_path, n, created=START + timedelta(days=n)) for n in range(12)]
    catalog = ThreadCatalog(CodexHome(tmp_path), background=False)
    assert [row.thread_id for row in catalog.rows(EVERYTHING, limit=2)] == [
        _thread_id(11),
        _thread_id(10),
    ]
    catalog.rows(EVERYTHING, by_updated=True, limit=2)  # every file listed, its time stored
    assert len(reads) < len(paths)  # the old ones were never read
    later = time.time() + 60
    with paths[1].open("ab") as rollout:  # an old thread, never read: continued elsewhere
        rollout.write(_complete("continued", "later"))
    os.utime(paths[1], (later, later))
    os.utime(paths[10], (later - 1, later - 1))  # a read one, touched later
    newest = catalog.rows(EVERYTHING, by_updated=True, limit=3)
    assert [row.thread_id for row in newest] == [_thread_id(1), _thread_id(10), _thread_id(11)]
    assert [tuple(row) for row in newest] == _from_scratch(tmp_path)["by_updated"][:3]


def test_a_list_reads_the_head_of_a_long_rollout_not_a_megabyte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write_thread(None, tmp_path, 0)
    padding = {"type": "agent_message", "message": "x" * 1000}
    line = orjson.dumps({"timestamp": "2026-11-01T12:00:00.000Z", "type": "event_msg"})
    line = line[:-1] + b',"payload":' + orjson.dumps(padding) + b"}\n"
    with path.open("ab") as f:
        f.write(line * 3000)  # 3 MB of a long thread after its first user message
    expected = _from_scratch(tmp_path)
    read: list[int] = []
    original = os.pread

    def counting(fd: int, length: int, offset: int) -> bytes:
        data = original(fd, length, offset)
        read.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", counting)
    rows = ThreadCatalog(CodexHome(tmp_path), background=False).rows(EVERYTHING, limit=1)
    assert [_row(row) for row in rows] == expected["rows"]
    assert 0 < sum(read) < 128 << 10


_VARIED_FILTERS = (
    EVERYTHING,
    RowFilter(source_kinds=frozenset({"cli", "vscode"})),
    RowFilter(cwds=frozenset({"/work/1"}), source_kinds=None),
    RowFilter(
        providers=frozenset({"mock"}),
        default_provider="mock",
        source_kinds=frozenset({"exec", "appServer", "vscode"}),
    ),
    RowFilter(cwds=frozenset({"/work/0", "/work/2"}), search="hello", source_kinds=None),
    ARCHIVED,
    RowFilter(archived=True, providers=frozenset({"other"}), source_kinds=None),
)
_OFFSETS = (-11, 0, 5, 13)
"""UTC offsets (hours) of the machines that named the varied home's rollouts."""


def _varied_home(home: Path) -> None:
    """48 threads over 12 days, named in local times from UTC-11 to UTC+13, in three working
    directories, of four sources and three providers (one unnamed), some reverted into a
    segment written days later, some archived, some named."""
    layout = CodexHome(home)
    names: list[bytes] = []
    for n in range(48):
        thread_id = _thread_id(100 + n)
        created = START + timedelta(hours=6 * n, minutes=7 * n % 60)
        local = timezone(timedelta(hours=_OFFSETS[n % 4]))
        meta = session_meta(
            thread_id=thread_id,
            created=created,
            cwd=f"/work/{n % 3}",
            originator="test",
            model_provider=("mock", "other", None)[n // 3 % 3],
            source=("vscode", "cli", "exec", "mcp")[n // 2 % 4],
        )
        path = layout.new_rollout_path(thread_id, created.astimezone(local))
        writer = RolloutWriter.create(path, meta, now=created)
        for event in _events()[: 1 + n % 8]:
            writer.append_event(event)
        writer.close()
        files = [path]
        if n % 7 == 3:  # reverted two days later: a segment on the whole first rollout
            later = created + timedelta(days=2, hours=n % 5)
            segment_id = f"01a2ffff-0000-7000-8000-{n:012d}"
            lines = path.read_bytes().count(b"\n")
            base = {
                "thread_id": thread_id,
                "end_ordinal_exclusive": lines,
                "end_byte_offset": path.stat().st_size,
            }
            segment_meta = session_meta(
                thread_id=thread_id,
                created=later,
                cwd=f"/work/{n % 3}",
                originator="test",
                model_provider="mock",
                history_base=base,
            )
            segment = layout.new_rollout_path(thread_id, later.astimezone(local), segment_id)
            writer = RolloutWriter.create(segment, segment_meta, first_ordinal=lines, now=later)
            writer.append_event(_events()[-1])
            writer.close()
            files.append(segment)
        if n % 5 == 1:
            layout.archived_sessions.mkdir(exist_ok=True)
            for file in files:
                file.rename(layout.archived_sessions / file.name)
        if n % 6 == 2:
            names.append(orjson.dumps({"id": thread_id, "thread_name": f"thread {n}"}) + b"\n")
    layout.session_index.write_bytes(b"".join(names))


def _key(row: ThreadRow, by_updated: bool) -> tuple[int, str | None]:
    return (row.updated_key if by_updated else row.created_key), row.thread_id


@pytest.mark.parametrize("by_updated", [False, True], ids=["created", "updated"])
@pytest.mark.parametrize("descending", [True, False], ids=["desc", "asc"])
def test_pages_of_a_home_never_indexed_are_those_of_the_full_index(
    tmp_path: Path, by_updated: bool, descending: bool
) -> None:
    # a first page reads the newest day directories only (and the background lists the rest):
    # every page, then every next page by its cursor, is the full index's, filters and all
    home = tmp_path / "home"
    _varied_home(home)
    full = ThreadCatalog(CodexHome(home))
    full.threads()  # every directory listed, every file read
    index = home / INDEX_FILE
    for where in _VARIED_FILTERS:
        expected = full.rows(where, by_updated=by_updated, descending=descending)
        assert expected  # each filter keeps some threads
        render = tuple if by_updated else _row
        for limit in (2, 9):
            shutil.copytree(home, tmp_path / "cold", ignore=shutil.ignore_patterns("*.sqlite*"))
            cold = ThreadCatalog(CodexHome(tmp_path / "cold"), background=False)
            pages: list[ThreadRow] = []
            after: tuple[int, str | None] | None = None
            while True:
                page = cold.rows(
                    where, by_updated=by_updated, descending=descending, after=after, limit=limit
                )
                if not pages and not by_updated and descending:
                    if limit == 2 and not where.archived:
                        assert cold.index.has_unlisted(), "the first page listed every day"
                    shown = cold.find_many(row.thread_id for row in page)
                    assert [_stored(shown[row.thread_id]) for row in page] == [
                        _relocated(_stored(stored), home, tmp_path / "cold")
                        for stored in full.find_many(row.thread_id for row in page).values()
                    ]
                pages += page
                if len(page) < limit:
                    break
                after = _key(page[-1], by_updated)
            assert [render(row) for row in pages] == [render(row) for row in expected]
            cold.close()
            shutil.rmtree(tmp_path / "cold")
    assert index.exists()


def test_the_created_at_order_is_the_rollout_names_as_the_binary_lists_them(
    tmp_path: Path,
) -> None:
    # 0.163.0 orders by the time in the file's name, then the id, newest first, and shows the
    # session_meta time: a thread named at 10:00 but created at 20:00 UTC (a machine at UTC-10)
    # comes after one named at 11:00, one named the day before after all of that day's
    expected = list_order_home(tmp_path)
    everything = expected["lists"][0]
    assert everything["params"] == {}
    for cold in (True, False):
        catalog = ThreadCatalog(CodexHome(tmp_path), background=False)
        pages: list[ThreadRow] = []
        after: tuple[int, str | None] | None = None
        while page := catalog.rows(EVERYTHING, limit=2, after=after):
            pages += page
            after = (page[-1].created_key, page[-1].thread_id)
        assert [row.thread_id for row in pages] == [t["id"] for t in everything["data"]]
        shown = catalog.find_many(row.thread_id for row in pages)
        assert [
            {
                "id": row.thread_id,
                "createdAt": shown[row.thread_id].created_at_s,
                "updatedAt": shown[row.thread_id].updated_at_s,
            }
            for row in pages
        ] == everything["data"], "cold" if cold else "indexed"
        catalog.close()


def test_a_first_page_of_a_home_never_indexed_reads_as_many_rollouts_as_it_shows(
    tmp_path: Path, reads: list[str]
) -> None:
    # the page's rows are the newest names: no other rollout is read for it (a createdAt order
    # read the whole newest day, and the 12 hours of names before it), past the newest day too
    last = datetime(2026, 11, 2, 0, 40, tzinfo=UTC)
    for n in range(80):  # one thread every 20 minutes over three days, 3 on the newest
        created = last - timedelta(minutes=20 * (79 - n))
        _write_thread(None, tmp_path, n, created=created, local=UTC)
    catalog = ThreadCatalog(CodexHome(tmp_path), background=False)
    rows = catalog.rows(EVERYTHING, limit=6)
    assert [row.thread_id for row in rows] == [_thread_id(n) for n in range(79, 73, -1)]
    assert len(reads) == 6
    assert catalog.index.has_unlisted()


def test_a_page_read_ahead_is_what_the_first_request_finds(
    tmp_path: Path, reads: list[str]
) -> None:
    # a server reads its default first page ahead at start-up: the request that asks for it
    # then reads no rollout again and gets the full index's answer; the read-ahead leaves the
    # other days to the background listing the first request starts
    _varied_home(tmp_path)
    expected = _from_scratch(tmp_path)
    where = RowFilter(source_kinds=frozenset({"cli", "vscode"}))
    catalog = ThreadCatalog(CodexHome(tmp_path))
    catalog.read_ahead(where, 4, fetch=3)
    assert reads  # the newest rollouts
    assert catalog.index.has_unlisted()
    assert catalog.wait_listed(timeout=0)  # no background listing yet
    read = len(reads)
    rows = catalog.rows(where, limit=4)
    shown = catalog.find_many(row.thread_id for row in rows[:3])
    assert len(reads) == read
    wanted = [row for row in expected["rows"] if row[4] in where.source_kinds]
    assert [_row(row) for row in rows] == wanted[:4]
    assert {t: _stored(s) for t, s in shown.items()} == {
        row[0]: expected["threads"][row[0]] for row in wanted[:3]
    }
    assert catalog.wait_listed(timeout=60)
    assert not catalog.index.has_unlisted()
    assert _view(catalog) == expected
    catalog.close()
    shutil.rmtree(tmp_path / "codex-app-bridge")
    catalog.read_ahead(where, 4, fetch=3)  # closed: reads nothing, opens nothing
    assert not (tmp_path / INDEX_FILE).exists()


def test_the_background_lists_every_directory_and_the_next_process_keeps_it(
    tmp_path: Path, reads: list[str]
) -> None:
    _varied_home(tmp_path)
    expected = _from_scratch(tmp_path)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    first = catalog.rows(EVERYTHING, limit=3)
    assert [_row(row) for row in first] == expected["rows"][:3]
    assert catalog.wait_listed(timeout=60)
    assert not catalog.index.has_unlisted()
    catalog.close()
    read = len(reads)
    later = ThreadCatalog(CodexHome(tmp_path), background=False)
    assert [_row(row) for row in later.rows(EVERYTHING, limit=3)] == expected["rows"][:3]
    assert len(reads) == read  # nothing listed or read again
    assert _view(later) == expected


# ---------------------------------------------------------------------------- any history


_OPERATIONS = st.lists(
    st.sampled_from(["new", "append", "torn", "delete", "archive", "unarchive", "name", "git"]),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(operations=_OPERATIONS, seed=st.integers(0, 2**16))
def test_after_any_sequence_of_changes_the_index_says_what_the_files_say(
    operations: list[str], seed: int
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        catalog = ThreadCatalog(CodexHome(home))
        made: list[Path] = []
        for step, operation in enumerate(operations):
            pick = (seed + step) % max(len(made), 1)
            if operation == "new" or not made:
                made.append(_write_thread(catalog, home, len(made), events=_events()[: seed % 8]))
                continue
            path = made[pick]
            current = catalog.find(_thread_id(pick))
            if operation == "append" and path.exists() and current is not None:
                writer = RolloutWriter.reopen(
                    path, next_ordinal=current.next_ordinal, on_write=catalog.index.noted_append
                )
                writer.append_event(_events()[step % len(_events())])
                writer.close()
            elif operation == "torn" and path.exists():
                with path.open("ab") as rollout:
                    rollout.write(b'{"timestamp":"t","type":"event_')
            elif operation == "delete" and current is not None:
                catalog.delete(current)
            elif operation == "archive" and current is not None and not current.archived:
                catalog.archive(current)
            elif operation == "unarchive" and current is not None and current.archived:
                catalog.unarchive(current)
            elif operation == "name":
                catalog.set_name(_thread_id(pick), f"name {step}")
            elif operation == "git":
                catalog.set_git_info(
                    _thread_id(pick), {"sha": str(step), "branch": None, "originUrl": None}
                )
            if step % 3 == seed % 3:
                _assert_current(catalog, home)
        _assert_current(catalog, home)


def _event_line(payload: dict[str, Any]) -> bytes:
    return orjson.dumps({"timestamp": "t", "type": "event_msg", "payload": payload}) + b"\n"


def _started(turn_id: str, trigger: str | None = None) -> bytes:
    attribution = {"turn_id": turn_id, "turn_trigger": trigger, "root_turn_id": turn_id}
    return _event_line(
        {"type": "task_started", "turn_id": turn_id, "turn_attribution": attribution}
    )


def _complete(turn_id: str, text: str | None) -> bytes:
    return _event_line({"type": "task_complete", "turn_id": turn_id, "last_agent_message": text})


def test_the_indexed_read_state_turns_skip_compactions_and_continued_goal_turns() -> None:
    # the listener's rule (read_state_of_history), folded from the lines: a turn without a
    # final message (a standalone compaction) is no activity, and a goal turn another goal
    # turn follows directly is none; the last goal turn counts, in every cut of the file
    lines = [
        _started("compact"),
        _complete("compact", None),
        _started("g1", "goal"),
        _complete("g1", "step 1"),
        _started("g2", "goal"),
        _complete("g2", "done"),
    ]
    whole = b"".join(lines)
    facts = RolloutFacts()
    facts.fold_bytes(whole)
    assert facts.read_turns() == ("g2", "g2")
    for cut in range(1, len(lines)):
        first = RolloutFacts()
        first.fold_bytes(b"".join(lines[:cut]))
        kept = RolloutFacts.decode(first.encode())  # the index keeps the fold between reads
        kept.fold_bytes(b"".join(lines[cut:]))
        assert kept.read_turns() == ("g2", "g2")
    facts.fold_bytes(_started("user") + _complete("user", "hi"))
    assert facts.read_turns() == ("g2", "user")


@given(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 12, 31)))
def test_a_rollout_names_time_is_its_seconds_read_as_utc(moment: datetime) -> None:
    stamp = moment.strftime("%Y-%m-%dT%H-%M-%S")
    expected = int(moment.replace(microsecond=0, tzinfo=UTC).timestamp()) * 1_000_000
    assert index_module.name_key(stamp) == expected  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize("stamp", ["", "garbage", "2026-13-01T00-00-00", "2026-12-0xT00-00-00"])
def test_a_name_whose_time_is_not_one_sorts_first(stamp: str) -> None:
    assert index_module.name_key(stamp) == 0  # pyright: ignore[reportPrivateUsage]


@given(
    st.integers(min_value=1, max_value=9999),
    st.integers(min_value=0, max_value=14),
    st.integers(min_value=0, max_value=99),
)
def test_a_day_directory_counts_as_calendar_timegm_counts_it(
    year: int, month: int, day: int
) -> None:
    """``_day_seconds`` (no ``calendar`` import) gives ``calendar.timegm``'s seconds, and its
    ``ValueError`` where that raises one (a month out of range)."""
    import calendar

    name = f"{year:04d}-{month:02d}-{day:02d}"
    try:
        expected: int | None = calendar.timegm((year, month, day, 0, 0, 0))
    except ValueError:
        expected = None
    index_module._day_seconds.cache_clear()  # pyright: ignore[reportPrivateUsage]
    if expected is None:
        with pytest.raises(ValueError, match=r"month must be in 1\.\.12"):
            index_module._day_seconds(name)  # pyright: ignore[reportPrivateUsage]
    else:
        assert index_module._day_seconds(name) == expected  # pyright: ignore[reportPrivateUsage]
