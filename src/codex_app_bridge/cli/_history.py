"""``codex-app-bridge history [--thread-id ID] [FILE|-]``: rebuild a thread's turns offline.

A rollout JSONL in (a file, standard input, or with ``--thread-id`` the thread's newest rollout
under ``CODEX_HOME/sessions``); one JSON document out: ``{"turns": [...]}``, the turns
``thread/read {includeTurns: true}`` shows for that thread when it is not running (turns that
never ended are ``interrupted``; ``--keep-in-progress`` keeps them ``inProgress``).
``--items-view summary`` gives the ``thread/turns/list`` summaries instead of every item.

A 0.163.0 revert or fork segment starts from a base rollout (``history_base``): bases are looked
up by rollout id in the input file's directory, then under ``CODEX_HOME/sessions``.

Every file is streamed: lines are parsed and folded into the turns one at a time, so memory
follows the turns shown, not the length of the files; while a file is read and stderr is a
terminal, a progress bar shows the bytes read.

A line that is not JSON or not a rollout line is reported on stderr with its line number and
skipped; the other lines are still used and the exit status is 1. A missing history base is
reported the same way (the file's own lines are used). Exit status 2: bad usage or unreadable
input.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from codex_app_bridge.cli._common import (
    EXIT_BAD_INPUT,
    EXIT_USAGE,
    describe_validation_error,
    report_bad_line,
    with_input,
)
from codex_app_bridge.cli._input import InputFile, numbered, warn
from codex_app_bridge.mapping.thread_history import (
    HistoryBase,
    HistoryBaseError,
    ThreadHistoryBuilder,
    history_base_of,
    history_chain,
    iter_rollout_history,
    rollout_id_from_filename,
)
from codex_app_bridge.protocol.core import RolloutLine, SessionMetaLine, parse_rollout_line
from codex_app_bridge.protocol.v2 import dump_dict

__all__ = ["register"]

_COMMAND = "history"


class _Reader:
    """Parses rollout inputs line by line, reporting bad lines; remembers whether any was bad."""

    def __init__(self) -> None:
        self.failed = False
        self.lines = 0
        """Lines read (bad ones too)."""

    def parse(self, given: InputFile, label: str, progress: str) -> Iterator[RolloutLine]:
        for number, raw in numbered(given.lines(progress=progress)):
            self.lines += 1
            try:
                yield parse_rollout_line(raw)
            except ValidationError as exc:
                self.failed = True
                report_bad_line(label, number, describe_validation_error(exc))


def _own_base(given: InputFile) -> HistoryBase | None:
    """The ``history_base`` of the input's first ``session_meta`` (read up to it, silently: the
    lines are parsed and reported when they are folded)."""
    for _number, raw in numbered(given.lines()):
        try:
            line = parse_rollout_line(raw)
        except ValidationError:
            continue
        if isinstance(line, SessionMetaLine):
            return history_base_of([line])
    return None


def _codex_home(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    env = os.environ.get("CODEX_HOME")
    return Path(env) if env else Path.home() / ".codex"


def _rollout_files(directories: Iterable[Path], *, recursive: bool) -> list[Path]:
    found: list[Path] = []
    for directory in directories:
        if directory.is_dir():
            pattern = "**/rollout-*.jsonl" if recursive else "rollout-*.jsonl"
            found.extend(sorted(directory.glob(pattern)))
    return found


def _first_line_rank(path: Path) -> tuple[int, str]:
    """``(ordinal, timestamp)`` of a rollout's first line: a later segment ranks higher."""
    try:
        with path.open("rb") as stream:
            first = stream.readline()
        line = parse_rollout_line(first)
    except (OSError, ValidationError):
        return (-1, "")
    timestamp = line.payload.timestamp if isinstance(line, SessionMetaLine) else ""
    return (line.ordinal if line.ordinal is not None else -1, timestamp)


def _thread_rollout(sessions: Path, thread_id: str) -> Path | None:
    """The newest rollout of ``thread_id`` under ``sessions`` (its latest revert segment)."""
    candidates = [
        path
        for path in _rollout_files([sessions], recursive=True)
        if f"-{thread_id}.jsonl" in path.name or f"-{thread_id}_" in path.name
    ]
    return max(candidates, key=_first_line_rank, default=None)


