"""``cli._input``: an input read line by line, again when asked (seek back or spool), and a
progress bar on stderr only when stderr is a terminal."""

from __future__ import annotations

import io
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codex_app_bridge.cli import _input
from codex_app_bridge.cli._input import InputFile, Progress, numbered, warn

LINES = [b'{"a": 1}\n', b"\n", b'{"b": 2}\r\n', b"last without newline"]


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class _NotTerminal(io.StringIO):
    def isatty(self) -> bool:
        return False


@pytest.fixture
def pipe() -> Iterator[io.BufferedReader]:
    """The read end of a pipe (not seekable) holding LINES, written from a thread."""
    read_fd, write_fd = os.pipe()

    def write() -> None:
        with os.fdopen(write_fd, "wb") as out:
            out.writelines(LINES)

    writer = threading.Thread(target=write)
    writer.start()
    with os.fdopen(read_fd, "rb") as stream:
        yield stream
    writer.join(timeout=10)


def test_a_file_is_read_again_from_where_it_started(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"skipped\n" + b"".join(LINES))
    with path.open("rb") as stream:
        stream.readline()
        given = InputFile(stream, str(path))
        assert list(given.lines()) == LINES
        assert list(given.lines()) == LINES


def test_a_reading_that_stops_early_leaves_the_file_open_for_the_next(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(LINES))
    with path.open("rb") as stream:
        given = InputFile(stream, str(path))
        assert next(iter(given.lines())) == LINES[0]
        assert list(given.lines()) == LINES
        assert not stream.closed


def test_a_pipe_is_spooled_for_a_second_reading(pipe: io.BufferedReader) -> None:
    with InputFile(pipe, "-", rereadable=True) as given:
        assert list(given.lines()) == LINES
        assert list(given.lines()) == LINES


def test_a_pipe_read_partly_is_replayed_then_read_on(pipe: io.BufferedReader) -> None:
    with InputFile(pipe, "-", rereadable=True) as given:
        first = given.lines()
        assert [next(first), next(first)] == LINES[:2]
        first.close()
        assert list(given.lines()) == LINES
        assert list(given.lines()) == LINES


def test_a_pipe_spools_to_disk_past_the_memory_limit(
    pipe: io.BufferedReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_input, "SPOOL_IN_MEMORY", 4)
    with InputFile(pipe, "-", rereadable=True) as given:
        assert list(given.lines()) == LINES
        assert list(given.lines()) == LINES


def test_a_pipe_not_declared_rereadable_cannot_be_read_twice(pipe: io.BufferedReader) -> None:
    given = InputFile(pipe, "-")
    assert list(given.lines()) == LINES
    with pytest.raises(RuntimeError, match="cannot be read twice"):
        given.lines()


def test_numbered_skips_blank_lines_and_strips_newlines() -> None:
    assert list(numbered(iter(LINES))) == [
        (1, b'{"a": 1}'),
        (3, b'{"b": 2}'),
        (4, b"last without newline"),
    ]


def test_progress_shows_the_bytes_read_when_stderr_is_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("CODEX_APP_BRIDGE_PROGRESS_AFTER", "0")  # as for a reading that lasts
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(LINES))
    with path.open("rb") as stream:
        assert list(InputFile(stream, str(path)).lines(progress="history: in.jsonl")) == LINES
    shown = terminal.getvalue()
    assert "history: in.jsonl: 100%" in shown
    assert "40.0/40.0" in shown  # bytes read / the file's size


def test_a_reading_that_ends_at_once_shows_no_bar_even_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.delenv("CODEX_APP_BRIDGE_PROGRESS_AFTER", raising=False)
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(LINES))
    with path.open("rb") as stream:
        assert list(InputFile(stream, str(path)).lines(progress="history: in.jsonl")) == LINES
    assert terminal.getvalue() == ""


def test_progress_prints_nothing_when_stderr_is_not_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet = _NotTerminal()
    monkeypatch.setattr(sys, "stderr", quiet)
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(LINES))
    with path.open("rb") as stream:
        assert list(InputFile(stream, str(path)).lines(progress="history")) == LINES
    bar = Progress("map", 10)
    bar.advance(10)
    bar.close()
    assert quiet.getvalue() == ""


def test_a_warning_during_a_reading_is_printed_whole_above_the_bar(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    bar = Progress("map", None)
    warn("map: line 3: not JSON")
    bar.close()
    assert "map: line 3: not JSON\n" in terminal.getvalue()
    warn("after")
    assert terminal.getvalue().endswith("after\n")
