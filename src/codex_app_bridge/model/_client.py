"""One streamed ``POST /responses``: the transport retries, the answer's headers, its events.

Role: the HTTP side of a sampling request. :class:`ResponsesClient` sends the body bytes it is
given, re-sends on 5xx answers and transport errors (``request_max_retries``, 200 ms x 2^(n-1)
+-10 %, or the server's ``Retry-After``), and hands back a :class:`ResponseStream` once a 2xx
answer's headers arrived; anything else becomes a :class:`~._errors.ModelError`. The stream
yields the SSE events' JSON objects until ``response.completed`` and turns idleness, cuts,
``response.failed`` and ``response.incomplete`` into ``ModelError`` as Codex does. Leaving the
``stream`` block (or cancelling the task in it) closes the connection at once; after a
completed answer its end of body is read first (50 ms at most) so the pooled connection serves
the next request without a new handshake.

Boundary: bytes and headers in, dicts out. It knows nothing of threads, turns, core events or
JSON-RPC, and nothing of the turn-level retries (the caller's, driven by ``ModelError``).

The HTTP stack (httpx, chosen by ``bench/model_stream_client.py``) is imported on the first
request, so importing this package costs nothing at start-up. The event path does no per-event
await: a network chunk's events are all decoded at once, then handed out from a list.
"""

from __future__ import annotations

import random
import sys
import types
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import anyio

from ._completed import completed_problem
from ._errors import (
    ModelError,
    connection_failed,
    http_error,
    incomplete_error,
    response_failed_error,
    stream_error,
)
from ._sse import SSEDecoder

if TYPE_CHECKING:
    import httpx

    from ._tls import LazyTLSContext

__all__ = ["Endpoint", "ResponseStream", "ResponsesClient", "backoff_s", "warm_http_stack"]

Event = dict[str, Any]

IDLE_TIMEOUT: Final = "idle timeout waiting for SSE"
CLOSED_EARLY: Final = "stream closed before response.completed"
BODY_BROKEN: Final = "Transport error: network error: error decoding response body"
NO_ANSWER: Final = "error sending request"
ERROR_BODY_LIMIT: Final = 4 << 20
"""At most this much of an error answer's body is read (the rest is not needed for its text)."""
TAIL_LIMIT: Final = 64 << 10
TAIL_WAIT_S: Final = 0.05
"""After ``response.completed``, the end of the body is read for at most this long and this
many bytes, so the connection goes back to the pool (no new TCP/TLS handshake for the next
request); a server that keeps writing loses the connection instead."""

_WATCHED: Final = frozenset({"response.completed", "response.failed", "response.incomplete"})


_SSL: list[LazyTLSContext] = []


def _ssl_context() -> LazyTLSContext:
    """The TLS context every client shares (``_tls``: its CA certificates load on the first TLS
    connection, or in the warm-up of an ``https`` provider)."""
    if not _SSL:
        from ._tls import LazyTLSContext

        _SSL.append(LazyTLSContext.create())
    return _SSL[0]


def _without_httpx_cli() -> None:
    """Before httpx is first imported: its command line module (``httpx._main``) imports
    click, pygments and rich whenever they are installed, about a third of httpx's import time
    (100 ms of CPU on a loaded machine, in a cold start's warm-up), for a ``main`` this process
    never runs. A stand-in takes its place; its ``main`` says why it does nothing."""
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    stand_in = types.ModuleType("httpx._main")

    def main(*_args: object, **_kwargs: object) -> None:
        raise SystemExit("httpx's command line is not loaded in a codex-app-bridge process")

    stand_in.main = main  # type: ignore[attr-defined]
    sys.modules["httpx._main"] = stand_in


def warm_http_stack(*, tls: bool = False) -> None:
    """Import the HTTP stack and make the shared TLS context, with its CA certificates when
    ``tls`` (the provider is ``https``): run off the event loop, so the first request pays
    none of it."""
    _without_httpx_cli()
    import h11  # noqa: F401  # pyright: ignore[reportUnusedImport]
    import httpcore  # noqa: F401  # pyright: ignore[reportUnusedImport]
    import httpx

    # the modules a first request loads on its way
    httpx.AsyncClient(verify=_ssl_context())
    if tls:
        _ssl_context().load()


