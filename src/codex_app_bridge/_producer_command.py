"""What ``--producer "CMD ARGS..."`` needs before the models: its argv and a look at its program.

Role: the part of a producer command (``sources._producer``) that can be judged without the
core models, so that ``serve --producer`` can refuse a command whose program is missing or not
executable (exit 2) before it answers ``initialize``, and load ``sources`` only when a thread
first needs its producer. ``ProducerError`` lives here and ``sources`` re-exports it.

Boundary: the standard library only; nothing is started.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Sequence

__all__ = ["ProducerError", "check_program", "parse_command"]


class ProducerError(ValueError):
    """A producer command that cannot be used (the message says why)."""


def parse_command(command: str | Sequence[str]) -> list[str]:
    """``--producer``'s text as an argv (POSIX shell words, no shell); ``ProducerError``."""
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ProducerError(f"invalid producer command {command!r}: {exc}") from None
    else:
        argv = list(command)
    if not argv:
        raise ProducerError("the producer command is empty")
    return argv


def check_program(argv: Sequence[str], path: str | None) -> None:
    """``ProducerError`` unless ``argv``'s program exists and may be executed (a bare name is
    looked up on ``path``, the ``PATH`` the process will be started with)."""
    program = argv[0]
    if os.sep in program:
        found = program if os.path.isfile(program) else None
        if found is not None and not os.access(found, os.X_OK):
            raise ProducerError(f"the producer program {program!r} is not executable")
    else:
        found = shutil.which(program, path=path)
    if found is None:
        raise ProducerError(f"the producer program {program!r} was not found")
