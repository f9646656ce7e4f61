"""Core payload -> v2 wire value conversions used by the reducer's bespoke rows.

Role: the small, pure translations the real app-server applies when it builds a notification
itself instead of calling the stateless mapper: token usage, rate limits, hook runs, plan steps,
MCP startup states, thread settings, guardian reviews. Error infos (``turn_error`` and friends) are
shared with the history builder and live in ``codex_app_bridge.mapping``; they are re-exported
here for the reducer. Each returns a v2 wire model
(validated once here, so an unknown enum value fails loudly and the reducer skips the event).

Boundary: no state, no I/O, no notification envelopes; item conversions (TurnItem -> ThreadItem,
legacy item builders) belong to ``codex_app_bridge.mapping``.

Case rules: core enums are snake_case strings and most v2 enums are camelCase
(``internal_server_error`` -> ``internalServerError``); ``camel`` does that step. A few v2 values
stay snake_case on the wire (``RateLimitReachedType``) and are passed through untouched.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import JsonValue

from codex_app_bridge.mapping import (
    camel,
    codex_error_info,
    error_affects_turn_status,
    turn_error,
)
from codex_app_bridge.protocol.core import (
    GuardianAssessmentEvent,
    HookRunSummary,
    McpStartupStatus,
    PlanItemArg,
    RateLimitSnapshot,
    RateLimitWindow,
    ThreadGoal,
    ThreadSettingsSnapshot,
    TokenUsage,
    TokenUsageInfo,
)
from codex_app_bridge.protocol.v2 import (
    GuardianApprovalReview,
    ThreadSettings,
    ThreadTokenUsage,
    TokenUsageBreakdown,
    TurnPlanStep,
)
from codex_app_bridge.protocol.v2 import (
    HookRunSummary as V2HookRunSummary,
)
from codex_app_bridge.protocol.v2 import (
    RateLimitSnapshot as V2RateLimitSnapshot,
)
from codex_app_bridge.protocol.v2 import (
    RateLimitWindow as V2RateLimitWindow,
)
from codex_app_bridge.protocol.v2 import (
    ThreadGoal as V2ThreadGoal,
)

__all__ = [
    "camel",
    "codex_error_info",
    "error_affects_turn_status",
    "guardian_action",
    "guardian_review",
    "hook_run",
    "mcp_startup",
    "plan_step",
    "rate_limits",
    "sandbox_policy",
    "thread_goal",
    "thread_settings",
    "token_usage",
    "turn_error",
]


# ---------------------------------------------------------------------------------------------
# Tokens and rate limits
# ---------------------------------------------------------------------------------------------


def _breakdown(usage: TokenUsage) -> TokenUsageBreakdown:
    return TokenUsageBreakdown(
        total_tokens=usage.total_tokens,
        input_tokens=usage.input_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        cache_write_input_tokens=usage.cache_write_input_tokens,
        output_tokens=usage.output_tokens,
        reasoning_output_tokens=usage.reasoning_output_tokens,
    )


def token_usage(info: TokenUsageInfo) -> ThreadTokenUsage:
    """``token_count.info`` -> ``ThreadTokenUsage {total, last, modelContextWindow}``."""
    return ThreadTokenUsage(
        total=_breakdown(info.total_token_usage),
        last=_breakdown(info.last_token_usage),
        model_context_window=info.model_context_window,
    )


def usage_breakdown(usage: JsonValue) -> TokenUsageBreakdown | None:
    """A raw response's core ``token_usage`` JSON -> ``TokenUsageBreakdown`` (``None`` if absent)."""
    if usage is None:
        return None
    return _breakdown(TokenUsage.model_validate(usage))


def _window(window: RateLimitWindow | None) -> V2RateLimitWindow | None:
    if window is None:
        return None
    # core keeps a float percentage; the v2 field is an integer (Rust `as i32` truncates)
    return V2RateLimitWindow(
        used_percent=int(window.used_percent),
        window_duration_mins=window.window_minutes,
        resets_at=window.resets_at,
    )