def backoff_s(attempt: int) -> float:
    """Delay before retry ``attempt`` (1-based): 200 ms x 2^(attempt-1), +-10 % jitter."""
    return 0.2 * 2 ** (attempt - 1) * random.uniform(0.9, 1.1)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how to POST: the full URL (query included), headers sent with every request,
    the transport retries and the longest wait between two SSE events."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    request_max_retries: int = 4
    stream_idle_timeout_s: float = 300.0


class ResponseStream:
    """The events of one answer. ``async for event in stream`` (one dict per SSE event, in
    order), or ``async for events in stream.batches()`` (each network read's events at once)."""

    def __init__(self, response: httpx.Response, idle_timeout_s: float) -> None:
        self.status: int = response.status_code
        self.headers: Mapping[str, str] = _headers(response)
        """The answer's headers, lower-case names (the first value of a repeated header)."""
        self.completed = False
        """``response.completed`` was seen (and yielded)."""
        self._response = response
        self._chunks: AsyncIterator[bytes] = response.aiter_bytes()
        self._idle_s = idle_timeout_s
        self._decoder = SSEDecoder()
        self._batch: list[Event] = []
        self._index = 0
        self._pending: ModelError | None = None  # response.failed & co: raised unless completed
        self._final: ModelError | None = None  # raised once the batch before it was handed out
        self._ended = False

    def __aiter__(self) -> ResponseStream:
        return self

    async def __anext__(self) -> Event:
        index = self._index
        if index < len(self._batch):
            self._index = index + 1
            return self._batch[index]
        batch = await self._next_batch()
        self._batch = batch
        self._index = 1
        return batch[0]

    async def batches(self) -> AsyncIterator[list[Event]]:
        """The events in lists, as each network read completes them (never an empty list)."""
        if self._index < len(self._batch):
            rest = self._batch[self._index :]
            self._index = len(self._batch)
            yield rest
        while True:
            try:
                batch = await self._next_batch()
            except StopAsyncIteration:
                return
            self._index = len(batch)
            self._batch = batch
            yield batch

    async def _next_batch(self) -> list[Event]:
        if self._final is not None:
            final, self._final = self._final, None
            self._ended = True
            raise final
        if self._ended:
            raise StopAsyncIteration
        decoder = self._decoder
        deadline = anyio.current_time() + self._idle_s
        while True:
            chunk: bytes | None = None
            with anyio.move_on_at(deadline) as scope:
                chunk = await self._read()
            if scope.cancelled_caught:
                self._ended = True
                raise stream_error(IDLE_TIMEOUT)
            if chunk is None:
                self._ended = True
                batch = self._watch(decoder.close())
                if self._final is None and not self.completed:
                    self._final = self._end_error()
                if batch:
                    return batch
                if self._final is not None:
                    final, self._final = self._final, None
                    raise final
                raise StopAsyncIteration
            seen = decoder.dispatched
            events = decoder.feed(chunk)
            if events and (batch := self._watch(events)):
                return batch
            if self._final is not None or self._ended:
                return await self._next_batch()
            if decoder.dispatched != seen:
                deadline = anyio.current_time() + self._idle_s

    async def _read(self) -> bytes | None:
        import httpx

        try:
            return await self._chunks.__anext__()
        except StopAsyncIteration:
            return None
        except httpx.TransportError:
            self._ended = True
            raise stream_error(BODY_BROKEN) from None

    async def aclose(self) -> None:
        """Close the connection (``client.stream`` does it on leaving the block). A completed
        answer's end of body is read first, briefly, so the connection can serve again."""
        try:
            if self.completed:
                await self._read_tail()
        finally:
            with anyio.CancelScope(shield=True):
                await self._response.aclose()

    async def _read_tail(self) -> None:
        import httpx

        read = 0
        with anyio.move_on_after(TAIL_WAIT_S):
            try:
                async for chunk in self._chunks:
                    read += len(chunk)
                    if read > TAIL_LIMIT:
                        return
            except httpx.TransportError:
                return

    def _end_error(self) -> ModelError:
        return self._pending if self._pending is not None else stream_error(CLOSED_EARLY)

    def _watch(self, events: list[Event]) -> list[Event]:
        """The events to hand out; notes (and drops) those that end or fail the answer."""
        watched = _WATCHED
        first = next((i for i, event in enumerate(events) if event["type"] in watched), None)
        if first is None:
            return events
        kept = events[:first]
        for event in events[first:]:
            kind = event["type"]
            if kind not in watched:
                kept.append(event)
                continue
            response = event.get("response")
            if kind == "response.completed":
                if response is None:
                    continue
                problem = completed_problem(response)
                if problem is None:
                    kept.append(event)
                    self.completed = True
                    self._ended = True
                    return kept
                self._pending = stream_error(problem)
            elif kind == "response.failed":
                if response is not None:
                    self._pending = response_failed_error(response)
            else:
                error, final = incomplete_error(response)
                if final:
                    self._final = error
                    return kept
                self._pending = error
        return kept


