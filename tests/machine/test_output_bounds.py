"""A command's output and the server: a reader slower than the command still gets all of it (the
tail written just before the exit included), and a command printing far more than the server's
memory bound (1 GB with ``CODEX_APP_BRIDGE_LONG=1``, 256 MiB in the short pass) streams through
``command/exec`` and through the model's ``exec_command`` without the server's peak RSS
(``VmHWM``) passing a fixed bound: what waits is in the command's pipe, not in the server.

The model's command is read by a client slower than the server (whatever the machine's load),
so what waits for it is bounded by design or not at all: the thread's event queue (in events,
each delta at most 8 KiB), the connection's outbound stream (in items of at most 64 KiB) and its
backlog (in bytes). Unbounded, the server peaked at 258 MB here and 336 MB on a loaded CI
machine; bounded, at about 110 MB (it idles at about 60)."""

from __future__ import annotations

import base64
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from codex_app_bridge.conformance.mock_responses import MockResponses
from codex_app_bridge.conformance.real_codex import codex_env, write_codex_config
from codex_app_bridge.machine import Bubblewrap, MachineTools, SandboxPolicy
from codex_app_bridge.machine._command_exec import CommandRun
from codex_app_bridge.machine._output import DELTA_MAX_BYTES
from codex_app_bridge.machine._tools import MAX_DELTAS_PER_CALL
from tests.conftest import bridge_command, bridge_env
from tests.machine.conftest import FakeHost
from tests.reliability._scale import scale

BIG = scale(256, 1024) << 20
"""Bytes the command prints (256 MiB in the short pass, 1 GiB behind the flag)."""
RSS_BOUND_KB = 200 << 10
"""The server's peak RSS stays under 200 MiB (it idles at 50-60 MiB, peaks at about 110 MB)."""
SLOW_EVERY = 20
"""The model's client pauses after every this many output deltas (a client slower than the
server; ``_pause``)."""
TIMEOUT_S = scale(300, 900)
END = b"END\n"
PRINT_BIG = f"yes | head -c {BIG}; echo END"


# --- a reader slower than the command ------------------------------------------------------


@pytest.mark.anyio
async def test_command_exec_streams_everything_to_a_slow_reader(tmp_path: Path) -> None:
    """The command exits with a pipe's worth of output unread while the reader is busy: that
    tail is still read and streamed (it was cut after 0.1 s)."""
    size = 2_000_000
    run = CommandRun.start(
        ["sh", "-c", f"head -c {size} /dev/zero; echo END"],
        cwd=str(tmp_path),
        env=dict(os.environ),
        sandbox=SandboxPolicy("danger-full-access"),
        bubblewrap=Bubblewrap(None),
        streaming=True,
        timeout_ms=None,
        cap=None,
    )
    got = bytearray()

    async def slow(stream: str, data: bytes, cap_reached: bool) -> None:
        assert stream == "stdout"
        got.extend(data)
        await anyio.sleep(0.2)  # a client that reads slowly (not a synchronisation)

    with anyio.fail_after(120):
        code, _, _ = await run.finish(slow)
    assert code == 0
    assert len(got) == size + len(END)
    assert got.endswith(END)


@dataclass
class _SlowClientHost(FakeHost):
    async def wait_for_room(self) -> None:
        self.room_waits += 1
        await anyio.sleep(0.05)  # the client's queue frees slowly (not a synchronisation)


@pytest.mark.anyio
async def test_exec_command_keeps_the_tail_a_slow_client_had_not_taken(
    tmp_path: Path, work: Path
) -> None:
    host = _SlowClientHost(str(work))
    # past the first 150 ms, whose output is not streamed (DELTA_HOLD_S): then every delta waits
    cmd = "sleep 0.3; yes | head -c 2000000; echo END"
    args = {"cmd": cmd, "login": False, "yield_time_ms": 30000}
    async with MachineTools(bubblewrap=Bubblewrap(None), codex_home=str(tmp_path)) as tools:
        with anyio.fail_after(120):
            text = await tools.call(host, "exec_command", "c1", orjson.dumps(args).decode())
    assert isinstance(text, str)
    assert "Process exited with code 0" in text
    assert text.endswith("y\nEND\n")
    assert host.room_waits > 0
    (completed,) = host.of_type("item_completed")
    assert completed["item"]["aggregated_output"].endswith("y\nEND\n")


# --- the server's memory while a command prints far more than it -------------------------


def _peak_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


