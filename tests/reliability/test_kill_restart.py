"""kill -9 mid-turn, then a restart over the same ``CODEX_HOME`` (issue 23): the thread resumes,
its turns read back with the killed one ended, and it runs a new turn to completion. Rounds: 1
in the short pass, 30 with ``CODEX_APP_BRIDGE_LONG=1``."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import bridge_command, bridge_env
from tests.reliability._scale import scale


class Server:
    """A ``serve`` process over stdio, read by a thread into a queue (waits have timeouts)."""

    def __init__(self, home: Path) -> None:
        self.process = subprocess.Popen(
            [*bridge_command(), "serve", "--codex-home", str(home), "--pace", "0.02"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=bridge_env({"LOG_LEVEL": "ERROR"}),
        )
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._ids = iter(range(1, 1 << 30))
        self.reader = threading.Thread(target=self._pump, daemon=True)
        self.reader.start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(orjson.loads(line))
        self.lines.put(None)

    def send(self, method: str, params: Any) -> int:
        request_id = next(self._ids)
        assert self.process.stdin is not None
        self.process.stdin.write(
            orjson.dumps({"id": request_id, "method": method, "params": params}) + b"\n"
        )
        self.process.stdin.flush()
        return request_id

    def until(self, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while True:
            message = self.lines.get(timeout=60)
            assert message is not None, "the server exited"
            if check(message):
                return message

    def result(self, method: str, params: Any) -> Any:
        request_id = self.send(method, params)
        reply = self.until(lambda m: m.get("id") == request_id and "method" not in m)
        assert "result" in reply, reply
        return reply["result"]


@contextmanager
def _server(home: Path) -> Generator[Server]:
    server = Server(home)
    try:
        server.result("initialize", {"clientInfo": {"name": "kill", "version": "1"}})
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
        server.process.wait(timeout=60)
        server.reader.join(timeout=60)
        for stream in (server.process.stdin, server.process.stdout):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize("round_", range(scale(1, 30)))
def test_a_server_killed_mid_turn_resumes_the_thread_after_a_restart(
    tmp_path: Path, round_: int
) -> None:
    home = tmp_path / "home"
    with _server(home) as first:
        thread_id = first.result("thread/start", {})["thread"]["id"]
        first.result(
            "turn/start",
            {"threadId": thread_id, "input": [{"type": "text", "text": "words " * 200}]},
        )
        first.until(lambda m: m.get("method") == "item/agentMessage/delta")
        os.kill(first.process.pid, signal.SIGKILL)
        assert first.process.wait(timeout=60) == -signal.SIGKILL
    with _server(home) as second:
        resumed = second.result("thread/resume", {"threadId": thread_id})
        (killed,) = resumed["thread"]["turns"]
        assert killed["status"] in ("interrupted", "failed"), killed
        second.send(
            "turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": "again"}]}
        )
        done = second.until(lambda m: m.get("method") == "turn/completed")
        assert done["params"]["turn"]["status"] == "completed"
        read = second.result("thread/read", {"threadId": thread_id, "includeTurns": True})
        assert [t["status"] for t in read["thread"]["turns"]][1:] == ["completed"]
