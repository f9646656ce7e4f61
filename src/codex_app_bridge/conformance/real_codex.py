"""Run the real ``codex app-server`` (or the bridge) as a JSON-RPC peer over stdio.

Role: the process side of a conformance or benchmark run: the CODEX_HOME ``config.toml`` that
points the real binary at :class:`~codex_app_bridge.conformance.mock_responses.MockResponses`,
the command lines, and :class:`StdioPeer`, a small anyio JSON-RPC client that spawns a server,
keeps every line it wrote, answers server->client requests and waits with timeouts. Boundary:
the wire only; it does not interpret notifications beyond routing responses to their requests.

Stable API::

    write_codex_config(codex_home, mock.base_url)   # -> the config.toml Path
    real_codex_command()        # [<bundled codex>, "app-server", "--listen", "stdio://"]
    bridge_command()            # [sys.executable, "-m", "codex_app_bridge", "serve"]
    codex_env(codex_home)       # a minimal environment with CODEX_HOME and HOME beside it
    async with StdioPeer.spawn(real_codex_command(), env=..., cwd=...) as peer:
        await peer.initialize()
        result = await peer.request("thread/start", {...})
        await peer.wait_for(lambda m: m.get("method") == "turn/completed", timeout_s=60)
        peer.received             # every message the server wrote, in order

The real binary is the one of the ``openai-codex-cli-bin`` wheel (the ``test`` extra), imported
only when asked for.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = [
    "DEFAULT_CLIENT_INFO",
    "PeerError",
    "ServerRequestHandler",
    "StdioPeer",
    "bridge_command",
    "codex_env",
    "default_server_request_handler",
    "real_codex_command",
    "real_codex_path",
    "write_codex_config",
]

JsonObject = dict[str, Any]

DEFAULT_CLIENT_INFO: Final[JsonObject] = {
    "name": "codex_app_bridge_conformance",
    "title": "codex-app-bridge conformance driver",
    "version": "0.1.0",
}

_CONFIG: Final = """model = "{model}"
model_provider = "{provider}"
approval_policy = "never"
sandbox_mode = "{sandbox}"
model_reasoning_summary = "detailed"

[model_providers.{provider}]
name = "{provider}"
base_url = "{base_url}"
wire_api = "responses"
requires_openai_auth = false
supports_websockets = false
request_max_retries = 2
stream_max_retries = 1
stream_idle_timeout_ms = 60000

[analytics]
enabled = false
{extra}"""


def write_codex_config(
    codex_home: str | os.PathLike[str],
    base_url: str,
    extra: str = "",
    top: str = "",
    *,
    provider: str = "mock",
    model: str = "mock-model",
    sandbox: str = "danger-full-access",
) -> Path:
    """Write ``config.toml`` for the mock provider at ``base_url`` (``MockResponses.base_url``,
    ending in ``/v1``). ``supports_websockets = false`` stops Codex trying ``wss://`` first;
    retries are few so failing scenarios end quickly. ``extra`` is appended TOML (tables);
    ``top`` goes first (top-level keys). ``provider`` names the provider (the one a stored
    thread names, for a binary that resumes it), ``model`` and ``sandbox`` the defaults."""
    home = Path(codex_home)
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    text = _CONFIG.format(
        base_url=base_url, extra=extra, provider=provider, model=model, sandbox=sandbox
    )
    path.write_text(top + text, encoding="utf-8")
    return path


def real_codex_path() -> str:
    """The ``codex`` 0.163.0 executable shipped in the ``openai-codex-cli-bin`` wheel."""
    import codex_cli_bin  # pyright: ignore[reportMissingImports]  # the `test` extra

    return str(codex_cli_bin.bundled_codex_path())  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]


def real_codex_command() -> list[str]:
    return [real_codex_path(), "app-server", "--listen", "stdio://"]


def bridge_command(*args: str) -> list[str]:
    """This package's server, run by the current interpreter (``args`` go after ``serve``)."""
    return [sys.executable, "-m", "codex_app_bridge", "serve", *args]


