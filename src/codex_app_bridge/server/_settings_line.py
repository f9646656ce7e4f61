"""The ``thread_settings_applied`` line 0.163.0 writes to a rollout, from a thread's settings.

Where the binary writes it (probed on 0.163.0, ``tests/agent/test_rollout_lines.py`` keeps a
capture of each case):

* after a context baseline (a ``full`` ``world_state``: the first turn's context, a
  compaction's) and its ``turn_context``;
* when a thread is resumed (a checkpoint, before anything else the resumed thread writes);
* when a turnless ``thread_goal_updated`` (``thread/goal/set``) is the first thing a thread
  writes (no turn yet), right after it.

Its ``permission_profile`` is core's form of the sandbox: ``danger-full-access`` ->
``{type: disabled}``; ``read-only`` -> ``managed`` with the root readable; ``workspace-write``
-> ``managed`` with the root readable, the cwd and each writable root writable (a writable root
twice: it is a runtime workspace root too), ``/tmp`` and ``$TMPDIR`` unless excluded, then the
protected ``.git`` / ``.agents`` / ``.codex`` / ``.aws`` of every root readable only; the network
``restricted`` unless the policy allows it. The approval policy does not change it.

Boundary: pure (a snapshot from a ``ThreadSettings``); ``_stored`` writes the line.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import dump_json
from codex_app_bridge.server._threads import ThreadSettings

__all__ = ["permission_profile", "settings_applied", "workspace_roots"]

PROTECTED: Final = (".git", ".agents", ".codex", ".aws")
"""The subdirectories of each writable root 0.163.0 keeps read-only, in its order."""

_ROOT: Final[dict[str, Any]] = {
    "path": {"type": "special", "value": {"kind": "root"}},
    "access": "read",
}


def _policy(settings: ThreadSettings) -> dict[str, Any]:
    return orjson.loads(dump_json(settings.sandbox))


def workspace_roots(settings: ThreadSettings) -> list[str]:
    """``runtime_workspace_roots``: the cwd, then a workspace-write policy's writable roots."""
    roots = [settings.cwd]
    policy = _policy(settings)
    if policy.get("type") == "workspaceWrite":
        for root in policy.get("writableRoots") or ():
            if isinstance(root, str) and root not in roots:
                roots.append(root)
    return roots


def _path(path: str, access: str, *, skip: bool = False) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": {"type": "path", "path": path}, "access": access}
    if skip:
        entry["missing_path_behavior"] = "skip"
    return entry


def _special(kind: str) -> dict[str, Any]:
    return {"path": {"type": "special", "value": {"kind": kind}}, "access": "write"}


def permission_profile(settings: ThreadSettings) -> dict[str, Any]:
    """Core's ``PermissionProfile`` of the thread's sandbox (see the module docstring)."""
    policy = _policy(settings)
    kind = policy.get("type")
    if kind == "dangerFullAccess":
        return {"type": "disabled"}
    if kind == "externalSandbox":
        return {"type": "external", "network": policy.get("networkAccess", "restricted")}
    network = "enabled" if policy.get("networkAccess") is True else "restricted"
    entries: list[dict[str, Any]] = [_ROOT]
    if kind == "workspaceWrite":
        roots = workspace_roots(settings)
        extra = [r for r in policy.get("writableRoots") or () if isinstance(r, str)]
        entries += [_path(root, "write") for root in [*roots, *extra]]
        if not policy.get("excludeSlashTmp"):
            entries.append(_special("slash_tmp"))
        if not policy.get("excludeTmpdirEnvVar"):
            entries.append(_special("tmpdir"))
        entries += [
            _path(f"{root.rstrip('/')}/{name}", "read", skip=True)
            for name in PROTECTED
            for root in roots
        ]
    return {
        "type": "managed",
        "file_system": {"type": "restricted", "entries": entries},
        "network": network,
    }


def settings_applied(
    thread_id: str, settings: ThreadSettings, reasoning_summary: str | None
) -> core.ThreadSettingsAppliedEvent:
    """The ``thread_settings_applied`` event of a thread's settings, in 0.163.0's layout (the
    snapshot's fields in its order; built from trusted values, not validated again)."""
    mode = settings.collaboration_mode or {
        "mode": "default",
        "settings": {
            "model": settings.model,
            "reasoning_effort": settings.reasoning_effort,
            "developer_instructions": None,
        },
    }
    snapshot = core.ThreadSettingsSnapshot.model_construct(
        model=settings.model,
        model_provider_id=settings.model_provider,
        service_tier=settings.service_tier,
        approval_policy=settings.approval_policy,
        approvals_reviewer=settings.approvals_reviewer,
        permission_profile=permission_profile(settings),
        cwd=settings.cwd,
        runtime_workspace_roots=workspace_roots(settings),
        reasoning_effort=settings.reasoning_effort,
        reasoning_summary=reasoning_summary,
        collaboration_mode=mode,
        disabled_plugin_ids=[],
    )
    return core.ThreadSettingsAppliedEvent.model_construct(
        thread_id=thread_id, thread_settings=snapshot
    )
