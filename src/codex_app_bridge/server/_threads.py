"""What the server knows of one thread: ``ThreadRecord``, its ``ThreadSettings``, and the v2
``Thread`` objects of a loaded thread and of a stored one.

A ``ThreadRecord`` holds what the v2 ``Thread`` object and the thread/start-like responses report
(settings chosen at thread/start, preview, timestamps). What plays the thread's turns and holds
its live state belongs to its ``ThreadRuntime`` (the running turn, the history log that
``thread/read`` / ``thread/resume`` / ``thread/fork`` rebuild turns from) and to the runtime's
``ThreadListener`` (status, subscribers); the record keeps references to both. Records are made,
loaded, unloaded and forgotten by the ``ThreadRegistry`` (``_registry``) alone.

A thread is *materialized* once a turn has started on it (the real server writes its rollout then):
before that it is absent from ``thread/list`` and cannot be resumed or forked.

``SettingsOverrides`` are the settings ``turn/start`` may change (thread/start, resume and fork
resolve theirs from the config, ``_thread_config``). The ``Thread`` of a thread that is not
loaded is ``_stored_list.not_loaded_thread_json``'s.

Boundary: values only; nothing here reads files or changes a thread's life.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from codex_app_bridge._clock import now_s
from codex_app_bridge._version import CODEX_PROTOCOL_VERSION
from codex_app_bridge.protocol.v2 import (
    ActiveThreadStatus,
    AskForApproval,
    DangerFullAccessSandboxPolicy,
    GitInfo,
    NotLoadedThreadStatus,
    ReadOnlySandboxPolicy,
    SandboxMode,
    SandboxPolicy,
    Thread,
    ThreadStatus,
    Turn,
    WorkspaceWriteSandboxPolicy,
)
from codex_app_bridge.server._stored_list import THREAD_SOURCE
from codex_app_bridge.server._thread_extras import read_state_json, response_extras, thread_extras

if TYPE_CHECKING:
    from codex_app_bridge.config import EffectiveConfig
    from codex_app_bridge.listener import ThreadListener
    from codex_app_bridge.protocol.core import EventEnvelope
    from codex_app_bridge.server._runtime import ThreadRuntime

__all__ = [
    "SettingsOverrides",
    "ThreadRecord",
    "ThreadSettings",
    "sandbox_policy",
]


def sandbox_policy(mode: SandboxMode | None, cwd: str) -> SandboxPolicy:
    """The policy object a sandbox mode stands for (the real defaults: read-only, no network)."""
    if mode == "danger-full-access":
        return DangerFullAccessSandboxPolicy()
    if mode == "workspace-write":
        # the cwd is writable implicitly: the real server lists no root for it
        return WorkspaceWriteSandboxPolicy(writable_roots=[])
    return ReadOnlySandboxPolicy()


@dataclass
class ThreadSettings:
    """The settings a thread runs with (from thread/start, overridden by resume or fork)."""

    cwd: str
    model: str
    model_provider: str
    approval_policy: AskForApproval = "on-request"
    approvals_reviewer: str = "user"
    sandbox: SandboxPolicy = field(default_factory=ReadOnlySandboxPolicy)
    reasoning_effort: str | None = None
    service_tier: str | None = None
    active_permission_profile: dict[str, Any] | None = None
    """``{"id": ":read-only", ...}`` when no layer or param chose a sandbox (as 0.163.0)."""
    collaboration_mode: dict[str, Any] | None = None
    """The mode a ``turn/start`` chose (wire JSON, instructions filled in); ``None``: the
    default mode, without instructions."""

    def response_fields(self) -> dict[str, Any]:
        """The settings part of a thread/start, thread/resume or thread/fork response."""
        return {
            "model": self.model,
            "model_provider": self.model_provider,
            "service_tier": self.service_tier,
            "cwd": self.cwd,
            "approval_policy": self.approval_policy,
            "approvals_reviewer": self.approvals_reviewer,
            "sandbox": self.sandbox,
            "reasoning_effort": self.reasoning_effort,
            **response_extras(self.cwd),
            "activePermissionProfile": self.active_permission_profile,
        }


@dataclass
class SettingsOverrides:
    """Settings ``turn/start`` may change; ``None``: kept (thread/start, resume and fork resolve
    theirs from the config, ``_thread_config``)."""

    cwd: str | None = None
    model: str | None = None
    model_provider: str | None = None
    approval_policy: Any = None
    approvals_reviewer: Any = None
    sandbox_mode: Any = None
    sandbox_policy: Any = None
    reasoning_effort: str | None = None
    service_tier: str | None = None
    collaboration_mode: dict[str, Any] | None = None

    def given(self) -> bool:
        """Whether any setting is overridden (even to the value it has)."""
        return any(getattr(self, name) is not None for name in self.__dataclass_fields__)

    def apply(self, settings: ThreadSettings) -> ThreadSettings:
        cwd = os.path.abspath(self.cwd) if self.cwd else settings.cwd
        updated = replace(
            settings,
            cwd=cwd,
            model=self.model or settings.model,
            model_provider=self.model_provider or settings.model_provider,
            approval_policy=self.approval_policy or settings.approval_policy,
            approvals_reviewer=self.approvals_reviewer or settings.approvals_reviewer,
            reasoning_effort=self.reasoning_effort or settings.reasoning_effort,
            service_tier=self.service_tier or settings.service_tier,
            collaboration_mode=self.collaboration_mode or settings.collaboration_mode,
        )
        if self.sandbox_policy is not None:
            updated.sandbox = self.sandbox_policy
        elif self.sandbox_mode is not None:
            updated.sandbox = sandbox_policy(self.sandbox_mode, cwd)
        return updated


@dataclass(eq=False)
class ThreadRecord:
    """One thread (see the module docstring)."""

    id: str
    settings: ThreadSettings
    listener: ThreadListener
    originator: str | None
    ephemeral: bool = False
    forked_from_id: str | None = None
    thread_source: str | None = None
    name: str | None = None
    preview: str = ""
    created_at: int = field(default_factory=now_s)
    updated_at: int = 0
    turns_started: int = 0
    raw_events: bool = False
    runtime: ThreadRuntime | None = None
    """The task playing this thread's turns (set once the record is created)."""
    path: str | None = None
    """The thread's current rollout file, once it is stored (``Thread.path``)."""
    loaded: bool = True
    """False once unloaded (idle, ``server._idle``): status ``notLoaded`` until resumed (the
    registry alone changes it)."""
    git_info: GitInfo | None = None
    """As ``thread/metadata/update`` last set it."""
    dynamic_tools: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """thread/start ``dynamicTools``: the client's own tools, offered to the model."""
    config: EffectiveConfig | None = None
    """The thread's effective config (``config.EffectiveConfig``), resolved by thread/start,
    resume and fork before its runtime opens a session; ``None`` for a thread read back from
    storage and not resumed yet. ``turn/start``'s sticky overrides are the model source's to
    apply (``config.apply_turn_overrides``)."""
    history_initialization: str = "new"
    """How the thread's history came to this server, as core's turn metadata names it: ``new``,
    ``cold_resume`` (read back from its rollout, or reloaded or cut by a revert) or
    ``warm_fork`` (forked from a thread this server holds)."""
    forked_from_ordinal: int | None = None
    """A fork's end of the parent's history log it copied (exclusive): see ``SessionConfig``."""

    def __post_init__(self) -> None:
        if not self.updated_at:
            self.updated_at = self.created_at

    @property
    def materialized(self) -> bool:
        return self.turns_started > 0

    @property
    def session_id(self) -> str:
        return self.id

    def touch(self) -> None:
        self.updated_at = now_s()

    @property
    def active_turn_id(self) -> str | None:
        """The running turn, as the thread's runtime knows it."""
        return None if self.runtime is None else self.runtime.active_turn_id

    @property
    def history(self) -> list[EventEnvelope]:
        """The events the thread's turns are rebuilt from (see ``ThreadRuntime``), as new
        models at each call (``HistoryLog``)."""
        return [] if self.runtime is None else self.runtime.history

    def read_state(self) -> dict[str, Any]:
        """``readState`` as the listener keeps it (``thread/read``, ``thread/list``)."""
        return read_state_json(self.id, self.listener.state.read_state)

    def status(self) -> ThreadStatus:
        """The thread's status; ``active`` as soon as a turn was accepted, even if the listener
        has not seen its ``task_started`` yet (as the real server reports it in responses)."""
        if not self.loaded:
            return NotLoadedThreadStatus()
        status = self.listener.status
        if self.active_turn_id is not None and not isinstance(status, ActiveThreadStatus):
            return ActiveThreadStatus(active_flags=[])
        return status

    def thread(self, *, turns: list[Turn] | None = None, listed: bool = False) -> Thread:
        """The v2 ``Thread`` object (``turns`` only for read/resume/fork with history;
        ``listed``: as a thread/list entry)."""
        return Thread(
            id=self.id,
            session_id=self.session_id,
            forked_from_id=self.forked_from_id,
            parent_thread_id=None,
            preview=self.preview,
            ephemeral=self.ephemeral,
            project_id=None,
            history_mode="paginated",
            model_provider=self.settings.model_provider,
            model=self.settings.model,
            reasoning_effort=self.settings.reasoning_effort,
            created_at=self.created_at,
            updated_at=self.updated_at,
            recency_at=self.created_at,
            status=self.status(),
            path=self.path,
            cwd=self.settings.cwd,
            cli_version=CODEX_PROTOCOL_VERSION,
            originator=self.originator,
            source=THREAD_SOURCE,
            thread_source=self.thread_source,
            agent_nickname=None,
            agent_role=None,
            git_info=self.git_info,
            name=self.name,
            turns=turns or [],
            **thread_extras(self.settings.cwd, listed=listed),
        )