class _Client:
    """A stdio client that reads every line as it comes and keeps none of the output."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
        self._pending = b""
        self._ids = iter(range(1, 1 << 30))
        self.deadline = time.monotonic() + TIMEOUT_S

    def send(self, method: str, params: dict[str, Any]) -> int:
        request_id = next(self._ids)
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(orjson.dumps({"id": request_id, "method": method, "params": params}) + b"\n")
        stdin.flush()
        return request_id

    def read_until(self, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Every message is given to ``check`` until it says True; that one is returned."""
        stdout = self.process.stdout
        assert stdout is not None
        fd = stdout.fileno()
        while True:
            *lines, self._pending = self._pending.split(b"\n")
            for index, line in enumerate(lines):
                message = orjson.loads(line)
                if check(message):
                    self._pending = b"\n".join([*lines[index + 1 :], self._pending])
                    return message
            left = self.deadline - time.monotonic()
            assert left > 0, "the server took too long"
            assert select.select([fd], [], [], left)[0], "the server took too long"
            chunk = os.read(fd, 1 << 20)
            assert chunk, "the server exited"
            self._pending += chunk

    def close(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        try:
            self.process.wait(timeout=60)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=60)


def test_command_exec_output_far_beyond_the_bound_does_not_grow_the_server(
    tmp_path: Path,
) -> None:
    client = _Client([*bridge_command(), "serve"], bridge_env({"LOG_LEVEL": "ERROR"}), tmp_path)
    received = 0
    try:
        client.send("initialize", {"clientInfo": {"name": "t", "version": "1"}})
        request_id = client.send(
            "command/exec",
            {
                "command": ["sh", "-c", PRINT_BIG],
                "processId": "big",
                "streamStdoutStderr": True,
                "disableOutputCap": True,
                "disableTimeout": True,
                "sandboxPolicy": {"type": "dangerFullAccess"},
            },
        )

        def count(message: dict[str, Any]) -> bool:
            nonlocal received
            if message.get("method") == "command/exec/outputDelta":
                received += len(base64.b64decode(message["params"]["deltaBase64"]))
            return message.get("id") == request_id

        answer = client.read_until(count)
        peak = _peak_rss_kb(client.process.pid)
    finally:
        client.close()
    assert answer["result"]["exitCode"] == 0, answer
    assert received == BIG + len(END)
    assert peak < RSS_BOUND_KB, f"the server's peak RSS was {peak} kB"


def test_exec_command_output_far_beyond_the_bound_does_not_grow_the_server() -> None:
    """The model runs the command (mock Responses API, ``shell`` scenario); a client slower than
    the server reads the output deltas (10,000 of at most 8 KiB, as 0.163.0 streams per
    command; the rest only reaches the model's text and the item); the item completes with the
    output's tail."""
    with MockResponses() as mock, tempfile.TemporaryDirectory() as scratch:
        mock.set_scenario("shell", cmd=PRINT_BIG)
        home, work = Path(scratch) / "home", Path(scratch) / "work"
        work.mkdir()
        write_codex_config(home, mock.base_url)
        env = codex_env(home, extra={"PYTHONPATH": bridge_env()["PYTHONPATH"]})
        client = _Client([*bridge_command(), "serve"], env, work)
        sizes: list[int] = []
        try:
            client.send("initialize", {"clientInfo": {"name": "t", "version": "1"}})
            thread_request = client.send(
                "thread/start",
                {"approvalPolicy": "never", "sandbox": "danger-full-access", "cwd": str(work)},
            )
            started = client.read_until(lambda m: m.get("id") == thread_request)
            thread_id = started["result"]["thread"]["id"]
            client.send(
                "turn/start",
                {"threadId": thread_id, "input": [{"type": "text", "text": "print a lot"}]},
            )
            ended: dict[str, dict[str, Any]] = {}

            def follow(message: dict[str, Any]) -> bool:
                method = message.get("method")
                params: dict[str, Any] = message.get("params") or {}
                if method == "item/commandExecution/outputDelta":
                    sizes.append(len(params["delta"].encode()))
                    if len(sizes) % SLOW_EVERY == 0:
                        _pause()
                elif method == "turn/completed":
                    ended["turn"] = params["turn"]
                elif method == "item/completed" and params["item"]["type"] == "commandExecution":
                    ended["item"] = params["item"]
                return len(ended) == 2  # the item may complete after the turn (a session)

            client.read_until(follow)
            peak = _peak_rss_kb(client.process.pid)
        finally:
            client.close()
    item = ended["item"]
    assert item["exitCode"] == 0, item
    assert item["aggregatedOutput"].endswith("y\nEND\n")
    assert len(sizes) == MAX_DELTAS_PER_CALL == 10_000
    assert max(sizes) <= DELTA_MAX_BYTES
    assert peak < RSS_BOUND_KB, f"the server's peak RSS was {peak} kB"


def _pause() -> None:
    time.sleep(0.02)  # a client that reads slowly (not a synchronisation)
