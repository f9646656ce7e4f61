"""The local tools core offers the model, as 0.163.0 runs them: ``exec_command``,
``write_stdin``, ``apply_patch`` and ``view_image``, one ``MachineTools`` per thread.

How a model source uses it (``agent/``; contract in /work/INTERFACES.md, section machine/)::

    async with MachineTools(bubblewrap=..., codex_home=...) as tools:   # the thread's life
        ...
        output = await tools.call(host, name, call_id, arguments)       # one tool call
        ...
        await tools.aclose()   # thread unload: every process killed, late items completed

``host`` (``ToolHost``) is the turn as the tools see it: ids, cwd, approval and sandbox
policies, ``emit`` for core events (it may be called after the turn ended: a session's
``item_completed`` arrives when its process exits) and ``request_approval`` (emit the request
event, return the client's ``ReviewDecision``). ``call`` returns the output the model gets:
a string, or content items for ``view_image``; it raises ``TurnCancelled`` when the user
answered an approval with ``cancel`` (the turn ends interrupted, no output recorded).

Unified exec (``spec/machine-tools.md`` §2): a command runs in the turn's cwd (or ``workdir``)
as ``shell -lc cmd``; the call waits up to ``yield_time_ms`` (250..30000) or until the process
exits; a process still running becomes a session (id 1000..99999) that ``write_stdin`` writes
to or polls. Output is streamed as ``exec_command_output_delta`` (at most 10,000 per process, of
at most 8 KiB each, as core) and kept bounded (1 MiB per call for the model, 1 MiB for the item's
``aggregatedOutput``): a command printing a gigabyte costs no more memory than one printing a
megabyte. Sessions survive the turn's end and an
interrupt (0.163.0); ``aclose`` (unload) and the server's exit kill them, whole process groups.
At most 64 sessions live; the least recently used beyond that are killed.

A thread whose tools are ``idle`` (no session kept, none of their tasks running) may leave the
``async with`` block while it waits (a parked session) and enter it again for its next turn:
nothing is killed then, and what the user approved for the session stays.
"""

from __future__ import annotations

import base64
import contextlib
import math
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final, Protocol, Self, cast

import anyio
import orjson
from anyio.abc import TaskGroup

from codex_app_bridge.machine._command_exec import command_env
from codex_app_bridge.machine._commands import (
    exec_env,
    intercepted_patch,
    parsed_command,
    proposed_prefix,
    shell_argv,
)
from codex_app_bridge.machine._output import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    HeadTail,
    delta_size,
    exec_output_text,
)
from codex_app_bridge.machine._patch import PatchError, PatchPlan, apply_plan, plan_patch
from codex_app_bridge.machine._policy import (
    ApprovalPolicy,
    SessionApprovals,
    decide_exec,
    decide_patch,
    decision_kind,
)
from codex_app_bridge.machine._proc import ChildProcess, Output, SpawnError, spawn
from codex_app_bridge.machine._sandbox import Bubblewrap, SandboxPolicy, WrappedCommand
from codex_app_bridge.machine._turn_diff import TurnDiff, prior_contents
from codex_app_bridge.machine._user_shell import UserShellResult, run_user_shell
from codex_app_bridge.protocol.core import (
    ApplyPatchApprovalRequestEvent,
    CommandExecutionItem,
    Duration,
    EventMsg,
    ExecApprovalRequestEvent,
    ExecCommandOutputDeltaEvent,
    FileChangeItem,
    ImageViewItem,
    ItemCompletedEvent,
    ItemStartedEvent,
    PatchApplyBeginEvent,
    PatchApplyEndEvent,
    TerminalInteractionEvent,
    TurnDiffEvent,
)
from codex_app_bridge.protocol.jsonrpc import now_ms

__all__ = [
    "TOOL_NAMES",
    "MachineTools",
    "ToolHost",
    "ToolOutput",
    "TurnCancelled",
    "aborted_output",
]

