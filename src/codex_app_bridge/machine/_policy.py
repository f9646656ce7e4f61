"""Approval policies with Codex 0.163.0's meaning, and what they decide for a command or a patch.

``ApprovalPolicy``: ``untrusted``, ``on-request``, ``never`` or ``granular`` (its
``sandbox_approval`` flag says whether sandbox escalations may be asked for). The decisions
(probed, ``spec/machine-tools.md`` §3.5, §5.2):

================  ====================================  ======================================
policy            plain command                         escalated (``require_escalated``)
================  ====================================  ======================================
never             sandboxed, no prompt                  refused (core's text)
granular, no      sandboxed, no prompt                  refused (core's text)
on-request        sandboxed, no prompt                  ask; accepted: unsandboxed
untrusted         ask; accepted: sandboxed              ask; accepted: unsandboxed
================  ====================================  ======================================

Under ``danger-full-access`` nothing is sandboxed and only ``untrusted`` asks. Where 0.163.0 is
unsafe this module is not (``tests/conformance/KNOWN_DIFFERENCES.md``): a sandbox denial is
never re-run unsandboxed without a new approval, and without a usable sandbox a command that
needs one is asked for (``reason`` says the sandbox is unavailable: accepting runs it
unconfined) or refused under ``never``, never run unconfined silently.

Decisions a client sends come back as core ``ReviewDecision`` values (``approved``,
``approved_for_session``, ``{"approved_execpolicy_amendment": …}``, ``denied``, ``abort``);
``SessionApprovals`` remembers the ones that cover later calls of the thread.

Pure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from codex_app_bridge.machine._sandbox import SandboxPolicy

__all__ = [
    "ApprovalPolicy",
    "ExecPlan",
    "PatchVerdict",
    "SessionApprovals",
    "decide_exec",
    "decide_patch",
    "decision_kind",
]

PolicyName = Literal["untrusted", "on-request", "never", "granular"]


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    name: PolicyName = "on-request"
    sandbox_approval: bool = True
    rules: bool = True
    mcp_elicitations: bool = True
    skill_approval: bool = False
    request_permissions: bool = False

    @classmethod
    def from_wire(cls, value: object) -> ApprovalPolicy:
        """From ``approvalPolicy`` (``"never"``, ``{"granular":{…}}``) or core's
        ``AskForApproval`` (``"on-request"``, ``{"granular":{…}}``)."""
        if isinstance(value, str):
            if value in ("untrusted", "on-request", "never"):
                return cls(cast("PolicyName", value))
            if value == "on-failure":  # legacy: core treats it as asking on demand
                return cls("on-request")
            raise ValueError(f"unknown approval policy {value!r}")
        obj: Mapping[str, Any] = (
            cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}
        )
        if "granular" in obj:
            raw: object = obj.get("granular")
            config: Mapping[str, Any] = (
                cast("Mapping[str, Any]", raw) if isinstance(raw, Mapping) else {}
            )
            return cls(
                "granular",
                sandbox_approval=bool(config.get("sandbox_approval", False)),
                rules=bool(config.get("rules", False)),
                mcp_elicitations=bool(config.get("mcp_elicitations", False)),
                skill_approval=bool(config.get("skill_approval", False)),
                request_permissions=bool(config.get("request_permissions", False)),
            )
        raise ValueError(f"unknown approval policy {value!r}")

    @property
    def may_ask_escalation(self) -> bool:
        return self.name in ("on-request", "untrusted") or (
            self.name == "granular" and self.sandbox_approval
        )

    def rust_debug(self) -> str:
        """The policy as core's Debug text names it in its refusals (0.163.0's words)."""
        if self.name != "granular":
            return {"never": "Never", "on-request": "OnRequest", "untrusted": "UnlessTrusted"}[
                self.name
            ]
        flags = (
            f"sandbox_approval: {str(self.sandbox_approval).lower()}, "
            f"rules: {str(self.rules).lower()}, "
            f"skill_approval: {str(self.skill_approval).lower()}, "
            f"request_permissions: {str(self.request_permissions).lower()}, "
            f"mcp_elicitations: {str(self.mcp_elicitations).lower()}"
        )
        return f"Granular(GranularApprovalConfig {{ {flags} }})"


ExecAction = Literal["run", "ask", "refuse"]


@dataclass(frozen=True, slots=True)
class ExecPlan:
    """What to do with a command: ``run`` it, ``ask`` first, or ``refuse`` with ``text``.

    ``sandboxed``: whether it runs inside the sandbox (once accepted, for ``ask``)."""

    action: ExecAction
    sandboxed: bool
    text: str = ""
    reason: str | None = None


def decide_exec(
    policy: ApprovalPolicy,
    sandbox: SandboxPolicy,
    *,
    escalated: bool,
    sandbox_problem: str | None,
    approved_for_session: bool = False,
    allowed_by_rule: bool = False,
    justification: str | None = None,
) -> ExecPlan:
    """The plan for one command (see the module docstring)."""
    if escalated and not policy.may_ask_escalation:
        return ExecPlan(
            "refuse",
            False,
            f"approval policy is {policy.rust_debug()}; reject command — you cannot ask "
            f"for escalated permissions if the approval policy is {policy.rust_debug()}",
        )
    wants_sandbox = sandbox.needs_sandbox and not escalated
    if allowed_by_rule and not (wants_sandbox and sandbox_problem is not None):
        # a prefix the user allowed runs without asking, still sandboxed unless escalated
        # (0.163.0 runs it unsandboxed: KNOWN_DIFFERENCES.md)
        return ExecPlan("run", wants_sandbox)
    if approved_for_session:
        return ExecPlan("run", wants_sandbox and sandbox_problem is None)
    if wants_sandbox and sandbox_problem is not None:
        if policy.name == "never" or (policy.name == "granular" and not policy.sandbox_approval):
            return ExecPlan("refuse", False, f"sandbox unavailable: {sandbox_problem}")
        return ExecPlan(
            "ask",
            False,
            reason=f"The sandbox is unavailable ({sandbox_problem}); approving runs this "
            "command without a sandbox",
        )
    if policy.name == "untrusted":
        return ExecPlan("ask", wants_sandbox, reason=justification if escalated else None)
    if escalated and sandbox.kind != "danger-full-access":
        return ExecPlan("ask", False, reason=justification)
    return ExecPlan("run", wants_sandbox)


PatchAction = Literal["apply", "ask", "reject"]


@dataclass(frozen=True, slots=True)
class PatchVerdict:
    action: PatchAction
    text: str = ""


def decide_patch(
    policy: ApprovalPolicy,
    sandbox: SandboxPolicy,
    paths: Sequence[str],
    cwd: str,
    *,
    approved_paths: frozenset[str] = frozenset(),
) -> PatchVerdict:
    """Apply, ask or reject a verified patch writing ``paths`` (absolute). Paths are judged by
    name, as core judges them: a symlink inside the writable roots pointing outside counts as
    inside (core then writes in its sandbox, which refuses the write; the tools refuse it as
    the sandbox would, ``MachineTools._patch``)."""
    if not paths:
        return PatchVerdict("reject", "patch rejected: empty patch")
    covered = all(os.path.abspath(p) in approved_paths for p in paths)
    if covered:
        return PatchVerdict("apply")
    if policy.name == "untrusted":
        return PatchVerdict("ask")
    writable = all(sandbox.can_write(p, cwd, resolve=False) for p in paths)
    if writable:
        return PatchVerdict("apply")
    may_ask = policy.name == "on-request" or (policy.name == "granular" and policy.sandbox_approval)
    if may_ask:
        return PatchVerdict("ask")
    if sandbox.kind == "read-only":
        return PatchVerdict(
            "reject",
            "patch rejected: writing is blocked by read-only sandbox; rejected by user "
            "approval settings",
        )
    return PatchVerdict(
        "reject",
        "patch rejected: writing outside of the project; rejected by user approval settings",
    )


DecisionKind = Literal["accept", "accept_for_session", "accept_with_amendment", "decline", "cancel"]

_DECISIONS: Final[dict[str, DecisionKind]] = {
    "approved": "accept",
    "approved_for_session": "accept_for_session",
    "denied": "decline",
    "abort": "cancel",
    "timed_out": "decline",
}


def decision_kind(decision: object) -> tuple[DecisionKind, list[str] | None]:
    """A core ``ReviewDecision`` as one of five outcomes (and the amendment's prefix)."""
    if isinstance(decision, str):
        return _DECISIONS.get(decision, "decline"), None
    if isinstance(decision, Mapping):
        obj = cast("Mapping[str, Any]", decision)
        amendment = obj.get("approved_execpolicy_amendment")
        if isinstance(amendment, Mapping):
            prefix = cast("Mapping[str, Any]", amendment).get("proposed_execpolicy_amendment")
            if isinstance(prefix, list):
                return "accept_with_amendment", [str(p) for p in cast("list[object]", prefix)]
        if amendment is not None:
            return "accept_with_amendment", None
    return "decline", None


@dataclass
class SessionApprovals:
    """What a thread's user approved for the rest of the session: identical commands
    (``acceptForSession``), command prefixes (exec-policy amendments), patched files."""

    commands: set[tuple[str, ...]] = field(default_factory=set[tuple[str, ...]])
    prefixes: list[tuple[str, ...]] = field(default_factory=list[tuple[str, ...]])
    paths: set[str] = field(default_factory=set[str])

    def allows_by_rule(self, words: Sequence[str]) -> bool:
        return any(tuple(words[: len(p)]) == p for p in self.prefixes if p)
