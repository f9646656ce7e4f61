"""``codex-app-bridge serve ...`` as a process, for the transport and command-line tests:
started, its log read (stderr up to a line that says it is ready: by default the ``listening on:``
line of ``--listen``), ended by a signal (SIGTERM by default), after which it must exit 0; a
failed check kills it instead, so the failure is reported rather than a wait on a live server."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.abc import Process

from tests.conftest import bridge_command, bridge_env

TIMEOUT = 60


@asynccontextmanager
async def serve_process(
    args: list[str],
    *,
    ready: str = "listening on: ",
    stop: signal.Signals = signal.SIGTERM,
    log_level: str = "ERROR",
    stdio: bool = False,
) -> AsyncIterator[tuple[Process, str]]:
    """A ``serve`` process with ``args``; yields it and its log up to the end of the line
    holding ``ready``. Nobody reads its stderr after that. ``stdio``: its stdin and stdout are
    pipes (held open until the signal), else ``/dev/null``."""
    pipe_or_null = subprocess.PIPE if stdio else subprocess.DEVNULL
    process = await anyio.open_process(
        [*bridge_command(), "serve", *args],
        stdin=pipe_or_null,
        stdout=pipe_or_null,
        stderr=subprocess.PIPE,
        env=bridge_env({"LOG_LEVEL": log_level}),
    )
    async with process:
        assert process.stderr is not None
        log = b""
        with anyio.fail_after(TIMEOUT):
            while ready.encode() not in log or not log.endswith(b"\n"):
                log += await process.stderr.receive()
        try:
            yield process, log.decode()
        except BaseException:
            process.kill()
            raise
        process.send_signal(stop)
        with anyio.fail_after(TIMEOUT):
            assert await process.wait() == 0


@asynccontextmanager
async def serving(args: list[str]) -> AsyncIterator[str]:
    """A ``serve --listen`` process with ``args`` that logs errors only; yields its banner."""
    async with serve_process(args) as (_, banner):
        yield banner


def listening_url(banner: str) -> str:
    return next(line for line in banner.splitlines() if "listening on: " in line).split(": ")[1]