def _headers(response: httpx.Response) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in response.headers.multi_items():
        headers.setdefault(name.lower(), value)
    return headers


class ResponsesClient:
    """A connection pool to one endpoint. Safe to share between concurrent streams."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._http: httpx.AsyncClient | None = None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            _without_httpx_cli()
            import httpx

            client = httpx.AsyncClient(
                timeout=httpx.Timeout(None), follow_redirects=True, verify=_ssl_context()
            )
            # only the headers the caller gives (and Host, Content-Length), as Codex sends
            client.headers.clear()
            self._http = client
        return self._http

    def warm(self) -> None:
        """Build the connection pool now (imports httpx), so the first request does not."""
        self._client()

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    @asynccontextmanager
    async def stream(
        self, body: bytes, headers: Mapping[str, str] | None = None
    ) -> AsyncGenerator[ResponseStream]:
        """POST ``body``; the answer's stream once its headers arrived (``ModelError`` else)."""
        response = await self._send(body, headers or {})
        stream = ResponseStream(response, self.endpoint.stream_idle_timeout_s)
        try:
            yield stream
        finally:
            await stream.aclose()

    async def _send(self, body: bytes, headers: Mapping[str, str]) -> httpx.Response:
        import httpx

        http = self._client()
        endpoint = self.endpoint
        merged = {**endpoint.headers, **headers}
        attempt = 0
        while True:
            try:
                request = http.build_request("POST", endpoint.url, content=body, headers=merged)
            except httpx.InvalidURL as exc:
                raise stream_error(f"builder error: {exc}") from None
            delay: float | None = None
            try:
                with anyio.fail_after(endpoint.stream_idle_timeout_s):
                    response = await http.send(request, stream=True)
            except TimeoutError:
                raise stream_error(IDLE_TIMEOUT) from None
            except (httpx.ConnectError, httpx.ConnectTimeout):
                failure = connection_failed()
            except httpx.TransportError:
                failure = stream_error(NO_ANSWER)
            else:
                if 200 <= response.status_code < 300:
                    return response
                failure = await _http_failure(response, endpoint.url)
                if response.status_code < 500:
                    raise failure
                delay = failure.retry_after_s
            if attempt >= endpoint.request_max_retries:
                raise failure
            attempt += 1
            await anyio.sleep(backoff_s(attempt) if delay is None else delay)


async def _http_failure(response: httpx.Response, url: str) -> ModelError:
    import httpx

    body = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) >= ERROR_BODY_LIMIT:
                break
    except httpx.TransportError:
        pass
    finally:
        with anyio.CancelScope(shield=True):
            await response.aclose()
    return http_error(response.status_code, _headers(response), bytes(body), url)