MAX_SESSIONS: Final = 64
PROTECTED_RECENT: Final = 8
MAX_MODEL_TOKENS: Final = DEFAULT_MAX_OUTPUT_TOKENS
DELTA_HOLD_S: Final = 0.15
"""Output read this soon after the spawn is not streamed (it is in the item and the model's
text): 0.163.0 starts streaming once its item has started, ~150 ms after the spawn, so a quick
command's output reaches the client only in ``aggregatedOutput``."""
DELTA_READ_SIZE: Final = 64 * 1024
"""Output is read this much at a time, then cut into deltas of at most ``DELTA_MAX_BYTES``."""
MAX_DELTAS_PER_CALL: Final = 10_000
"""A process streams at most this many ``exec_command_output_delta`` (core's
``MAX_EXEC_OUTPUT_DELTAS_PER_CALL``); the rest of its output still reaches the bounded buffers
(the model's text, ``aggregatedOutput``). With ``DELTA_MAX_BYTES`` this bounds what one command
costs the client, and, the thread's event queue being bounded in events, what waits for it in
the server: 64 KiB deltas (their base64 text, then their notifications, a queue's worth of each)
peaked the server at 180-340 MB for a command printing 256 MiB."""
_EXIT_DRAIN_S: Final = 0.1
"""After the process exits, how long its output pipe may stay open (a background child holding
it) before the call answers with what was read."""

ToolOutput = str | list[dict[str, Any]]


class TurnCancelled(Exception):
    """The user answered an approval with ``cancel``: the turn ends interrupted."""


class ToolHost(Protocol):
    """The turn as the tools see it (the model source implements it)."""

    @property
    def thread_id(self) -> str: ...
    @property
    def turn_id(self) -> str: ...
    @property
    def cwd(self) -> str: ...
    @property
    def approval_policy(self) -> ApprovalPolicy: ...
    @property
    def sandbox_policy(self) -> SandboxPolicy: ...
    @property
    def diff(self) -> TurnDiff:
        """The turn's diff (one per turn): applied patches are tracked in it."""
        ...

    def emit(self, event: EventMsg) -> None:
        """Send a core event of this turn (also after the turn ended)."""
        ...

    async def wait_for_room(self) -> None:
        """Return once the thread's events may go on (the queue to the client has room): a
        command's output deltas wait here, so output faster than the client reads waits in
        the command's pipe, not in the server's memory."""
        ...

    async def request_approval(self, request: EventMsg) -> object:
        """Emit ``request`` (an approval request event) and return the client's decision (a core
        ``ReviewDecision``). There is no timeout, as in 0.163.0: a client that disconnects leaves
        the request pending for the next one (``thread/resume`` replays it); an interrupt
        cancels the wait, and nothing runs without an answer."""
        ...


class _ArgsError(Exception):
    pass


def _parse_args(raw: str) -> dict[str, Any]:
    try:
        value = orjson.loads(raw or "{}")
    except orjson.JSONDecodeError as exc:
        raise _ArgsError(f"failed to parse function arguments: {exc}") from None
    if not isinstance(value, dict):
        raise _ArgsError(
            "failed to parse function arguments: invalid type: expected struct at line 1 "
            f"column {len(raw)}"
        )
    return value  # pyright: ignore[reportUnknownVariableType]


def _require(args: Mapping[str, Any], name: str, kind: type, raw: str, what: str) -> Any:
    if name not in args:
        raise _ArgsError(
            f"failed to parse function arguments: missing field `{name}` at line 1 column "
            f"{len(raw)}"
        )
    value = args[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise _ArgsError(
            f"failed to parse function arguments: invalid type: {_json_kind(value)}, "
            f"expected {what} at line 1 column {len(raw)}"
        )
    return value


def _json_kind(value: object) -> str:
    if isinstance(value, str):
        return f'string "{value}"'
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int | float):
        return f"integer `{value}`"
    return "map" if isinstance(value, dict) else "sequence" if isinstance(value, list) else "null"


