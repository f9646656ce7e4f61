"""The first ``initialize`` on stdio, answered before the rest of the server is imported.

``serve`` on stdio reads the client's first line itself, before it imports the event loop, the
rpc connection and the server (about half of its start-up, asyncio and anyio first): when that
line is an ``initialize`` request the server would accept as it is (params of the usual shape,
``_handshake.plain_client_hello``, and a client name the handshake accepts), it is answered
here with the handshake's own code (``_handshake.accept_hello`` and ``initialize_result``, as
``BridgeServer.initialize`` answers it) and the connection welcomed as the server welcomes one
(``_handshake.welcome_notifications``); the server then serves the connection from that state
(``FirstInitialize``, ``BridgeServer.serve_connection``). Any other first line (another method,
a notification, params only the model decodes, a refused name, malformed JSON, a blank line, a
line past the message limit, end of input) is left to the server with every byte read, and
answered as the server answers any line. The lines after an answered ``initialize`` may be
answered before the server too (``_first_list``).

Boundary: reads descriptor 0, writes descriptor 1 (``FirstInput``); no event loop.
"""

from __future__ import annotations

import contextlib
import os
import select
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from codex_app_bridge._clock import uuid4
from codex_app_bridge.protocol.jsonrpc import (
    Request,
    classify,
    encode_notification,
    encode_response,
)
from codex_app_bridge.rpc.errors import RpcError
from codex_app_bridge.server._handshake import (
    ClientHello,
    ConnectionState,
    accept_hello,
    host_name,
    initialize_result,
    plain_client_hello,
    welcome_notifications,
)
from codex_app_bridge.transport._framing import decode_line

__all__ = ["FirstInitialize", "FirstInput", "answer_first_initialize"]

_CHUNK: Final = 1 << 16
_FIRST_LINE_CAP: Final = 1 << 20
"""Bytes read at most for a line read here: a longer one is left to the server."""
_PIPE_BUF: Final = select.PIPE_BUF
"""Bytes written at most at once once the output is writable (a pipe takes them whole)."""


@dataclass(frozen=True, slots=True)
class FirstInitialize:
    """The first ``initialize``, answered and welcomed: the connection's state and what the
    server keeps."""

    hello: ClientHello
    state: ConnectionState
    user_agent: str
    installation_id: str
    """The one the connection was welcomed with (the server's, ``BridgeServer``)."""
    announced_warnings: tuple[str, ...] = ()
    """Summaries of the ``configWarning`` s sent."""
    answered: int = 0
    """Requests answered after it before the server started (``_first_list``)."""


class FirstInput:
    """The client's input as ``serve`` reads it before the server: lines taken one at a time
    from the bytes read; ``data`` is what is not taken (the server reads it first)."""

    def __init__(self, fd: int, limit: int | None, data: bytes = b"") -> None:
        """``limit``: the server's largest message (a longer line is not read whole here)."""
        self.fd = fd
        self.data = data
        self.ended = False
        """End of input (or a read error) was met."""
        self._cap = _FIRST_LINE_CAP if limit is None else min(limit + 1, _FIRST_LINE_CAP)

    def take(self) -> bytes | None:
        """The next whole line (without its newline), or ``None`` while there is none."""
        line, newline, rest = self.data.partition(b"\n")
        if not newline:
            return None
        self.data = rest
        return line

    def put_back(self, line: bytes) -> None:
        """A line taken and not answered: the server reads it first."""
        self.data = line + b"\n" + self.data

    def fill(self, timeout: float | None = None, wake: int | None = None) -> bool:
        """Read what the client wrote, waiting for it up to ``timeout`` seconds (``None``: no
        bound) or until ``wake`` is readable; whether anything was read (not at end of input,
        on a read error, nor once the bytes without a newline pass the cap)."""
        if self.ended or (len(self.data) > self._cap and b"\n" not in self.data):
            return False
        watched = [self.fd] if wake is None else [self.fd, wake]
        readable, _, _ = select.select(watched, [], [], timeout)
        return self.fd in readable and self._read()

    def _read(self) -> bool:
        """One read of what ``fd`` has (readable); False at end of input or on a read error."""
        try:
            chunk = os.read(self.fd, _CHUNK)
        except BlockingIOError:  # nothing there after all: nothing read, nothing lost
            return True
        except OSError:
            chunk = b""
        if not chunk:
            self.ended = True
            return False
        self.data += chunk
        return True

    def write(self, fd: int, data: bytes) -> None:
        """Write all of ``data`` on ``fd``, reading the input meanwhile while ``fd`` is full:
        a client that writes its requests before it reads the answers is never held up.
        ``OSError`` if the reader is gone."""
        view = memoryview(data)
        while view:
            watched = [] if self.ended else [self.fd]
            readable, writable, _ = select.select(watched, [fd], [])
            if writable:
                view = view[os.write(fd, view[:_PIPE_BUF]) :]
            elif readable:
                self._read()


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
    home: str,
    limit: int | None,
    warnings: Callable[[], list[dict[str, Any]]],
    *,
    in_fd: int = 0,
    out_fd: int = 1,
) -> tuple[FirstInitialize | None, bytes]:
    """Read the first line of ``in_fd``; answer it on ``out_fd`` when it is an ``initialize``
    answered here (see the module docstring), followed by the welcome. Returns that handshake
    (``None``: nothing was answered) and the bytes read that the server has still to read (all
    of them when nothing was answered). ``home``: the ``CODEX_HOME`` the server runs with;
    ``limit``: its largest message; ``warnings``: the config's ``configWarning`` params."""
    lines = FirstInput(in_fd, limit)
    line = lines.take()
    while line is None and lines.fill():
        line = lines.take()
    if line is None:
        return None, lines.data
    found = _plain_initialize(line, limit)
    if found is None:
        lines.put_back(line)
        return None, lines.data
    request, hello = found
    state = ConnectionState()
    try:
        accept_hello(state, hello)
    except RpcError:  # a name the handshake refuses: the server answers it
        lines.put_back(line)
        return None, lines.data
    agent, result = initialize_result(hello.name, hello, home)
    # a reader gone already: the server finds out on its first write
    with contextlib.suppress(OSError):
        lines.write(out_fd, encode_response(request.id, result) + b"\n")
    installation_id = str(uuid4())
    announced = warnings()
    welcome = [
        encode_notification(method, params) + b"\n"
        for method, params in welcome_notifications(announced, host_name(), installation_id)
        if method not in hello.opt_out_notification_methods
    ]
    with contextlib.suppress(OSError):
        lines.write(out_fd, b"".join(welcome))
    summaries = tuple(warning["summary"] for warning in announced)
    return FirstInitialize(hello, state, agent, installation_id, summaries), lines.data
