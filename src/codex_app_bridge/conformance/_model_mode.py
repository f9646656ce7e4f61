"""Model mode: the real binary and the bridge each run real model turns against one mock.

Role: the acceptance of issue 20. Every :data:`MODEL_SCENARIOS` entry is a client flow (what a
client sends and waits for) plus the mock model's answers (a
:data:`~codex_app_bridge.conformance.mock_responses.SCENARIOS` entry chosen by request number).
The same flow runs against the real ``codex app-server`` and against ``codex-app-bridge serve``
with no bridge flags: each server finds the mock through the ``CODEX_HOME/config.toml`` that
names it as the model provider, exactly as a client's test setup would. Nothing the bridge gets
is derived from the real run: both talk to the same scripted model.

Compared, per scenario (:func:`compare_runs`):

- ``stream``: what the client received (notifications, server requests, answers), normalised by
  :mod:`._compare` (ids, times, scratch paths, the mock's URL) -> units, deltas of one item
  merged, plus a check per streamed item that its deltas add up to its completed text;
- ``reads``: the final ``thread/read`` (with turns) of every thread;
- ``requests``: the ``POST /responses`` each server sent the mock: the same count, and each
  request's ``input`` equal once instruction prose and generated ids are masked
  (:func:`mask_input`);
- ``fields``: the rest of each request (model, tools by name, reasoning, include, store, ...,
  the ``x-codex-*`` headers reduced to their structure). Reported, not part of the acceptance.

A server's outcome (:class:`RunRecord`, the normalised units only) can be saved as reference
data (``tests/data/model_mode/<scenario>.json``), so the bridge can be compared with the real
binary's recorded outcome without running the binary (:func:`load_reference`). A scenario
whose outcome on the real binary timing decides (:attr:`ModelScenario.raced`) has its other
outcome recorded too (``tests/data/model_mode/raced/<scenario>.json``).

Scenarios may restart the server (``ctx.restart()``: a new process on the same CODEX_HOME, the
way a client reconnects after a crash or an upgrade); every process's messages are kept, in
order. Boundary: processes, HTTP and files; the judging is :mod:`._compare`'s.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import socket
import sys
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, cast

import anyio

import codex_app_bridge
from codex_app_bridge.conformance._compare import (
    Comparison,
    Difference,
    Normaliser,
    canonical_order,
    compare,
    delta_checks,
    diff_paths,
    merge_deltas,
    stream_units,
    thread_read_units,
    where_they_differ,
)
from codex_app_bridge.conformance._drive import (
    DYNAMIC_TOOL,
    Context,
    each_on_a_mock,
    judge_second_runs,
    scratch_root,
)
from codex_app_bridge.conformance.mock_responses import MockResponses
from codex_app_bridge.conformance.real_codex import (
    JsonObject,
    PeerError,
    ServerRequestHandler,
    StdioPeer,
    bridge_command,
    codex_env,
    default_server_request_handler,
    real_codex_command,
    write_codex_config,
)

__all__ = [
    "MODEL_SCENARIOS",
    "RACED",
    "SLOW_SCENARIOS",
    "ModelContext",
    "ModelResult",
    "ModelScenario",
    "RunRecord",
    "command_ends_after_their_item",
    "compare_runs",
    "compare_with_reference",
    "format_model_details",
    "format_model_table",
    "goal_updates_last_in_turn",
    "load_reference",
    "mask_input",
    "real_against_reference",
    "recheck_real",
    "record_run",
    "refusing_port",
    "run_model_suite",
    "run_model_suite_sync",
    "run_server",
    "total_notifications",
    "unexplained",
    "without_time_charges",
]

TURN_TIMEOUT_S: Final = 90.0
LONG_TEXT: Final = 2048
"""Strings longer than this are kept as their length and hash (the 20 MB event)."""

_SRC: Final = str(Path(codex_app_bridge.__file__).resolve().parent.parent)

SERVERS: Final = ("real", "bridge")


# --- scenarios ---------------------------------------------------------------------------------


@dataclass
class ModelContext(Context):
    """:class:`~._drive.Context` plus ``restart()``: the server process is replaced by a new
    one on the same CODEX_HOME (the old one gets EOF on stdin and exits)."""

    _restart: Callable[[], Awaitable[StdioPeer]] | None = None

    async def restart(self) -> StdioPeer:
        assert self._restart is not None
        self.peer = await self._restart()
        return self.peer

    async def start_turn(self, thread_id: str, text: str, **extra: Any) -> str:
        params: JsonObject = {"threadId": thread_id, "input": [{"type": "text", "text": text}]}
        params.update(extra)
        result = await self.peer.request("turn/start", params)
        return str(result["turn"]["id"])


Play = Callable[[ModelContext], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ModelScenario:
    name: str
    mock: str | None
    """The mock scenario; ``None``: the provider's ``base_url`` is a port nobody listens on."""
    mock_params: Mapping[str, Any]
    description: str
    play: Play
    handler: ServerRequestHandler = default_server_request_handler
    timeout_s: float = 240.0
    """The whole session's bound (every wait inside has its own)."""
    idle_timeout_ms: int | None = None
    """The provider's ``stream_idle_timeout_ms`` when not the default config's 60 s."""
    extra_config: str = ""
    """TOML appended to the scenario's ``config.toml`` (top-level keys)."""
    volatile: frozenset[str] = frozenset()
    """Labels of units whose content depends on timing (the text streamed before an
    interrupt): a change in them is listed but not counted against a re-check of the
    reference."""
    raced: str = ""
    """Why the real binary has two outcomes that timing chooses between (empty: one). The
    other outcome is recorded too (``<reference dir>/raced/<scenario>.json``), and a re-check
    of the binary must equal one of the two (:func:`compare_with_reference`)."""
    own_tmpdir: bool = False
    """``TMPDIR`` is a directory of the scenario's own (``<scratch>/tmp``), so that CODEX_HOME
    is not under the temp dir: the real binary then makes the helper aliases its sandbox needs
    with a bubblewrap that lacks ``--argv0`` (Debian 12's 0.8.0); with CODEX_HOME under the
    temp dir it refuses to, and every sandboxed command fails (``bwrap: execvp
    codex-linux-sandbox``)."""


def _turn_completed(thread_id: str) -> Callable[[JsonObject], bool]:
    def match(message: JsonObject) -> bool:
        params: JsonObject = message.get("params") or {}
        return message.get("method") == "turn/completed" and params.get("threadId") == thread_id

    return match


def _single(prompt: str, **thread_extra: Any) -> Play:
    async def play(ctx: ModelContext) -> None:
        thread_id = await ctx.start_thread(**thread_extra)
        _, completed = await ctx.run_turn(thread_id, prompt)
        ctx.notes["turn_status"] = completed["params"]["turn"]["status"]

    return play


HUGE_TIMEOUT_S: Final = 1200.0
"""The real binary parses one SSE event in time quadratic in its size: 1 MiB 2.7 s, 4 MiB 21 s
(probed); with the default config's 60 s idle timeout the 20 MiB event fails the turn on this
machine (``idle timeout waiting for SSE``, twice), which would make the reference depend on the
machine's speed. So the scenario's idle timeout and waits are this long, and the turn
completes."""


def _huge(prompt: str) -> Play:
    async def play(ctx: ModelContext) -> None:
        thread_id = await ctx.start_thread()
        done = ctx.peer.expect(_turn_completed(thread_id))
        await ctx.start_turn(thread_id, prompt)
        completed = await ctx.peer.wait(done, HUGE_TIMEOUT_S)
        ctx.notes["turn_status"] = completed["params"]["turn"]["status"]

    return play


def _interrupt_after(predicate: Callable[[], Callable[[JsonObject], bool]], prompt: str) -> Play:
    """Start a turn, interrupt it once a message matched a new ``predicate()`` (one per run: a
    counting predicate must start from zero each time the scenario is played), wait for its
    end."""

    async def play(ctx: ModelContext) -> None:
        thread_id = await ctx.start_thread()
        seen = ctx.peer.expect(predicate())
        done = ctx.peer.expect(_turn_completed(thread_id))
        turn_id = await ctx.start_turn(thread_id, prompt)
        await ctx.peer.wait(seen, TURN_TIMEOUT_S)
        interrupt = {"threadId": thread_id, "turnId": turn_id}
        ctx.notes["interrupt"] = await ctx.peer.request_raw("turn/interrupt", interrupt)
        completed = await ctx.peer.wait(done, TURN_TIMEOUT_S)
        ctx.notes["turn_status"] = completed["params"]["turn"]["status"]

    return play


INTERRUPT_AFTER_DELTAS: Final = 20


def _nth_delta(n: int) -> Callable[[JsonObject], bool]:
    seen = 0

    def match(message: JsonObject) -> bool:
        nonlocal seen
        if message.get("method") == "item/agentMessage/delta":
            seen += 1
        return seen >= n

    return match


def _waiting_for_network(message: JsonObject) -> bool:
    params: JsonObject = message.get("params") or {}
    error: JsonObject = params.get("error") or {}
    return message.get("method") == "error" and "waiting for network" in str(error.get("message"))


async def _multi_turn(ctx: ModelContext) -> None:
    thread_id = await ctx.start_thread()
    await ctx.run_turn(thread_id, "First question")
    await ctx.run_turn(thread_id, "Second question")
    await ctx.run_turn(thread_id, "Third question")


