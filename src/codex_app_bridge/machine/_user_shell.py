"""``thread/shellCommand``: a command the user runs in a thread, as a turn of its own
(``spec/machine-tools.md`` §7.3, probed on 0.163.0).

``run_user_shell`` runs ``[shell, "-lc", command]`` in the thread's cwd and emits the
``CommandExecution`` item (``source: user_shell``, no process id): ``item_started``, stdout and
stderr as ``exec_command_output_delta`` as they are read (unlike unified exec, nothing is held
back; as core's ``read_output``: chunks of at most 8 KiB, at most 10,000 per stream, each read
then waiting for room in the thread's event queue, so output faster than the client reads waits
in the pipe), then ``item_completed`` (``completed`` on exit 0, else ``failed``) whose
``aggregated_output`` is stdout then stderr. ``user_shell_text`` is the user message the model
gets next (``<user_shell_command>`` …).

Unlike 0.163.0, which runs the command unsandboxed whatever the thread's policy, it runs under
the thread's sandbox (bubblewrap); a sandbox that cannot be made here fails the command with the
reason instead of running it unconfined. A timeout (default one hour) or an interrupt kills the
whole process group; the item then fails with exit code -1 and a plain reason, not the binary's
Rust debug text. Output is bounded (``HeadTail``) whatever the command prints.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final

import anyio

from codex_app_bridge.machine._command_exec import CommandRun
from codex_app_bridge.machine._commands import parsed_command, shell_argv
from codex_app_bridge.machine._output import HeadTail
from codex_app_bridge.machine._proc import SpawnError
from codex_app_bridge.machine._sandbox import Bubblewrap, SandboxPolicy, SandboxUnavailable
from codex_app_bridge.protocol.core import (
    CommandExecutionItem,
    Duration,
    EventMsg,
    ExecCommandOutputDeltaEvent,
    ItemCompletedEvent,
    ItemStartedEvent,
)
from codex_app_bridge.protocol.jsonrpc import now_ms

__all__ = ["DEFAULT_TIMEOUT_MS", "UserShellResult", "run_user_shell", "user_shell_text"]

DEFAULT_TIMEOUT_MS: Final = 60 * 60 * 1000
READ_CHUNK_BYTES: Final = 8192
"""At most this much output per delta (core's ``READ_CHUNK_SIZE``)."""
MAX_DELTAS_PER_STREAM: Final = 10_000
"""At most this many deltas for stdout, and as many for stderr (core's
``MAX_EXEC_OUTPUT_DELTAS_PER_CALL``, counted per stream by ``read_output``)."""


@dataclass(frozen=True, slots=True)
class UserShellResult:
    exit_code: int
    output: str
    """stdout then stderr (bounded), or the reason the command did not run or finish."""
    duration_s: float


def user_shell_text(command: str, result: UserShellResult) -> str:
    """The user message the model gets after the command (0.163.0's words)."""
    return (
        f"<user_shell_command>\n<command>\n{command}\n</command>\n<result>\n"
        f"Exit code: {result.exit_code}\nDuration: {result.duration_s:.4f} seconds\n"
        f"Output:\n{result.output}\n</result>\n</user_shell_command>"
    )


def _duration(seconds: float) -> Duration:
    nanos = max(0, round(seconds * 1e9))
    return Duration(secs=nanos // 1_000_000_000, nanos=nanos % 1_000_000_000)


async def run_user_shell(
    command: str,
    *,
    thread_id: str,
    turn_id: str,
    cwd: str,
    sandbox: SandboxPolicy,
    bubblewrap: Bubblewrap,
    env: Mapping[str, str],
    emit: Callable[[EventMsg], None],
    room: Callable[[], Awaitable[None]],
    timeout_ms: int | None = None,
) -> UserShellResult:
    """Run ``command`` (see the module docstring); cancelling the caller kills it. ``room``
    returns once the thread's events may go on (the queue to the client has room)."""
    argv = shell_argv(command)
    item_id = str(uuid.uuid4())
    started_at = time.monotonic()
    started_ms = now_ms()

    def item(status: str, result: UserShellResult | None) -> CommandExecutionItem:
        return CommandExecutionItem.model_validate(
            {
                "id": item_id,
                "command": argv,
                "cwd": "file://" + cwd,
                "parsed_cmd": parsed_command(command),
                "source": "user_shell",
                "status": status,
                "aggregated_output": (result.output or None) if result else None,
                "exit_code": result.exit_code if result else None,
                "duration": _duration(result.duration_s) if result else None,
            }
        )

    def complete(result: UserShellResult) -> UserShellResult:
        status = "completed" if result.exit_code == 0 else "failed"
        emit(
            ItemCompletedEvent(
                thread_id=thread_id,
                turn_id=turn_id,
                item=item(status, result),  # pyright: ignore[reportArgumentType]
                started_at_ms=started_ms,
                completed_at_ms=now_ms(),
            )
        )
        return result

    emit(
        ItemStartedEvent(
            thread_id=thread_id,
            turn_id=turn_id,
            item=item("in_progress", None),  # pyright: ignore[reportArgumentType]
            started_at_ms=started_ms,
        )
    )
    timeout = DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms
    try:
        run = CommandRun.start(
            argv,
            cwd=cwd,
            env=env,
            sandbox=sandbox,
            bubblewrap=bubblewrap,
            streaming=True,
            timeout_ms=timeout,
            cap=None,
        )
    except SandboxUnavailable as exc:
        return complete(UserShellResult(-1, f"sandbox unavailable: {exc}\n", 0.0))
    except SpawnError as exc:
        return complete(UserShellResult(-1, f"failed to spawn command: {exc.rust_text}\n", 0.0))
    buffers = {"stdout": HeadTail(), "stderr": HeadTail()}
    deltas = {"stdout": 0, "stderr": 0}

    async def on_delta(stream: str, data: bytes, cap_reached: bool) -> None:
        buffers[stream].append(data)
        sent = deltas[stream]
        if sent >= MAX_DELTAS_PER_STREAM:
            return
        for start in range(0, len(data), READ_CHUNK_BYTES):
            if sent >= MAX_DELTAS_PER_STREAM:
                break
            chunk = data[start : start + READ_CHUNK_BYTES]
            emit(ExecCommandOutputDeltaEvent.from_bytes(item_id, stream, chunk))
            sent += 1
        deltas[stream] = sent
        await room()

    def output() -> str:
        return buffers["stdout"].retained_text() + buffers["stderr"].retained_text()

    try:
        code, _, _ = await run.finish(on_delta)
    except anyio.get_cancelled_exc_class():
        # interrupted: CommandRun killed the process group; the item still ends
        complete(UserShellResult(-1, output() + "command interrupted\n", _since(started_at)))
        raise
    if run.timed_out:
        reason = f"command timed out after {timeout} ms\n"
        return complete(UserShellResult(-1, output() + reason, _since(started_at)))
    return complete(UserShellResult(code, output(), _since(started_at)))


def _since(started: float) -> float:
    return time.monotonic() - started
