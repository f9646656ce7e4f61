"""The directory watch of the rollout index: a change of entries by anyone is reported once."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from codex_app_bridge.storage._dirwatch import DirWatch


@pytest.fixture
def watch() -> Iterator[DirWatch]:
    opened = DirWatch.open()
    if opened is None:
        pytest.skip("no inotify here")
    yield opened
    opened.close()


def test_entries_created_removed_or_moved_are_reported_once_and_writes_are_not(
    tmp_path: Path, watch: DirWatch
) -> None:
    day = tmp_path / "day"
    day.mkdir()
    assert watch.watch(str(day))
    assert not watch.changed()
    (day / "a.jsonl").write_bytes(b"{}\n")
    assert watch.changed()
    assert not watch.changed()
    with (day / "a.jsonl").open("ab") as rollout:  # an append moves no directory
        rollout.write(b"{}\n")
    assert not watch.changed()
    os.replace(day / "a.jsonl", tmp_path / "a.jsonl")
    assert watch.changed()
    (tmp_path / "a.jsonl").unlink()
    assert not watch.changed()  # not watched
    shutil.rmtree(day)
    assert watch.changed()
    day.mkdir()
    assert watch.watch(str(day))  # the path is watched again once it is back
    (day / "b.jsonl").write_bytes(b"")
    assert watch.changed()


def test_a_directory_watched_for_some_names_reports_only_those(
    tmp_path: Path, watch: DirWatch
) -> None:
    assert watch.watch(str(tmp_path), frozenset({"sessions"}))
    (tmp_path / "thread_index.sqlite-wal").write_bytes(b"")
    assert not watch.changed()
    (tmp_path / "sessions").mkdir()
    assert watch.changed()


def test_a_directory_that_is_not_there_is_not_refused(tmp_path: Path, watch: DirWatch) -> None:
    assert watch.watch(str(tmp_path / "missing"))
    assert not watch.changed()


def test_a_watch_dropped_unclosed_gives_its_descriptor_back(watch: DirWatch) -> None:
    # each catalog's index holds one (the per-user limit of inotify instances is 128 by
    # default): one that is garbage collected without being closed must not keep it
    limit = int(Path("/proc/sys/fs/inotify/max_user_instances").read_text())
    for _ in range(limit + 10):
        dropped = DirWatch.open()
        assert dropped is not None
