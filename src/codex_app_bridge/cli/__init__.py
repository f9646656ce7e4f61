"""Command-line interface: ``codex-app-bridge <command>``.

Each command lives in its own private module exposing ``register(subparsers)``; this module only
builds the parser, sets up logging (stderr only; ``LOG_FORMAT=json`` for JSON lines) and dispatches.

The top-level parser also accepts, and ignores, the flags that clients pass to a ``codex`` binary
(``-c/--config k=v``, ``--enable X``, ``--disable X``, ``--profile P``) so that this program can be
handed to any client as its codex executable.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, Protocol, cast

from codex_app_bridge._gc import tune_collector
from codex_app_bridge._version import CODEX_PROTOCOL_VERSION, __version__
from codex_app_bridge.cli._flags import EXIT_USAGE, add_codex_compat_flags
from codex_app_bridge.cli._logging import configure_logging


class _Command(Protocol):
    def register(self, subparsers: Any) -> None: ...


# Command modules (``codex_app_bridge.cli.<name>``), in help order, one per line. Each exposes
# ``register(subparsers)``; they are imported when the parser is built (see ``main``).
_COMMANDS: tuple[str, ...] = (
    "_serve",
    "_demo",
    "_inspect",
    "_map",
    "_replay",
    "_history",
    "_check",
    "_record",
)
# The top-level flags that take a value (``add_codex_compat_flags``): skipped to find the command.
_VALUE_FLAGS = frozenset({"-c", "--config", "--enable", "--disable", "--profile"})
_SERVE_COMMANDS = frozenset({"serve", "app-server"})


def _command_module(name: str) -> _Command:
    return cast("_Command", importlib.import_module(f"codex_app_bridge.cli.{name}"))


def _command_word(argv: Sequence[str]) -> str | None:
    """The command word as argparse finds it, or ``None`` before any other flag or word."""
    items = iter(argv)
    for item in items:
        if item in _VALUE_FLAGS:
            next(items, None)  # its value
            continue
        attached = item.split("=", 1)[0] in _VALUE_FLAGS or (item.startswith("-c") and item != "-c")
        if not attached:  # ``--config=k=v`` and ``-ck=v`` carry their value
            return None if item.startswith("-") else item
    return None


_MARKUP = re.compile(r"``(.+?)``|:[a-z]+:`~?([^`]+)`")


def _plain(text: str) -> str:
    """``text`` without reST markup: ````code```` and ``:role:`name``` become their text."""
    return _MARKUP.sub(lambda m: m.group(1) or m.group(2), text)


class _Formatter(argparse.HelpFormatter):
    """Help made from docstrings, shown without their reST markup (before it is wrapped)."""

    def _format_text(self, text: str) -> str:
        return super()._format_text(_plain(text))

    def _expand_help(self, action: argparse.Action) -> str:
        return _plain(super()._expand_help(action))


class _Parser(argparse.ArgumentParser):
    """The CLI's parsers: no abbreviated flags (``serve --list`` is not ``--listen``), help
    without the reST markup of the docstrings it is made from."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


class _CommandParser(_Parser):
    """A command's parser: an argument it does not know is an error with its own usage (the
    top-level parser would show the top-level usage, naming no flag of the command)."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return cast("argparse.Namespace", parsed), extras


VERSION = f"codex-app-bridge {__version__} (codex app-server {CODEX_PROTOCOL_VERSION})"
"""What ``--version`` prints: this program's version and the codex version it is compatible with."""


def build_parser(commands: Sequence[str] = _COMMANDS) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="codex-app-bridge",
        description=(
            "A Python codex app-server bridge, wire-compatible with codex app-server "
            f"{CODEX_PROTOCOL_VERSION}."
        ),
    )
    parser.add_argument("--version", action="version", version=VERSION)
    add_codex_compat_flags(parser, prefix="top")
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_CommandParser
    )
    for name in commands:
        _command_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    try:
        configure_logging()
    except ValueError as exc:
        print(f"codex-app-bridge: {exc}", file=sys.stderr)
        return EXIT_USAGE
    arguments = list(sys.argv[1:] if argv is None else argv)
    # ``serve`` parses the same with only its own sub-parser (the top-level usage names no
    # command), and the other command modules import much of the package: not loading them
    # keeps the start-up of ``serve`` short.
    serving = _command_word(arguments) in _SERVE_COMMANDS
    parser = build_parser(("_serve",) if serving else _COMMANDS)
    args = parser.parse_args(arguments)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    if argv is None:  # this process's own command (not a caller embedding ``main``)
        prepare = getattr(args, "prepare_process", None)
        if prepare is not None:  # may start the process again (``serve --allocator``)
            prepare(args)
        tune_collector()  # the command's modules are loaded now
    try:
        result: int = handler(args)
    except BrokenPipeError:
        return _stdout_closed()
    except KeyboardInterrupt:
        return _interrupted()
    except BaseExceptionGroup as group:
        # a command running under anyio reports the closed pipe from inside its task group
        if group.split(BrokenPipeError)[1] is None:
            return _stdout_closed()
        if group.split(KeyboardInterrupt)[1] is None:
            return _interrupted()
        raise
    return result


#: Exit status after Ctrl-C: 128 + SIGINT, as a shell reports a process that signal ended.
EXIT_INTERRUPTED = 130


def _interrupted() -> int:
    """Ctrl-C: one line on stderr instead of the tracebacks of every task it went through."""
    print("codex-app-bridge: interrupted", file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED


#: Exit status when the reader of stdout went away (``demo | head``): 128 + SIGPIPE, as a shell
#: reports a process killed by that signal.
EXIT_STDOUT_CLOSED = 141


def _stdout_closed() -> int:
    """The reader of stdout is gone: exit quietly instead of printing a traceback.

    stdout is pointed at /dev/null first so that the interpreter's final flush does not raise
    again (the recipe of the Python documentation for SIGPIPE).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_STDOUT_CLOSED
