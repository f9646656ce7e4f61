"""The machine: commands, patches, the sandbox and the files of the user's machine.

A domain package below ``server/``: it knows no connection, JSON-RPC or thread. Pieces:

* ``_patch``: the ``apply_patch`` engine (parse, verify, diffs, atomic per-file writes);
* ``_proc``: child processes in their own process group, killed whole, bounded output reads;
* ``_output``: bounded output buffers and the text the model gets (core's truncation);
* ``_sandbox``: sandbox policies and bubblewrap; ``_policy``: approval policies and decisions;
* ``_seccomp``: the seccomp filter (0.163.0's network rule set) bubblewrap puts on a command;
* ``_commands``: argv, environment, command summaries, ``apply_patch`` through the shell;
* ``_turn_diff``: ``TurnDiff``, the net diff of a turn's patches (``turn/diff/updated``);
* ``_user_shell``: ``thread/shellCommand``'s run (a user's command as a turn's item);
* ``_tools``: ``MachineTools``, the model's local tools of one thread (the agent's table).
"""

from __future__ import annotations

from codex_app_bridge.machine._output import HeadTail, exec_output_text, model_text
from codex_app_bridge.machine._patch import (
    AddFile,
    Chunk,
    DeleteFile,
    FileAction,
    PatchError,
    PatchPlan,
    UpdateFile,
    apply_plan,
    parse_patch,
    plan_patch,
    unified_diff,
)
from codex_app_bridge.machine._policy import (
    ApprovalPolicy,
    ExecPlan,
    PatchVerdict,
    SessionApprovals,
    decide_exec,
    decide_patch,
    decision_kind,
)
from codex_app_bridge.machine._proc import ChildProcess, SpawnError, kill_all, spawn
from codex_app_bridge.machine._sandbox import (
    Bubblewrap,
    SandboxPolicy,
    SandboxUnavailable,
    WrappedCommand,
)
from codex_app_bridge.machine._tools import (
    TOOL_NAMES,
    MachineTools,
    ToolHost,
    ToolOutput,
    TurnCancelled,
    aborted_output,
)
from codex_app_bridge.machine._turn_diff import TurnDiff
from codex_app_bridge.machine._user_shell import UserShellResult, user_shell_text

__all__ = [
    "TOOL_NAMES",
    "AddFile",
    "ApprovalPolicy",
    "Bubblewrap",
    "ChildProcess",
    "Chunk",
    "DeleteFile",
    "ExecPlan",
    "FileAction",
    "HeadTail",
    "MachineTools",
    "PatchError",
    "PatchPlan",
    "PatchVerdict",
    "SandboxPolicy",
    "SandboxUnavailable",
    "SessionApprovals",
    "SpawnError",
    "ToolHost",
    "ToolOutput",
    "TurnCancelled",
    "TurnDiff",
    "UpdateFile",
    "UserShellResult",
    "WrappedCommand",
    "aborted_output",
    "apply_plan",
    "decide_exec",
    "decide_patch",
    "decision_kind",
    "exec_output_text",
    "kill_all",
    "model_text",
    "parse_patch",
    "plan_patch",
    "spawn",
    "unified_diff",
    "user_shell_text",
]
