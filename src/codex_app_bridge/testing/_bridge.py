"""Start a bridge for a test: in the test's event loop (``in_process_bridge``) or as a ``serve``
process on stdio (``subprocess_bridge``), with a scenario (text or file) or the built-in agent,
and a seeded clock, so that two runs of a test receive the same bytes.

Both are async context managers yielding a connected, initialized ``BridgeClient``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any, cast

import anyio
import orjson

from codex_app_bridge._clock import SeededClock, use_clock
from codex_app_bridge.testing._client import BridgeClient, Channel

__all__ = ["in_process_bridge", "scenario_bytes", "subprocess_bridge"]

JsonObject = dict[str, Any]


def scenario_bytes(scenario: str | Path) -> bytes:
    """A scenario given as a path (``Path``, or a string naming an existing file) or as its
    text (a string holding JSON lines)."""
    if isinstance(scenario, Path):
        return scenario.read_bytes()
    candidate = scenario.strip()
    if "\n" not in candidate and not candidate.startswith("{") and Path(candidate).is_file():
        return Path(candidate).read_bytes()
    return scenario.encode()


@asynccontextmanager
async def in_process_bridge(
    scenario: str | Path | None = None,
    *,
    seed: int | None = 0,
    wait_limit: float = 60.0,
    accept: bool = True,
) -> AsyncGenerator[BridgeClient]:
    """A ``BridgeServer`` in this event loop with the scenario (else the built-in agent, no
    pacing), a client connected over the in-memory transport and initialized."""
    from codex_app_bridge.server import BridgeServer
    from codex_app_bridge.sources import DefaultAgent, ScenarioSource, parse_scenario
    from codex_app_bridge.transport import TransportKind, create_memory_transport_pair

    source = (
        DefaultAgent(delay=0)
        if scenario is None
        else ScenarioSource(parse_scenario(scenario_bytes(scenario), name="scenario"))
    )
    clock = SeededClock(seed) if seed is not None else None
    with use_clock(clock) if clock is not None else nullcontext():
        async with (
            BridgeServer(source) as server,
            create_memory_transport_pair() as (client_streams, server_streams),
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(server.serve_connection, server_streams, TransportKind.MEMORY)
            read, write = client_streams

            async def receive() -> JsonObject | None:
                try:
                    while True:
                        message = await read.receive()
                        if isinstance(message, dict):
                            return cast(JsonObject, message)
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    return None

            client = BridgeClient(
                Channel(write.send, receive, write.aclose), timeout=wait_limit, accept=accept
            )
            await client.initialize()
            yield client
            await write.aclose()
            tg.cancel_scope.cancel()


@asynccontextmanager
async def subprocess_bridge(
    scenario: str | Path | None = None,
    *,
    seed: int | None = 0,
    wait_limit: float = 60.0,
    accept: bool = True,
    args: tuple[str, ...] = (),
    workdir: Path | None = None,
) -> AsyncGenerator[BridgeClient]:
    """``python -m codex_app_bridge serve`` on stdio with the scenario (written to
    ``workdir``, a temporary directory by default), a client connected and initialized. On
    exit stdin is closed and the process must exit within ``wait_limit`` seconds (it is killed after)."""
    with _scenario_dir(workdir) as directory:
        command = [sys.executable, "-m", "codex_app_bridge", "serve", "--pace", "0", *args]
        if scenario is not None:
            path = directory / "scenario.jsonl"
            path.write_bytes(scenario_bytes(scenario))
            command += ["--scenario", str(path)]
        if seed is not None:
            command += ["--seed", str(seed)]
        env = {**os.environ, "LOG_LEVEL": os.environ.get("LOG_LEVEL", "ERROR")}
        process = await anyio.open_process(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, env=env
        )
        async with process:
            stdin, stdout = process.stdin, process.stdout
            assert stdin is not None
            assert stdout is not None
            buffer = bytearray()

            async def receive() -> JsonObject | None:
                while True:
                    newline = buffer.find(b"\n")
                    if newline >= 0:
                        line = bytes(buffer[:newline])
                        del buffer[: newline + 1]
                        return cast(JsonObject, orjson.loads(line))
                    try:
                        buffer.extend(await stdout.receive())
                    except anyio.EndOfStream:
                        return None

            async def send(message: JsonObject) -> None:
                await stdin.send(orjson.dumps(message) + b"\n")

            client = BridgeClient(Channel(send, receive, stdin.aclose), timeout=wait_limit)
            client.accept = accept
            try:
                await client.initialize()
                yield client
                await stdin.aclose()
                with anyio.fail_after(wait_limit):
                    await process.wait()
            finally:
                if process.returncode is None:
                    process.kill()


class _scenario_dir:
    def __init__(self, workdir: Path | None) -> None:
        self.workdir = workdir
        self._temporary: Any = None

    def __enter__(self) -> Path:
        if self.workdir is not None:
            return self.workdir
        import tempfile

        self._temporary = tempfile.TemporaryDirectory(prefix="codex-app-bridge-")
        return Path(self._temporary.name)

    def __exit__(self, *exc: object) -> None:
        if self._temporary is not None:
            self._temporary.cleanup()
