"""``command/exec``: one argv run for a client, as 0.163.0 runs it (``spec/machine-tools.md`` §7.1).

``CommandRun.start`` spawns (sandboxed under the request's policy, or the config's), and
``CommandRun.finish`` waits for the exit, the timeout (exit 124, the output so far) or a
``terminate`` (137 on pipes, 1 on a PTY) and returns ``(exitCode, stdout, stderr)``. Each stream
keeps at most its cap (1 MiB unless the client says otherwise); what is beyond is dropped, and in
streaming mode the delta that reaches the cap says ``capReached``. Streamed output goes to
``on_delta`` as it is read, and is then not in the result.

Boundary: no JSON-RPC; the server's handler validates the params and words the errors.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import anyio
import anyio.lowlevel

from codex_app_bridge.machine._proc import ChildProcess, Output, spawn
from codex_app_bridge.machine._sandbox import Bubblewrap, SandboxPolicy, WrappedCommand

__all__ = [
    "DEFAULT_CAP",
    "DEFAULT_TIMEOUT_MS",
    "CommandRun",
    "OnDelta",
    "command_env",
    "resolve_cwd",
]

DEFAULT_CAP: Final = 1024 * 1024
DEFAULT_TIMEOUT_MS: Final = 10_000
TIMEOUT_EXIT: Final = 124

OnDelta = Callable[[str, bytes, bool], Awaitable[None]]
"""``(stream, data, cap_reached)`` for each streamed chunk."""


@dataclass(eq=False)
class _Stream:
    name: str
    output: Output
    cap: int | None
    data: bytearray = field(default_factory=bytearray)
    kept: int = 0

    def take(self, chunk: bytes) -> tuple[bytes, bool]:
        """The part of ``chunk`` under the cap, and whether the cap is now reached."""
        if self.cap is None:
            self.kept += len(chunk)
            return chunk, False
        room = self.cap - self.kept
        part = chunk[: max(room, 0)]
        self.kept += len(part)
        return part, self.kept >= self.cap


@dataclass(eq=False)
class CommandRun:
    child: ChildProcess
    streaming: bool
    stream_stdin: bool
    timeout_s: float | None
    cap: int | None
    wrapped: WrappedCommand | None = None
    terminated: bool = False
    timed_out: bool = False
    cap_reached: dict[str, bool] = field(default_factory=dict[str, bool])
    """Stream name -> whether its output reached the cap (what is beyond was dropped)."""
    _done: anyio.Event = field(default_factory=anyio.Event)

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        sandbox: SandboxPolicy,
        bubblewrap: Bubblewrap,
        tty: bool = False,
        size: tuple[int, int] | None = None,
        stream_stdin: bool = False,
        streaming: bool = False,
        timeout_ms: int | None = DEFAULT_TIMEOUT_MS,
        cap: int | None = DEFAULT_CAP,
    ) -> CommandRun:
        """Spawn ``argv``; ``SpawnError`` if it cannot start, ``SandboxUnavailable`` if the
        policy needs a sandbox this machine cannot make (never run unconfined)."""
        wrapped: WrappedCommand | None = None
        run_argv = list(argv)
        if sandbox.needs_sandbox:
            bubblewrap.require()
            wrapped = bubblewrap.wrap(argv, sandbox, cwd, env)
            run_argv = wrapped.argv
        try:
            child = spawn(
                run_argv,
                cwd=cwd,
                env=env,
                tty=tty,
                merge_stderr=False,
                stdin_open=stream_stdin or tty,
                size=size,
                hand_over=wrapped.hand_over if wrapped is not None else (),
            )
        except BaseException:
            if wrapped is not None:
                wrapped.cleanup()
            raise
        return cls(
            child,
            streaming,
            stream_stdin,
            None if timeout_ms is None else timeout_ms / 1000,
            cap,
            wrapped,
        )

    def terminate(self) -> None:
        self.terminated = True
        self.child.kill()

    async def finish(self, on_delta: OnDelta | None = None) -> tuple[int, str, str]:
        """Wait for the end; ``(exit code, stdout, stderr)`` (see the module docstring)."""
        child = self.child
        streams = [_Stream("stdout", Output(child, child.stdout_fd), self.cap)]
        if child.stderr_fd is not None:
            streams.append(_Stream("stderr", Output(child, child.stderr_fd), self.cap))
        try:
            async with anyio.create_task_group() as group:
                for stream in streams:
                    group.start_soon(self._pump, stream, on_delta)
                with anyio.move_on_after(self.timeout_s) as scope:
                    await child.wait()
                if scope.cancelled_caught:
                    self.timed_out = True
                    child.kill()
                    await child.wait()
                for stream in streams:  # all it wrote before it exited, however slow the client
                    stream.output.child_exited()
                for stream in streams:
                    await stream.output.caught_up.wait()
                with anyio.move_on_after(0.1):  # a background child may hold a pipe open
                    await self._done.wait()
                group.cancel_scope.cancel()
        finally:
            if child.returncode is None:
                child.kill()
            child.close()
            if self.wrapped is not None:
                self.wrapped.cleanup()
        code = child.returncode if child.returncode is not None else -1
        if self.timed_out:
            code = TIMEOUT_EXIT
        elif self.terminated:
            code = 1 if child.tty else 128 + signal.SIGKILL
        elif code < 0:
            code = 128 - code
        out = {s.name: bytes(s.data).decode("utf-8", errors="replace") for s in streams}
        return code, out.get("stdout", ""), out.get("stderr", "")

    async def _pump(self, stream: _Stream, on_delta: OnDelta | None) -> None:
        try:
            while True:
                chunk = await stream.output.read()
                if not chunk:
                    break
                part, reached = stream.take(chunk)
                if reached or len(part) < len(chunk):
                    self.cap_reached[stream.name] = True
                if self.streaming and on_delta is not None:
                    if part:
                        await on_delta(stream.name, part, reached)
                    # a pipe that always has data never makes ``read`` wait: let the loop run
                    # (the connection flushes what was offered and can then push back)
                    await anyio.lowlevel.checkpoint()
                elif part:
                    stream.data += part
        except OSError:
            pass
        finally:
            stream.output.stop()
            if stream.name == "stdout":
                self._done.set()

    async def write(self, data: bytes, close: bool) -> None:
        if data:
            await self.child.write(data)
        if close:
            self.child.close_stdin()

    def resize(self, rows: int, cols: int) -> None:
        self.child.resize(rows, cols)


def command_env(
    base: Mapping[str, str], codex_home: str, overrides: Mapping[str, object] | None
) -> dict[str, str]:
    """The server's environment plus what 0.163.0 sets, then the request's ``env`` (``null``
    unsets a variable)."""
    env = dict(base)
    env.setdefault("NO_COLOR", "1")
    env["CODEX_HOME"] = codex_home
    env["CODEX_APPLY_PATCH_PRESERVE_LINE_ENDINGS"] = "1"
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


def resolve_cwd(base: str, cwd: str | None) -> str:
    if not cwd:
        return base
    return os.path.normpath(os.path.join(base, cwd))
