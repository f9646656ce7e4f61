"""The ``turn/*`` handlers: ``turn/start``, ``turn/steer``, ``turn/interrupt``; and
``thread/compact/start`` and ``thread/shellCommand``, which run turns.

Rules (probed from the 0.163.0 binary, see the errors in ``_errors``):

* Only a loaded thread has turns: an unknown or unloaded one is ``thread not found``.
* ``turn/start`` answers at once with the new turn (``inProgress``, ``startedAt: null``) and
  records and starts it only after the response (a turn whose answer cannot be delivered never
  exists); while a turn is running, ``turn/start`` answers that running turn and adds its input
  to it (0.163.0 behaviour: no error).
* ``turn/steer`` checks the running turn's id and the input, answers, then steers the input in.
* ``turn/interrupt`` answers ``{}`` once the abort has happened and before ``turn/completed``: the
  handler defers its answer to the thread runtime (``ctx.defer()``), which writes it right before
  the terminal notifications, so the request does not hold the thread's request queue while the
  turn winds down (a second interrupt is answered the same way).
* ``thread/shellCommand`` answers ``{}`` and runs the command as a turn of its own (the source's
  ``run_user_shell_command``); an empty command is ``command must not be empty``. While a turn
  runs it is refused (0.163.0 replaces the running turn; ``KNOWN_DIFFERENCES.md``).

Boundary: what a request means and answers; the turn itself is the thread runtime's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from codex_app_bridge.protocol._base import dump_jsonable
from codex_app_bridge.protocol.core import EventEnvelope, UserInput, WarningEvent
from codex_app_bridge.protocol.v2 import (
    ThreadCompactStartParams,
    ThreadCompactStartResponse,
    ThreadSettings,
    ThreadShellCommandParams,
    ThreadShellCommandResponse,
    Turn,
    TurnInterruptParams,
    TurnInterruptResponse,
    TurnStartParams,
    TurnStartResponse,
    TurnSteerParams,
    TurnSteerResponse,
)
from codex_app_bridge.rpc import RequestContext, invalid_request
from codex_app_bridge.server._errors import (
    active_turn_mismatch,
    empty_input,
    no_active_turn,
    steer_turn_mismatch,
    thread_not_found,
)
from codex_app_bridge.server._ids import new_uuid7, parse_thread_id
from codex_app_bridge.server._inputs import core_inputs
from codex_app_bridge.server._runtime import ThreadRuntime, TurnOrder
from codex_app_bridge.server._thread_extras import MULTI_AGENT_MODE
from codex_app_bridge.server._threads import SettingsOverrides, ThreadRecord
from codex_app_bridge.server._threads import ThreadSettings as ServerThreadSettings
from codex_app_bridge.sources import input_text

if TYPE_CHECKING:
    from codex_app_bridge.config import EffectiveConfig
    from codex_app_bridge.server._services import ServerServices

__all__ = ["TurnHandlers"]


def _pending_turn(turn_id: str) -> Turn:
    """A turn as ``turn/start`` answers it: just accepted, not started yet."""
    return Turn(
        id=turn_id,
        root_turn_id=turn_id,
        items=[],
        items_view="notLoaded",
        status="inProgress",
        error=None,
        started_at=None,
        completed_at=None,
        duration_ms=None,
    )


def _collaboration_mode(params: TurnStartParams) -> dict[str, Any] | None:
    """The request's ``collaborationMode`` (an experimental field, beyond the schema's params:
    kept as an extra), ``null`` instructions replaced by the mode's built-in ones (as the
    0.163.0 app server does)."""
    extra: dict[str, JsonValue] | None = getattr(params, "model_extra", None)
    mode = (extra or {}).get("collaborationMode")
    if not isinstance(mode, dict):
        return None
    from codex_app_bridge.config import normalize_collaboration_mode

    return normalize_collaboration_mode(mode)


def _v2_settings(settings: ServerThreadSettings, config: EffectiveConfig | None) -> ThreadSettings:
    """A thread's settings as ``thread/settings/updated`` shows them."""
    from codex_app_bridge.config import default_collaboration_mode

    mode = settings.collaboration_mode or default_collaboration_mode(
        settings.model, settings.reasoning_effort
    )
    return ThreadSettings.model_validate(
        {
            "activePermissionProfile": settings.active_permission_profile,
            "approvalPolicy": dump_jsonable(settings.approval_policy),
            "approvalsReviewer": settings.approvals_reviewer,
            "collaborationMode": mode,
            "cwd": settings.cwd,
            "disabledPluginIds": [],
            "effort": settings.reasoning_effort,
            "model": settings.model,
            "modelProvider": settings.model_provider,
            "multiAgentMode": MULTI_AGENT_MODE,
            "personality": config.personality if config is not None else None,
            "sandboxPolicy": dump_jsonable(settings.sandbox),
            "serviceTier": settings.service_tier,
            "summary": config.model_reasoning_summary if config is not None else None,
        }
    )


