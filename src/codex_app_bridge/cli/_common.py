"""Helpers shared by the CLI commands: codex-compatible ignored flags, exit statuses and JSONL
input reading (streamed, with progress: ``_input``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, Final

from pydantic import ValidationError

from codex_app_bridge.cli._input import InputFile, warn

EXIT_BAD_INPUT: Final = 1
"""Some input lines were bad (each reported on stderr); the rest was still processed."""
EXIT_USAGE: Final = 2
"""Bad usage or unreadable input: nothing was processed."""


def add_codex_compat_flags(parser: argparse.ArgumentParser, *, prefix: str = "codex") -> None:
    """Accept the flags clients pass to a ``codex`` binary: ``-c/--config KEY=VALUE``,
    ``--enable X`` and ``--disable X`` (``serve`` applies them as config overrides; the other
    commands ignore them) and ``--profile P`` (ignored). ``prefix`` names their destinations
    (the top-level parser's differ from a command's, so that neither erases the other's)."""
    group = parser.add_argument_group("codex compatibility")
    group.add_argument(
        "-c",
        "--config",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        dest=f"{prefix}_config",
        help=argparse.SUPPRESS,
    )
    group.add_argument(
        "--enable",
        action="append",
        default=None,
        metavar="FEATURE",
        dest=f"{prefix}_enable",
        help=argparse.SUPPRESS,
    )
    group.add_argument(
        "--disable",
        action="append",
        default=None,
        metavar="FEATURE",
        dest=f"{prefix}_disable",
        help=argparse.SUPPRESS,
    )
    group.add_argument(
        "--profile",
        default=None,
        metavar="PROFILE",
        dest=f"{prefix}_profile",
        help=argparse.SUPPRESS,
    )


def open_input(path: str) -> BinaryIO:
    """Open ``path`` for binary reading; ``-`` means standard input."""
    if path == "-":
        return sys.stdin.buffer
    return Path(path).open("rb")


def with_input(
    command: str, path: str, body: Callable[[InputFile], int], *, rereadable: bool = False
) -> int:
    """``body(input)`` on the opened input (an ``InputFile``: streamed, with progress; see
    ``_input``), closed afterwards (standard input is left open); an input that cannot be opened
    is reported on stderr and gives ``EXIT_USAGE``. ``rereadable``: ``body`` reads it twice."""
    try:
        stream = open_input(path)
    except OSError as exc:
        warn(f"{command}: cannot read {path}: {exc.strerror or exc}")
        return EXIT_USAGE
    source = InputFile(stream, path, rereadable=rereadable)
    try:
        return body(source)
    finally:
        source.close()
        if stream is not sys.stdin.buffer:
            stream.close()


def iter_lines(stream: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, line)`` for every non-blank line (1-based, newline stripped)."""
    for number, raw in enumerate(stream, start=1):
        line = raw.rstrip(b"\r\n")
        if line.strip():
            yield number, line


def report_bad_line(command: str, number: int, reason: str) -> None:
    """Report an input line that could not be processed, with its line number, on stderr."""
    warn(f"{command}: line {number}: {reason}")


def describe_validation_error(error: ValidationError, limit: int = 3) -> str:
    """A one-line summary of a pydantic error for a bad-line report: ``loc: msg; ...``."""
    details = error.errors(include_url=False)
    parts = [
        f"{'.'.join(str(p) for p in d['loc']) or '<root>'}: {d['msg']}" for d in details[:limit]
    ]
    more = f" (+{len(details) - limit} more)" if len(details) > limit else ""
    return "; ".join(parts) + more
