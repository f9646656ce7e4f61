"""``codex-app-bridge serve --listen ...`` as a process, for the transport tests: started, its
banner read (stderr up to the ``listening on:`` line), ended by SIGTERM, which must exit 0; a
failed check kills it instead, so the failure is reported rather than a wait on a live server."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from tests.conftest import bridge_command, bridge_env

TIMEOUT = 60


@asynccontextmanager
async def serving(args: list[str]) -> AsyncIterator[str]:
    """A ``serve`` process with ``args``; yields its banner. It logs errors only: nobody reads
    its stderr after the banner."""
    process = await anyio.open_process(
        [*bridge_command(), "serve", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=bridge_env({"LOG_LEVEL": "ERROR"}),
    )
    async with process:
        assert process.stderr is not None
        banner = b""
        with anyio.fail_after(TIMEOUT):
            while b"listening on: " not in banner or not banner.endswith(b"\n"):
                banner += await process.stderr.receive()
        try:
            yield banner.decode()
        except BaseException:
            process.kill()
            raise
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(TIMEOUT):
            assert await process.wait() == 0


def listening_url(banner: str) -> str:
    return next(line for line in banner.splitlines() if "listening on: " in line).split(": ")[1]
