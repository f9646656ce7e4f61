"""The effective config of ``thread/start``, ``thread/resume`` and ``thread/fork``.

Role: turn a thread request's params into ``config.ThreadConfigOverrides``, resolve the thread's
``EffectiveConfig`` (raising the real server's ``-32600 failed to load configuration: ...``),
derive the settings the answer echoes (``model``, ``modelProvider``, ``serviceTier``,
``reasoningEffort``, ``approvalPolicy``, ``sandbox``, ``cwd``, ``activePermissionProfile``), and
announce what 0.163.0 announces around a thread start: a ``configWarning`` for keys it ignores
(once per text, before the answer) and, after ``thread/started``, a ``warning`` per thread-level
notice (ignored keys, a model without catalog metadata, a service tier the model does not
advertise).

A model or provider no config layer and no param names is the source's own (the built-in echo
agent reports ``codex-app-bridge-echo``); the model source reports Codex's defaults through
its ``defaults``. Boundary: server-side glue; it sees the server through ``ServerServices``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from codex_app_bridge.config import ConfigError, EffectiveConfig, ThreadConfigOverrides
from codex_app_bridge.protocol.v2 import (
    DangerFullAccessSandboxPolicy,
    GranularAskForApproval,
    ReadOnlySandboxPolicy,
    SandboxPolicy,
    ThreadForkParams,
    ThreadResumeParams,
    ThreadStartParams,
    WorkspaceWriteSandboxPolicy,
)
from codex_app_bridge.rpc import RequestContext, invalid_request
from codex_app_bridge.server._threads import ThreadSettings

if TYPE_CHECKING:
    from codex_app_bridge.server._services import ServerServices

__all__ = ["announce_before", "resolve_thread_config", "thread_settings", "warn_after"]

ThreadParams = ThreadStartParams | ThreadResumeParams | ThreadForkParams


def _wire(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return value if dump is None else dump(mode="json", by_alias=True)


def _overrides(
    params: ThreadParams, *, model: str | None, provider: str | None
) -> ThreadConfigOverrides:
    return ThreadConfigOverrides(
        config=params.config,
        model=model,
        model_provider=provider,
        base_instructions=params.base_instructions,
        developer_instructions=params.developer_instructions,
        approval_policy=_wire(params.approval_policy),
        approvals_reviewer=_wire(params.approvals_reviewer),
        sandbox=_wire(params.sandbox),
        service_tier=params.service_tier,
        personality=_wire(getattr(params, "personality", None)),
        cwd=os.path.abspath(params.cwd) if params.cwd else None,
    )


def resolve_thread_config(
    server: ServerServices, params: ThreadParams, previous: ThreadSettings | None = None
) -> EffectiveConfig:
    """The thread's effective config; raises ``RpcError`` as the real server does.

    A resumed or forked thread keeps its model and provider unless the request names others
    (its provider only when the config knows it: the echo agent's is not a real one)."""
    layers = server.config
    model, provider = params.model, params.model_provider
    if (
        previous is not None
        and provider is None
        and layers.knows_provider(previous.model_provider, params.config)
    ):
        model, provider = model or previous.model, previous.model_provider
    try:
        return layers.resolve(_overrides(params, model=model, provider=provider))
    except ConfigError as exc:
        raise invalid_request(exc.message) from None


def _sandbox_model(config: EffectiveConfig) -> SandboxPolicy:
    wire = config.sandbox_policy()
    if wire["type"] == "dangerFullAccess":
        return DangerFullAccessSandboxPolicy()
    if wire["type"] == "workspaceWrite":
        return WorkspaceWriteSandboxPolicy.model_validate(wire)
    return ReadOnlySandboxPolicy()


def _approval(value: Any) -> Any:
    return GranularAskForApproval.model_validate(value) if isinstance(value, dict) else value


def thread_settings(
    server: ServerServices,
    config: EffectiveConfig,
    params: ThreadParams,
    previous: ThreadSettings | None = None,
) -> ThreadSettings:
    """The settings a thread request's answer echoes (see the module docstring)."""
    if previous is None:
        defaults = server.threads.defaults
        return ThreadSettings(
            cwd=config.cwd or server.default_cwd,
            model=config.model if config.model_from_config else defaults.model,
            model_provider=config.model_provider_id
            if config.provider_from_config
            else defaults.model_provider,
            approval_policy=_approval(config.approval_policy),
            approvals_reviewer=config.approvals_reviewer,
            sandbox=_sandbox_model(config),
            reasoning_effort=config.model_reasoning_effort,
            service_tier=config.service_tier,
            active_permission_profile=config.active_permission_profile,
        )
    return ThreadSettings(
        cwd=config.cwd or previous.cwd,
        model=params.model or previous.model,
        model_provider=params.model_provider or previous.model_provider,
        approval_policy=_approval(_wire(params.approval_policy))
        if params.approval_policy is not None
        else previous.approval_policy,
        approvals_reviewer=_wire(params.approvals_reviewer) or previous.approvals_reviewer,
        sandbox=_sandbox_model(config) if params.sandbox is not None else previous.sandbox,
        reasoning_effort=previous.reasoning_effort,
        service_tier=config.service_tier if params.service_tier else previous.service_tier,
        active_permission_profile=None
        if params.sandbox is not None
        else previous.active_permission_profile,
    )


async def announce_before(
    ctx: RequestContext, server: ServerServices, params: ThreadParams
) -> None:
    """Before the answer: the ``configWarning`` about ignored keys, once per text."""
    summary = server.config.unknown_key_summary(params.config)
    if summary is None or summary in server.announced_config_warnings:
        return
    server.announced_config_warnings.add(summary)
    await ctx.connection.notify("configWarning", {"summary": summary, "details": None})


def warn_after(ctx: RequestContext, thread_id: str, config: EffectiveConfig) -> None:
    """After the answer (and ``thread/started``): the thread's ``warning`` notifications."""
    if not config.warnings:
        return

    async def warn() -> None:
        for message in config.warnings:
            await ctx.connection.notify("warning", {"threadId": thread_id, "message": message})

    ctx.after_response(warn)
