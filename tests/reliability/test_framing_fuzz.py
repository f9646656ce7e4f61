"""Framing fuzz (issue 23): random frames — bytes, JSON of any shape, envelopes with random
methods, ids and params — over stdio (a ``serve`` process), the unix socket and the websocket
listener. After each input a sentinel request must be answered (no crash, no hang), every line
the server writes is JSON (over the sockets, checked against the 0.163.0 schemas by the
harness), and no error carries a traceback or internal detail. The short pass runs a few hundred
inputs; ``CODEX_APP_BRIDGE_LONG=1`` runs about 1,000,000 over the three transports.

Methods that act on the machine (``command/exec``, ``fs/*``) or write the config are left out:
random params must never run or write anything.
"""

from __future__ import annotations

import queue
import random
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.abc
import anyio.from_thread
import orjson
import pytest
import websockets.asyncio.connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection

from tests.conftest import bridge_command, bridge_env
from tests.e2e._harness import open_bridge
from tests.reliability._scale import scale

SAFE_METHODS = [
    "initialize",
    "thread/start",
    "thread/resume",
    "thread/fork",
    "thread/read",
    "thread/list",
    "thread/loaded/list",
    "thread/unsubscribe",
    "thread/turns/list",
    "thread/items/list",
    "thread/name/set",
    "turn/start",
    "turn/steer",
    "turn/interrupt",
    "config/read",
    "model/list",
    "skills/list",
    "configRequirements/read",
    "account/read",
    "no/such/method",
    "",
]
INTERNAL = ("Traceback", 'File "', '.py"', "site-packages", "codex_app_bridge.")

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)  # what orjson writes (a wider one fails the test itself)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
IDS = st.integers(-(2**63), 2**63 - 1) | st.text(max_size=10) | st.none() | st.floats()
ENVELOPES = st.fixed_dictionaries(
    {"method": st.sampled_from(SAFE_METHODS)},
    optional={"id": IDS, "params": JSON | st.fixed_dictionaries({}, optional={"threadId": JSON})},
).map(orjson.dumps)
FRAMES = (
    st.binary(max_size=120).filter(lambda b: b"\n" not in b)
    | JSON.map(orjson.dumps)
    | ENVELOPES
    | ENVELOPES.map(lambda b: b[: len(b) // 2])
)
INITIALIZE = b'{"id":0,"method":"initialize","params":{"clientInfo":{"name":"fuzz","version":"1"}}}'
SENTINEL = b'{"id":"sentinel-%d","method":"thread/loaded/list","params":{}}'


def _check_clean(message: dict[str, Any]) -> None:
    error = message.get("error")
    if isinstance(error, dict):
        text = orjson.dumps(error).decode()
        assert not any(mark in text for mark in INTERNAL), text


@contextmanager
def _stdio_server() -> Generator[tuple[subprocess.Popen[bytes], queue.Queue[bytes | None]]]:
    home = tempfile.mkdtemp(prefix="cab-framing-")
    process = subprocess.Popen(
        [*bridge_command(), "serve", "--codex-home", home, "--pace", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=bridge_env({"LOG_LEVEL": "ERROR"}),
    )
    lines: queue.Queue[bytes | None] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        yield process, lines
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=60)
            reader.join(timeout=60)
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
            shutil.rmtree(home, ignore_errors=True)


def test_random_frames_over_stdio_are_all_survived() -> None:
    with _stdio_server() as (process, lines):
        assert process.stdin is not None
        stdin = process.stdin
        counter = iter(range(1 << 62))
        stdin.write(INITIALIZE + b"\n")
        stdin.flush()
        first = lines.get(timeout=60)
        assert first is not None
        assert orjson.loads(first)["id"] == 0

        @settings(
            max_examples=scale(150, 340_000),
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            database=None,
        )
        @given(frame=FRAMES)
        def one(frame: bytes) -> None:
            number = next(counter)
            stdin.write(frame + b"\n" + SENTINEL % number + b"\n")
            stdin.flush()
            want = f"sentinel-{number}"
            while True:
                line = lines.get(timeout=60)
                assert line is not None, "the server exited"
                message = orjson.loads(line)
                _check_clean(message)
                if message.get("id") == want:
                    assert "result" in message, message
                    return

        one()
        stdin.close()
        assert process.wait(timeout=60) == 0
        assert process.stderr is not None
        assert b"Traceback" not in process.stderr.read()


async def _hold(
    kind: str, stop: anyio.Event, *, task_status: anyio.abc.TaskStatus[ClientConnection]
) -> None:
    async with open_bridge(kind, pace=0.0) as bridge:
        assert bridge.open_websocket is not None
        async with bridge.open_websocket() as ws:
            task_status.started(ws)
            await stop.wait()


@pytest.mark.parametrize("kind", ["unix", "websocket"])
def test_random_frames_over_the_sockets_are_all_survived(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The keepalive pings of both ends (in the portal's thread) draw their payload from the
    # global ``random``; Hypothesis takes that, when it falls during a draw in this thread, for a
    # strategy using ``random`` and fails the test (once in a few thousand frames).
    monkeypatch.setattr(websockets.asyncio.connection, "random", random.Random())
    with anyio.from_thread.start_blocking_portal() as portal:
        stop: anyio.Event = portal.call(anyio.Event)
        future, ws = portal.start_task(_hold, kind, stop)
        counter = iter(range(1 << 62))

        async def initialize() -> None:
            with anyio.fail_after(60):
                await ws.send(INITIALIZE.decode())
                assert orjson.loads(await ws.recv(decode=False))["id"] == 0

        portal.call(initialize)

        async def exchange(frame: bytes, number: int) -> None:
            with anyio.fail_after(60):
                # text frames must be UTF-8: other bytes go as a binary frame (dropped, kept on)
                try:
                    await ws.send(frame.decode("utf-8"))
                except UnicodeDecodeError:
                    await ws.send(frame)
                await ws.send(SENTINEL % number, text=True)
                want = f"sentinel-{number}"
                while True:
                    message = orjson.loads(await ws.recv(decode=False))
                    _check_clean(message)
                    if message.get("id") == want:
                        assert "result" in message, message
                        return

        @settings(
            max_examples=scale(80, 330_000),
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            database=None,
        )
        @given(frame=FRAMES)
        def one(frame: bytes) -> None:
            portal.call(exchange, frame, next(counter))

        try:
            one()
        finally:
            portal.call(stop.set)
            future.result(timeout=60)