async def _resume_after_restart(ctx: ModelContext) -> None:
    """Two turns, a new server process, ``thread/resume``, a third turn: the third request
    must carry the whole conversation (read back from the rollout)."""
    thread_id = await ctx.start_thread()
    await ctx.run_turn(thread_id, "First question")
    await ctx.run_turn(thread_id, "Second question")
    await ctx.restart()
    ctx.notes["resume"] = await ctx.peer.request_raw(
        "thread/resume", {"threadId": thread_id, "model": "mock-model", "modelProvider": "mock"}
    )
    await ctx.run_turn(thread_id, "Third question, after a restart")


async def _fork(ctx: ModelContext) -> None:
    """Two turns, ``thread/fork``, a turn on the fork, then one more on the original."""
    thread_id = await ctx.start_thread()
    await ctx.run_turn(thread_id, "First question")
    await ctx.run_turn(thread_id, "Second question")
    fork = await ctx.peer.request("thread/fork", {"threadId": thread_id})
    fork_id = str(fork["thread"]["id"])
    ctx.thread_ids.append(fork_id)
    await ctx.run_turn(fork_id, "Third question, on the fork")
    await ctx.run_turn(thread_id, "Third question, on the original")


async def _compact(ctx: ModelContext) -> None:
    """A turn, ``thread/compact/start`` (its own turn: one compaction request), a turn on the
    compacted history."""
    thread_id = await ctx.start_thread()
    await ctx.run_turn(thread_id, "First question")
    done = ctx.peer.expect(_turn_completed(thread_id))
    await ctx.peer.request("thread/compact/start", {"threadId": thread_id})
    await ctx.peer.wait(done, TURN_TIMEOUT_S)
    await ctx.run_turn(thread_id, "Second question, after the compaction")


async def _two_turns(ctx: ModelContext) -> None:
    thread_id = await ctx.start_thread()
    await ctx.run_turn(thread_id, "First question")
    await ctx.run_turn(thread_id, "Second question")


async def _answer_user_input(message: JsonObject) -> JsonObject:
    if message.get("method") == "item/tool/requestUserInput":
        return {"result": {"answers": {"colour": {"answers": ["Green (Recommended)"]}}}}
    return await default_server_request_handler(message)


async def _user_input_plan_mode(ctx: ModelContext) -> None:
    """``request_user_input`` is a plan-mode tool: the turn asks for plan mode."""
    thread_id = await ctx.start_thread()
    done = ctx.peer.expect(_turn_completed(thread_id))
    mode = {
        "mode": "plan",
        "settings": {
            "model": "mock-model",
            "reasoning_effort": None,
            "developer_instructions": None,
        },
    }
    await ctx.start_turn(thread_id, "Ask me which colour to use.", collaborationMode=mode)
    completed = await ctx.peer.wait(done, TURN_TIMEOUT_S)
    ctx.notes["turn_status"] = completed["params"]["turn"]["status"]


def _goal_updated(status: str) -> Callable[[JsonObject], bool]:
    """``thread/goal/updated`` with a goal of ``status``, then the ``turn/completed`` after it
    (one predicate, registered before the goal is set)."""
    seen = False

    def match(message: JsonObject) -> bool:
        nonlocal seen
        params: JsonObject = message.get("params") or {}
        if message.get("method") == "thread/goal/updated":
            goal: JsonObject = params.get("goal") or {}
            seen = seen or goal.get("status") == status
        return seen and message.get("method") == "turn/completed"

    return match


def _goal_run(objective: str, budget: int, ends: str) -> Play:
    """Set a goal on a new thread and wait for the goal turns it starts to end with the goal
    ``ends`` (``complete``: the model's update_goal; ``budgetLimited``: the budget spent)."""

    async def play(ctx: ModelContext) -> None:
        thread_id = await ctx.start_thread()
        done = ctx.peer.expect(_goal_updated(ends))
        params = {"threadId": thread_id, "objective": objective, "tokenBudget": budget}
        ctx.notes["set"] = await ctx.peer.request_raw("thread/goal/set", params)
        await ctx.peer.wait(done, TURN_TIMEOUT_S)
        ctx.notes["get"] = await ctx.peer.request_raw("thread/goal/get", {"threadId": thread_id})

    return play


async def _goal_after_failed_turn(ctx: ModelContext) -> None:
    """A goal on a new thread whose second goal turn fails; waits for the failed turn and for
    the goal's next state: blocked or paused (the run stops; 0.163.0: blocked, with the failed
    turn's id, before the error) or complete (the turns went on)."""
    failed = paused = complete = False

    def match(message: JsonObject) -> bool:
        nonlocal failed, paused, complete
        method = message.get("method")
        params: JsonObject = message.get("params") or {}
        if method == "turn/completed":
            turn: JsonObject = params.get("turn") or {}
            if turn.get("status") == "failed":
                failed = True
            elif complete:
                return failed
        elif method == "thread/goal/updated":
            goal: JsonObject = params.get("goal") or {}
            status = goal.get("status")
            paused = paused or status in ("paused", "blocked")
            complete = complete or status == "complete"
        return failed and paused

    thread_id = await ctx.start_thread()
    done = ctx.peer.expect(match)
    params = {"threadId": thread_id, "objective": "Write a haiku"}
    ctx.notes["set"] = await ctx.peer.request_raw("thread/goal/set", params)
    await ctx.peer.wait(done, TURN_TIMEOUT_S)
    ctx.notes["get"] = await ctx.peer.request_raw("thread/goal/get", {"threadId": thread_id})


async def _goal_interrupted_turn(ctx: ModelContext) -> None:
    """A goal on a new thread whose second goal turn (a slow stream) is interrupted after a few
    deltas; waits for its end and reads the goal."""
    started: list[str] = []

    def second_turn_streaming(message: JsonObject) -> bool:
        params: JsonObject = message.get("params") or {}
        if message.get("method") == "turn/started":
            turn: JsonObject = params.get("turn") or {}
            started.append(str(turn.get("id")))
        return (
            len(started) == 2
            and message.get("method") == "item/agentMessage/delta"
            and params.get("turnId") == started[1]
        )

    thread_id = await ctx.start_thread()
    seen = ctx.peer.expect(second_turn_streaming)
    params = {"threadId": thread_id, "objective": "Write a haiku"}
    ctx.notes["set"] = await ctx.peer.request_raw("thread/goal/set", params)
    await ctx.peer.wait(seen, TURN_TIMEOUT_S)

    def interrupted(message: JsonObject) -> bool:
        params: JsonObject = message.get("params") or {}
        turn: JsonObject = params.get("turn") or {}
        return message.get("method") == "turn/completed" and turn.get("status") == "interrupted"

    done = ctx.peer.expect(interrupted)
    interrupt = {"threadId": thread_id, "turnId": started[1]}
    ctx.notes["interrupt"] = await ctx.peer.request_raw("turn/interrupt", interrupt)
    await ctx.peer.wait(done, TURN_TIMEOUT_S)
    ctx.notes["get"] = await ctx.peer.request_raw("thread/goal/get", {"threadId": thread_id})


async def _goal_after_turn_and_restart(ctx: ModelContext) -> None:
    """A user turn, then a goal (no budget) the model completes in its second goal turn; a new
    server process resumes the thread (the goal is announced, not cleared) and clears it."""
    thread_id = await ctx.start_thread()
    await ctx.run_turn(thread_id, "Hi")
    done = ctx.peer.expect(_goal_updated("complete"))
    params = {"threadId": thread_id, "objective": "Write a haiku"}
    ctx.notes["set"] = await ctx.peer.request_raw("thread/goal/set", params)
    await ctx.peer.wait(done, TURN_TIMEOUT_S)
    await ctx.restart()
    resume = {"threadId": thread_id, "model": "mock-model", "modelProvider": "mock"}
    announced = ctx.peer.expect(lambda m: str(m.get("method", "")).startswith("thread/goal/"))
    ctx.notes["resume"] = await ctx.peer.request_raw("thread/resume", resume)
    await ctx.peer.wait(announced, TURN_TIMEOUT_S)
    ctx.notes["get"] = await ctx.peer.request_raw("thread/goal/get", {"threadId": thread_id})
    # 0.163.0 sends thread/goal/cleared after the clear's answer, on its own time: unwaited,
    # it came after the reads that end the session once (beside two CPU burners) and was cut off
    cleared = ctx.peer.expect(lambda m: m.get("method") == "thread/goal/cleared")
    ctx.notes["clear"] = await ctx.peer.request_raw("thread/goal/clear", {"threadId": thread_id})
    await ctx.peer.wait(cleared, TURN_TIMEOUT_S)
    ctx.notes["clear_again"] = await ctx.peer.request_raw(
        "thread/goal/clear", {"threadId": thread_id}
    )


async def _decline_commands(message: JsonObject) -> JsonObject:
    if message.get("method") == "item/commandExecution/requestApproval":
        return {"result": {"decision": "decline"}}
    return await default_server_request_handler(message)


async def _cancel_commands(message: JsonObject) -> JsonObject:
    if message.get("method") == "item/commandExecution/requestApproval":
        return {"result": {"decision": "cancel"}}
    return await default_server_request_handler(message)


async def _accept_commands_for_session(message: JsonObject) -> JsonObject:
    if message.get("method") == "item/commandExecution/requestApproval":
        return {"result": {"decision": "acceptForSession"}}
    return await default_server_request_handler(message)


WORKSPACE_WRITE: Final[JsonObject] = {"sandbox": "workspace-write"}
"""The thread's sandbox for the machine-tool scenarios: commands run under bubblewrap with the
cwd writable (the real binary's own helper; the bridge's)."""

CWD_ONLY: Final = (
    "sandbox_workspace_write = { exclude_slash_tmp = true, exclude_tmpdir_env_var = true }\n"
)
"""Only the cwd is writable (not /tmp, where the scratch directory usually is): a command's
``touch ../outside.txt`` shows that it ran confined."""