def rate_limits(snapshot: RateLimitSnapshot) -> V2RateLimitSnapshot:
    """``token_count.rate_limits`` -> v2 ``RateLimitSnapshot`` (every field written)."""
    return V2RateLimitSnapshot.model_validate(
        {
            "limitId": snapshot.limit_id,
            "limitName": snapshot.limit_name,
            "normalModelSlug": snapshot.normal_model_slug,
            "primary": _window(snapshot.primary),
            "secondary": _window(snapshot.secondary),
            "credits": None
            if snapshot.credits is None
            else {
                "hasCredits": snapshot.credits.has_credits,
                "unlimited": snapshot.credits.unlimited,
                "balance": snapshot.credits.balance,
            },
            "individualLimit": None
            if snapshot.individual_limit is None
            else {
                "limit": snapshot.individual_limit.limit,
                "used": snapshot.individual_limit.used,
                "remainingPercent": snapshot.individual_limit.remaining_percent,
                "resetsAt": snapshot.individual_limit.resets_at,
            },
            "spendControlReached": snapshot.spend_control_reached,
            "planType": snapshot.plan_type,
            "rateLimitReachedType": snapshot.rate_limit_reached_type,
        }
    )


# ---------------------------------------------------------------------------------------------
# Plans, hooks, MCP startup, goals
# ---------------------------------------------------------------------------------------------


def plan_step(step: PlanItemArg) -> TurnPlanStep:
    """``{step, status}`` with the status camelCased (``in_progress`` -> ``inProgress``)."""
    return TurnPlanStep.model_validate({"step": step.step, "status": camel(step.status)})


def hook_run(run: HookRunSummary) -> V2HookRunSummary:
    """A core hook run summary -> v2 ``HookRunSummary`` (keys and enum values camelCased)."""
    return V2HookRunSummary.model_validate(
        {
            "id": run.id,
            "eventName": camel(run.event_name),
            "handlerType": camel(run.handler_type),
            "executionMode": camel(run.execution_mode),
            "scope": camel(run.scope),
            "sourcePath": run.source_path,
            "source": camel(run.source),
            "displayOrder": run.display_order,
            "status": camel(run.status),
            "statusMessage": run.status_message,
            "startedAt": run.started_at,
            "completedAt": run.completed_at,
            "durationMs": run.duration_ms,
            "entries": [
                {**entry, "kind": camel(str(entry.get("kind", "")))} for entry in run.entries
            ],
        }
    )


def mcp_startup(status: McpStartupStatus) -> tuple[str, str | None, str | None]:
    """``(status, error, failureReason)`` of ``mcpServer/startupStatus/updated``."""
    extras = status.model_extra or {}
    reason = extras.get("reason")
    failure_reason = camel(reason) if isinstance(reason, str) else None
    if status.state == "failed":
        return "failed", status.error, failure_reason
    return camel(status.state), None, None


def thread_goal(goal: ThreadGoal) -> V2ThreadGoal:
    """A core thread goal (already camelCase on the wire) -> v2 ``ThreadGoal``."""
    return V2ThreadGoal.model_validate(
        {
            "threadId": goal.thread_id,
            "objective": goal.objective,
            "status": camel(goal.status),
            "tokenBudget": goal.token_budget,
            "tokensUsed": goal.tokens_used,
            "timeUsedSeconds": goal.time_used_seconds,
            "createdAt": goal.created_at,
            "updatedAt": goal.updated_at,
        }
    )


# ---------------------------------------------------------------------------------------------
# Thread settings
# ---------------------------------------------------------------------------------------------


def _entry_access(entry: JsonValue) -> str:
    if isinstance(entry, dict):
        access = entry.get("access")
        if isinstance(access, str):
            return access
    return "none"


def _entry_path(entry: JsonValue, cwd: str) -> str | None:
    """The absolute path a permission entry names, if it names one (special roots aside)."""
    if not isinstance(entry, dict):
        return None
    target = entry.get("path")
    if isinstance(target, str):
        return target
    if isinstance(target, dict):
        kind = target.get("type")
        if kind == "path" and isinstance(target.get("path"), str):
            return cast(str, target["path"])
        value = target.get("value")
        if kind == "special" and isinstance(value, dict):
            special = value.get("kind")
            if special == "current_working_directory":
                return cwd
            if special == "slash_tmp":
                return "/tmp"
    return None


def _special_kind(entry: JsonValue) -> str | None:
    if isinstance(entry, dict):
        target = entry.get("path")
        if isinstance(target, dict) and target.get("type") == "special":
            value = target.get("value")
            if isinstance(value, dict) and isinstance(value.get("kind"), str):
                return cast(str, value["kind"])
    return None