def _number(args: Mapping[str, Any], name: str, default: int) -> int:
    value = args.get(name)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    return default


def _file_uri(path: str) -> str:
    return "file://" + path


def _duration(seconds: float) -> Duration:
    nanos = max(0, round(seconds * 1e9))
    return Duration(secs=nanos // 1_000_000_000, nanos=nanos % 1_000_000_000)


def _patch_wall(seconds: float) -> str:
    rounded = round(seconds, 1)
    return f"{rounded:g}"


@dataclass(eq=False)
class _Session:
    """One running command (an exec call, then a session once it outlives its call)."""

    id: int
    call_id: str
    thread_id: str
    turn_id: str
    command: list[str]
    cwd: str
    parsed: list[dict[str, Any]]
    child: ChildProcess
    emit: Callable[[EventMsg], None]
    room: Callable[[], Awaitable[None]]
    wrapped: WrappedCommand | None
    started_at: float = field(default_factory=time.monotonic)
    started_at_ms: int = field(default_factory=now_ms)
    pending: HeadTail = field(default_factory=HeadTail)
    aggregate: HeadTail = field(default_factory=HeadTail)
    output_done: anyio.Event = field(default_factory=anyio.Event)
    exited: anyio.Event = field(default_factory=anyio.Event)
    exit_code: int | None = None
    reported: bool = False
    completed: bool = False
    deltas: int = 0
    """Output deltas emitted so far (at most ``MAX_DELTAS_PER_CALL``)."""
    last_used: float = field(default_factory=time.monotonic)
    output: Output = field(init=False)

    def __post_init__(self) -> None:
        self.output = Output(self.child, self.child.stdout_fd)

    def item(self, status: str, *, final: bool) -> CommandExecutionItem:
        return CommandExecutionItem.model_validate(
            {
                "type": "CommandExecution",
                "id": self.call_id,
                "process_id": str(self.id),
                "command": self.command,
                "cwd": _file_uri(self.cwd),
                "parsed_cmd": self.parsed,
                "source": "unified_exec_startup",
                "status": status,
                "aggregated_output": (self.aggregate.retained_text() or None) if final else None,
                "exit_code": self.exit_code if final else None,
                "duration": _duration(time.monotonic() - self.started_at) if final else None,
            }
        )

    async def pump(self) -> None:
        """Read the output until its end: bounded buffers and output deltas (each read's
        deltas, then a wait for the client; none past ``MAX_DELTAS_PER_CALL``)."""
        try:
            while True:
                data = await self.output.read(DELTA_READ_SIZE)
                if not data:
                    break
                self.pending.append(data)
                self.aggregate.append(data)
                if (
                    self.deltas < MAX_DELTAS_PER_CALL
                    and time.monotonic() - self.started_at >= DELTA_HOLD_S
                ):
                    self.stream(data)
                    await self.room()
        except OSError:
            pass
        finally:
            self.output.stop()
            self.output_done.set()

    def stream(self, data: bytes) -> None:
        """Emit ``data`` as output deltas cut as core cuts them, up to the call's cap."""
        view = memoryview(data)
        while view and self.deltas < MAX_DELTAS_PER_CALL:
            size = delta_size(view)
            chunk, view = bytes(view[:size]), view[size:]
            self.emit(ExecCommandOutputDeltaEvent.from_bytes(self.call_id, "stdout", chunk))
            self.deltas += 1

    async def watch(self) -> None:
        """Wait for the exit; then complete the item (also after the turn or call ended)."""
        code = await self.child.wait()
        if self.child.killed and code < 0:
            code = -1
        self.exit_code = code
        if not self.child.killed:  # all it wrote before it exited, however slow the client
            self.output.child_exited()
            await self.output.caught_up.wait()
        with anyio.move_on_after(_EXIT_DRAIN_S):
            await self.output_done.wait()
        if self.wrapped is not None:
            self.wrapped.cleanup()
        self.exited.set()
        self.complete()

    def complete(self) -> None:
        if self.completed:
            return
        self.completed = True
        status = "completed" if self.exit_code == 0 else "failed"
        self.emit(
            ItemCompletedEvent(
                thread_id=self.thread_id,
                turn_id=self.turn_id,
                item=self.item(status, final=True),  # pyright: ignore[reportArgumentType]
                started_at_ms=self.started_at_ms,
                completed_at_ms=now_ms(),
            )
        )
        self.child.close()


Handler = Callable[["ToolHost", str, str], Awaitable[ToolOutput]]


class MachineTools:
    """The local tools of one thread (see the module docstring)."""

    def __init__(
        self,
        *,
        bubblewrap: Bubblewrap,
        codex_home: str,
        base_env: Mapping[str, str] | None = None,
    ) -> None:
        self.bubblewrap = bubblewrap
        self.codex_home = codex_home
        self.base_env = dict(os.environ if base_env is None else base_env)
        self.approvals = SessionApprovals()
        self.sessions: dict[int, _Session] = {}
        self._group: TaskGroup | None = None
        self._live = 0
        """Tasks of the group still running (a command session's output pump and exit watch)."""
        self._closed = False
        self.handlers: dict[str, Handler] = {
            "exec_command": self.exec_command,
            "write_stdin": self.write_stdin,
            "apply_patch": self.apply_patch,
            "view_image": self.view_image,
        }

    @property
    def idle(self) -> bool:
        """Nothing of the thread's lives here: no command session is kept (running, or ended
        with output the model has not read) and no task of one runs. Leaving the ``async
        with`` block then kills nothing and loses nothing; it may be entered again."""
        return not self.sessions and not self._live

    @property
    def approved(self) -> bool:
        """The user approved something for the rest of the session (kept here)."""
        approvals = self.approvals
        return bool(approvals.commands or approvals.prefixes or approvals.paths)

    async def __aenter__(self) -> Self:
        self._closed = False
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        with anyio.CancelScope(shield=True):  # unload cancels us: the kill must still finish
            await self.aclose()
        group, self._group = self._group, None
        if group is None:
            return None
        return await group.__aexit__(exc_type, exc, tb)

    async def aclose(self) -> None:
        """Kill every process of the thread and complete their items (``failed``, exit -1)."""
        self._closed = True
        sessions = list(self.sessions.values())
        for session in sessions:
            session.child.kill()
        with anyio.move_on_after(10):
            for session in sessions:
                await session.exited.wait()
        self.sessions.clear()

    async def call(self, host: ToolHost, name: str, call_id: str, arguments: str) -> ToolOutput:
        """Run one tool call; the output the model gets (see the module docstring)."""
        handler = self.handlers.get(name)
        if handler is None:
            return f"unsupported call: {name}"
        try:
            return await handler(host, call_id, arguments)
        except _ArgsError as exc:
            return str(exc)

    async def user_shell(
        self,
        command: str,
        *,
        thread_id: str,
        turn_id: str,
        cwd: str,
        sandbox: SandboxPolicy,
        emit: Callable[[EventMsg], None],
        room: Callable[[], Awaitable[None]],
        timeout_ms: int | None = None,
    ) -> UserShellResult:
        """A command the user typed (``thread/shellCommand``; ``_user_shell``), in this
        thread's environment and sandbox."""
        return await run_user_shell(
            command,
            thread_id=thread_id,
            turn_id=turn_id,
            cwd=cwd,
            sandbox=sandbox,
            bubblewrap=self.bubblewrap,
            env=command_env(self.base_env, self.codex_home, None),
            emit=emit,
            room=room,
            timeout_ms=timeout_ms,
        )

    # --- exec_command ---------------------------------------------------------------------

    def _new_id(self) -> int:
        while True:
            candidate = 1000 + secrets.randbelow(99_000)
            if candidate not in self.sessions:
                return candidate

    def _prune(self) -> None:
        if len(self.sessions) < MAX_SESSIONS:
            return
        by_use = sorted(self.sessions.values(), key=lambda s: s.last_used)
        recent = {s.id for s in by_use[-PROTECTED_RECENT:]}
        for session in by_use:
            if len(self.sessions) < MAX_SESSIONS:
                break
            if session.id in recent:
                continue
            session.child.kill()
            self.sessions.pop(session.id, None)

    async def exec_command(self, host: ToolHost, call_id: str, arguments: str) -> ToolOutput:
        args = _parse_args(arguments)
        cmd = _require(args, "cmd", str, arguments, "a string")
        workdir = args.get("workdir")
        cwd = _resolve(host.cwd, workdir) if isinstance(workdir, str) and workdir else host.cwd
        patch = intercepted_patch(cmd)
        if patch is not None:
            text, directory = patch
            patch_cwd = _resolve(cwd, directory) if directory else cwd
            started = time.monotonic()
            out = await self._patch(host, call_id, text, patch_cwd)
            if out.startswith("Exit code: 0"):
                return f"Wall time: {time.monotonic() - started:.4f} seconds\nOutput:\n{out}"
            return out
        yield_ms = min(max(_number(args, "yield_time_ms", 10_000), 250), 30_000)
        max_tokens = min(
            max(_number(args, "max_output_tokens", MAX_MODEL_TOKENS), 0), MAX_MODEL_TOKENS
        )
        tty = args.get("tty") is True
        shell = args.get("shell") if isinstance(args.get("shell"), str) else None
        login = args.get("login") is not False
        argv = shell_argv(cmd, shell=shell, login=login)
        escalated = args.get("sandbox_permissions") == "require_escalated"
        justification = args.get("justification")
        prefix_rule = args.get("prefix_rule")
        sandbox = host.sandbox_policy
        problem = self.bubblewrap.probe() if sandbox.needs_sandbox else None
        plan = decide_exec(
            host.approval_policy,
            sandbox,
            escalated=escalated,
            sandbox_problem=problem,
            approved_for_session=tuple(argv) in self.approvals.commands,
            allowed_by_rule=self.approvals.allows_by_rule(cmd.split()),
            justification=justification if isinstance(justification, str) else None,
        )
        parsed = parsed_command(cmd)
        if plan.action == "refuse":
            return plan.text
        sandboxed = plan.sandboxed
        if plan.action == "ask":
            amendment = proposed_prefix(
                cmd,
                argv,
                _strings(prefix_rule),
            )
            request = ExecApprovalRequestEvent.model_validate(
                {
                    "call_id": call_id,
                    "turn_id": host.turn_id,
                    "started_at_ms": now_ms(),
                    "command": argv,
                    "cwd": cwd,
                    "reason": plan.reason,
                    "proposed_execpolicy_amendment": amendment,
                    "available_decisions": [
                        "approved",
                        {
                            "approved_execpolicy_amendment": {
                                "proposed_execpolicy_amendment": amendment
                            }
                        },
                        "abort",
                    ],
                    "parsed_cmd": parsed,
                }
            )
            decision = await host.request_approval(request)
            kind, prefix = decision_kind(decision)
            if kind in ("decline", "cancel"):
                # no item_completed: core records nothing for a refused command (the real
                # thread/read has no item for it); the app-server completes the approval's
                # item as declined for the client (listener/_requests.resolve_request)
                if kind == "cancel":
                    raise TurnCancelled
                return (
                    'exec_command failed: CreateProcess { message: "Rejected(\\"rejected by '
                    'user\\")" }'
                )
            if kind == "accept_for_session":
                self.approvals.commands.add(tuple(argv))
            elif kind == "accept_with_amendment":
                self.approvals.prefixes.append(tuple(prefix or amendment))
        if self._closed:
            return "exec_command failed: the thread is shutting down"
        env = exec_env(
            self.base_env, thread_id=host.thread_id, call_id=call_id, codex_home=self.codex_home
        )
        if not _is_dir(cwd):
            return (
                'exec_command failed: CreateProcess { message: "Rejected(\\"Failed to create '
                'unified exec process: No such file or directory (os error 2)\\")" }'
            )
        wrapped: WrappedCommand | None = None
        run_argv = argv
        if sandboxed:
            wrapped = self.bubblewrap.wrap(argv, sandbox, cwd, env)
            run_argv = wrapped.argv
        try:
            child = spawn(
                run_argv,
                cwd=cwd,
                env=env,
                tty=tty,
                merge_stderr=True,
                stdin_open=tty,
                hand_over=wrapped.hand_over if wrapped is not None else (),
            )
        except SpawnError as exc:
            if wrapped is not None:
                wrapped.cleanup()
            return (
                'exec_command failed: CreateProcess { message: "Rejected(\\"Failed to create '
                f'unified exec process: {exc.rust_text}\\")" }}'
            )
        self._prune()
        session = _Session(
            id=self._new_id(),
            call_id=call_id,
            thread_id=host.thread_id,
            turn_id=host.turn_id,
            command=argv,
            cwd=cwd,
            parsed=parsed,
            child=child,
            emit=host.emit,
            room=host.wait_for_room,
            wrapped=wrapped,
        )
        self.sessions[session.id] = session
        host.emit(
            ItemStartedEvent(
                thread_id=host.thread_id,
                turn_id=host.turn_id,
                item=session.item("in_progress", final=False),  # pyright: ignore[reportArgumentType]
                started_at_ms=session.started_at_ms,
            )
        )
        group = self._group
        if group is None:
            raise RuntimeError("MachineTools is used outside its async with block")
        group.start_soon(self._counted, session.pump)
        group.start_soon(self._counted, session.watch)
        return await self._collect(session, yield_ms / 1000, max_tokens, time.monotonic())

    async def _counted(self, task: Callable[[], Awaitable[None]]) -> None:
        self._live += 1
        try:
            await task()
        finally:
            self._live -= 1

    async def _collect(
        self, session: _Session, wait_s: float, max_tokens: int, started: float
    ) -> str:
        with anyio.move_on_after(wait_s):
            await session.exited.wait()
        session.last_used = time.monotonic()
        exited = session.exited.is_set()
        text = exec_output_text(
            session.pending,
            wall_time_s=time.monotonic() - started,
            exit_code=session.exit_code if exited else None,
            session_id=None if exited else session.id,
            max_tokens=max_tokens,
        )
        session.pending = HeadTail()
        if exited:
            session.reported = True
            self.sessions.pop(session.id, None)
        return text

    # --- write_stdin ----------------------------------------------------------------------

    async def write_stdin(self, host: ToolHost, call_id: str, arguments: str) -> ToolOutput:
        args = _parse_args(arguments)
        session_id = _require(args, "session_id", int, arguments, "i32")
        chars = args.get("chars") if isinstance(args.get("chars"), str) else ""
        max_tokens = min(
            max(_number(args, "max_output_tokens", MAX_MODEL_TOKENS), 0), MAX_MODEL_TOKENS
        )
        session = self.sessions.get(session_id)
        if session is None:
            return f"write_stdin failed: Unknown process id {session_id}"
        started = time.monotonic()
        if chars:
            if not session.child.tty or session.child.stdin_fd is None:
                return (
                    "write_stdin failed: stdin is closed for this session; rerun exec_command "
                    "with tty=true to keep stdin open"
                )
            with contextlib.suppress(OSError):
                await session.child.write(chars.encode("utf-8"))
            wait_ms = min(max(_number(args, "yield_time_ms", 250), 250), 30_000)
        else:
            wait_ms = min(max(_number(args, "yield_time_ms", 5_000), 5_000), 300_000)
        text = await self._collect(session, wait_ms / 1000, max_tokens, started)
        if chars:
            host.emit(
                TerminalInteractionEvent(
                    call_id=session.call_id, process_id=str(session.id), stdin=chars
                )
            )
        return text

    # --- apply_patch ----------------------------------------------------------------------

    async def apply_patch(self, host: ToolHost, call_id: str, arguments: str) -> ToolOutput:
        """The freeform tool: ``arguments`` is the patch text itself."""
        text = arguments
        if arguments.lstrip().startswith("{"):
            try:
                value = orjson.loads(arguments)
            except orjson.JSONDecodeError:
                value = None
            if isinstance(value, dict) and isinstance(value.get("input"), str):  # pyright: ignore[reportUnknownMemberType]
                text = str(value["input"])  # pyright: ignore[reportUnknownArgumentType]
        return await self._patch(host, call_id, text, host.cwd)

    async def _patch(self, host: ToolHost, call_id: str, text: str, cwd: str) -> str:
        started = time.monotonic()
        try:
            plan = plan_patch(text, cwd)
        except PatchError as exc:
            return exc.verification_text
        verdict = decide_patch(
            host.approval_policy,
            host.sandbox_policy,
            plan.paths(),
            cwd,
            approved_paths=frozenset(self.approvals.paths),
        )
        if verdict.action == "reject":
            return verdict.text
        changes = plan.changes()
        item = FileChangeItem.model_validate(
            {"id": call_id, "changes": changes, "status": "in_progress"}
        )
        started_ms = now_ms()
        host.emit(
            ItemStartedEvent(
                thread_id=host.thread_id,
                turn_id=host.turn_id,
                item=item,  # pyright: ignore[reportArgumentType]
                started_at_ms=started_ms,
            )
        )
        auto = verdict.action == "apply"
        refused = _sandbox_refuses(host, plan, cwd, self.approvals.paths) if auto else None
        if refused is not None:
            # core writes an auto-approved patch in its sandbox, whose mounts refuse a path
            # that leaves the writable roots through a symlink: refused here the same way
            self._complete_patch(host, item, "failed", started_ms)
            wall = _patch_wall(time.monotonic() - started)
            return f"Exit code: 1\nWall time: {wall} seconds\nOutput:\nFailed to write file {refused}\n"
        if not auto:
            decision = await host.request_approval(
                ApplyPatchApprovalRequestEvent.model_validate(
                    {
                        "call_id": call_id,
                        "turn_id": host.turn_id,
                        "started_at_ms": started_ms,
                        "changes": changes,
                    }
                )
            )
            kind, _ = decision_kind(decision)
            if kind == "cancel":
                raise TurnCancelled
            if kind == "decline":
                self._complete_patch(host, item, "declined", started_ms)
                return "patch rejected by user"
            if kind == "accept_for_session":
                self.approvals.paths.update(plan.paths())
        host.emit(
            PatchApplyBeginEvent.model_validate(
                {
                    "call_id": call_id,
                    "turn_id": host.turn_id,
                    "auto_approved": auto,
                    "changes": changes,
                }
            )
        )
        try:
            prior = await anyio.to_thread.run_sync(_apply_plan, plan)
        except OSError as exc:
            message = f"{exc.strerror} (os error {exc.errno})"
            host.emit(
                PatchApplyEndEvent.model_validate(
                    {
                        "call_id": call_id,
                        "turn_id": host.turn_id,
                        "stdout": "",
                        "stderr": message,
                        "success": False,
                        "changes": changes,
                        "status": "failed",
                    }
                )
            )
            self._complete_patch(host, item, "failed", started_ms)
            return f"apply_patch failed: {message}"
        summary = plan.success_text()
        host.emit(
            PatchApplyEndEvent.model_validate(
                {
                    "call_id": call_id,
                    "turn_id": host.turn_id,
                    "stdout": summary,
                    "stderr": "",
                    "success": True,
                    "changes": changes,
                    "status": "completed",
                }
            )
        )
        self._complete_patch(host, item, "completed", started_ms)
        diff = host.diff
        diff.track(plan, prior)
        unified = diff.unified_diff()
        if unified is not None:
            host.emit(TurnDiffEvent(unified_diff=unified))
        wall = _patch_wall(time.monotonic() - started)
        return f"Exit code: 0\nWall time: {wall} seconds\nOutput:\n{summary}"

    def _complete_patch(
        self, host: ToolHost, item: FileChangeItem, status: str, started_ms: int
    ) -> None:
        done = item.model_copy(update={"status": status})
        host.emit(
            ItemCompletedEvent(
                thread_id=host.thread_id,
                turn_id=host.turn_id,
                item=done,  # pyright: ignore[reportArgumentType]
                started_at_ms=started_ms,
                completed_at_ms=now_ms(),
            )
        )

    # --- view_image -----------------------------------------------------------------------

    async def view_image(self, host: ToolHost, call_id: str, arguments: str) -> ToolOutput:
        args = _parse_args(arguments)
        raw_path = _require(args, "path", str, arguments, "a string")
        path = _resolve(host.cwd, raw_path)
        detail = args.get("detail") if args.get("detail") in ("high", "original") else "high"
        if _is_dir(path):
            return f"image path `{path}` is not a file"
        try:
            data = await anyio.to_thread.run_sync(_read_bytes, path)
        except OSError as exc:
            return f"unable to locate image at `{path}`: {exc.strerror} (os error {exc.errno})"
        mime = _image_mime(data)
        if mime is None:
            return "unable to process image: invalid or unsupported image data"
        item = ImageViewItem(id=call_id, path=_file_uri(path))
        stamp = now_ms()
        host.emit(
            ItemStartedEvent(
                thread_id=host.thread_id,
                turn_id=host.turn_id,
                item=item,
                started_at_ms=stamp,  # pyright: ignore[reportArgumentType]
            )
        )
        host.emit(
            ItemCompletedEvent(
                thread_id=host.thread_id,
                turn_id=host.turn_id,
                item=item,  # pyright: ignore[reportArgumentType]
                started_at_ms=stamp,
                completed_at_ms=now_ms(),
            )
        )
        url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
        return [{"type": "input_image", "image_url": url, "detail": detail}]


def _sandbox_refuses(host: ToolHost, plan: PatchPlan, cwd: str, approved: set[str]) -> str | None:
    """The first path of ``plan`` the turn's sandbox would not let a write reach (its real
    target outside the writable roots), or ``None``: no sandbox, every path writable, or every
    path approved for the session by the user (core then writes unsandboxed)."""
    sandbox = host.sandbox_policy
    if not sandbox.needs_sandbox or all(os.path.abspath(p) in approved for p in plan.paths()):
        return None
    return next((p for p in plan.paths() if not sandbox.can_write(p, cwd)), None)


def _apply_plan(plan: PatchPlan) -> dict[str, str]:
    """Write ``plan``; what it overwrote unread (for the turn's diff)."""
    prior = prior_contents(plan)
    apply_plan(plan)
    return prior


def _strings(value: object) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [str(v) for v in cast("list[object]", value)]


def _resolve(base: str, path: str) -> str:
    return os.path.normpath(os.path.join(base, path))


def _is_dir(path: str) -> bool:
    return os.path.isdir(path)


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


_MAGIC: Final = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _image_mime(data: bytes) -> str | None:
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


TOOL_NAMES: Final = ("exec_command", "write_stdin", "apply_patch", "view_image")


def aborted_output(wall_time_s: float) -> str:
    """What the model is told of a call the user interrupted while it waited."""
    return f"Wall time: {math.floor(wall_time_s * 10) / 10} seconds\naborted by user"
