"""A WebSocket tee in front of a listening server (``codex-app-bridge record`` with ``--listen``).

Role: when the command's ``--listen`` names ``ws://IP:PORT`` or ``unix://PATH``, the tee listens
there itself (WebSocket on both, as the real server), runs the command with ``--listen
unix://<a private socket>`` instead, and for each client connection opens one to the server and
passes every frame both ways unchanged. The log is the stdio tee's (``tee.TranscriptLog``), each
record naming its connection: ``{"dir": "open", "conn": N}``, ``{"dir": "c2s" | "s2c", "conn": N,
"line": <parsed JSON or the raw text>}``, ``{"dir": "close", "conn": N}``, after a ``{"dir":
"start", "argv": [...], "listen": URL}`` line. Port 0 listens on a free port; where it listens is
said on stderr (``record: listening on ws://127.0.0.1:PORT``). It runs until the server exits,
or until SIGINT / SIGTERM, which it passes on to the server, giving it time to finish its files.
Boundary: frames and bytes only; the asyncio backend (``websockets``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, unix_connect
from websockets.asyncio.server import Server, ServerConnection, serve, unix_serve
from websockets.exceptions import ConnectionClosed

from codex_app_bridge.conformance.tee import TranscriptLog, parsed

__all__ = ["ListenAddress", "listen_address", "run"]

CONNECT_TIMEOUT_S: Final = 60.0
"""How long a client's connection waits for the server to bind its socket."""
STOP_GRACE_S: Final = 10.0
_RETRY_S: Final = 0.05
_EXIT_SIGNALLED: Final = {signal.SIGINT: 130, signal.SIGTERM: 143}


class ListenAddress:
    """The ``--listen`` URL of a command (its position in ``argv``), when it is a socket."""

    def __init__(self, index: int, url: str) -> None:
        self.index = index
        self.url = url
        parts = urlsplit(url)
        self.unix_path: str | None = parts.path if parts.scheme == "unix" else None
        self.host: str = parts.hostname or ""
        self.port: int = (parts.port or 0) if parts.scheme == "ws" else 0

    def server_argv(self, argv: list[str], private: str) -> list[str]:
        """``argv`` with the server listening on the private socket ``private`` instead."""
        out = list(argv)
        if out[self.index].startswith("--listen="):
            out[self.index] = f"--listen=unix://{private}"
        else:
            out[self.index] = f"unix://{private}"
        return out


def listen_address(argv: list[str]) -> ListenAddress | None:
    """The command's socket ``--listen`` (``ws://IP:PORT`` / ``unix://PATH``), else ``None``
    (stdio); ``ValueError`` for a socket URL the tee cannot stand in for."""
    for i, arg in enumerate(argv):
        if arg == "--listen" and i + 1 < len(argv):
            index, url = i + 1, argv[i + 1]
        elif arg.startswith("--listen="):
            index, url = i, arg.removeprefix("--listen=")
        else:
            continue
        if "--ws-auth" in argv or any(a.startswith("--ws-auth=") for a in argv):
            # the tee's own listener has no authentication: never open one where the server
            # would have asked for a token
            raise ValueError("record cannot stand in for a server with --ws-auth (yet)")
        scheme = urlsplit(url).scheme
        if scheme == "unix" and urlsplit(url).path:
            return ListenAddress(index, url)
        if scheme == "ws":
            parts = urlsplit(url)
            if not parts.hostname or parts.port is None:
                raise ValueError(f"--listen {url}: expected ws://IP:PORT")
            return ListenAddress(index, url)
        if scheme == "unix":
            raise ValueError("--listen unix:// without a path: name the socket (unix://PATH)")
    return None


async def _connect(child: asyncio.subprocess.Process, path: str) -> ClientConnection:
    async with asyncio.timeout(CONNECT_TIMEOUT_S):
        while True:
            try:
                return await unix_connect(path, uri="ws://localhost/", max_size=None)
            except (FileNotFoundError, ConnectionRefusedError):
                if child.returncode is not None:
                    raise ConnectionRefusedError(
                        f"the server exited ({child.returncode})"
                    ) from None
                await asyncio.sleep(_RETRY_S)  # the server is still binding its socket


async def _pump(
    source: ServerConnection | ClientConnection,
    sink: ServerConnection | ClientConnection,
    log: TranscriptLog,
    direction: str,
    conn: int,
) -> None:
    """Every frame of ``source`` to ``sink``, logged; the end of either closes ``sink``."""
    try:
        async for frame in source:
            raw = frame.encode() if isinstance(frame, str) else frame
            log.write({"dir": direction, "conn": conn, "line": parsed(raw)})
            await sink.send(frame)
    except ConnectionClosed:
        pass
    finally:
        await sink.close()


async def _serve(log: TranscriptLog, command: list[str], address: ListenAddress) -> int:
    sockdir = tempfile.mkdtemp(prefix="cab-rec-")  # short: sun_path is about 100 bytes
    private = str(Path(sockdir) / "s.sock")
    child = await asyncio.create_subprocess_exec(
        *address.server_argv(command, private), stdin=asyncio.subprocess.DEVNULL
    )
    numbers = itertools.count(1)

    async def handle(client: ServerConnection) -> None:
        conn = next(numbers)
        try:
            upstream = await _connect(child, private)
        except (OSError, TimeoutError) as exc:
            await client.close(1011, f"record: the server is not listening: {exc}")
            return
        log.write({"dir": "open", "conn": conn})
        try:
            await asyncio.gather(
                _pump(client, upstream, log, "c2s", conn),
                _pump(upstream, client, log, "s2c", conn),
            )
        finally:
            log.write({"dir": "close", "conn": conn})

    stopped: list[signal.Signals] = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in _EXIT_SIGNALLED:
        loop.add_signal_handler(signum, lambda s=signum: (stopped.append(s), stop.set()))
    try:
        server: Server
        if address.unix_path is not None:
            server = await unix_serve(handle, address.unix_path, max_size=None)
            where = address.url
        else:
            server = await serve(handle, address.host, address.port, max_size=None)
            port = server.sockets[0].getsockname()[1]
            where = f"ws://{address.host}:{port}"
        print(f"record: listening on {where}", file=sys.stderr, flush=True)
        async with server:
            exited = asyncio.ensure_future(child.wait())
            signalled = asyncio.ensure_future(stop.wait())
            await asyncio.wait({exited, signalled}, return_when=asyncio.FIRST_COMPLETED)
            signalled.cancel()
            server.close(close_connections=True)
            if child.returncode is None:
                child.send_signal(stopped[0] if stopped else signal.SIGTERM)
                try:
                    async with asyncio.timeout(STOP_GRACE_S):
                        await exited
                except TimeoutError:
                    child.kill()
                    await exited
            await server.wait_closed()
    finally:
        for signum in _EXIT_SIGNALLED:
            loop.remove_signal_handler(signum)
        if child.returncode is None:
            child.kill()
            await child.wait()
        shutil.rmtree(sockdir, ignore_errors=True)
        if address.unix_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(address.unix_path)
    return _EXIT_SIGNALLED[stopped[0]] if stopped else child.returncode or 0


def run(log_path: str, command: list[str], address: ListenAddress) -> int:
    """Listen where ``command`` would, run it on a private socket, pass every connection through
    (module docstring); the server's exit status, or 130 / 143 after SIGINT / SIGTERM."""
    log = TranscriptLog(log_path)
    try:
        log.write({"dir": "start", "argv": command, "listen": address.url})
        return asyncio.run(_serve(log, command, address))
    finally:
        log.close()