def _run(args: argparse.Namespace) -> int:
    home = _codex_home(args.codex_home)
    sessions = home / "sessions"
    if args.thread_id is not None:
        if args.file is not None:
            print(f"{_COMMAND}: give either FILE or --thread-id, not both", file=sys.stderr)
            return EXIT_USAGE
        found = _thread_rollout(sessions, args.thread_id)
        if found is None:
            print(
                f"{_COMMAND}: no rollout for thread {args.thread_id} under {sessions}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        source = str(found)
    else:
        source = args.file if args.file is not None else "-"
    return with_input(_COMMAND, source, partial(_rebuild, args, source, sessions), rereadable=True)


def _rebuild(args: argparse.Namespace, source: str, sessions: Path, given: InputFile) -> int:
    """Print the turns of the rollout ``given`` (``source``), bases resolved, streaming every file.

    The chain of bases is followed first, from each file's first ``session_meta``; then the
    retained lines of the deepest base, ..., then the input's own lines are parsed and folded into
    the history one at a time. Only the turns are held, never the lines.
    """
    reader = _Reader()
    beside = [] if source == "-" else [Path(source).resolve().parent]
    bases: dict[str, tuple[Path, InputFile]] = {}
    with ExitStack() as stack:

        def find(rollout_id: str) -> Path | None:
            # Looked up only when a segment names a base: the sessions tree can be large.
            for directories, recursive in ((beside, False), ([sessions], True)):
                for path in _rollout_files(directories, recursive=recursive):
                    if rollout_id_from_filename(path.name) == rollout_id:
                        return path
            return None

        def base_of(rollout_id: str) -> HistoryBase | None:
            path = find(rollout_id)
            if path is None:
                raise HistoryBaseError(rollout_id, "rollout not found")
            try:
                stream = stack.enter_context(path.open("rb"))
            except OSError as exc:
                reader.failed = True
                warn(f"{_COMMAND}: cannot read {path}: {exc.strerror or exc}")
                raise HistoryBaseError(rollout_id, "rollout not found") from None
            base = InputFile(stream, str(path))
            stack.callback(base.close)
            bases[rollout_id] = (path, base)
            return _own_base(base)

        def read(rollout_id: str) -> Iterator[RolloutLine]:
            path, base = bases[rollout_id]
            return reader.parse(base, f"{_COMMAND}: {path}", f"{_COMMAND}: base {path.name}")

        try:
            chain = history_chain(_own_base(given), base_of)
        except HistoryBaseError as exc:
            reader.failed = True
            warn(f"{_COMMAND}: {exc}; using the file's own lines only")
            chain = []
        own = reader.parse(given, _COMMAND, f"{_COMMAND}: {Path(source).name}")
        builder = ThreadHistoryBuilder(args.history_mode)
        builder.handle_rollout_lines(iter_rollout_history(chain, own, read))

    if reader.lines == 0:
        name = "standard input" if source == "-" else source
        warn(f"{_COMMAND}: {name} is empty: expected a rollout (rollout-*.jsonl)")
        return EXIT_BAD_INPUT
    turns = builder.turns(items_view=args.items_view, interrupt_stale=not args.keep_in_progress)
    document: dict[str, Any] = {"turns": [dump_dict(turn) for turn in turns]}
    sys.stdout.buffer.write(orjson.dumps(document) + b"\n")
    sys.stdout.buffer.flush()
    return EXIT_BAD_INPUT if reader.failed else 0


def register(subparsers: Any) -> None:
    """Add the ``history`` command."""
    parser = subparsers.add_parser(
        "history",
        help="rebuild a thread's turns from its rollout, as thread/read shows them",
        description=(
            'Rollout JSONL in, the thread\'s turns out as one JSON document {"turns": [...]}, '
            "as codex app-server 0.163.0 shows them for a thread that is not running. Bad lines "
            "are reported on stderr with their line number, the rest is still used, and the "
            "exit status is 1."
        ),
    )
    parser.add_argument(
        "file", nargs="?", default=None, metavar="FILE", help="rollout JSONL, - for stdin"
    )
    parser.add_argument(
        "--thread-id",
        default=None,
        metavar="ID",
        help="read the thread's newest rollout under CODEX_HOME/sessions instead of FILE",
    )
    parser.add_argument(
        "--codex-home",
        default=None,
        metavar="DIR",
        help="where rollouts and history bases are looked up (default: $CODEX_HOME or ~/.codex)",
    )
    parser.add_argument(
        "--history-mode",
        choices=("legacy", "paginated"),
        default=None,
        help="how to rebuild (default: the rollout's session_meta history_mode)",
    )
    parser.add_argument(
        "--items-view",
        choices=("full", "summary", "notLoaded"),
        default="full",
        help="every item (default), the thread/turns/list summary, or none",
    )
    parser.add_argument(
        "--keep-in-progress",
        action="store_true",
        help="show turns that never ended as inProgress instead of interrupted",
    )
    parser.set_defaults(handler=_run)
