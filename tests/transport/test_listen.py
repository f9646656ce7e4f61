"""The unix socket and websocket listeners in process: what happens before the upgrade (health
endpoints, Origin, auth), the framing after it, and the socket file's life (stale, live, mode).
Every expectation here was probed on the real 0.163.0 server."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import anyio
import orjson
import pytest
from websockets.asyncio.client import connect, unix_connect
from websockets.exceptions import InvalidStatus

from codex_app_bridge.transport import DecodeError, TransportKind, TransportStreams
from codex_app_bridge.transport.auth import AuthConfigError, CapabilityToken
from codex_app_bridge.transport.listen import (
    ListenError,
    TcpEndpoint,
    prepare_unix_socket_path,
    serve_tcp,
    serve_unix,
)

pytestmark = pytest.mark.anyio

TIMEOUT = 60
UPGRADE = (
    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
)


class Echo:
    """A connection server that answers each message with ``{"echo": message}``."""

    def __init__(self) -> None:
        self.connections = 0
        self.received: list[object] = []

    async def __call__(self, streams: TransportStreams, kind: TransportKind) -> None:
        self.connections += 1
        read, write = streams
        async with read, write:
            async for item in read:
                self.received.append(item)
                echo = {"reason": item.reason} if isinstance(item, DecodeError) else item
                await write.send({"echo": echo, "kind": kind.value})


@asynccontextmanager
async def tcp_listener(
    handler: Echo, token: CapabilityToken | None = None
) -> AsyncIterator[TcpEndpoint]:
    async with anyio.create_task_group() as tg:
        endpoint: TcpEndpoint = await tg.start(partial(serve_tcp, "127.0.0.1", 0, handler, token))
        yield endpoint
        tg.cancel_scope.cancel()


@asynccontextmanager
async def unix_listener(handler: Echo, path: Path) -> AsyncIterator[str]:
    async with anyio.create_task_group() as tg:
        yield await tg.start(serve_unix, str(path), handler)
        tg.cancel_scope.cancel()


@pytest.fixture
def sock_path() -> AsyncIterator[Path]:
    # A short path: unix socket paths are limited to ~107 bytes.
    directory = Path("/tmp") / f"cab-test-{os.getpid()}-{id(object())}"
    directory.mkdir(mode=0o700)
    try:
        yield directory / "s.sock"
    finally:
        for child in directory.iterdir():
            child.unlink()
        directory.rmdir()


async def raw_exchange(target: TcpEndpoint | str, request: str) -> bytes:
    """Send raw HTTP bytes; everything the server writes until it closes the connection (which
    it must do, within the timeout)."""
    with anyio.fail_after(TIMEOUT):
        if isinstance(target, TcpEndpoint):
            stream = await anyio.connect_tcp(target.host, target.port)
        else:
            stream = await anyio.connect_unix(target)
        out = b""
        async with stream:
            await stream.send(request.encode())
            try:
                while True:
                    out += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
    return out


def status_line(response: bytes) -> str:
    return response.split(b"\r\n", 1)[0].decode()


async def test_health_endpoints_answer_200_and_other_methods_405() -> None:
    async with tcp_listener(Echo()) as endpoint:
        for path in ("/readyz", "/healthz"):
            for method in ("GET", "HEAD"):
                response = await raw_exchange(
                    endpoint, f"{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n"
                )
                assert status_line(response) == "HTTP/1.1 200 OK"
                assert response.endswith(b"\r\n\r\n")  # no body
        post = await raw_exchange(
            endpoint, "POST /readyz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
        )
        assert status_line(post) == "HTTP/1.1 405 Method Not Allowed"
        assert b"allow: GET,HEAD" in post
        plain = await raw_exchange(endpoint, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status_line(plain) == "HTTP/1.1 400 Bad Request"
        assert plain.endswith(b"Connection header did not include 'upgrade'")


async def test_any_request_with_an_origin_header_is_refused_with_403() -> None:
    handler = Echo()
    async with tcp_listener(handler) as endpoint:
        for request in (
            "GET /readyz HTTP/1.1\r\nHost: x\r\nOrigin: http://evil.example\r\n\r\n",
            "GET /healthz HTTP/1.1\r\nHost: x\r\nOrigin: null\r\n\r\n",
            f"GET / HTTP/1.1\r\nHost: x\r\nOrigin: http://evil.example\r\n{UPGRADE}\r\n",
        ):
            response = await raw_exchange(endpoint, request)
            assert status_line(response) == "HTTP/1.1 403 Forbidden"
        with pytest.raises(InvalidStatus) as refused:
            async with connect(endpoint.url, origin="http://localhost"):  # pyright: ignore[reportArgumentType]
                pass
        assert refused.value.response.status_code == 403
    assert handler.connections == 0


async def test_one_message_per_text_frame_binary_frames_are_dropped() -> None:
    handler = Echo()
    async with tcp_listener(handler) as endpoint, connect(endpoint.url) as ws:
        assert ws.response.status_code == 101
        assert "Sec-WebSocket-Extensions" not in ws.response.headers  # no compression
        await ws.send(b'{"id":1}', text=False)  # binary: dropped, connection kept
        await ws.send('{"a":1}\n{"b":2}')  # two lines in one frame: not one JSON value
        await ws.send('{"id":2}')
        with anyio.fail_after(TIMEOUT):
            first = orjson.loads(await ws.recv())
            second = orjson.loads(await ws.recv())
        assert first["echo"]["reason"].startswith("unexpected content after document")
        assert second == {"echo": {"id": 2}, "kind": "websocket"}


async def test_a_capability_token_is_checked_before_the_upgrade(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("  s3cret-token \n")
    handler = Echo()
    token = CapabilityToken.from_file(token_file)
    async with tcp_listener(handler, token) as endpoint:
        cases = {
            "": "missing websocket bearer token",
            "Authorization: Bearer nope\r\n": "invalid websocket bearer token",
            "Authorization: Basic abc\r\n": "invalid authorization header",
            "Authorization: Bearer \r\n": "invalid authorization header",
        }
        for header, text in cases.items():
            response = await raw_exchange(
                endpoint, f"GET / HTTP/1.1\r\nHost: x\r\n{UPGRADE}{header}\r\n"
            )
            assert status_line(response) == "HTTP/1.1 401 Unauthorized"
            assert response.endswith(text.encode())
        # Health checks need no token.
        ready = await raw_exchange(endpoint, "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status_line(ready) == "HTTP/1.1 200 OK"
        assert handler.connections == 0
        for value in ("Bearer s3cret-token", "bearer   s3cret-token  "):
            async with connect(endpoint.url, additional_headers={"Authorization": value}) as ws:
                await ws.send('{"id":1}')
                with anyio.fail_after(TIMEOUT):
                    assert orjson.loads(await ws.recv())["echo"] == {"id": 1}
    assert handler.connections == 2


async def test_bytes_that_are_no_http_request_get_400_on_tcp_and_nothing_on_the_socket(
    sock_path: Path,
) -> None:
    # as 0.163.0 answers each of them (probed): 400, no body, the connection closed
    requests = [
        "hello\r\n\r\n",
        f"GET / HTTP/1.1\r\nHost: x\r\n{UPGRADE}a header line without a colon\r\n\r\n",
        f"GET / HTTP/1.1\r\nHost: x\r\n{UPGRADE}X-A: \x01\r\n\r\n",
        "GET /readyz HTTP/1.1\r\nX: \x01\r\n\r\n",
    ]
    handler = Echo()
    async with tcp_listener(handler, CapabilityToken(b"\0" * 32)) as endpoint:
        for request in requests:
            response = await raw_exchange(endpoint, request)
            assert status_line(response) == "HTTP/1.1 400 Bad Request", request
            assert b"content-length: 0\r\n" in response
            assert response.endswith(b"\r\n\r\n")
    async with unix_listener(handler, sock_path) as path:
        for request in requests:
            assert await raw_exchange(path, request) == b""
    assert handler.connections == 0


async def test_a_header_value_that_is_not_ascii_is_an_invalid_authorization(
    tmp_path: Path,
) -> None:
    # 0.163.0 reads the header as visible ASCII: bytes 0x80-0xFF make it invalid, even where
    # Python's str.strip would have trimmed them off the right token (a no-break space)
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token")
    handler = Echo()
    async with tcp_listener(handler, CapabilityToken.from_file(token_file)) as endpoint:
        for value in (b"Bearer s3cret-token\xa0", b"Bearer s\xe9cret", b"\xa0Bearer s3cret-token"):
            with anyio.fail_after(TIMEOUT):
                stream = await anyio.connect_tcp(endpoint.host, endpoint.port)
                async with stream:
                    request = f"GET / HTTP/1.1\r\nHost: x\r\n{UPGRADE}".encode()
                    await stream.send(request + b"Authorization: " + value + b"\r\n\r\n")
                    response = b""
                    try:
                        while True:
                            response += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        pass
            assert status_line(response) == "HTTP/1.1 401 Unauthorized", value
            assert response.endswith(b"invalid authorization header"), value
    assert handler.connections == 0


def test_token_files_must_be_readable_and_not_empty(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text(" \n")
    with pytest.raises(AuthConfigError, match="must not be empty"):
        CapabilityToken.from_file(empty)
    with pytest.raises(AuthConfigError, match="failed to read websocket auth secret"):
        CapabilityToken.from_file(tmp_path / "missing")
    digest = CapabilityToken.from_file(Path(__file__)).digest.hex()
    assert CapabilityToken.from_sha256_hex(digest) == CapabilityToken.from_file(Path(__file__))
    with pytest.raises(AuthConfigError, match="64-digit hex"):
        CapabilityToken.from_sha256_hex("abc")


async def test_the_unix_socket_speaks_websocket_without_http_extras(sock_path: Path) -> None:
    handler = Echo()
    async with unix_listener(handler, sock_path) as path:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        # Not an upgrade (health check, raw JSON Lines): closed without a reply.
        assert await raw_exchange(path, "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n") == b""
        assert await raw_exchange(path, '{"id":1,"method":"initialize"}\n') == b""
        # An Origin header is no reason to refuse here (only the TCP listener checks it).
        async with unix_connect(path, uri="ws://localhost/", origin="http://a") as ws:  # pyright: ignore[reportArgumentType]
            header = ws.response.headers["x-codex-websocket-max-unfragmented-message-bytes"]
            assert header == str(16 * 1024 * 1024)
            await ws.send('{"id":7}')
            with anyio.fail_after(TIMEOUT):
                assert orjson.loads(await ws.recv()) == {"echo": {"id": 7}, "kind": "unix"}
    assert not await anyio.Path(sock_path).exists()  # removed on exit


async def test_a_stale_socket_file_is_replaced_and_a_live_one_never_stolen(
    sock_path: Path,
) -> None:
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock_path))
    stale.close()  # the file stays, nobody accepts on it
    async with unix_listener(Echo(), sock_path) as path:
        with pytest.raises(ListenError, match=f"already in use at {path}"):
            prepare_unix_socket_path(path)
        with pytest.raises(ListenError, match="already in use"):
            await serve_unix(path, Echo())
        async with unix_connect(path, uri="ws://localhost/") as ws:
            await ws.send('{"still":"served"}')
            with anyio.fail_after(TIMEOUT):
                assert orjson.loads(await ws.recv())["echo"] == {"still": "served"}


def test_a_path_that_is_not_a_socket_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain.sock"
    plain.write_text("hi")
    with pytest.raises(ListenError, match="exists and is not a socket"):
        prepare_unix_socket_path(str(plain))
    assert plain.read_text() == "hi"
    nested = tmp_path / "new-dir" / "s.sock"
    prepare_unix_socket_path(str(nested))
    assert stat.S_IMODE(os.stat(nested.parent).st_mode) == 0o700
