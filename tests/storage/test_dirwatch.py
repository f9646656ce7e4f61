"""The directory watch of the rollout index: a change of entries by anyone is reported once, and
the names of the entries that changed in a followed directory."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from codex_app_bridge import _inotify
from codex_app_bridge._inotify import Event
from codex_app_bridge.storage import _dirwatch as dirwatch_module
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


def test_a_followed_directory_tells_the_names_of_its_changed_entries_once(
    tmp_path: Path, watch: DirWatch
) -> None:
    day = tmp_path / "day"
    day.mkdir()
    (day / "old.jsonl").write_bytes(b"")
    assert watch.names(str(day)) is None  # not watched
    assert watch.watch(str(day))
    assert watch.names(str(day)) is None  # watched, not followed: list it
    watch.follow(str(day))
    assert watch.names(str(day)) == set()
    (day / "a.jsonl").write_bytes(b"{}\n")
    with (day / "old.jsonl").open("ab") as rollout:  # a write changes no entry
        rollout.write(b"{}\n")
    os.replace(day / "old.jsonl", tmp_path / "old.jsonl")
    (tmp_path / "old.jsonl").rename(day / "back.jsonl")
    (day / "sub").mkdir()
    assert watch.changed()
    assert watch.names(str(day)) == {"a.jsonl", "old.jsonl", "back.jsonl", "sub"}
    assert watch.names(str(day)) == set()  # told once
    (day / "a.jsonl").unlink()
    assert watch.names(str(day)) == set()  # not read from the kernel yet
    assert watch.changed()
    assert watch.names(str(day)) == {"a.jsonl"}


def test_what_the_kernel_cannot_vouch_for_is_not_told(tmp_path: Path, watch: DirWatch) -> None:
    day, other = tmp_path / "day", tmp_path / "other"
    day.mkdir()
    other.mkdir()
    for path in (day, other):
        assert watch.watch(str(path))
        watch.follow(str(path))
    # more changed names than a listing costs
    for n in range(dirwatch_module.MAX_NAMES + 1):
        (day / f"{n}.jsonl").write_bytes(b"")
    assert watch.changed()
    assert watch.names(str(day)) is None
    assert watch.names(str(other)) == set()
    # the directory moved: its path is watched anew (the watch followed the directory away)
    watch.follow(str(day))
    day.rename(tmp_path / "moved")
    day.mkdir()
    assert watch.changed()
    assert watch.names(str(day)) is None
    assert watch.watch(str(day))
    watch.follow(str(day))
    (tmp_path / "moved" / "late.jsonl").write_bytes(b"")
    (day / "new.jsonl").write_bytes(b"")
    assert watch.changed()
    assert watch.names(str(day)) == {"new.jsonl"}
    # removed
    shutil.rmtree(day)
    assert watch.changed()
    assert watch.names(str(day)) is None
    # the names read were lost (a transaction rolled back)
    watch.unfollow()
    assert watch.names(str(other)) is None


def test_a_queue_that_overflowed_tells_no_names(
    tmp_path: Path, watch: DirWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    day = tmp_path / "day"
    day.mkdir()
    assert watch.watch(str(day))
    watch.follow(str(day))
    (day / "a.jsonl").write_bytes(b"")
    inotify = watch._inotify  # pyright: ignore[reportPrivateUsage]
    real = inotify.read
    monkeypatch.setattr(
        inotify, "read", lambda: [*real(), Event(-1, _inotify.IN_Q_OVERFLOW, 0, "")]
    )
    assert watch.changed()
    assert watch.names(str(day)) is None
