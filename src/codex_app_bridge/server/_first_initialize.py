"""The first ``initialize`` on stdio, answered before the rest of the server is imported.

``serve`` on stdio reads the client's first line itself, before it imports the event loop, the
rpc connection and the server (about half of its start-up, asyncio and anyio first): when that
line is an ``initialize`` request the server would accept as it is (params of the usual shape,
``_handshake.plain_client_hello``, and a client name the handshake accepts), it is answered
here with the handshake's own code (``_handshake.accept_hello`` and ``initialize_result``, as
``BridgeServer.initialize`` answers it), and the server then serves the connection from that
state (``FirstInitialize``, ``BridgeServer.serve_connection``): it sends the notifications that
follow the answer before it reads anything more. Any other first line (another method, a
notification, params only the model decodes, a refused name, malformed JSON, a blank line, a
line past the message limit, end of input) is left to the server with every byte read, and
answered as the server answers any line.

Boundary: reads descriptor 0 up to its first newline, writes one line on descriptor 1; no
event loop.
"""

from __future__ import annotations

import contextlib
import os
import select
from dataclasses import dataclass

from codex_app_bridge.protocol.jsonrpc import Request, classify, encode_response
from codex_app_bridge.rpc.errors import RpcError
from codex_app_bridge.server._handshake import (
    ClientHello,
    ConnectionState,
    accept_hello,
    initialize_result,
    plain_client_hello,
)
from codex_app_bridge.transport._framing import decode_line

__all__ = ["FirstInitialize", "answer_first_initialize"]

_CHUNK = 1 << 16
_FIRST_LINE_CAP = 1 << 20
"""Bytes read at most for the first line: a longer one is left to the server."""


@dataclass(frozen=True, slots=True)
class FirstInitialize:
    """The first ``initialize``, answered: the connection's state and what the server keeps."""

    hello: ClientHello
    state: ConnectionState
    user_agent: str


def _read_first_line(fd: int, limit: int | None) -> bytes:
    """Bytes of ``fd`` up to a newline (the chunk holding it whole), end of input, a read error
    or the cap (the server reads on from there and meets the error itself)."""
    cap = _FIRST_LINE_CAP if limit is None else min(limit + 1, _FIRST_LINE_CAP)
    chunks: list[bytes] = []
    size = 0
    while size <= cap:
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            select.select([fd], [], [])
            continue
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if b"\n" in chunk:
            break
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])


def _plain_initialize(line: bytes, limit: int | None) -> tuple[Request, ClientHello] | None:
    value = decode_line(line, limit=limit)
    if not isinstance(value, dict):
        return None
    request = classify(value)
    if not isinstance(request, Request) or request.method != "initialize":
        return None
    hello = plain_client_hello(request.params)
    return None if hello is None else (request, hello)


def answer_first_initialize(
    home: str, limit: int | None, *, in_fd: int = 0, out_fd: int = 1
) -> tuple[FirstInitialize | None, bytes]:
    """Read the first line of ``in_fd``; answer it on ``out_fd`` when it is an ``initialize``
    answered here (see the module docstring). Returns that handshake (``None``: nothing was
    answered) and the bytes read that the server has still to read (all of them when nothing
    was answered). ``home``: the ``CODEX_HOME`` the server runs with; ``limit``: its largest
    message."""
    data = _read_first_line(in_fd, limit)
    line, newline, rest = data.partition(b"\n")
    found = _plain_initialize(line, limit) if newline else None
    if found is None:
        return None, data
    request, hello = found
    state = ConnectionState()
    try:
        accept_hello(state, hello)
    except RpcError:  # a name the handshake refuses: the server answers it
        return None, data
    agent, result = initialize_result(hello.name, hello, home)
    # a reader gone already: the server finds out on its first write
    with contextlib.suppress(OSError):
        _write_all(out_fd, encode_response(request.id, result) + b"\n")
    return FirstInitialize(hello, state, agent), rest
