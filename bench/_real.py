"""The real ``codex app-server`` 0.163.0 as a benchmark peer: a mock Responses endpoint on
127.0.0.1 and, for every spawn, a fresh scratch ``CODEX_HOME`` whose config points at it (the
binary never reaches the network; the user's ``~/.codex`` is never read).

The mock streams a ``throughput`` scenario: one assistant message of N
``response.output_text.delta`` events whose texts are ``delta_text(0..N-1)``, pre-rendered before
the request so that the mock costs nothing while the binary streams.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

import orjson

from _common import StdioClient, delta_text, real_binary, real_env, write_real_config


def _sse(events: list[dict[str, object]]) -> bytes:
    return b"".join(
        b"event: " + str(e["type"]).encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n"
        for e in events
    )


def throughput_body(deltas: int) -> bytes:
    """The SSE body of one response: an assistant message streamed as ``deltas`` deltas."""
    item_id = "msg_tp"
    texts = [delta_text(i) for i in range(deltas)]
    text = "".join(texts)
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": deltas,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10 + deltas,
    }
    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
    part = {"type": "output_text", "text": text, "annotations": []}
    message = {"type": "message", "role": "assistant", "id": item_id}
    head = [
        {"type": "response.created", "response": {"id": "resp_tp", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**message, "status": "in_progress", "content": []},
        },
        {"type": "response.content_part.added", **where, "part": {**part, "text": ""}},
    ]
    tail = [
        {"type": "response.output_text.done", **where, "text": text},
        {"type": "response.content_part.done", **where, "part": part},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**message, "status": "completed", "content": [part]},
        },
        {
            "type": "response.completed",
            "response": {"id": "resp_tp", "status": "completed", "usage": usage},
        },
    ]
    delta_head = b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
    delta_where = orjson.dumps(where)[1:-1]
    deltas_sse = b"".join(
        delta_head + delta_where + b',"delta":' + orjson.dumps(t) + b"}\n\n" for t in texts
    )
    return _sse(head) + deltas_sse + _sse(tail)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _MockServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._reply(200, "application/json", b'{"object":"list","data":[],"models":[]}')

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        if not self.path.split("?")[0].endswith("/responses"):
            self._reply(404, "application/json", b'{"error":{"message":"not found"}}')
            return
        self._reply(200, "text/event-stream", self.server.body)

    def _reply(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        self.wfile.write(body)


class _MockServer(ThreadingHTTPServer):
    daemon_threads = True
    body: bytes = b""


class RealServers:
    """Spawns real ``codex app-server`` processes against one mock endpoint (a context manager
    that owns the mock and a scratch directory for every spawn's CODEX_HOME and cwd)."""

    def __init__(self) -> None:
        binary = real_binary()
        if binary is None:
            raise SystemExit("the real codex binary is not installed (pip install -e '.[test]')")
        self.binary = binary
        # Not under /tmp: the binary refuses to set up its PATH helpers there (and warns).
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        cache.mkdir(parents=True, exist_ok=True)
        self.scratch = Path(tempfile.mkdtemp(prefix="codex-app-bridge-bench-", dir=cache))
        self._mock = _MockServer(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(target=self._mock.serve_forever, daemon=True)
        self._count = itertools.count()
        self._deltas: int | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._mock.server_address[1]}/v1"

    def __enter__(self) -> RealServers:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._mock.shutdown()
        self._mock.server_close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def spawn(self) -> tuple[StdioClient, str]:
        """A fresh real server (own CODEX_HOME); returns the client and the cwd to start
        threads in."""
        base = self.scratch / f"real-{next(self._count)}"
        work = base / "work"
        work.mkdir(parents=True)
        env = real_env(base)
        write_real_config(Path(env["CODEX_HOME"]), self.base_url)
        client = StdioClient([self.binary, "app-server", "--listen", "stdio://"], env, work)
        return client, str(work)

    def spawn_streaming(self, deltas: int) -> tuple[StdioClient, str]:
        """``spawn``, with the mock set to answer every turn with ``deltas`` deltas."""
        if self._deltas != deltas:
            self._mock.body = throughput_body(deltas)
            self._deltas = deltas
        return self.spawn()
