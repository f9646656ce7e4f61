"""The exit statuses of the CLI and the flags of a ``codex`` binary it accepts.

Kept apart from the offline commands' helpers (``_common``) so that ``serve`` imports nothing
more than it needs before it answers ``initialize``.
"""

from __future__ import annotations

import argparse
from typing import Final

__all__ = ["EXIT_BAD_INPUT", "EXIT_USAGE", "add_codex_compat_flags"]

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
