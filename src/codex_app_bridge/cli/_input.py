"""The input of an offline command, read line by line without holding it, with progress.

``InputFile`` wraps one opened input (a file, or standard input). :meth:`InputFile.lines` yields
its physical lines one at a time; a command that needs a second pass (``inspect truncate``, or
``history`` looking at a rollout's first ``session_meta`` before folding it) calls it again: a
seekable input is read again from where it started, standard input from a pipe is copied to a
spool file during the first reading (on disk past ``SPOOL_IN_MEMORY`` bytes) and replayed from
there. A reading may stop early.

Progress: while a reading runs (once it has lasted ``SHOW_AFTER`` seconds) and standard error is
a terminal, a ``tqdm`` bar on standard error shows the bytes read (and the input's size when it is a regular file); when standard error is not
a terminal nothing is printed. Messages printed during a reading go through :func:`warn` so they
do not tear the bar.

Boundary: bytes of one input and the terminal's progress line; no parsing.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, BinaryIO, Final, Never, Self

if TYPE_CHECKING:
    from tqdm import tqdm

__all__ = ["SHOW_AFTER", "SPOOL_IN_MEMORY", "InputFile", "Progress", "numbered", "warn"]

SPOOL_IN_MEMORY: Final = 1 << 20
"""Bytes of a piped input kept in memory for a second reading before the spool goes to disk."""

SHOW_AFTER: Final = 1.0
"""Seconds a reading lasts before its bar appears: a bar only for work that lasts
(``CODEX_APP_BRIDGE_PROGRESS_AFTER`` sets others, 0 for a bar at once)."""

_UPDATE_EVERY: Final = 1 << 16
"""Bytes read between two updates of the bar (an update per line would cost more than reading)."""

_active: list[tqdm[Never]] = []


def warn(message: str) -> None:
    """Print ``message`` on standard error, above the progress bar if one is showing."""
    if _active:
        _active[-1].write(message, file=sys.stderr)
    else:
        print(message, file=sys.stderr)


def _show_after() -> float:
    text = os.environ.get("CODEX_APP_BRIDGE_PROGRESS_AFTER", "")
    try:
        seconds = float(text) if text else SHOW_AFTER
    except ValueError:
        return SHOW_AFTER
    return seconds if 0 <= seconds < float("inf") else SHOW_AFTER


class Progress:
    """Bytes read, as a bar on standard error when it is a terminal; otherwise nothing at all."""

    def __init__(self, label: str, total: int | None) -> None:
        self._bar: tqdm[Never] | None = None
        self._pending = 0
        if sys.stderr.isatty():
            from tqdm import tqdm  # only on a terminal: importing it costs start-up time

            bar: tqdm[Never] = tqdm(
                desc=label,
                total=total,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                file=sys.stderr,
                dynamic_ncols=True,
                delay=_show_after(),
            )
            self._bar = bar
            _active.append(bar)

    @property
    def showing(self) -> bool:
        return self._bar is not None

    def advance(self, count: int) -> None:
        bar = self._bar
        if bar is None:
            return
        self._pending += count
        if self._pending >= _UPDATE_EVERY:
            bar.update(self._pending)
            self._pending = 0

    def close(self) -> None:
        bar = self._bar
        if bar is None:
            return
        self._bar = None
        if self._pending:
            bar.update(self._pending)
        _active.remove(bar)
        bar.close()


def _regular_size(stream: BinaryIO) -> int | None:
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


class InputFile:
    """One opened input, read line by line any number of times (see the module docstring).

    ``rereadable``: a later :meth:`lines` will be asked for, so an input that cannot seek is
    spooled during the first reading. Without it, a second reading of such an input raises
    ``RuntimeError``.
    """

    def __init__(self, stream: BinaryIO, label: str, *, rereadable: bool = False) -> None:
        self._stream = stream
        self.label = label
        self._start: int | None = None
        try:
            if stream.seekable():
                self._start = stream.tell()
        except OSError:
            self._start = None
        size = _regular_size(stream) if self._start is not None else None
        self._size = None if size is None else max(size - (self._start or 0), 0)
        self._spool: IO[bytes] | None = None
        if self._start is None and rereadable:
            # closed by close() / the context manager, after the last reading
            self._spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
        self._spooled = 0
        self._readings = 0

    def lines(self, *, progress: str | None = None) -> Iterator[bytes]:
        """Every physical line from the start, newline kept (the last one may lack it).

        ``progress`` is the label of the bar shown while reading (``None``: no bar).
        """
        self._readings += 1
        if self._start is not None:
            self._stream.seek(self._start)
            return self._read(self._stream, progress, self._size)
        if self._readings > 1 and self._spool is None:
            raise RuntimeError(f"{self.label} cannot be read twice")
        return self._replay_then_read(progress)

    def _read(self, stream: IO[bytes], label: str | None, total: int | None) -> Iterator[bytes]:
        bar = Progress(label, total) if label is not None else None
        try:
            if bar is None or not bar.showing:
                # Not ``yield from stream``: closing this generator early would close the file.
                for raw in stream:
                    yield raw
                return
            for raw in stream:
                bar.advance(len(raw))
                yield raw
        finally:
            if bar is not None:
                bar.close()

    def _replay_then_read(self, label: str | None) -> Iterator[bytes]:
        spool = self._spool
        bar = Progress(label, None) if label is not None else None
        try:
            if spool is not None:
                spool.seek(0)
                replayed = 0
                while replayed < self._spooled:
                    raw = spool.readline()
                    replayed += len(raw)
                    if bar is not None:
                        bar.advance(len(raw))
                    yield raw
            if spool is not None:
                spool.seek(self._spooled)
            for raw in self._stream:
                if spool is not None:
                    spool.write(raw)
                    self._spooled += len(raw)
                if bar is not None:
                    bar.advance(len(raw))
                yield raw
        finally:
            if bar is not None:
                bar.close()

    def close(self) -> None:
        """Drop the spool (the stream itself belongs to the caller)."""
        if self._spool is not None:
            self._spool.close()
            self._spool = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def numbered(lines: Iterator[bytes]) -> Iterator[tuple[int, bytes]]:
    """``(line_number, line)`` for every non-blank line (1-based, newline stripped)."""
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip(b"\r\n")
        if line.strip():
            yield number, line