SHELL_COMMAND: Final = (
    "printf 'one\\ntwo\\n' > listed.txt && sleep 0.5 && cat listed.txt && ls"
    " && (touch ../outside.txt 2>&1 || echo refused)"
)
APPROVED_COMMAND: Final = (
    "echo approved > approved.txt && sleep 0.5 && cat approved.txt"
    " && (touch ../outside.txt 2>&1 || echo refused)"
)
FILES_COMMAND: Final = (
    "printf 'a\\nb\\nc\\n' > upd.txt && printf 'bye\\n' > del.txt && printf '1\\n2\\n' > mv.txt"
)
EDIT_PATCH: Final = """*** Begin Patch
*** Update File: upd.txt
@@
 a
-b
+B
 c
*** Delete File: del.txt
*** Add File: new/added.txt
+hello
+world
*** Update File: mv.txt
*** Move to: moved/mv2.txt
@@
 1
-2
+two
*** End Patch"""
"""Every kind of hunk: an update, a delete, an add in a new directory, a move with an edit."""
SESSION_APPROVED: Final = "touch twice.txt"
SESSION_COMMAND: Final = "sleep 1.5 && echo done"
ESCALATED_COMMAND: Final = "sleep 0.5 && touch ../outside.txt && echo created"
DENIED_COMMAND: Final = "true && sleep 0.5 && touch ../outside.txt"
"""Each command prints only after half a second: core streams a command's output once its
item has started, which is when the process exited or 150 ms after the spawn, whichever is
first; a command printing at once would be streamed or not depending on how long the sandbox
took to start (the real binary's helper takes 80 to 250 ms here)."""

LINK_COMMAND: Final = "ln -s .. up"
"""A symlink in the cwd to the directory above it (outside the writable root)."""
PARENT_PATCH: Final = "*** Begin Patch\n*** Add File: ../outside.txt\n+escaped\n*** End Patch"
LINK_PATCH: Final = "*** Begin Patch\n*** Add File: up/escaped.txt\n+escaped\n*** End Patch"
READ_ONLY_COMMAND: Final = (
    "sleep 0.5 && (touch inside.txt 2>&1 || echo refused) && (touch ../outside.txt 2>&1 || echo"
    " refused) && ls -A"
)
"""Under read-only, neither file is made (printed after half a second: see below)."""
NETWORK_COMMAND: Final = "sleep 0.5 && (exec 3<>/dev/tcp/127.0.0.1/9) 2>&1; echo rc=$?"
"""A TCP connection to the loopback (printed after half a second: see below)."""
ESCAPE_CHECK: Final = "sleep 0.5 && (ls ../outside.txt ../escaped.txt 2>&1 || echo none)"
"""Whether either patch wrote outside the cwd (printed after half a second: see below)."""


