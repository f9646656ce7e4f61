"""Helpers shared by the offline CLI commands: JSONL input reading (streamed, with progress:
``_input``) and bad-line reports; the exit statuses and codex-compatible flags are ``_flags``'s
(re-exported here)."""

from __future__ import annotations

import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TypeVar

import anyio

from codex_app_bridge.cli._flags import EXIT_BAD_INPUT, EXIT_USAGE, add_codex_compat_flags
from codex_app_bridge.cli._input import InputFile, warn

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_USAGE",
    "add_codex_compat_flags",
    "describe_validation_error",
    "iter_lines",
    "open_input",
    "report_bad_line",
    "run_async",
    "with_input",
]


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


_T = TypeVar("_T")


def run_async(func: Callable[[], Awaitable[_T]]) -> _T:
    """``anyio.run(func)`` for a command, where Ctrl-C (SIGINT) cancels the command through
    anyio's own cancel scope and then raises ``KeyboardInterrupt`` (``main`` makes that exit 130
    with one line). Left to asyncio, SIGINT cancels the main task natively, which anyio's cancel
    scopes can take for one of their own and absorb: a loaded machine saw a paced replay ignore
    Ctrl-C and wait out its recorded gap."""
    interrupted = False

    async def guarded() -> _T:
        nonlocal interrupted
        outcome: list[_T] = []
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                nonlocal interrupted
                with anyio.open_signal_receiver(signal.SIGINT) as signals:
                    async for _ in signals:
                        interrupted = True
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch)
            outcome.append(await func())
            tg.cancel_scope.cancel()
        if interrupted:
            raise KeyboardInterrupt
        return outcome[0]

    return anyio.run(guarded)
