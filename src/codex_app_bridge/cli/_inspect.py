"""``codex-app-bridge inspect …``: run the core projections over JSONL files.

* ``inspect turn-items [FILE|-]``: ResponseItem JSONL in; per line, the ``TurnItem`` Codex derives
  (as Codex serializes it) or ``null``.
* ``inspect boundaries [FILE|-]``: ResponseItem JSONL in; per line ``true`` / ``false``
  (:func:`is_user_turn_boundary`).
* ``inspect user-positions [FILE|-]``: rollout JSONL in; one JSON array of the 0-based line indices
  of the effective user messages, rollback markers applied.
* ``inspect truncate --before-user N | --last-fork-turns N [FILE|-]``: rollout JSONL in; the kept
  lines out, byte for byte.

For ``turn-items`` and ``boundaries`` a rollout ``response_item`` line is also accepted (its
``payload`` is used); a rollout's other lines are not ResponseItems: the first is reported (the
input is a rollout), none gives an output line, and the command exits 1.

Line numbers and indices count physical lines of the input (blank lines are skipped but counted).
A line that is not JSON, or not the expected shape, is reported on stderr with its line number and
produces no output line; every other line is still processed, and the command exits 1. In
``truncate`` output such a line is copied through unchanged when it falls in the kept range (it
counts as neither a user message nor a fork turn).

Inputs are streamed: lines are parsed one at a time and only positions are held; ``truncate``
reads its input twice (standard input from a pipe is spooled to a temporary file for the second
reading). While the input is read and stderr is a terminal, a progress bar shows the bytes read.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any, cast

import orjson
from pydantic import ValidationError

from codex_app_bridge._scriptfile import is_rollout_line
from codex_app_bridge.cli._common import (
    EXIT_BAD_INPUT,
    describe_validation_error,
    report_bad_line,
    with_input,
)
from codex_app_bridge.cli._input import InputFile, numbered
from codex_app_bridge.projection import (
    is_user_turn_boundary,
    last_n_fork_turns_start,
    nth_user_message_cut,
    parse_turn_item,
    user_message_positions_in_rollout,
)
from codex_app_bridge.protocol.core import (
    RESPONSE_ITEM_ADAPTER,
    TURN_ITEM_ADAPTER,
    ResponseItem,
    RolloutLine,
    UnknownRolloutLine,
    parse_rollout_line,
)

__all__ = ["register"]


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def _write(data: bytes) -> None:
    sys.stdout.buffer.write(data)


# --------------------------------------------------------------------------- ResponseItem JSONL


def _response_items(command: str, given: InputFile) -> Iterator[ResponseItem | None]:
    """Each line's ResponseItem, or ``None`` for a line already reported as bad (a rollout's
    other lines: once, at the first, and the command fails)."""
    rollout_said = False
    for number, line in numbered(given.lines(progress=command)):
        try:
            data: Any = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            report_bad_line(command, number, f"not JSON: {exc}")
            yield None
            continue
        if is_rollout_line(data):
            wrapper = cast("dict[str, Any]", data)
            payload: Any = wrapper["payload"]
            if wrapper["type"] == "response_item" and isinstance(payload, dict):
                data = cast("dict[str, Any]", payload)
            else:
                if not rollout_said:
                    rollout_said = True
                    report_bad_line(
                        command,
                        number,
                        f"a rollout's {wrapper['type']!r} line, not a ResponseItem: this input "
                        "is a rollout; only its response_item lines are read (the others are "
                        "skipped without a line out)",
                    )
                yield None
                continue
        try:
            yield RESPONSE_ITEM_ADAPTER.validate_python(data)
        except ValidationError as exc:
            report_bad_line(
                command, number, f"not a ResponseItem: {describe_validation_error(exc)}"
            )
            yield None


def _per_response_item(command: str, path: str, render: Callable[[ResponseItem], bytes]) -> int:
    """One output line, ``render(item)``, per good ResponseItem line of the input."""

    def body(given: InputFile) -> int:
        failed = False
        for item in _response_items(command, given):
            if item is None:
                failed = True
            else:
                _write(render(item) + b"\n")
        return EXIT_BAD_INPUT if failed else 0

    return with_input(command, path, body)


def _turn_item_json(item: ResponseItem) -> bytes:
    turn_item = parse_turn_item(item)
    return b"null" if turn_item is None else TURN_ITEM_ADAPTER.dump_json(turn_item)


def _boundary_json(item: ResponseItem) -> bytes:
    return b"true" if is_user_turn_boundary(item) else b"false"


def _run_turn_items(args: argparse.Namespace) -> int:
    return _per_response_item("inspect turn-items", args.file, _turn_item_json)


def _run_boundaries(args: argparse.Namespace) -> int:
    return _per_response_item("inspect boundaries", args.file, _boundary_json)


# --------------------------------------------------------------------------- rollout JSONL


@cache
def _unparsed() -> UnknownRolloutLine:
    """Stands for a line that is not a rollout line (made once, on first use)."""
    return UnknownRolloutLine(type="<unparsed>")


class _RolloutPass:
    """One reading of a rollout input: each physical line parsed, in order, none held.

    Blank and bad lines give a placeholder so that indices stay physical line indices; bad lines
    are reported as they are read and remembered in :attr:`failed`.
    """

    def __init__(self, command: str, given: InputFile) -> None:
        self._command = command
        self._given = given
        self.failed = False

    def __iter__(self) -> Iterator[RolloutLine]:
        command = self._command
        for number, raw in enumerate(self._given.lines(progress=command), start=1):
            text = raw.rstrip(b"\r\n")
            if not text.strip():
                yield _unparsed()
                continue
            try:
                yield parse_rollout_line(text)
            except ValidationError as exc:
                report_bad_line(
                    command, number, f"not a rollout line: {describe_validation_error(exc)}"
                )
                self.failed = True
                yield _unparsed()


def _run_user_positions(args: argparse.Namespace) -> int:
    command = "inspect user-positions"

    def body(given: InputFile) -> int:
        lines = _RolloutPass(command, given)
        _write(orjson.dumps(user_message_positions_in_rollout(lines)) + b"\n")
        return EXIT_BAD_INPUT if lines.failed else 0

    return with_input(command, args.file, body)


def _run_truncate(args: argparse.Namespace) -> int:
    """Two passes: the first finds where to cut (positions only), the second copies the kept
    lines byte for byte (standard input from a pipe is spooled for it)."""
    command = "inspect truncate"

    def body(given: InputFile) -> int:
        lines = _RolloutPass(command, given)
        if args.before_user is not None:
            keep = range(nth_user_message_cut(lines, args.before_user))
        else:
            keep = range(last_n_fork_turns_start(lines, args.last_fork_turns), sys.maxsize)
        if keep:
            for index, line in enumerate(given.lines(progress=f"{command}: writing")):
                if index >= keep.stop:
                    break
                if index >= keep.start:
                    _write(line if line.endswith(b"\n") else line + b"\n")
        return EXIT_BAD_INPUT if lines.failed else 0

    return with_input(command, args.file, body, rereadable=True)


# --------------------------------------------------------------------------- wiring


def register(subparsers: Any) -> None:
    """Add ``inspect`` and its sub-commands."""
    inspect = subparsers.add_parser(
        "inspect",
        help="run Codex's core projections over ResponseItem or rollout JSONL",
        description=(
            "Run Codex 0.163.0's core projections over JSONL. Bad lines are reported on stderr "
            "with their line number, the rest is still processed, and the exit status is 1."
        ),
    )
    commands = inspect.add_subparsers(dest="inspect_command", metavar="WHAT", required=True)

    def add(name: str, help_text: str, handler: Callable[[argparse.Namespace], int]) -> Any:
        parser = commands.add_parser(name, help=help_text, description=help_text)
        parser.add_argument(
            "file", nargs="?", default="-", metavar="FILE", help="input, - for stdin"
        )
        parser.set_defaults(handler=handler)
        return parser

    add(
        "turn-items",
        "ResponseItem JSONL in; per line the TurnItem Codex derives, or null",
        _run_turn_items,
    )
    add(
        "boundaries",
        "ResponseItem JSONL in; per line whether it starts a user (instruction) turn",
        _run_boundaries,
    )
    add(
        "user-positions",
        "rollout JSONL in; JSON array of the 0-based line indices of effective user messages",
        _run_user_positions,
    )
    truncate = add(
        "truncate",
        "rollout JSONL in; the truncated rollout out (rollback or fork truncation)",
        _run_truncate,
    )
    mode = truncate.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--before-user",
        type=_non_negative,
        metavar="N",
        help="cut before the N-th (0-based) effective user message; keep all if there are fewer",
    )
    mode.add_argument(
        "--last-fork-turns",
        type=_non_negative,
        metavar="N",
        help="keep the last N fork turns (from the first one if there are fewer; 0 keeps nothing)",
    )