class TurnHandlers:
    """``turn/start``, ``turn/steer``, ``turn/interrupt`` of one server."""

    def __init__(self, server: ServerServices) -> None:
        self.server = server

    def _loaded(self, raw_id: str) -> tuple[ThreadRecord, ThreadRuntime]:
        """A loaded thread and its runtime (an unloaded one is not found, as the real server)."""
        thread_id = parse_thread_id(raw_id)
        record = self.server.threads.loaded(thread_id)
        if record is None or record.runtime is None:
            raise thread_not_found(thread_id)
        return record, record.runtime

    async def turn_start(self, ctx: RequestContext, params: TurnStartParams) -> TurnStartResponse:
        record, runtime = self._loaded(params.thread_id)
        inputs = core_inputs(params.input)
        running = runtime.active_turn_id
        if running is not None:
            # 0.163.0: a turn/start during a turn answers that turn and adds its input to it.
            if inputs:

                async def steer() -> None:
                    runtime.steer(inputs)

                ctx.after_response(steer)
            return TurnStartResponse(turn=_pending_turn(running))

        overrides = SettingsOverrides(
            cwd=params.cwd,
            model=params.model,
            approval_policy=params.approval_policy,
            approvals_reviewer=params.approvals_reviewer,
            sandbox_policy=params.sandbox_policy,
            reasoning_effort=params.effort,
            service_tier=params.service_tier,
            collaboration_mode=_collaboration_mode(params),
        )
        turn_id = new_uuid7()
        upcoming = overrides.apply(record.settings)
        if upcoming != record.settings:
            # 0.163.0 tells the thread's clients when a turn changes the thread's settings (the
            # collaboration mode, the approval policy, the sandbox, ...; not an override that
            # keeps a value), before the turn's warnings
            record.listener.announce_settings(_v2_settings(upcoming, record.config))
        if record.config is not None:
            # 0.163.0 warns before every turn/start answer about a model it has no metadata for
            from codex_app_bridge.config import apply_turn_overrides

            turn_config = apply_turn_overrides(record.config, model=params.model)
            if turn_config.warnings:
                await self._warn(ctx, record.id, turn_id, turn_config.warnings)

        async def start() -> None:
            # The turn exists once its answer is out: were it recorded before, an answer that
            # cannot be delivered (the client is gone) would leave the thread "active" with a
            # turn that never starts.
            self._begin_turn(record, overrides, turn_id, inputs)

        ctx.after_response(start)
        return TurnStartResponse(turn=_pending_turn(turn_id))

    async def _warn(
        self, ctx: RequestContext, thread_id: str, turn_id: str, messages: Sequence[str]
    ) -> None:
        """The turn's warnings, to every client of the thread (0.163.0 core emits them as the
        thread's ``warning`` events when the turn is submitted), and to the requester too when it
        is not one of them."""
        listener = self.server.hub.get(thread_id)
        subscribed = listener is not None and listener.is_subscribed(ctx.connection.connection_id)
        for message in messages:
            if listener is not None:
                await listener.handle(EventEnvelope.trusted(turn_id, WarningEvent(message=message)))
            if not subscribed:
                await ctx.connection.notify("warning", {"threadId": thread_id, "message": message})

    def _begin_turn(
        self,
        record: ThreadRecord,
        overrides: SettingsOverrides,
        turn_id: str,
        inputs: list[UserInput],
    ) -> None:
        runtime = record.runtime
        assert runtime is not None
        if runtime.active_turn_id is not None:
            runtime.steer(inputs)
            return
        settings = record.settings = overrides.apply(record.settings)
        storage = self.server.threads.storage
        if storage is not None and overrides.given():
            # 0.163.0 records a turn's overrides (changed or not) before the turn's start
            storage.checkpoint(record)
        record.turns_started += 1
        if not record.preview:
            record.preview = input_text(inputs)
        record.touch()
        runtime.start_turn(
            TurnOrder(
                turn_id=turn_id,
                items=inputs,
                cwd=settings.cwd,
                model=settings.model,
                approval_policy=settings.approval_policy,
                sandbox_policy=settings.sandbox,
                effort=settings.reasoning_effort,
                service_tier=settings.service_tier,
                collaboration_mode=settings.collaboration_mode,
            )
        )

    def _running(self, raw_id: str, action: str) -> tuple[ThreadRuntime, str]:
        """A loaded thread's runtime and its running turn (``no active turn to <action>``)."""
        _, runtime = self._loaded(raw_id)
        running = runtime.active_turn_id
        if running is None:
            raise no_active_turn(action)
        return runtime, running

    async def thread_compact_start(
        self, ctx: RequestContext, params: ThreadCompactStartParams
    ) -> ThreadCompactStartResponse:
        """Answers ``{}`` at once; the compaction then runs as a turn of its own (a running
        turn first ends: the compaction starts after it, as its own turn)."""
        record, runtime = self._loaded(params.thread_id)

        async def start() -> None:
            turn_id = new_uuid7()
            if runtime.active_turn_id is None:
                record.touch()
                runtime.compact(turn_id)

        ctx.after_response(start)
        return ThreadCompactStartResponse()

    async def thread_shell_command(
        self, ctx: RequestContext, params: ThreadShellCommandParams
    ) -> ThreadShellCommandResponse:
        record, runtime = self._loaded(params.thread_id)
        if not params.command.strip():
            raise invalid_request("command must not be empty")
        running = runtime.active_turn_id
        if running is not None:
            raise invalid_request(f"thread/shellCommand: turn {running} is still running")
        command, timeout_ms = params.command, params.timeout_ms

        async def start() -> None:
            if runtime.active_turn_id is None:
                record.touch()
                runtime.shell_command(new_uuid7(), command, timeout_ms)

        ctx.after_response(start)
        return ThreadShellCommandResponse()

    async def turn_interrupt(
        self, ctx: RequestContext, params: TurnInterruptParams
    ) -> TurnInterruptResponse:
        runtime, running = self._running(params.thread_id, "interrupt")
        if params.turn_id != running:
            raise active_turn_mismatch(params.turn_id, running)
        # answered by the runtime, right before the turn's terminal notifications
        runtime.interrupt(ctx.defer())
        return TurnInterruptResponse()

    async def turn_steer(self, ctx: RequestContext, params: TurnSteerParams) -> TurnSteerResponse:
        runtime, running = self._running(params.thread_id, "steer")
        if params.expected_turn_id != running:
            raise steer_turn_mismatch(params.expected_turn_id, running)
        if not params.input:
            raise empty_input()
        inputs = core_inputs(params.input)

        async def steer() -> None:
            runtime.steer(inputs)

        ctx.after_response(steer)
        return TurnSteerResponse(turn_id=running)