_MACHINE_SCENARIOS: Final[tuple[ModelScenario, ...]] = (
    ModelScenario(
        "shell",
        "shell",
        {"cmd": SHELL_COMMAND},
        "exec_command under workspace-write / never: runs sandboxed without a prompt, its "
        "output goes back to the model",
        _single("Run a command.", approvalPolicy="never", **WORKSPACE_WRITE),
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
    ModelScenario(
        "shell_approval",
        "shell",
        {"cmd": APPROVED_COMMAND},
        "exec_command under untrusted: the client is asked, accepts, the command runs",
        _single("Run a command.", approvalPolicy="untrusted", **WORKSPACE_WRITE),
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
    ModelScenario(
        "shell_declined",
        "shell",
        {"cmd": APPROVED_COMMAND},
        "exec_command under untrusted: the client declines, nothing runs, the model is told",
        _single("Run a command.", approvalPolicy="untrusted", **WORKSPACE_WRITE),
        handler=_decline_commands,
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
    ModelScenario(
        "shell_cancelled",
        "shell",
        {"cmd": APPROVED_COMMAND},
        "exec_command under untrusted: the client cancels, nothing runs, the turn is interrupted",
        _single("Run a command.", approvalPolicy="untrusted", **WORKSPACE_WRITE),
        handler=_cancel_commands,
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
    ModelScenario(
        "shell_for_session",
        "steps",
        {"steps": [{"cmd": SESSION_APPROVED}, {"cmd": SESSION_APPROVED}], "text": "Twice."},
        "exec_command under untrusted accepted for the session: the same command again runs "
        "without a second prompt",
        _single("Run it twice.", approvalPolicy="untrusted", **WORKSPACE_WRITE),
        handler=_accept_commands_for_session,
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
    ModelScenario(
        "shell_escalated",
        "shell",
        {
            "cmd": ESCALATED_COMMAND,
            "args": {
                "sandbox_permissions": "require_escalated",
                "justification": "Need to write outside the workspace",
            },
        },
        "exec_command asking for escalation under on-request: the client is asked (the "
        "justification is the reason), accepts, the command runs outside the sandbox",
        _single("Run a command.", approvalPolicy="on-request", **WORKSPACE_WRITE),
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
    ModelScenario(
        "shell_denied",
        "shell",
        {"cmd": DENIED_COMMAND},
        "exec_command under untrusted, accepted, refused by the sandbox half a second in (Read-"
        "only file system): the failure goes to the model as is (0.163.0 re-runs a command "
        "unsandboxed only when the denial shows in its first 150 ms; the bridge never does)",
        _single("Run a command.", approvalPolicy="untrusted", **WORKSPACE_WRITE),
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
    ModelScenario(
        "shell_session",
        "steps",
        {
            "steps": [
                {"cmd": SESSION_COMMAND, "args": {"yield_time_ms": 250}},
                {"stdin": ""},
            ],
            "text": "It finished.",
        },
        "exec_command outlives its 250 ms yield (a session), write_stdin polls it until it "
        "exits (workspace-write / never)",
        _single("Run a slow command.", approvalPolicy="never", **WORKSPACE_WRITE),
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
    ModelScenario(
        "apply_patch",
        "apply_patch",
        {},
        "apply_patch through exec_command (the fallback model has no apply_patch tool) adds "
        "hello.txt under workspace-write / never: a file-change item and the turn's diff",
        _single("Create hello.txt.", approvalPolicy="never", **WORKSPACE_WRITE),
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
    ModelScenario(
        "apply_patch_edit",
        "steps",
        {"steps": [{"cmd": FILES_COMMAND}, {"patch": EDIT_PATCH}], "text": "Edited."},
        "a command writes three files, then one apply_patch updates, deletes, adds and moves "
        "(workspace-write / never): the file-change item's diffs and the turn's diff",
        _single("Edit the files.", approvalPolicy="never", **WORKSPACE_WRITE),
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
    ModelScenario(
        "apply_patch_freeform",
        "apply_patch",
        {},
        "gpt-5.5 (a bundled model whose metadata offers apply_patch as a freeform tool): the "
        "tool list with the custom apply_patch, its custom_tool_call adds hello.txt under "
        "workspace-write / never, answered by a custom_tool_call_output",
        _single("Create hello.txt.", approvalPolicy="never", model="gpt-5.5", **WORKSPACE_WRITE),
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
    ModelScenario(
        "apply_patch_approval",
        "apply_patch",
        {},
        "apply_patch under untrusted: the client is asked about the patch, accepts, it is applied",
        _single("Create hello.txt.", approvalPolicy="untrusted", **WORKSPACE_WRITE),
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
    ModelScenario(
        "shell_read_only",
        "shell",
        {"cmd": READ_ONLY_COMMAND},
        "exec_command under read-only / never: the command runs confined and can write neither "
        "in the cwd nor outside it",
        _single("Run a command.", approvalPolicy="never", sandbox="read-only"),
        own_tmpdir=True,
    ),
    ModelScenario(
        "shell_network",
        "shell",
        {"cmd": NETWORK_COMMAND},
        "exec_command under workspace-write / never without network: the sandbox's seccomp "
        "filter refuses the socket (Operation not permitted), in both servers",
        _single("Run a command.", approvalPolicy="never", **WORKSPACE_WRITE),
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
    ModelScenario(
        "apply_patch_escape",
        "steps",
        {
            "steps": [
                {"cmd": LINK_COMMAND},
                {"patch": PARENT_PATCH},
                {"patch": LINK_PATCH},
                {"cmd": ESCAPE_CHECK},
            ],
            "text": "Nothing escaped.",
        },
        "patches that write outside the cwd under workspace-write / never: through .. and "
        "through a symlink the model made; a command then looks for what they wrote",
        _single("Write outside the project.", approvalPolicy="never", **WORKSPACE_WRITE),
        own_tmpdir=True,
        extra_config=CWD_ONLY,
    ),
)
"""The local tools (issue 21): commands and patches on the machine, approvals."""


_GOAL_SCENARIOS: Final[tuple[ModelScenario, ...]] = (
    ModelScenario(
        "goal",
        "goal",
        {"complete_at": 2},
        "thread/goal/set starts goal turns; the third calls update_goal complete",
        _goal_run("Write a haiku", 100_000, "complete"),
    ),
    ModelScenario(
        "goal_budget",
        "goal",
        {"complete_at": 99},
        "a goal with a 150-token budget: goal turns until the budget is spent",
        _goal_run("Write a haiku", 150, "budgetLimited"),
    ),
    ModelScenario(
        "goal_budget_mid_turn",
        "goal",
        {"complete_at": 99, "get_goal_first": 1},
        "a goal with a 100-token budget spent by a response that calls get_goal, mid-turn",
        _goal_run("Write a haiku", 100, "budgetLimited"),
        raced=(
            "0.163.0 charges the goal when the get_goal call finishes, with the usage recorded "
            "so far; the call runs beside the rest of the stream, so the spending response's "
            "usage (its response.completed) is usually recorded first (the goal turns "
            "budgetLimited mid-turn, with a thread/goal/updated and the hidden budget message "
            "before the follow-up request), but on a busy machine the call finishes first: "
            "nothing is charged then, no message is added, the mock closes the follow-up with "
            "another text, and the whole turn is charged at its end (4 runs in 200, two at a "
            "time beside four CPU burners; the four alike)"
        ),
    ),
    ModelScenario(
        "goal_failed_turn",
        "goal",
        {"complete_at": 3, "fail_at": 1},
        "a goal whose second goal turn fails (response.failed): the goal is blocked",
        _goal_after_failed_turn,
    ),
    ModelScenario(
        "goal_interrupted_turn",
        "goal",
        {"complete_at": 3, "slow_at": 1},
        "a goal whose second goal turn is interrupted while it streams",
        _goal_interrupted_turn,
        volatile=frozenset({"item/agentMessage/delta"}),
    ),
    ModelScenario(
        "goal_after_turn",
        "goal",
        {"complete_at": 2},
        "a user turn, a goal completed in its second goal turn, a restart, resume and clear",
        _goal_after_turn_and_restart,
    ),
)
"""Thread goals (``thread/goal/*`` and goal-continuation turns)."""


MODEL_SCENARIOS: Final[tuple[ModelScenario, ...]] = (
    ModelScenario("plain", "plain", {}, "a plain message, streamed", _single("Say hello.")),
    *_GOAL_SCENARIOS,
    *_MACHINE_SCENARIOS,
    ModelScenario(
        "reasoning",
        "reasoning",
        {},
        "two reasoning summary parts, then a message",
        _single("Think, then greet me."),
    ),
    ModelScenario("multi_turn", "multi_turn", {}, "three turns on one thread", _multi_turn),
    ModelScenario(
        "failed_turn",
        "error_fatal",
        {},
        "every request answered HTTP 500: transport and stream retries, then a failed turn",
        _single("Say something."),
    ),
    ModelScenario(
        "error_retry",
        "error_retry",
        {"failures": 1},
        "one HTTP 500, then the answer (a silent transport retry)",
        _single("Say something."),
    ),
    ModelScenario(
        "stream_retry",
        "stream_retry",
        {"failures": 1},
        "the first stream is cut before response.completed; the reconnect succeeds",
        _single("Say something."),
    ),
    ModelScenario(
        "rate_limited",
        "rate_limited",
        {"failures": 1, "retry_after": 1},
        "HTTP 429 with retry-after: 1, then the answer",
        _single("Say something."),
    ),
    ModelScenario(
        "unauthorized",
        "unauthorized",
        {},
        "every request answered HTTP 401: the turn fails",
        _single("Say something."),
    ),
    ModelScenario(
        "unreachable",
        None,
        {},
        "nothing listens at the provider's base_url: waiting for network, then an interrupt",
        _interrupt_after(lambda: _waiting_for_network, "Say something."),
    ),
    ModelScenario(
        "invalid_sse",
        "invalid_sse",
        {},
        "unparseable SSE lines among the events of an answer",
        _single("Say something."),
    ),
    ModelScenario(
        "cut_mid_event",
        "cut_mid_event",
        {"failures": 1},
        "the first stream stops inside an event's bytes; the reconnect succeeds",
        _single("Say something."),
    ),
    ModelScenario(
        "huge_event",
        "huge_event",
        {"mb": 20},
        "one output_text.delta of 20 MiB",
        _huge("Say something long."),
        timeout_s=HUGE_TIMEOUT_S + 60,
        idle_timeout_ms=int(HUGE_TIMEOUT_S * 1000),
    ),
    ModelScenario(
        "unknown_tool",
        "unknown_tool",
        {},
        "the model calls a tool nobody offered (frobnicate), then answers",
        _single("Use frobnicate."),
    ),
    ModelScenario(
        "interrupt",
        "interrupt",
        {"delay_s": 0.02},
        f"a slow stream interrupted after {INTERRUPT_AFTER_DELTAS} deltas",
        _interrupt_after(lambda: _nth_delta(INTERRUPT_AFTER_DELTAS), "Write a long essay."),
        volatile=frozenset({"item/agentMessage/delta"}),
        raced=(
            "the account/rateLimits/updated 0.163.0 sends while the interrupted turn winds down "
            "(after the streamed text, before the turn/interrupt answer) was missing once in 23 "
            "runs of this test beside another pytest worker and two CPU burners; the turn "
            "suite treats the same notification of its interrupt scenario as optional"
        ),
    ),
    ModelScenario(
        "dynamic_tool",
        "dynamic_tool",
        {"tool": "lookup_weather"},
        "a dynamic tool the client answers (item/tool/call)",
        _single("What is the weather in Paris?", dynamicTools=[DYNAMIC_TOOL]),
    ),
    ModelScenario(
        "user_input",
        "user_input",
        {},
        "request_user_input in plan mode; the client answers the question",
        _user_input_plan_mode,
        handler=_answer_user_input,
    ),
    ModelScenario(
        "plan",
        "plan",
        {},
        "update_plan (not offered to the fallback model), then a message",
        _single("Make a plan."),
    ),
    ModelScenario(
        "resume_after_restart",
        "multi_turn",
        {},
        "two turns, a new server process, thread/resume, a third turn with the whole context",
        _resume_after_restart,
    ),
    ModelScenario(
        "fork",
        "multi_turn",
        {},
        "two turns, thread/fork, a turn on the fork and one on the original",
        _fork,
    ),
    ModelScenario(
        "compact",
        "multi_turn",
        {},
        "a turn, thread/compact/start, a turn on the compacted history",
        _compact,
    ),
    ModelScenario(
        "auto_compact",
        "multi_turn",
        {},
        "model_auto_compact_token_limit = 100: the second turn compacts before its request",
        _two_turns,
        extra_config="model_auto_compact_token_limit = 100\n",
    ),
    ModelScenario(
        "auto_compact_mid_turn",
        "unknown_tool",
        {},
        "model_auto_compact_token_limit = 100: a tool call over the limit compacts before the "
        "follow-up request",
        _single("Use the frobnicate tool."),
        extra_config="model_auto_compact_token_limit = 100\n",
    ),
)


def scenario_named(name: str) -> ModelScenario:
    for spec in MODEL_SCENARIOS:
        if spec.name == name:
            return spec
    known = ", ".join(s.name for s in MODEL_SCENARIOS)
    raise ValueError(f"unknown model-mode scenario {name!r}; known: {known}")


# --- one server, one scenario ------------------------------------------------------------------


@dataclass
class Segment:
    """What one server process sent the first client and what it got."""

    received: list[JsonObject]
    sent: list[JsonObject]


@dataclass
class ServerRun:
    """One server's run of one scenario."""

    segments: list[Segment]
    thread_ids: list[str]
    reads: dict[str, JsonObject]
    notes: dict[str, Any]
    requests: list[JsonObject]
    """Every ``POST .../responses`` the mock got, in order."""
    error: str | None = None


@contextmanager
def refusing_port() -> Generator[int]:
    """A port of 127.0.0.1 that refuses every connection while the block lasts: bound, never
    listening, so no other socket can take it. (A port bound and closed again is free: another
    scenario's mock, or the other pytest-xdist worker's, could bind it and answer the server
    that was to find nobody there.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])


async def run_server(
    spec: ModelScenario,
    argv: list[str],
    mock: MockResponses,
    base: Path,
    *,
    extra_env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
) -> ServerRun:
    """``spec`` against the server ``argv`` in a fresh ``base/{home,work}``; the mock is reset
    to the scenario's answers first. A scenario without a mock (``spec.mock`` ``None``) names a
    port that refuses connections for the whole run (:func:`refusing_port`)."""
    with refusing_port() if spec.mock is None else nullcontext(None) as port:
        base_url = mock.base_url if port is None else f"http://127.0.0.1:{port}/v1"
        return await _run_on(spec, argv, mock, base, base_url, extra_env, timeout_s)


async def _run_on(
    spec: ModelScenario,
    argv: list[str],
    mock: MockResponses,
    base: Path,
    base_url: str,
    extra_env: Mapping[str, str] | None,
    timeout_s: float | None,
) -> ServerRun:
    home, work = base / "home", base / "work"
    shutil.rmtree(base, ignore_errors=True)
    work.mkdir(parents=True)
    home.mkdir(parents=True)
    config = write_codex_config(home, base_url, top=spec.extra_config)
    if spec.idle_timeout_ms is not None:
        text = config.read_text(encoding="utf-8")
        wanted = f"stream_idle_timeout_ms = {spec.idle_timeout_ms}"
        config.write_text(re.sub(r"stream_idle_timeout_ms = \d+", wanted, text), encoding="utf-8")
    mock.set_scenario(spec.mock or "plain", **dict(spec.mock_params))
    env = codex_env(home, extra=extra_env)
    if spec.own_tmpdir:
        (base / "tmp").mkdir()
        env["TMPDIR"] = str(base / "tmp")
    peers: list[StdioPeer] = []
    error: str | None = None
    reads: dict[str, JsonObject] = {}
    marks: list[int] = []
    current: list[AsyncExitStack] = []

    async def spawn() -> StdioPeer:
        if current:
            await current.pop().aclose()
        stack = AsyncExitStack()
        current.append(stack)
        peer = await stack.enter_async_context(
            StdioPeer.spawn(
                argv,
                env=env,
                cwd=work,
                stderr_path=base / f"stderr.{len(peers)}.log",
                handler=spec.handler,
            )
        )
        peers.append(peer)
        await peer.initialize()
        return peer

    ctx: ModelContext | None = None
    try:
        # every stack is entered and left inside this one scope, in this one task
        with anyio.fail_after(timeout_s or spec.timeout_s):
            try:
                ctx = ModelContext(await spawn(), str(work), _restart=spawn)
                try:
                    await spec.play(ctx)
                except (PeerError, TimeoutError) as exc:
                    error = f"{type(exc).__name__}: {exc}"
                marks = [len(p.received) for p in peers]
                for thread_id in ctx.thread_ids if not peers[-1].closed else []:
                    try:
                        params = {"threadId": thread_id, "includeTurns": True}
                        reads[thread_id] = await peers[-1].request_raw("thread/read", params, 30)
                    except (PeerError, TimeoutError) as exc:
                        reads[thread_id] = {"error": {"driver": str(exc)}}
            finally:
                if current:
                    await current.pop().aclose()
    except (PeerError, TimeoutError) as exc:
        error = error or f"{type(exc).__name__}: {exc}"
    marks += [len(p.received) for p in peers[len(marks) :]]
    notes: dict[str, Any] = dict(ctx.notes) if ctx is not None else {}
    thread_ids = list(ctx.thread_ids) if ctx is not None else []
    segments = [
        Segment(list(p.received[:mark]), list(p.sent)) for p, mark in zip(peers, marks, strict=True)
    ]
    return ServerRun(segments, thread_ids, reads, notes, mock.model_requests(), error)


# --- normalising ---------------------------------------------------------------------------------

_UUID_IN: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_LEADING_TAG: Final = re.compile(r"\s*<([A-Za-z_][A-Za-z0-9_ -]{0,60}(?: source=\"[a-z_]+\")?)>")
_CONTEXT_TAGS: Final = frozenset(
    {
        "environment_context",
        "turn_aborted",
        "user_instructions",
        "user_shell_command",
        "subagent_notification",
        "model_switch",
        "collaboration_mode",
        "skills_instructions",
        "permissions instructions",
        "personality_spec",
        "realtime_conversation",
        'codex_internal_context source="goal"',
    }
)


def _prose(text: str) -> str:
    """Instruction prose replaced by its kind: ``<tag>…`` for a tagged fragment, else
    ``<prose>``."""
    m = _LEADING_TAG.match(text)
    return f"<{m.group(1)}>…" if m else "<prose>"


def _is_context_text(text: str) -> bool:
    m = _LEADING_TAG.match(text)
    if m is not None and m.group(1) in _CONTEXT_TAGS:
        return True
    return text.startswith("# AGENTS.md instructions for ")


def _masked_id(value: object) -> object:
    return _UUID_IN.sub("<uuid>", value) if isinstance(value, str) else value


_HEADER_LINE: Final = re.compile(
    r"(Chunk ID: )[0-9a-f]+|(Wall time: )[0-9.]+( seconds)|(Process running with session ID )\d+"
    r"|Process exited with code -?\d+|Original token count: \d+|Exit code: -?\d+"
)
"""A header line of a command's (or a patch's) output; the chunk id, the seconds waited and
the session id are drawn or timed afresh each run."""


_SESSION_ARGUMENT: Final = re.compile(r'("session_id":\s*)\d+')


def _masked_header_line(line: str) -> str | None:
    m = _HEADER_LINE.fullmatch(line)
    if m is None:
        return None
    if m.group(1):
        return m.group(1) + "<chunk>"
    if m.group(2):
        return m.group(2) + "<seconds>" + m.group(3)
    if m.group(4):
        return m.group(4) + "<session>"
    return line


def _masked_exec_headers(output: str) -> str:
    """A command's or patch's output with its header's variable values masked: the lines
    before ``Output:`` when they are all header lines, and again after it when the output is
    a patch's (the shell's ``apply_patch`` wraps the patch's own header). The output itself is
    kept whole."""
    done: list[str] = []
    rest = output
    while True:
        head, sep, tail = rest.partition("Output:\n")
        lines = head.split("\n")[:-1] if head.endswith("\n") else None
        masked = [_masked_header_line(line) for line in lines or []]
        if not sep or not masked or None in masked:
            break
        done.append("".join(f"{line}\n" for line in masked) + sep)
        rest = tail
        if not rest.startswith("Exit code: "):
            break
    return "".join(done) + rest


def _masked_tool_output(output: str) -> str:
    """A tool's output with what each run draws afresh masked: a command's or patch's chunk id,
    wall time and session id (:func:`_masked_exec_headers`); a goal tool's
    ``completionBudgetReport`` (instruction prose) and its goal's times."""
    output = _masked_exec_headers(output)
    if '"completionBudgetReport":' not in output:
        return output
    try:
        value = json.loads(output)
    except ValueError:
        return output
    if not isinstance(value, dict):
        return output
    result = cast(JsonObject, value)
    result["completionBudgetReport"] = "<prose>"
    goal = result.get("goal")
    if isinstance(goal, dict):
        for key in ("createdAt", "updatedAt", "timeUsedSeconds"):
            if key in goal:
                cast(JsonObject, goal)[key] = "<time>"
    return json.dumps(result, separators=(",", ":"), ensure_ascii=False)


def mask_input(items: Sequence[object]) -> list[object]:
    """A request's ``input`` with what may differ masked: every text part of a developer
    message, and contextual user fragments (environment context, AGENTS.md, turn aborted, ...),
    become their kind (``<environment_context>…``, ``<prose>``), and so does a goal tool's
    ``completionBudgetReport``; a tool output's chunk id, wall time and session id become
    ``<chunk>``, ``<seconds>``, ``<session>`` (the rest of it, the command's output, is
    compared whole), and so does the ``session_id`` of a ``write_stdin`` call's arguments; a
    UUID inside an ``id`` becomes
    ``<uuid>`` (``msg_<uuid>``, ``fco_<uuid>``: the prefix stays). Model output comes back as
    the mock sent it, so it is kept whole."""
    out: list[object] = []
    for raw in items:
        if not isinstance(raw, dict):
            out.append(raw)
            continue
        item = dict(cast(JsonObject, raw))
        if "id" in item:
            item["id"] = _masked_id(item["id"])
        if item.get("name") == "write_stdin" and isinstance(item.get("arguments"), str):
            # the session id the mock read from the last output: drawn afresh each run
            item["arguments"] = _SESSION_ARGUMENT.sub(r"\1<session>", str(item["arguments"]))
        if item.get("type") in ("function_call_output", "custom_tool_call_output") and isinstance(
            item.get("output"), str
        ):
            item["output"] = _masked_tool_output(item["output"])
        if item.get("type") == "message" and isinstance(item.get("content"), list):
            role = item.get("role")
            parts: list[object] = []
            for part in cast(list[object], item["content"]):
                if isinstance(part, dict):
                    p = dict(cast(JsonObject, part))
                    text = p.get("text")
                    if isinstance(text, str) and (role == "developer" or _is_context_text(text)):
                        p["text"] = _prose(text)
                    parts.append(p)
                else:
                    parts.append(part)
            item["content"] = parts
        out.append(item)
    return out


_HEADER_VALUES: Final = ("accept", "content-type", "originator", "x-codex-beta-features")
_TRANSPORT_HEADERS: Final = frozenset(
    {"host", "content-length", "accept-encoding", "connection", "user-agent", "authorization"}
)
_BODY_FIELDS: Final = (
    "model",
    "stream",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "store",
    "include",
    "text",
    "service_tier",
)


def _request_kind(raw: object) -> object:
    try:
        meta = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    return cast(JsonObject, meta).get("request_kind") if isinstance(meta, dict) else None


def _user_message(item: object) -> JsonObject | None:
    if isinstance(item, dict):
        obj = cast(JsonObject, item)
        if obj.get("type") == "message" and obj.get("role") == "user":
            return obj
    return None


def _masked_text(item: JsonObject, kind: str) -> JsonObject:
    parts = cast(list[object], item.get("content") or [])
    return {
        **item,
        "content": [
            {**cast(JsonObject, p), "text": kind} if isinstance(p, dict) else p for p in parts
        ],
    }


def _mask_compaction_prompt(items: list[object]) -> list[object]:
    """A compaction request ends with the user message asking for the summary: each server's
    own prose."""
    last = _user_message(items[-1]) if items else None
    if last is None:
        return items
    return [*items[:-1], _masked_text(last, "<compaction prompt>")]


def _mask_summary(items: list[object], compaction: list[object]) -> list[object]:
    """The request after a compaction holds the summary as the first user message the
    compaction request did not have (prefix + the model's summary, which answered each server's
    own prompt): masked. A new user message after it is kept."""
    out = list(items)
    for i, item in enumerate(items):
        message = _user_message(item)
        if message is not None and not _is_masked_context(message) and item not in compaction:
            out[i] = _masked_text(message, "<compaction summary>")
            break
    return out


def _is_masked_context(message: JsonObject) -> bool:
    parts = cast(list[object], message.get("content") or [])
    return any(
        isinstance(p, dict)
        and isinstance(cast(JsonObject, p).get("text"), str)
        and str(cast(JsonObject, p)["text"]).startswith("<")
        and str(cast(JsonObject, p)["text"]).endswith(">…")
        for p in parts
    )


def _turn_metadata(raw: str | None, normaliser: Normaliser) -> object:
    if raw is None:
        return None
    try:
        meta = json.loads(raw)
    except ValueError:
        return "<not json>"
    if not isinstance(meta, dict):
        return "<not an object>"
    kept = {"request_kind", "history_initialization", "window_number", "agent_name", "model"}
    meta_obj = cast(JsonObject, meta)
    shape = {k: (meta_obj[k] if k in kept else "<value>") for k in meta_obj}
    return normaliser.value(shape)


def request_units(
    requests: Sequence[JsonObject], normaliser: Normaliser
) -> tuple[list[JsonObject], list[JsonObject]]:
    """(input units, field units): one of each per request, in order."""
    inputs: list[JsonObject] = []
    fields: list[JsonObject] = []
    before_compaction: list[object] | None = None
    for n, record in enumerate(requests):
        body = record.get("body")
        body_obj: JsonObject = cast(JsonObject, body) if isinstance(body, dict) else {}
        raw_input = body_obj.get("input")
        items: list[object] = cast(list[object], raw_input) if isinstance(raw_input, list) else []
        headers = cast(JsonObject, record.get("headers") or {})
        masked = mask_input(items)
        compaction = _request_kind(headers.get("x-codex-turn-metadata")) == "compaction"
        if compaction:
            masked = _mask_compaction_prompt(masked)
        elif before_compaction is not None:
            masked = _mask_summary(masked, before_compaction)
        before_compaction = masked if compaction else None
        inputs.append({"request": n, "input": cast(list[object], normaliser.value(masked))})
        tools: list[object] = []
        raw_tools = body_obj.get("tools")
        for tool in cast(list[object], raw_tools) if isinstance(raw_tools, list) else []:
            t = cast(JsonObject, tool) if isinstance(tool, dict) else {}
            tools.append(f"{t.get('type')}:{t.get('name', '')}")
        window = headers.get("x-codex-window-id")
        fields.append(
            {
                "request": n,
                "path": record.get("path"),
                "body": {k: body_obj[k] for k in _BODY_FIELDS if k in body_obj},
                "body_keys": sorted(body_obj),
                "tools": tools,
                "prompt_cache_key": normaliser.value(body_obj.get("prompt_cache_key"), "threadId"),
                "headers": sorted(k for k in headers if k not in _TRANSPORT_HEADERS),
                "header_values": {k: headers.get(k) for k in _HEADER_VALUES},
                "window": normaliser.text(str(window)) if window is not None else None,
                "turn_metadata": _turn_metadata(headers.get("x-codex-turn-metadata"), normaliser),
            }
        )
    return inputs, fields


_MACHINE_KEYS: Final = frozenset({"serverName"})
"""Values that name the machine (``remoteControl/status/changed``: the host name)."""


_PROSE_KEYS: Final = frozenset({"developer_instructions", "developerInstructions"})
"""Instruction prose a server shows (plan mode's developer instructions): each server's own."""


def _masked_key(key: str, value: object) -> object:
    if not isinstance(value, str):
        return _shorten(value)
    if key in _MACHINE_KEYS:
        return "<host>"
    if key in _PROSE_KEYS:
        return "<prose>"
    return _shorten(value)


def _shorten(value: object) -> object:
    """Long strings as their length and hash; the machine's name and instruction prose
    masked."""
    if isinstance(value, str) and len(value) > LONG_TEXT:
        digest = hashlib.sha256(value.encode()).hexdigest()[:16]
        return f"<{len(value)} chars sha256:{digest}>"
    if isinstance(value, dict):
        return {k: _masked_key(k, v) for k, v in cast(dict[str, object], value).items()}
    if isinstance(value, list):
        return [_shorten(v) for v in cast(list[object], value)]
    return value


@dataclass
class RunRecord:
    """One server's run of one scenario, normalised: what is compared and stored."""

    scenario: str
    stream: list[JsonObject]
    reads: list[JsonObject]
    inputs: list[JsonObject]
    fields: list[JsonObject]
    notes: dict[str, Any] = field(default_factory=dict[str, Any])
    error: str | None = None

    def to_json(self) -> JsonObject:
        return {
            "scenario": self.scenario,
            "stream": self.stream,
            "reads": self.reads,
            "inputs": self.inputs,
            "fields": self.fields,
            "notes": self.notes,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> RunRecord:
        return cls(
            str(data["scenario"]),
            list(data["stream"]),
            list(data["reads"]),
            list(data["inputs"]),
            list(data["fields"]),
            dict(data.get("notes") or {}),
            data.get("error"),
        )


def _paths(base: Path, mock_url: str) -> dict[str, str]:
    out: dict[str, str] = {mock_url: "<mock>"}
    for root in dict.fromkeys([base, base.resolve()]):
        out[str(root / "work")] = "<cwd>"
        out[str(root / "home")] = "<home>"
        out[str(root)] = "<scratch>"
    return out


def _port_free_url(text: str) -> str:
    return re.sub(r"http://127\.0\.0\.1:\d+", "<mock>", text)


def _mask_estimate(unit: JsonObject) -> JsonObject:
    """A usage report whose ``last`` has no input or output tokens but a total is core's
    estimate of a compacted history (a token per four bytes of it): it counts each server's
    own instruction texts and the scratch paths, so its total is masked."""
    if unit.get("method") != "thread/tokenUsage/updated":
        return unit
    params = cast(JsonObject, unit.get("params") or {})
    usage = cast(JsonObject, params.get("tokenUsage") or {})
    last = cast(JsonObject, usage.get("last") or {})
    if last.get("inputTokens") != 0 or last.get("outputTokens") != 0 or not last.get("totalTokens"):
        return unit
    masked_usage = {**usage, "last": {**last, "totalTokens": "<estimate>"}}
    return {**unit, "params": {**params, "tokenUsage": masked_usage}}


def record_run(spec: ModelScenario, run: ServerRun, base: Path, mock_url: str) -> RunRecord:
    """``run`` as comparable units (one normaliser for the whole run, so a thread keeps its
    number across a restart and in the requests)."""
    normaliser = Normaliser(_paths(base, mock_url))
    units: list[JsonObject] = []
    for index, segment in enumerate(run.segments):
        if index:
            units.append({"restart": index})
        units.extend(stream_units(segment.received, segment.sent))
    stream = canonical_order([cast(JsonObject, normaliser.value(u)) for u in merge_deltas(units)])
    stream = [*[_mask_estimate(u) for u in stream], *delta_checks(stream)]
    reads: list[JsonObject] = []
    for thread_id in run.thread_ids:
        reads.extend(thread_read_units(run.reads.get(thread_id, {}), _paths(base, mock_url)))
    inputs, fields = request_units(run.requests, normaliser)

    def clean(units: list[JsonObject]) -> list[JsonObject]:
        text = json.dumps(_shorten(units))
        return cast(list[JsonObject], json.loads(_port_free_url(text)))

    notes = {k: v for k, v in run.notes.items() if k == "turn_status"}
    return RunRecord(
        spec.name, clean(stream), clean(reads), clean(inputs), clean(fields), notes, run.error
    )


# --- comparing ---------------------------------------------------------------------------------


@dataclass
class ModelResult:
    name: str
    description: str
    stream: Comparison
    reads: Comparison
    inputs: Comparison
    fields: Comparison
    request_counts: tuple[int, int]
    notes: list[str] = field(default_factory=list[str])
    where: list[str] = field(default_factory=list[str])
    """Where the compared streams differ (:func:`where_they_differ`); empty when they do not."""

    @property
    def notifications(self) -> Comparison:
        """What the acceptance's percentage counts: the stream and the final reads."""
        both = Comparison()
        both.add(self.stream)
        both.add(self.reads)
        return both

    @property
    def requests_equal(self) -> bool:
        return (
            self.request_counts[0] == self.request_counts[1]
            and self.inputs.equal == self.inputs.compared
        )

    def to_json(self) -> JsonObject:
        return {
            "name": self.name,
            "description": self.description,
            "stream": self.stream.to_json(),
            "reads": self.reads.to_json(),
            "inputs": self.inputs.to_json(),
            "fields": self.fields.to_json(),
            "request_counts": list(self.request_counts),
            "notes": self.notes,
            "where": self.where,
        }


def _input_label(unit: JsonObject) -> str:
    return f"request {unit.get('request')}"


def _compare_requests(real: list[JsonObject], bridge: list[JsonObject]) -> Comparison:
    """Request by request (a request's position is its identity)."""
    result = Comparison(compared=max(len(real), len(bridge)))
    for n in range(result.compared):
        a = real[n] if n < len(real) else None
        b = bridge[n] if n < len(bridge) else None
        if a is not None and a == b:
            result.equal += 1
        elif b is None:
            result.differences.append(Difference("missing", f"request {n}"))
        elif a is None:
            result.differences.append(Difference("extra", f"request {n}"))
        else:
            result.differences.append(
                Difference("changed", _input_label(a), tuple(diff_paths(a, b)))
            )
    return result


def without_time_charges(units: Sequence[JsonObject]) -> list[JsonObject]:
    """``units`` without the goal charges of time alone: a ``thread/goal/updated`` of a turn
    whose goal, masked, is the thread's previous update's (in the same server process). Both
    servers charge an active goal the whole seconds a turn took at each charge, tokens or not
    (the bridge: ``agent._goals``); the seconds are masked, and whether a whole second passed
    between two charges is timing: on a busy machine the real binary sent one more update at
    the end of a turn in ``goal``, ``goal_failed_turn`` and ``goal_interrupted_turn`` (all three
    in one of 30 runs, pinned to one CPU beside three burners). An announcement (no turn) is
    kept."""
    out: list[JsonObject] = []
    last: dict[object, str] = {}
    for unit in units:
        if "restart" in unit:
            last.clear()
        params = unit.get("params")
        if unit.get("method") == "thread/goal/updated" and isinstance(params, dict):
            params = cast(JsonObject, params)
            goal = json.dumps(params.get("goal"), sort_keys=True)
            thread = params.get("threadId")
            if params.get("turnId") is not None and last.get(thread) == goal:
                continue
            last[thread] = goal
        out.append(unit)
    return merge_deltas(out)


def _comparable(stream: list[JsonObject]) -> list[JsonObject]:
    return without_time_charges(canonical_order(stream))


def compare_runs(spec: ModelScenario, real: RunRecord, bridge: RunRecord) -> ModelResult:
    notes: list[str] = []
    for who, record in (("real", real), ("bridge", bridge)):
        if record.error:
            notes.append(f"{who} driver error: {record.error}")
    # again: a reference may have been recorded with an older canonical order
    real_stream, bridge_stream = _comparable(real.stream), _comparable(bridge.stream)
    stream = compare(real_stream, bridge_stream)
    return ModelResult(
        spec.name,
        spec.description,
        stream,
        compare(real.reads, bridge.reads),
        _compare_requests(real.inputs, bridge.inputs),
        _compare_requests(real.fields, bridge.fields),
        (len(real.inputs), len(bridge.inputs)),
        notes,
        where_they_differ(real_stream, bridge_stream) if stream.differences else [],
    )


# --- the suite ---------------------------------------------------------------------------------


def reference_path(directory: Path, name: str) -> Path:
    return directory / f"{name}.json"


def load_reference(directory: Path, name: str) -> RunRecord:
    data = json.loads(reference_path(directory, name).read_text(encoding="utf-8"))
    return RunRecord.from_json(cast(JsonObject, data))


RACED: Final = "raced"
"""The subdirectory of a reference directory with the other outcome of a raced scenario."""


def _passed_by_goal_update(unit: JsonObject, turn_id: object) -> bool:
    """Whether a turn's ``thread/goal/updated`` may have overtaken ``unit``: a notification of
    that turn from the thread's event stream, or the rate limits a token count sends."""
    if unit.get("method") == "account/rateLimits/updated":
        return True
    params = unit.get("params")
    return (
        unit.get("method") != "thread/goal/updated"
        and isinstance(params, dict)
        and cast(JsonObject, params).get("turnId") == turn_id
    )


def goal_updates_last_in_turn(units: Sequence[JsonObject]) -> list[JsonObject]:
    """Each ``thread/goal/updated`` of a turn moved later, over the turn's own notifications
    (:func:`_passed_by_goal_update`), to where the turn's end (or the next goal update) stops it;
    the deltas it split are joined again.

    0.163.0 sends a goal update from its goal runtime straight to the client, while the
    thread's other events go through the thread's listener task: the update overtakes what the
    listener has not forwarded yet. Beside CPU burners the turn-end charge of
    ``goal_budget_mid_turn`` came between two deltas of the closing message, ahead of its
    ``item/completed``, token usage and rate limits (1 run in 200). Only a re-check of the
    binary against its own recording uses this; the bridge is held to the recorded order."""
    out = list(units)
    for i in reversed(range(len(out))):
        unit = out[i]
        params = unit.get("params")
        if unit.get("method") != "thread/goal/updated" or not isinstance(params, dict):
            continue
        turn_id = cast(JsonObject, params).get("turnId")
        if turn_id is None:
            continue
        j = i
        while j + 1 < len(out) and _passed_by_goal_update(out[j + 1], turn_id):
            out[j], out[j + 1] = out[j + 1], out[j]
            j += 1
    return merge_deltas(out)


def _exec_end(unit: JsonObject) -> object:
    """The item id of a command's ``item/completed`` sent by the unified-exec exit watcher (an
    item that ran: ``source`` ``unifiedExecStartup``); ``None``: not such a unit."""
    params = unit.get("params")
    if unit.get("method") != "item/completed" or not isinstance(params, dict):
        return None
    item = cast(JsonObject, params).get("item")
    if not isinstance(item, dict):
        return None
    item = cast(JsonObject, item)
    if item.get("type") != "commandExecution" or item.get("source") != "unifiedExecStartup":
        return None
    return item.get("id")


def _about_item(unit: JsonObject, item_id: object) -> bool:
    """Whether ``unit`` is about item ``item_id``: its ``itemId``, or the ``item`` it starts or
    completes."""
    params = unit.get("params")
    if not isinstance(params, dict):
        return False
    params = cast(JsonObject, params)
    item = params.get("item")
    return params.get("itemId") == item_id or (
        isinstance(item, dict) and cast(JsonObject, item).get("id") == item_id
    )


def command_ends_after_their_item(units: Sequence[JsonObject]) -> list[JsonObject]:
    """Each ran command's ``item/completed`` (:func:`_exec_end`) moved back to right after the
    last notification about its item (its ``item/started``, output deltas, terminal
    interactions, approval request); the deltas it split are joined again. One with no such
    notification before it (in the same server process) stays where it came.

    0.163.0 sends a command's end from a task of its own, the exit watcher (``spawn_exit_watcher``
    in ``codex-rs/core/src/unified_exec/async_watcher.rs``, upstream source), which waits for the
    process to exit and its output to drain (up to 100 ms of trailing output); the tool has
    meanwhile answered the model and the turn goes on. On a busy machine the follow-up
    request's token usage and rate limits came first: CI had ``shell_approval`` and
    ``apply_patch_escape`` so in one run; ``shell_session`` 4 runs in 30 with the binary on one
    CPU beside three burners. Only a re-check of the binary against its own recording uses
    this; the bridge is held to the recorded order."""
    out = list(units)
    for i in range(len(out)):
        item_id = _exec_end(out[i])
        if item_id is None:
            continue
        j = i
        while j > 0 and "restart" not in out[j - 1] and not _about_item(out[j - 1], item_id):
            j -= 1
        if 0 < j < i and _about_item(out[j - 1], item_id):
            out.insert(j, out.pop(i))
    return merge_deltas(out)


def compare_with_reference(spec: ModelScenario, directory: Path, fresh: RunRecord) -> ModelResult:
    """A new run of the real binary against its outcome recorded in ``directory``, goal updates
    placed by :func:`goal_updates_last_in_turn` and command ends by
    :func:`command_ends_after_their_item` on both sides; for a raced scenario
    (:attr:`ModelScenario.raced`), against the other recorded outcome when that one explains the
    run and the first does not."""

    def placed(record: RunRecord) -> RunRecord:
        stream = command_ends_after_their_item(goal_updates_last_in_turn(record.stream))
        return replace(record, stream=stream)

    fresh = placed(fresh)
    usual = compare_runs(spec, placed(load_reference(directory, spec.name)), fresh)
    if not spec.raced or not unexplained(spec, usual):
        return usual
    other = compare_runs(spec, placed(load_reference(directory / RACED, spec.name)), fresh)
    return usual if unexplained(spec, other) else other


SLOW_SCENARIOS: Final = frozenset({"huge_event"})
"""Scenarios that take the real binary about ten minutes (its SSE parsing is quadratic in an
event's size): left out of a re-check unless named."""


def real_against_reference(
    names: Sequence[str], reference: Path, scratch: Path, *, concurrency: int = 1
) -> dict[str, ModelResult]:
    """Each scenario of ``names`` run once on the real binary, compared with its outcome
    recorded in ``reference`` (:func:`compare_with_reference`)."""
    record = scratch / "record"
    run_model_suite_sync(names, scratch, record=record, servers=("real",), concurrency=concurrency)
    return {
        name: compare_with_reference(scenario_named(name), reference, load_reference(record, name))
        for name in names
    }


def recheck_real(
    names: Sequence[str], reference: Path, scratch: Path, *, concurrency: int = 1
) -> tuple[dict[str, ModelResult], dict[str, ModelResult]]:
    """Each scenario of ``names`` run on the real binary and compared with its outcome recorded
    in ``reference`` (:func:`compare_with_reference`); one whose run differs runs once more, and
    the second run is judged. The results, and the first runs that differed where the second
    did not.

    Each race found so far is placed, from the upstream source
    (:func:`command_ends_after_their_item`, :func:`goal_updates_last_in_turn`,
    :func:`without_time_charges`, ``canonical_order``); :func:`judge_second_runs` covers the
    next. A difference the binary makes every time is still one; one it made once is returned
    to be reported, with where it was."""
    results = real_against_reference(names, reference, scratch / "first", concurrency=concurrency)
    raced = judge_second_runs(
        results,
        lambda result: bool(unexplained(scenario_named(result.name), result)),
        lambda again: real_against_reference(
            again, reference, scratch / "again", concurrency=concurrency
        ),
    )
    return results, raced


def save_record(directory: Path, record: RunRecord) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = reference_path(directory, record.scenario)
    path.write_text(json.dumps(record.to_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def server_argv(server: str) -> tuple[list[str], dict[str, str]]:
    """The command line and extra environment of ``real`` or ``bridge`` (no bridge flags: the
    bridge finds the provider in CODEX_HOME/config.toml, as the real binary does)."""
    if server == "real":
        return real_codex_command(), {}
    if server == "bridge":
        return bridge_command(), {"PYTHONPATH": _SRC}
    raise ValueError(f"unknown server {server!r}; known: real, bridge")


async def run_one(
    spec: ModelScenario, server: str, mock: MockResponses, scratch: Path
) -> RunRecord:
    argv, extra = server_argv(server)
    base = scratch / spec.name / server
    run = await run_server(spec, argv, mock, base, extra_env=extra)
    return record_run(spec, run, base, mock.url)


async def run_model_suite(
    names: Iterable[str] | None = None,
    scratch: Path | None = None,
    *,
    reference: Path | None = None,
    record: Path | None = None,
    servers: Sequence[str] = SERVERS,
    concurrency: int = 1,
) -> list[ModelResult]:
    """Each scenario on ``servers``; with ``reference``, the real side is read from the
    recorded outcomes instead of run; with ``record``, the real side's outcomes are written
    there. With one server only, nothing is compared (the result list is empty).

    Up to ``concurrency`` scenarios run at once, each worker with a mock of its own (a mock
    answers one scenario at a time); the results keep the order of ``names``."""
    wanted = list(names) if names else [s.name for s in MODEL_SCENARIOS]
    specs = [scenario_named(n) for n in wanted]
    results: dict[str, ModelResult] = {}
    with scratch_root(scratch, "codex-model-mode-") as root:

        async def one(spec: ModelScenario, mock: MockResponses) -> None:
            result = await _run_and_compare(spec, mock, root, reference, record, servers)
            if result is not None:
                results[spec.name] = result

        await each_on_a_mock(specs, concurrency, one)
    return [results[spec.name] for spec in specs if spec.name in results]


async def _run_and_compare(
    spec: ModelScenario,
    mock: MockResponses,
    root: Path,
    reference: Path | None,
    record: Path | None,
    servers: Sequence[str],
) -> ModelResult | None:
    records: dict[str, RunRecord] = {}
    if reference is not None and "real" not in servers:
        records["real"] = load_reference(reference, spec.name)
    for server in servers:
        records[server] = await run_one(spec, server, mock, root)
        # beside the server's scratch directory, for reading a difference
        save_record(root / spec.name / server, records[server])
    if record is not None and "real" in records:
        save_record(record, records["real"])
    if "real" in records and "bridge" in records:
        return compare_runs(spec, records["real"], records["bridge"])
    return None


def run_model_suite_sync(
    names: Iterable[str] | None = None,
    scratch: Path | None = None,
    *,
    reference: Path | None = None,
    record: Path | None = None,
    servers: Sequence[str] = SERVERS,
    concurrency: int = 1,
) -> list[ModelResult]:
    return anyio.run(
        lambda: run_model_suite(
            names,
            scratch,
            reference=reference,
            record=record,
            servers=servers,
            concurrency=concurrency,
        )
    )


def unexplained(spec: ModelScenario, result: ModelResult) -> list[Difference]:
    """The differences of ``result`` that timing does not explain (``spec.volatile``)."""
    return [
        d
        for part in (result.stream, result.reads, result.inputs, result.fields)
        for d in part.differences
        if not (d.kind == "changed" and d.label in spec.volatile)
    ]


def total_notifications(results: Iterable[ModelResult]) -> Comparison:
    total = Comparison()
    for r in results:
        total.add(r.notifications)
    return total


def format_model_table(results: Sequence[ModelResult]) -> str:
    header = (
        f"{'scenario':<22} {'compared':>8} {'equal':>6} {'match':>7}   requests  inputs   fields"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        t = r.notifications
        real_n, bridge_n = r.request_counts
        lines.append(
            f"{r.name:<22} {t.compared:>8} {t.equal:>6} {t.percent:>6.1f}%"
            f"   {real_n:>3}/{bridge_n:<4}  {r.inputs.equal:>2}/{r.inputs.compared:<4}"
            f" {r.fields.equal:>2}/{r.fields.compared:<4}"
        )
    total = total_notifications(results)
    inputs = sum(r.inputs.equal for r in results), sum(r.inputs.compared for r in results)
    same_counts = sum(r.request_counts[0] == r.request_counts[1] for r in results)
    lines.append("-" * len(header))
    lines.append(
        f"{'TOTAL':<22} {total.compared:>8} {total.equal:>6} {total.percent:>6.1f}%"
        f"   {same_counts:>3}/{len(results):<4}  {inputs[0]:>2}/{inputs[1]:<4}"
    )
    return "\n".join(lines)


def format_model_details(results: Sequence[ModelResult]) -> str:
    out: list[str] = []
    for r in results:
        parts = (("", r.stream), ("thread/read: ", r.reads), ("", r.inputs), ("", r.fields))
        diffs = [(prefix, d) for prefix, part in parts for d in part.differences]
        if not diffs and not r.notes:
            continue
        out.append(f"\n## {r.name}: {r.description}")
        out.extend(f"  note: {n}" for n in r.notes)
        for prefix, d in diffs:
            out.append(f"  {d.kind}: {prefix}{d.label}")
            out.extend(f"      {line}" for line in d.details[:12])
        out.extend(f"    {line}" for line in r.where)
    return "\n".join(out)


# --- client libraries ----------------------------------------------------------------------------

CLIENT_FLOW_TIMEOUT_S: Final = 400.0


async def run_client_flow(client: str, server: str, mock: MockResponses, base: Path) -> JsonObject:
    """``_model_client_flows`` for ``client`` against ``server`` (found through CODEX_HOME, no
    flags), on the mock's ``sdk_flow`` answers: ``{"client", "outcome", "inputs"}`` (the
    requests' masked inputs, as :func:`request_units` gives them)."""
    home, work = base / "home", base / "work"
    shutil.rmtree(base, ignore_errors=True)
    work.mkdir(parents=True)
    home.mkdir(parents=True)
    write_codex_config(home, mock.base_url)
    mock.set_scenario("sdk_flow")
    argv, extra = server_argv(server)
    command = [
        sys.executable,
        "-m",
        "codex_app_bridge.conformance._model_client_flows",
        client,
        json.dumps(argv),
        str(base / "shim"),
    ]
    env = codex_env(home, extra={"PYTHONPATH": _SRC, **extra})
    with anyio.fail_after(CLIENT_FLOW_TIMEOUT_S):
        done = await anyio.run_process(command, check=False, env=env, cwd=work)
    (base / "client.stderr.log").write_bytes(done.stderr)
    lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
    outcome: object
    if done.returncode == 0 and lines:
        outcome = json.loads(lines[-1])
    else:
        outcome = {"client failed": done.returncode, "stderr": done.stderr.decode()[-2000:]}
    normaliser = Normaliser(_paths(base, mock.url))
    inputs, _ = request_units(mock.model_requests(), normaliser)
    text = json.dumps(_shorten({"client": client, "outcome": outcome, "inputs": inputs}))
    return cast(JsonObject, json.loads(_port_free_url(normaliser.text(text))))


@dataclass
class ClientComparison:
    client: str
    outcome: Comparison
    """One unit per step of the flow (``streamed``, ``failed``, ...)."""
    inputs: Comparison


def compare_client_flows(real: JsonObject, bridge: JsonObject) -> ClientComparison:
    real_outcome = cast(JsonObject, real.get("outcome") or {})
    bridge_outcome = cast(JsonObject, bridge.get("outcome") or {})
    outcome = Comparison()
    for step in [*real_outcome, *(k for k in bridge_outcome if k not in real_outcome)]:
        outcome.compared += 1
        a, b = real_outcome.get(step), bridge_outcome.get(step)
        if a == b:
            outcome.equal += 1
        elif step not in bridge_outcome:
            outcome.differences.append(Difference("missing", f"step {step}"))
        elif step not in real_outcome:
            outcome.differences.append(Difference("extra", f"step {step}"))
        else:
            outcome.differences.append(
                Difference("changed", f"step {step}", tuple(diff_paths(a, b)))
            )
    inputs = _compare_requests(
        cast(list[JsonObject], real.get("inputs") or []),
        cast(list[JsonObject], bridge.get("inputs") or []),
    )
    return ClientComparison(str(real.get("client")), outcome, inputs)


async def run_client_flows(
    clients: Iterable[str],
    scratch: Path,
    *,
    reference: Path | None = None,
    record: Path | None = None,
    servers: Sequence[str] = SERVERS,
) -> list[ClientComparison]:
    """Each client's flow on ``servers``; ``reference``/``record`` as in
    :func:`run_model_suite` (the ``clients/`` directory under them)."""
    results: list[ClientComparison] = []
    with MockResponses() as mock:
        for client in clients:
            outcomes: dict[str, JsonObject] = {}
            if reference is not None and "real" not in servers:
                path = reference / "clients" / f"{client}.json"
                outcomes["real"] = cast(JsonObject, json.loads(path.read_text(encoding="utf-8")))
            for server in servers:
                base = scratch / "clients" / client / server
                outcomes[server] = await run_client_flow(client, server, mock, base)
            if record is not None and "real" in outcomes:
                path = record / "clients" / f"{client}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                text = json.dumps(outcomes["real"], indent=1, sort_keys=True) + "\n"
                path.write_text(text, encoding="utf-8")
            if "real" in outcomes and "bridge" in outcomes:
                results.append(compare_client_flows(outcomes["real"], outcomes["bridge"]))
    return results


def format_client_table(results: Sequence[ClientComparison]) -> str:
    lines = [f"{'client':<22} {'steps equal':>12} {'inputs equal':>13}"]
    for r in results:
        lines.append(
            f"{r.client:<22} {r.outcome.equal:>5}/{r.outcome.compared:<6}"
            f" {r.inputs.equal:>6}/{r.inputs.compared:<6}"
        )
        for d in [*r.outcome.differences, *r.inputs.differences]:
            lines.append(f"  {d.kind}: {d.label}")
            lines.extend(f"      {line}" for line in d.details[:12])
    return "\n".join(lines)
