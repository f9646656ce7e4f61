"""The real ``codex app-server`` 0.163.0, offline, with a scratch ``CODEX_HOME``.

A minimal Responses API on 127.0.0.1 (every request is answered with one streamed assistant
message, ``Answer to: <last user text>``), the ``config.toml`` that points Codex at it, and a
small synchronous JSON-RPC client over the process's stdio. Used by the storage conformance
tests (both directions: the binary reading a home the bridge wrote, the bridge reading a home the
binary wrote).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar, Self

from codex_app_bridge.conformance.real_codex import write_codex_config
from tests.conftest import bridge_command, bridge_env

TIMEOUT = 60.0


def real_binary() -> str:
    import codex_cli_bin  # installed by the test extra (openai-codex-cli-bin==0.163.0)

    return str(codex_cli_bin.bundled_codex_path())


def _last_user_text(body: dict[str, Any]) -> str:
    for item in reversed(body.get("input") or []):
        if item.get("type") == "message" and item.get("role") == "user":
            for part in item.get("content") or []:
                text = part.get("text", "")
                if part.get("type") == "input_text" and not text.startswith("<"):
                    return text
    return ""


def _sse(body: dict[str, Any], n: int) -> bytes:
    rid, mid = f"resp_{n}", f"msg_{n}"
    text = f"Answer to: {_last_user_text(body)}"
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    done = {
        "type": "message",
        "role": "assistant",
        "id": mid,
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": rid, "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**done, "status": "in_progress", "content": []},
        },
        {
            "type": "response.output_text.delta",
            "item_id": mid,
            "output_index": 0,
            "content_index": 0,
            "delta": text,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {
            "type": "response.completed",
            "response": {"id": rid, "status": "completed", "usage": usage},
        },
    ]
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
    )


class _Handler(BaseHTTPRequestHandler):
    counter: ClassVar[list[int]] = [0]

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        payload = b'{"data":[],"models":[]}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.counter[0] += 1
        data = _sse(body, self.counter[0])
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True


class MockModel:
    """The mock Responses API, as a context manager (``port`` once entered)."""

    def __enter__(self) -> Self:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def write_config(self, home: Path) -> None:
        write_codex_config(home, f"http://127.0.0.1:{self.port}/v1")


class Peer:
    """A JSON-RPC client over an app-server's stdio (the real binary or the bridge)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._watchdog = threading.Timer(TIMEOUT * 3, self.proc.kill)
        self._watchdog.start()
        self.call(
            "initialize",
            {
                "clientInfo": {"name": "storage-conformance", "version": "1"},
                "capabilities": {"experimentalApi": True},
            },
        )
        self._send({"method": "initialized"})

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self._inbox.put(json.loads(raw))
        self._inbox.put(None)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def _next(self, deadline: float) -> dict[str, Any]:
        message = self._inbox.get(timeout=max(0.01, deadline - time.monotonic()))
        if message is None:
            raise EOFError("the server closed its stdout")
        if "method" in message and "id" in message:  # a server request: approve it
            self._send({"id": message["id"], "result": {"decision": "accept"}})
        return message

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The whole response message (``result`` or ``error``)."""
        self._next_id += 1
        request: dict[str, Any] = {"id": self._next_id, "method": method}
        if params is not None:
            request["params"] = params
        self._send(request)
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._next(deadline)
            if "method" in message:
                self.notifications.append(message)
            elif message.get("id") == request["id"]:
                return message

    def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self.call(method, params)
        assert "result" in response, response
        return response["result"]

    def wait_for(self, method: str) -> dict[str, Any]:
        for index, message in enumerate(self.notifications):
            if message.get("method") == method:
                del self.notifications[: index + 1]
                return message
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._next(deadline)
            if message.get("method") == method:
                return message
            if "method" in message:
                self.notifications.append(message)

    def run_turn(self, thread_id: str, text: str) -> dict[str, Any]:
        self.result(
            "turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": text}]}
        )
        return self.wait_for("turn/completed")["params"]["turn"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=TIMEOUT)
        finally:
            self._watchdog.cancel()
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=TIMEOUT)
            self._reader.join(timeout=TIMEOUT)
            assert self.proc.stdout is not None
            self.proc.stdout.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def real_peer(home: Path, cwd: Path) -> Peer:
    env = {**os.environ, "CODEX_HOME": str(home), "HOME": str(home.parent), "RUST_LOG": "error"}
    return Peer([real_binary(), "app-server"], env, cwd)


def bridge_peer(home: Path, cwd: Path) -> Peer:
    """The bridge, in the same role as ``real_peer``: ``serve`` on stdio with ``CODEX_HOME``."""
    env = bridge_env({"CODEX_HOME": str(home)})
    return Peer([*bridge_command(), "serve", "--pace", "0"], env, cwd)


def listed_pages(peer: Peer, limit: int) -> list[list[dict[str, Any]]]:
    """Every page of a default ``thread/list`` of ``limit`` rows, following its cursors: each
    row's id, ``createdAt`` and ``updatedAt``."""
    pages: list[list[dict[str, Any]]] = []
    cursor = None
    while True:
        page = peer.result("thread/list", {"limit": limit, "cursor": cursor})
        pages.append([shown_times(thread) for thread in page["data"]])
        cursor = page["nextCursor"]
        if cursor is None:
            return pages


def shown_times(thread: dict[str, Any]) -> dict[str, Any]:
    """A listed thread's id, ``createdAt`` and ``updatedAt``."""
    return {key: thread[key] for key in ("id", "createdAt", "updatedAt")}
