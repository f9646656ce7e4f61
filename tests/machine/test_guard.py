"""The guard (``machine._guard``): what the server started dies with it even when the server is
``kill -9``'d, whole process groups and the descendants that left them; a group the server has
reaped is never killed later (its pid may belong to someone else by then)."""

from __future__ import annotations

import base64
import contextlib
import os
import select
import signal
import subprocess
import threading
from collections.abc import Generator
from pathlib import Path

import orjson
import pytest

from codex_app_bridge.machine._guard import Guard
from tests.conftest import bridge_command, bridge_env
from tests.machine.conftest import WAIT_S, pid_alive


def _gone_within(pidfd: int, timeout: float) -> bool:
    """Whether the process of ``pidfd`` exits within ``timeout`` (its pidfd turns readable)."""
    return bool(select.select([pidfd], [], [], timeout)[0])


@contextlib.contextmanager
def _group(*argv: str) -> Generator[subprocess.Popen[bytes]]:
    """A process leading its own group, killed and reaped at the end whatever happened."""
    process = subprocess.Popen(argv, start_new_session=True)
    try:
        yield process
    finally:
        if process.returncode is None:  # not reaped: its pid, the group's id, is still its own
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=WAIT_S)


def test_the_guard_kills_the_groups_it_watches_and_not_those_it_forgot() -> None:
    guard = Guard()
    try:
        with _group("sleep", "600") as watched, _group("sleep", "600") as forgotten:
            assert guard.watch(watched.pid)
            assert guard.watch(forgotten.pid)
            assert guard.forget(forgotten.pid)
            guard.close()  # as the kernel does when the server dies
            assert watched.wait(timeout=WAIT_S) == -signal.SIGKILL
            assert forgotten.poll() is None
    finally:
        guard.close()
    assert guard.process.returncode == 0


@pytest.mark.parametrize("end", ["stdin-eof", "sigkill"])
def test_a_server_that_exits_or_is_killed_takes_its_commands_groups_with_it(
    tmp_path: Path, end: str
) -> None:
    """``command/exec`` of a shell that leaves a child in its group and one in a session of its
    own; the server's input ends (it exits, rc 0) or it is ``kill -9``'d; all three are gone."""
    script = (
        "sleep 600 & echo $! > pids; setsid sleep 600 & echo $! >> pids; echo $$ >> pids; "
        "echo ready; wait"
    )
    server = subprocess.Popen(
        [*bridge_command(), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=bridge_env({"LOG_LEVEL": "ERROR"}),
        cwd=tmp_path,
    )
    ready = threading.Event()

    def read() -> None:
        assert server.stdout is not None
        for line in server.stdout:
            message = orjson.loads(line)
            if message.get("method") == "command/exec/outputDelta" and b"ready" in (
                base64.b64decode(message["params"]["deltaBase64"])
            ):
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    pids: list[int] = []
    pidfds: list[int] = []
    try:
        assert server.stdin is not None
        for request in (
            {
                "id": 1,
                "method": "initialize",
                "params": {"clientInfo": {"name": "t", "version": "1"}},
            },
            {
                "id": 2,
                "method": "command/exec",
                "params": {
                    "command": ["sh", "-c", script],
                    "cwd": str(tmp_path),
                    "processId": "p",
                    "streamStdoutStderr": True,
                    "disableTimeout": True,
                    "sandboxPolicy": {"type": "dangerFullAccess"},
                },
            },
        ):
            server.stdin.write(orjson.dumps(request) + b"\n")
            server.stdin.flush()
        assert ready.wait(WAIT_S), "the command never said it was ready"
        pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
        assert len(pids) == 3
        # a pidfd each while they are known alive: once one has exited its pid is free (32768
        # of them here), and the other pytest-xdist worker may start a process on it
        pidfds += [os.pidfd_open(p) for p in pids]
        assert all(pid_alive(p) for p in pids)
        if end == "sigkill":
            server.kill()
            assert server.wait(timeout=WAIT_S) == -signal.SIGKILL
        else:
            server.stdin.close()
            assert server.wait(timeout=WAIT_S) == 0
        assert [p for p, fd in zip(pids, pidfds, strict=True) if not _gone_within(fd, WAIT_S)] == []
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(timeout=WAIT_S)
        for fd in pidfds:  # never leave a sleep behind, even when the test failed
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            os.close(fd)
        reader.join(timeout=WAIT_S)
        for stream in (server.stdin, server.stdout):
            if stream is not None:
                stream.close()