def sandbox_policy(profile: JsonValue, cwd: str) -> dict[str, JsonValue]:
    """The legacy v2 ``SandboxPolicy`` shown for a core ``PermissionProfile``.

    ``disabled`` -> ``dangerFullAccess``; ``external {network}`` -> ``externalSandbox``;
    ``managed {file_system, network}`` -> ``readOnly`` when nothing is writable, else
    ``workspaceWrite`` with the writable roots other than the cwd. This is an approximation of
    Codex's ``compatibility_sandbox_policy_for_permission_profile`` (no capture exercises a
    managed profile); anything unrecognised falls back to ``readOnly``, the safe reading.
    """
    kind = profile.get("type") if isinstance(profile, dict) else None
    if kind == "disabled":
        return {"type": "dangerFullAccess"}
    network = profile.get("network") if isinstance(profile, dict) else None
    network_enabled = network == "enabled"
    if kind == "external":
        return {
            "type": "externalSandbox",
            "networkAccess": "enabled" if network_enabled else "restricted",
        }
    if kind == "managed" and isinstance(profile, dict):
        file_system = profile.get("file_system")
        fs_kind = file_system.get("type") if isinstance(file_system, dict) else None
        if fs_kind == "unrestricted":
            if network_enabled:
                return {"type": "dangerFullAccess"}
            return {"type": "workspaceWrite", "writableRoots": [], "networkAccess": False}
        entries: list[JsonValue] = []
        if isinstance(file_system, dict):
            raw_entries = file_system.get("entries")
            if isinstance(raw_entries, list):
                entries = raw_entries
        writable = [entry for entry in entries if _entry_access(entry) == "write"]
        if not writable:
            return {"type": "readOnly", "networkAccess": network_enabled}
        roots: list[JsonValue] = []
        for entry in writable:
            path = _entry_path(entry, cwd)
            if path is not None and path not in (cwd, "/tmp") and path not in roots:
                roots.append(path)
        specials = {_special_kind(entry) for entry in writable}
        return {
            "type": "workspaceWrite",
            "writableRoots": roots,
            "networkAccess": network_enabled,
            "excludeTmpdirEnvVar": "tmpdir" not in specials,
            "excludeSlashTmp": "slash_tmp" not in specials,
        }
    return {"type": "readOnly", "networkAccess": False}


def thread_settings(snapshot: ThreadSettingsSnapshot) -> ThreadSettings:
    """``thread_settings_applied.thread_settings`` -> v2 ``ThreadSettings``."""
    return ThreadSettings.model_validate(
        {
            "activePermissionProfile": snapshot.active_permission_profile,
            "approvalPolicy": snapshot.approval_policy,
            "approvalsReviewer": snapshot.approvals_reviewer or "user",
            "collaborationMode": snapshot.collaboration_mode,
            "cwd": snapshot.cwd,
            "disabledPluginIds": list(snapshot.disabled_plugin_ids),
            "effort": snapshot.reasoning_effort,
            "model": snapshot.model,
            "modelProvider": snapshot.model_provider_id,
            "personality": snapshot.personality,
            "sandboxPolicy": sandbox_policy(snapshot.permission_profile, snapshot.cwd),
            "serviceTier": snapshot.service_tier,
            "summary": snapshot.reasoning_summary,
        }
    )


# ---------------------------------------------------------------------------------------------
# Guardian (automatic approval review)
# ---------------------------------------------------------------------------------------------


def guardian_review(assessment: GuardianAssessmentEvent) -> GuardianApprovalReview:
    """``{status, riskLevel, userAuthorization, rationale}`` with camelCased enum values."""
    return GuardianApprovalReview.model_validate(
        {
            "status": camel(assessment.status),
            "riskLevel": assessment.risk_level,
            "userAuthorization": assessment.user_authorization,
            "rationale": assessment.rationale,
        }
    )


def guardian_action(action: JsonValue) -> Any:
    """A core guardian action (internally tagged, snake_case) -> the v2 review action JSON.

    The tag value and the keys are camelCased (``apply_patch`` -> ``applyPatch``, ``tool_name``
    -> ``toolName``), and so is the command ``source`` (``unified_exec`` -> ``unifiedExec``);
    nested values (argv, paths, permission profiles) are kept as they are.
    """
    if not isinstance(action, dict):
        return action
    converted: dict[str, JsonValue] = {}
    for key, value in action.items():
        if key in ("type", "source") and isinstance(value, str):
            converted[camel(key)] = camel(value)
        else:
            converted[camel(key)] = value
    return converted
