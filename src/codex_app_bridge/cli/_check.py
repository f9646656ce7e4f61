"""``codex-app-bridge check FILE...``: is a scenario, script or rollout right, before serving it.

Each FILE is judged whole (see ``sources._check``): what kind it is, then every line, in the
words ``serve`` would use when it reached that line. One line per finding on standard output,
``FILE: line N: ...``: the problems (the file cannot be played as written), then the notes
(``note:``, lines that will show a client nothing: unknown event types, legacy-only events in a
turn without items). Then one summary line per file: its kind and size, and ``ok`` or how many
problems.

Exit status: 0 when no file has a problem (notes too with ``--strict``); 1 when one has; 2 when
a file cannot be read at all.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from codex_app_bridge.cli._flags import EXIT_BAD_INPUT, EXIT_USAGE

__all__ = ["register"]

_COMMAND = "check"


def _run(args: argparse.Namespace) -> int:
    from codex_app_bridge.sources._check import check_file

    status = 0
    out = sys.stdout
    for name in args.files:
        try:
            result = check_file(name)
        except OSError as exc:
            print(f"{_COMMAND}: cannot read {name}: {exc.strerror or exc}", file=sys.stderr)
            status = max(status, EXIT_USAGE)
            continue
        for _, problem in sorted(result.problems):
            print(problem, file=out)
        for _, note in sorted(result.notes):
            print(f"note: {note}", file=out)
        failed = bool(result.problems) or (args.strict and bool(result.notes))
        if result.problems:
            count = len(result.problems)
            verdict = f"{count} problem{'s' if count != 1 else ''}"
        else:
            verdict = "ok"
        if result.notes:
            count = len(result.notes)
            verdict += f", {count} note{'s' if count != 1 else ''}"
        kind = f" ({result.what})" if result.kind != "unknown" else ""
        print(f"{name}{kind}: {verdict}", file=out)
        if failed:
            status = max(status, EXIT_BAD_INPUT)
    return status


def register(subparsers: Any) -> None:
    """Add the ``check`` command."""
    parser = subparsers.add_parser(
        _COMMAND,
        help="check a scenario, script or rollout line by line, without serving it",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="a scenario, a script of {id, msg} or a rollout"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="a note (a line that shows a client nothing) fails the check too",
    )
    parser.set_defaults(handler=_run)