def codex_env(
    codex_home: str | os.PathLike[str],
    rust_log: str = "warn",
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A minimal environment: CODEX_HOME, HOME (its parent, so ``~/.codex`` is never read), a
    plain PATH and locale. ``extra`` is added (e.g. PYTHONPATH for the bridge)."""
    home = Path(codex_home)
    env = {
        "CODEX_HOME": str(home),
        "HOME": str(home.parent),
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "RUST_LOG": rust_log,
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
    }
    if extra:
        env.update(extra)
    return env


class PeerError(RuntimeError):
    """A JSON-RPC error answer, or the peer closing before answering."""

    def __init__(self, method: str, error: object) -> None:
        super().__init__(f"{method} failed: {json.dumps(error)}")
        self.method = method
        self.error = error


ServerRequestHandler = Callable[[JsonObject], Awaitable[JsonObject]]
"""A server->client request -> the answer message (``{"result": ...}`` or ``{"error": ...}``)."""


async def default_server_request_handler(message: JsonObject) -> JsonObject:
    """Accept approvals, answer dynamic tool calls with canned text, refuse anything else."""
    method = message.get("method")
    if method in ("item/commandExecution/requestApproval", "item/fileChange/requestApproval"):
        return {"result": {"decision": "accept"}}
    if method in ("execCommandApproval", "applyPatchApproval"):
        return {"result": {"decision": "approved"}}
    if method == "item/tool/call":
        text = "Sunny, 21 C (from the test driver)"
        return {"result": {"contentItems": [{"type": "inputText", "text": text}], "success": True}}
    if method == "item/tool/requestUserInput":
        return {"result": {"answers": {}}}
    return {"error": {"code": -32601, "message": f"driver does not handle {method}"}}


@dataclass(eq=False)
class _Waiter:
    predicate: Callable[[JsonObject], bool]
    event: anyio.Event = field(default_factory=anyio.Event)
    match: JsonObject | None = None


class StdioPeer:
    """A JSON-RPC client on a server's stdio. Create with :meth:`spawn`."""

    def __init__(
        self,
        process: anyio.abc.Process,
        handler: ServerRequestHandler,
    ) -> None:
        self.process = process
        self.received: list[JsonObject] = []
        """Every message the server wrote, in order (responses, notifications, requests)."""
        self.sent: list[JsonObject] = []
        self._handler = handler
        self._next_id = 0
        self._pending: dict[int, _Waiter] = {}
        self._waiters: list[_Waiter] = []
        self._closed = anyio.Event()
        self._send_lock = anyio.Lock()

    @classmethod
    @asynccontextmanager
    async def spawn(
        cls,
        argv: list[str],
        *,
        env: Mapping[str, str],
        cwd: str | os.PathLike[str],
        stderr_path: str | os.PathLike[str] | None = None,
        handler: ServerRequestHandler = default_server_request_handler,
        close_timeout_s: float = 10.0,
    ) -> AsyncGenerator[StdioPeer]:
        stderr_file = open(stderr_path, "wb") if stderr_path is not None else None  # noqa: ASYNC230, SIM115
        try:
            process = await anyio.open_process(
                argv,
                stdin=-1,
                stdout=-1,
                stderr=stderr_file if stderr_file is not None else -3,
                cwd=str(cwd),
                env=dict(env),
            )
            peer = cls(process, handler)
            async with anyio.create_task_group() as tg:
                tg.start_soon(peer._read_loop, tg)
                try:
                    yield peer
                finally:
                    await peer._shutdown(close_timeout_s)
                    tg.cancel_scope.cancel()
        finally:
            if stderr_file is not None:
                stderr_file.close()

    async def _shutdown(self, timeout_s: float) -> None:
        with anyio.move_on_after(1):
            await self._send_raw_close()
        with anyio.move_on_after(timeout_s) as scope:
            await self.process.wait()
        if scope.cancelled_caught:
            self.process.terminate()
            with anyio.move_on_after(5) as scope2:
                await self.process.wait()
            if scope2.cancelled_caught:
                self.process.kill()
                await self.process.wait()
        with anyio.move_on_after(timeout_s):
            await self._closed.wait()

    async def _send_raw_close(self) -> None:
        if self.process.stdin is not None:
            await self.process.stdin.aclose()

    async def _read_loop(self, tg: anyio.abc.TaskGroup) -> None:
        assert self.process.stdout is not None
        reader = BufferedByteReceiveStream(self.process.stdout)
        try:
            while True:
                try:
                    line = await reader.receive_until(b"\n", 1 << 30)
                except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError):
                    break
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    message = {"_unparsed": line.decode("utf-8", "replace")}
                if not isinstance(message, dict):
                    message = {"_unparsed": line.decode("utf-8", "replace")}
                self._on_message(message, tg)  # pyright: ignore[reportUnknownArgumentType]
        finally:
            self._closed.set()
            for waiter in [*self._pending.values(), *self._waiters]:
                waiter.event.set()

    def _on_message(self, message: JsonObject, tg: anyio.abc.TaskGroup) -> None:
        self.received.append(message)
        method = message.get("method")
        if "id" in message and method is None:
            waiter = self._pending.pop(message["id"], None)
            if waiter is not None:
                waiter.match = message
                waiter.event.set()
        elif "id" in message:
            tg.start_soon(self._answer, message)
        for waiter in list(self._waiters):
            if waiter.match is None and waiter.predicate(message):
                waiter.match = message
                waiter.event.set()

    async def _answer(self, message: JsonObject) -> None:
        answer = await self._handler(message)
        await self.send({"id": message["id"], **answer})

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def send(self, message: JsonObject) -> None:
        assert self.process.stdin is not None
        self.sent.append(message)
        async with self._send_lock:
            await self.process.stdin.send(json.dumps(message).encode() + b"\n")

    async def request_raw(
        self, method: str, params: object = None, timeout_s: float = 60
    ) -> JsonObject:
        """Send a request; the whole answer (``result`` or ``error``)."""
        request_id = self._next_id
        self._next_id += 1
        waiter = _Waiter(lambda _m: False)
        self._pending[request_id] = waiter
        message: JsonObject = {"id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        with anyio.fail_after(timeout_s):
            await waiter.event.wait()
        if waiter.match is None:
            raise PeerError(method, "the server closed its output before answering")
        return waiter.match

    async def request(self, method: str, params: object = None, timeout_s: float = 60) -> Any:
        answer = await self.request_raw(method, params, timeout_s)
        if "error" in answer:
            raise PeerError(method, answer["error"])
        return answer.get("result")

    async def notify(self, method: str, params: object = None) -> None:
        message: JsonObject = {"method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    def expect(self, predicate: Callable[[JsonObject], bool]) -> _Waiter:
        """Register interest before acting; then ``await peer.wait(waiter, timeout_s)``."""
        waiter = _Waiter(predicate)
        self._waiters.append(waiter)
        return waiter

    async def wait(self, waiter: _Waiter, timeout_s: float = 60) -> JsonObject:
        try:
            with anyio.fail_after(timeout_s):
                await waiter.event.wait()
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
        if waiter.match is None:
            raise PeerError("wait", "the server closed its output")
        return waiter.match

    async def wait_for(
        self, predicate: Callable[[JsonObject], bool], timeout_s: float = 60
    ) -> JsonObject:
        """The first message from now on that matches (a past one does not count)."""
        return await self.wait(self.expect(predicate), timeout_s)

    async def initialize(
        self,
        client_info: Mapping[str, Any] = DEFAULT_CLIENT_INFO,
        experimental_api: bool = True,
        timeout_s: float = 60,
    ) -> Any:
        result = await self.request(
            "initialize",
            {
                "clientInfo": dict(client_info),
                "capabilities": {"experimentalApi": experimental_api},
            },
            timeout_s,
        )
        await self.notify("initialized")
        return result
