"""``codex_app_bridge._inotify``: the one inotify binding (``storage._dirwatch``, ``machine._watch``)."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codex_app_bridge._inotify import IN_CREATE, IN_DELETE, IN_IGNORED, IN_MOVED_TO, INotify

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="inotify is Linux's")


@pytest.fixture
def inotify() -> Iterator[INotify]:
    opened = INotify.open()
    try:
        yield opened
    finally:
        opened.close()


def test_nothing_pending_reads_empty_without_waiting(inotify: INotify, tmp_path: Path) -> None:
    inotify.add_watch(str(tmp_path), IN_CREATE)
    assert inotify.read() == []


def test_events_name_the_entry_and_every_pending_one_is_read(
    inotify: INotify, tmp_path: Path
) -> None:
    wd = inotify.add_watch(str(tmp_path), IN_CREATE | IN_DELETE | IN_MOVED_TO)
    names = [f"entry-{n:03}-{'x' * 200}" for n in range(400)]  # more than one read's worth
    for name in names:
        (tmp_path / name).touch()
    (tmp_path / names[0]).unlink()
    os.rename(tmp_path / names[1], tmp_path / "moved")
    events = inotify.read()
    assert [(e.wd, e.mask, e.name) for e in events[: len(names)]] == [
        (wd, IN_CREATE, name) for name in names
    ]
    assert [(e.mask, e.name) for e in events[len(names) :]] == [
        (IN_DELETE, names[0]),
        (IN_MOVED_TO, "moved"),
    ]
    assert inotify.read() == []


def test_a_removed_watch_reports_its_end_and_nothing_after(
    inotify: INotify, tmp_path: Path
) -> None:
    wd = inotify.add_watch(str(tmp_path), IN_CREATE)
    inotify.rm_watch(wd)
    (tmp_path / "after").touch()
    assert [(e.wd, e.mask) for e in inotify.read()] == [(wd, IN_IGNORED)]


def test_refusals_carry_the_kernels_errno(inotify: INotify, tmp_path: Path) -> None:
    with pytest.raises(OSError, match="No such file") as missing:
        inotify.add_watch(str(tmp_path / "missing"), IN_CREATE)
    assert missing.value.errno == errno.ENOENT
    with pytest.raises(OSError, match="Invalid argument") as unknown:
        inotify.rm_watch(12345)
    assert unknown.value.errno == errno.EINVAL
