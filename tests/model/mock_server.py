"""A scripted HTTP/1.1 server for the model client's tests: 127.0.0.1, one anyio task per
connection, one :class:`Step` per request (the last step repeats).

A step answers with a status, headers and either a plain body (an HTTP error) or SSE pieces
written one by one in chunked transfer encoding, then ends the way the test asks: ``finish``
(the terminating chunk), ``cut`` (the connection closed mid-body), ``hang`` (kept open until the
client leaves), ``drop`` (closed before any answer: no HTTP response at all) or ``stall`` (no
answer, the connection kept open until the client leaves). Every request is
logged with its method, target (path and query), headers, body and arrival time, and the moment
the server saw the client go away.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.abc
import orjson
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.tls import TLSListener

End = Literal["finish", "cut", "hang", "drop", "stall"]

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def sse(*events: dict[str, Any]) -> bytes:
    """Events framed as the Responses API writes them."""
    return b"".join(
        b"event: %s\ndata: %s\n\n" % (str(ev["type"]).encode(), orjson.dumps(ev)) for ev in events
    )


def completed(rid: str = "resp_1", usage: dict[str, Any] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"id": rid, "object": "response", "status": "completed"}
    if usage is not None:
        response["usage"] = usage
    return {"type": "response.completed", "response": response}


def delta(text: str, item_id: str = "msg_1") -> dict[str, Any]:
    return {
        "type": "response.output_text.delta",
        "item_id": item_id,
        "output_index": 0,
        "content_index": 0,
        "delta": text,
    }


CREATED: dict[str, Any] = {"type": "response.created", "response": {"id": "resp_1"}}


@dataclass(frozen=True)
class Step:
    """One scripted answer."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict[str, str])
    body: bytes = b""
    """The whole body of a non-streamed answer (status != 200, or ``chunks`` empty)."""
    chunks: Sequence[bytes] = ()
    """SSE pieces, each written (and flushed) as one HTTP chunk."""
    delay_s: float = 0.0
    """Pause before each chunk."""
    end: End = "finish"
    keep_alive: bool = False
    """Answer ``connection: keep-alive`` and read the next request on the same connection."""

    @classmethod
    def events(cls, *events: dict[str, Any], end: End = "finish", **kw: Any) -> Step:
        return cls(chunks=[sse(*events)] if events else [], end=end, **kw)

    @classmethod
    def error(cls, status: int, body: bytes | dict[str, Any] = b"", **headers: str) -> Step:
        raw = body if isinstance(body, bytes) else orjson.dumps(body)
        return cls(
            status=status, body=raw, headers={k.replace("_", "-"): v for k, v in headers.items()}
        )


OK = Step.events(CREATED, delta("hi"), completed())


@dataclass
class Request:
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes
    at: float
    """``time.monotonic()`` when the request's headers were read."""
    connection: int = 0
    """Which connection of the server carried it (1, 2, ... in order of accept)."""
    gone: anyio.Event = field(default_factory=anyio.Event)
    gone_at: float | None = None
    """``time.monotonic()`` when the server saw the client close the connection."""

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None


class MockServer:
    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.requests: list[Request] = []
        self.port = 0
        self.scheme = "http"
        self.connections = 0
        self.arrived = anyio.Event()
        """Set at each request (replaced after each set)."""

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/v1/responses"

    def script(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.requests.clear()

    async def wait_requests(self, n: int, timeout_s: float = 10.0) -> None:
        with anyio.fail_after(timeout_s):
            while len(self.requests) < n:
                await self.arrived.wait()

    def _step(self, index: int) -> Step:
        return self.steps[min(index, len(self.steps) - 1)]

    async def _read_request(
        self, reader: BufferedByteReceiveStream, connection: int
    ) -> Request | None:
        try:
            head = await reader.receive_until(b"\r\n\r\n", 1 << 20)
        except (anyio.EndOfStream, anyio.IncompleteRead):
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = [
            (k.strip(), v.strip()) for k, v in (line.split(":", 1) for line in lines[1:] if line)
        ]
        lowered = {k.lower(): v for k, v in headers}
        if lowered.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int((await reader.receive_until(b"\r\n", 1 << 20)).split(b";")[0], 16)
                body += await reader.receive_exactly(size + 2)
                if size == 0:
                    break
            body = body[:-2]
        else:
            length = int(lowered.get("content-length", "0"))
            body = await reader.receive_exactly(length) if length else b""
        return Request(method, target, headers, body, time.monotonic(), connection)

    async def _serve(self, stream: anyio.abc.SocketStream) -> None:
        self.connections += 1
        connection = self.connections
        served: list[Request] = []
        async with stream:
            reader = BufferedByteReceiveStream(stream)
            try:
                while (request := await self._read_request(reader, connection)) is not None:
                    step = self._step(len(self.requests))
                    self.requests.append(request)
                    served.append(request)
                    self.arrived.set()
                    self.arrived = anyio.Event()
                    await self._answer(stream, step)
                    if step.end in ("hang", "stall"):
                        while True:
                            await stream.receive()
                    if not (step.keep_alive and step.end == "finish"):
                        break
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            except OSError:
                pass
            finally:
                now = time.monotonic()
                for request in served:
                    request.gone_at = now
                    request.gone.set()

    async def _answer(self, stream: anyio.abc.SocketStream, step: Step) -> None:
        if step.end in ("drop", "stall"):
            return
        reason = REASONS.get(step.status, "Unknown")
        head = [
            f"HTTP/1.1 {step.status} {reason}",
            "connection: " + ("keep-alive" if step.keep_alive else "close"),
        ]
        streamed = step.status == 200 and (step.chunks or step.end != "finish")
        if streamed:
            head += ["content-type: text/event-stream", "transfer-encoding: chunked"]
        else:
            head += ["content-type: application/json", f"content-length: {len(step.body)}"]
        head += [f"{k}: {v}" for k, v in step.headers.items()]
        await stream.send(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        if not streamed:
            if step.body:
                await stream.send(step.body)
            return
        for chunk in step.chunks:
            if step.delay_s:
                await anyio.sleep(step.delay_s)
            if chunk:
                await stream.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        if step.end == "finish":
            await stream.send(b"0\r\n\r\n")


@asynccontextmanager
async def mock_server(*steps: Step, tls: ssl.SSLContext | None = None) -> AsyncIterator[MockServer]:
    """The server on 127.0.0.1 (``tls``: over TLS with that server context, an ``https`` URL)."""
    server = MockServer(steps or [OK])
    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    server.port = tcp.extra(anyio.abc.SocketAttribute.local_port)
    listener: anyio.abc.Listener[Any] = tcp
    if tls is not None:
        server.scheme = "https"
        listener = TLSListener(tcp, tls, standard_compatible=False)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server._serve)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()
