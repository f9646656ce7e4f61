"""Handlers of the methods that act on the machine: ``command/exec`` (+ ``write``,
``terminate``, ``resize``), ``process/*``, ``fs/*``, ``fuzzyFileSearch`` and its sessions,
shaped and erroring as 0.163.0 (probed, ``spec/machine-tools.md`` §7).

Role: validate the params and word the errors as the real server; the work is the ``machine``
package's (``CommandRun``, ``_fs``, ``Watcher``, ``fuzzy_search``). File-system calls run in a
worker thread. A ``command/exec`` process id and an ``fs/watch`` id belong to the connection
that made them: ``connection_closed`` kills the connection's processes and drops its watches.

Where 0.163.0 is unsafe this is not, keeping the wire shape (``KNOWN_DIFFERENCES.md``): a
``command/exec`` whose sandbox cannot be made here is not run unconfined (exit 1, the reason on
stderr); ``process/spawn``, which 0.163.0 runs with no sandbox at all, runs under the config's
sandbox as ``command/exec`` does (and likewise never unconfined).

``process/spawn`` answers ``{}`` at once; the process then sends ``process/outputDelta`` (when
streaming) and ``process/exited`` to the connection that spawned it, whose handles they are.
A fuzzy-search session (``fuzzyFileSearch/sessionStart``) keeps its roots; each
``sessionUpdate`` answers ``{}``, then ``fuzzyFileSearch/sessionUpdated`` with the files and
``fuzzyFileSearch/sessionCompleted``.

Boundary: sees the server through ``ServerServices``.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio
import orjson

from codex_app_bridge.machine import Bubblewrap, SandboxPolicy, SandboxUnavailable, SpawnError
from codex_app_bridge.machine import _fs as fs
from codex_app_bridge.machine._command_exec import (
    DEFAULT_CAP,
    DEFAULT_TIMEOUT_MS,
    CommandRun,
    command_env,
    resolve_cwd,
)
from codex_app_bridge.machine._fuzzy import fuzzy_search
from codex_app_bridge.machine._watch import Watcher
from codex_app_bridge.protocol.v2 import (
    CommandExecParams,
    CommandExecResizeParams,
    CommandExecTerminateParams,
    CommandExecWriteParams,
    FsCopyParams,
    FsCreateDirectoryParams,
    FsGetMetadataParams,
    FsReadDirectoryParams,
    FsReadFileParams,
    FsRemoveParams,
    FsUnwatchParams,
    FsWatchParams,
    FsWriteFileParams,
    FuzzyFileSearchParams,
)
from codex_app_bridge.rpc import INTERNAL_ERROR, RequestContext, RpcError, invalid_request
from codex_app_bridge.server._machine_params import (
    FuzzyFileSearchSessionStartParams,
    FuzzyFileSearchSessionStopParams,
    FuzzyFileSearchSessionUpdateParams,
    ProcessKillParams,
    ProcessResizePtyParams,
    ProcessSpawnParams,
    ProcessWriteStdinParams,
)

if TYPE_CHECKING:
    from codex_app_bridge.rpc._context import ContextConnection
    from codex_app_bridge.server._services import ServerServices

__all__ = ["MachineHandlers"]


_NOT_ABSOLUTE: Final = "Invalid request: AbsolutePathBuf deserialized without a base path"
T = TypeVar("T")


def _absolute(*paths: str) -> None:
    for path in paths:
        if not os.path.isabs(path):
            raise invalid_request(_NOT_ABSOLUTE)


def _fs_error(exc: fs.FsError) -> RpcError:
    if exc.kind == "invalid":
        return invalid_request(exc.message)
    return RpcError(INTERNAL_ERROR, exc.message)


async def _run_fs(call: Callable[[], T]) -> T:
    try:
        return await anyio.to_thread.run_sync(call)
    except fs.FsError as exc:
        raise _fs_error(exc) from None


@dataclass(eq=False)
class _Exec:
    run: CommandRun
    tty: bool


class MachineHandlers:
    """``command/exec*``, ``fs/*``, ``fuzzyFileSearch`` (see the module docstring)."""

    def __init__(self, server: ServerServices) -> None:
        self.server = server
        self._bubblewrap: Bubblewrap | None = None
        self._execs: dict[tuple[int, str], _Exec] = {}
        self._watchers: dict[int, tuple[Watcher, anyio.CancelScope]] = {}
        self._processes: dict[tuple[int, str], _Exec] = {}
        self._fuzzy: dict[tuple[int, str], list[str]] = {}

    @property
    def bubblewrap(self) -> Bubblewrap:
        if self._bubblewrap is None:
            self._bubblewrap = Bubblewrap.find()
        return self._bubblewrap

    def connection_closed(self, connection_id: int) -> None:
        """Kill the connection's ``command/exec`` processes and drop its watches."""
        for key in [k for k in self._execs if k[0] == connection_id]:
            self._execs.pop(key).run.terminate()
        for key in [k for k in self._processes if k[0] == connection_id]:
            self._processes.pop(key).run.terminate()
        for key in [k for k in self._fuzzy if k[0] == connection_id]:
            del self._fuzzy[key]
        found = self._watchers.pop(connection_id, None)
        if found is not None:
            watcher, scope = found
            scope.cancel()
            watcher.close()

    # --- command/exec ---------------------------------------------------------------------

    def _config_sandbox(self) -> SandboxPolicy:
        try:
            config = self.server.config.resolve()
        except Exception:  # a broken config: the safest policy
            return SandboxPolicy("read-only")
        mode = getattr(config, "sandbox_mode", "read-only")
        if mode != "workspace-write":
            return SandboxPolicy.from_wire(str(mode))
        extra: dict[str, Any] = getattr(config, "sandbox_workspace_write", None) or {}
        return SandboxPolicy.from_wire({"type": "workspaceWrite", **extra})

    async def command_exec(self, ctx: RequestContext, params: CommandExecParams) -> dict[str, Any]:
        if params.output_bytes_cap is not None and params.disable_output_cap:
            raise RpcError(
                -32602, "command/exec cannot set both outputBytesCap and disableOutputCap"
            )
        if params.timeout_ms is not None and params.disable_timeout:
            raise RpcError(-32602, "command/exec cannot set both timeoutMs and disableTimeout")
        tty = bool(params.tty)
        if params.size is not None and not tty:
            raise RpcError(-32602, "command/exec size requires tty: true")
        streaming = bool(params.stream_stdout_stderr)
        if (tty or streaming or params.stream_stdin) and params.process_id is None:
            raise invalid_request(
                "command/exec tty or streaming requires a client-supplied processId"
            )
        if not params.command:
            raise invalid_request("command must not be empty")
        connection = ctx.connection
        key = (connection.connection_id, params.process_id or "")
        if params.process_id is not None and key in self._execs:
            raise invalid_request(
                f"duplicate active command/exec process id: {orjson.dumps(params.process_id).decode()}"
            )
        sandbox = (
            SandboxPolicy.from_wire(params.sandbox_policy.model_dump(mode="json", by_alias=True))
            if params.sandbox_policy is not None
            else self._config_sandbox()
        )
        codex_home = str(self.server.config.codex_home)
        env = command_env(os.environ, codex_home, params.env)
        cwd = resolve_cwd(self.server.default_cwd, params.cwd)
        size = (params.size.rows, params.size.cols) if params.size is not None else None
        timeout = None if params.disable_timeout else (params.timeout_ms or DEFAULT_TIMEOUT_MS)
        if params.timeout_ms == 0 and not params.disable_timeout:
            timeout = 0
        cap = (
            None
            if params.disable_output_cap
            else (params.output_bytes_cap if params.output_bytes_cap is not None else DEFAULT_CAP)
        )
        try:
            run = CommandRun.start(
                params.command,
                cwd=cwd,
                env=env,
                sandbox=sandbox,
                bubblewrap=self.bubblewrap,
                tty=tty,
                size=size,
                stream_stdin=bool(params.stream_stdin),
                streaming=streaming,
                timeout_ms=timeout,
                cap=cap,
            )
        except SandboxUnavailable as exc:
            return {"exitCode": 1, "stdout": "", "stderr": f"sandbox unavailable: {exc}\n"}
        except SpawnError as exc:
            raise RpcError(INTERNAL_ERROR, f"failed to spawn command: {exc.rust_text}") from None
        if params.process_id is not None:
            self._execs[key] = _Exec(run, tty)
        process_id = params.process_id or ""
        on_delta = self._delta_sender(connection, process_id) if streaming else None
        try:
            code, stdout, stderr = await run.finish(on_delta)
        finally:
            if self._execs.get(key) is not None and self._execs[key].run is run:
                del self._execs[key]
        return {"exitCode": code, "stdout": stdout, "stderr": stderr}

    @staticmethod
    def _delta_sender(connection: ContextConnection, process_id: str):
        async def send(stream: str, data: bytes, cap_reached: bool) -> None:
            await connection.notify(
                "command/exec/outputDelta",
                orjson.dumps(
                    {
                        "processId": process_id,
                        "stream": stream,
                        "deltaBase64": base64.b64encode(data).decode("ascii"),
                        "capReached": cap_reached,
                    }
                ),
            )

        return send

    def _active(self, ctx: RequestContext, process_id: str) -> _Exec:
        found = self._execs.get((ctx.connection.connection_id, process_id))
        if found is None:
            raise invalid_request(
                f"no active command/exec for process id {orjson.dumps(process_id).decode()}"
            )
        return found

    async def command_exec_write(
        self, ctx: RequestContext, params: CommandExecWriteParams
    ) -> dict[str, Any]:
        active = self._active(ctx, params.process_id)
        await _write_stdin(active, "command/exec", params.delta_base64, params.close_stdin)
        return {}

    async def command_exec_terminate(
        self, ctx: RequestContext, params: CommandExecTerminateParams
    ) -> dict[str, Any]:
        self._active(ctx, params.process_id).run.terminate()
        return {}

    async def command_exec_resize(
        self, ctx: RequestContext, params: CommandExecResizeParams
    ) -> dict[str, Any]:
        active = self._active(ctx, params.process_id)
        if not active.tty:
            raise invalid_request("failed to resize PTY: process is not attached to a PTY")
        active.run.resize(params.size.rows, params.size.cols)
        return {}

    # --- process/* (experimental) -----------------------------------------------------------

    async def process_spawn(
        self, ctx: RequestContext, params: ProcessSpawnParams
    ) -> dict[str, Any]:
        if not params.command:
            raise invalid_request("command must not be empty")
        _absolute(params.cwd)
        tty = bool(params.tty)
        connection = ctx.connection
        handle = params.process_handle
        key = (connection.connection_id, handle)
        if key in self._processes:
            raise invalid_request(
                f"duplicate active process handle: {orjson.dumps(handle).decode()}"
            )
        env = command_env(os.environ, str(self.server.config.codex_home), params.env)
        size = (params.size.rows, params.size.cols) if params.size is not None else None
        cap = params.output_bytes_cap if params.output_bytes_cap is not None else DEFAULT_CAP
        streaming = bool(params.stream_stdout_stderr)
        try:
            run = CommandRun.start(
                params.command,
                cwd=params.cwd,
                env=env,
                sandbox=self._config_sandbox(),
                bubblewrap=self.bubblewrap,
                tty=tty,
                size=size,
                stream_stdin=bool(params.stream_stdin),
                streaming=streaming,
                timeout_ms=params.timeout_ms,
                cap=cap,
            )
        except SandboxUnavailable as exc:
            refused = {
                "processHandle": handle,
                "exitCode": 1,
                "stdout": "",
                "stdoutCapReached": False,
                "stderr": f"sandbox unavailable: {exc}\n",
                "stderrCapReached": False,
            }

            async def say_refused() -> None:
                await connection.notify("process/exited", orjson.dumps(refused))

            ctx.after_response(say_refused)
            return {}
        except SpawnError as exc:
            raise RpcError(INTERNAL_ERROR, f"failed to spawn process: {exc.rust_text}") from None
        self._processes[key] = _Exec(run, tty)

        async def delta(stream: str, data: bytes, cap_reached: bool) -> None:
            await connection.notify(
                "process/outputDelta",
                orjson.dumps(
                    {
                        "processHandle": handle,
                        "stream": stream,
                        "deltaBase64": base64.b64encode(data).decode("ascii"),
                        "capReached": cap_reached,
                    }
                ),
            )

        async def watch() -> None:
            try:
                code, stdout, stderr = await run.finish(delta if streaming else None)
            finally:
                if self._processes.get(key) is not None and self._processes[key].run is run:
                    del self._processes[key]
            await connection.notify(
                "process/exited",
                orjson.dumps(
                    {
                        "processHandle": handle,
                        "exitCode": code,
                        "stdout": stdout,
                        "stdoutCapReached": run.cap_reached.get("stdout", False),
                        "stderr": stderr,
                        "stderrCapReached": run.cap_reached.get("stderr", False),
                    }
                ),
            )

        ctx.after_response(_background(self.server, watch))
        return {}

    def _process(self, ctx: RequestContext, handle: str) -> _Exec:
        found = self._processes.get((ctx.connection.connection_id, handle))
        if found is None:
            raise invalid_request(
                f"no active process for process handle {orjson.dumps(handle).decode()}"
            )
        return found

    async def process_write_stdin(
        self, ctx: RequestContext, params: ProcessWriteStdinParams
    ) -> dict[str, Any]:
        active = self._process(ctx, params.process_handle)
        await _write_stdin(active, "process", params.delta_base64, params.close_stdin)
        return {}

    async def process_kill(self, ctx: RequestContext, params: ProcessKillParams) -> dict[str, Any]:
        self._process(ctx, params.process_handle).run.terminate()
        return {}

    async def process_resize_pty(
        self, ctx: RequestContext, params: ProcessResizePtyParams
    ) -> dict[str, Any]:
        active = self._process(ctx, params.process_handle)
        if not active.tty:
            raise invalid_request("failed to resize PTY: process is not attached to a PTY")
        active.run.resize(params.size.rows, params.size.cols)
        return {}

    # --- fs/* -------------------------------------------------------------------------------

    async def fs_read_file(self, ctx: RequestContext, params: FsReadFileParams) -> dict[str, Any]:
        _absolute(params.path)
        data = await _run_fs(lambda: fs.read_file(params.path))
        return {"dataBase64": base64.b64encode(data).decode("ascii")}

    async def fs_write_file(self, ctx: RequestContext, params: FsWriteFileParams) -> dict[str, Any]:
        _absolute(params.path)
        data = _decode_base64(params.data_base64)
        await _run_fs(lambda: fs.write_file(params.path, data))
        return {}

    async def fs_create_directory(
        self, ctx: RequestContext, params: FsCreateDirectoryParams
    ) -> dict[str, Any]:
        _absolute(params.path)
        recursive = params.recursive is not False
        await _run_fs(lambda: fs.create_directory(params.path, recursive))
        return {}

    async def fs_get_metadata(
        self, ctx: RequestContext, params: FsGetMetadataParams
    ) -> dict[str, Any]:
        _absolute(params.path)
        return await _run_fs(lambda: fs.get_metadata(params.path))

    async def fs_read_directory(
        self, ctx: RequestContext, params: FsReadDirectoryParams
    ) -> dict[str, Any]:
        _absolute(params.path)
        return {"entries": await _run_fs(lambda: fs.read_directory(params.path))}

    async def fs_remove(self, ctx: RequestContext, params: FsRemoveParams) -> dict[str, Any]:
        _absolute(params.path)
        recursive = params.recursive is not False
        force = params.force is not False
        await _run_fs(lambda: fs.remove(params.path, recursive, force))
        return {}

    async def fs_copy(self, ctx: RequestContext, params: FsCopyParams) -> dict[str, Any]:
        _absolute(params.source_path, params.destination_path)
        recursive = bool(params.recursive)
        await _run_fs(lambda: fs.copy(params.source_path, params.destination_path, recursive))
        return {}

    async def fs_watch(self, ctx: RequestContext, params: FsWatchParams) -> dict[str, Any]:
        _absolute(params.path)
        connection = ctx.connection
        found = self._watchers.get(connection.connection_id)
        if found is not None and params.watch_id in found[0]:
            raise invalid_request(f"watchId already exists: {params.watch_id}")
        if found is None:

            async def changed(watch_id: str, paths: list[str]) -> None:
                await connection.notify(
                    "fs/changed", orjson.dumps({"watchId": watch_id, "changedPaths": paths})
                )

            watcher = Watcher(changed)
            scope = anyio.CancelScope()
            self._watchers[connection.connection_id] = (watcher, scope)

            async def run() -> None:
                with scope:
                    await watcher.run()

            ctx.after_response(_background(self.server, run))
        else:
            watcher = found[0]
        try:
            canonical = watcher.add(params.watch_id, params.path)
        except OSError as exc:
            raise RpcError(INTERNAL_ERROR, f"{exc.strerror} (os error {exc.errno})") from None
        return {"path": canonical}

    async def fs_unwatch(self, ctx: RequestContext, params: FsUnwatchParams) -> dict[str, Any]:
        found = self._watchers.get(ctx.connection.connection_id)
        if found is not None:
            found[0].remove(params.watch_id)
        return {}

    # --- fuzzyFileSearch ------------------------------------------------------------------

    async def fuzzy_file_search(
        self, ctx: RequestContext, params: FuzzyFileSearchParams
    ) -> dict[str, Any]:
        roots = list(params.roots)
        files = await anyio.to_thread.run_sync(lambda: fuzzy_search(params.query, roots))
        return {"files": files}

    async def fuzzy_session_start(
        self, ctx: RequestContext, params: FuzzyFileSearchSessionStartParams
    ) -> dict[str, Any]:
        self._fuzzy[(ctx.connection.connection_id, params.session_id)] = list(params.roots)
        return {}

    async def fuzzy_session_update(
        self, ctx: RequestContext, params: FuzzyFileSearchSessionUpdateParams
    ) -> dict[str, Any]:
        session_id, query = params.session_id, params.query
        roots = self._fuzzy.get((ctx.connection.connection_id, session_id))
        if roots is None:
            raise invalid_request(f"fuzzy file search session not found: {session_id}")
        connection = ctx.connection

        async def search() -> None:
            files = await anyio.to_thread.run_sync(lambda: fuzzy_search(query, roots))
            updated = {"sessionId": session_id, "query": query, "files": files}
            await connection.notify("fuzzyFileSearch/sessionUpdated", orjson.dumps(updated))
            completed = {"sessionId": session_id}
            await connection.notify("fuzzyFileSearch/sessionCompleted", orjson.dumps(completed))

        ctx.after_response(_background(self.server, search))
        return {}

    async def fuzzy_session_stop(
        self, ctx: RequestContext, params: FuzzyFileSearchSessionStopParams
    ) -> dict[str, Any]:
        self._fuzzy.pop((ctx.connection.connection_id, params.session_id), None)
        return {}


def _decode_base64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        bad = next(
            (
                (i, c)
                for i, c in enumerate(text)
                if not (c.isascii() and (c.isalnum() or c in "+/="))
            ),
            None,
        )
        detail = (
            f"Invalid symbol {ord(bad[1])}, offset {bad[0]}."
            if bad is not None
            else "Invalid padding"
        )
        raise invalid_request(f"fs/writeFile requires valid base64 dataBase64: {detail}") from None


def _background(
    server: ServerServices, run: Callable[[], Coroutine[Any, Any, None]]
) -> Callable[[], Coroutine[Any, Any, None]]:
    """An ``after_response`` callback that starts ``run`` in the server's task group."""

    async def start() -> None:
        server.start_task(run)

    return start


async def _write_stdin(
    active: _Exec, what: str, delta_base64: str | None, close_stdin: bool | None
) -> None:
    """``command/exec/write`` and ``process/writeStdin``: the base64 bytes to the process's
    stdin (and close it), with the binary's refusals (``what`` names the kind of process)."""
    if not active.run.stream_stdin and not active.tty:
        raise invalid_request(f"stdin streaming is not enabled for this {what}")
    data = b""
    if delta_base64:
        try:
            data = base64.b64decode(delta_base64, validate=True)
        except binascii.Error as exc:
            raise invalid_request(f"invalid deltaBase64: {exc}") from None
    try:
        await active.run.write(data, bool(close_stdin))
    except OSError as exc:
        raise RpcError(INTERNAL_ERROR, f"failed to write stdin: {exc}") from None
