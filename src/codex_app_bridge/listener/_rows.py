"""The reducer's one-to-one rows: one core event -> its notification(s), in ``ROWS``.

Role: the events the real app-server turns into a notification of its own (not the stateless
mapper's), one event at a time: turn diff and plan, warnings, hooks, MCP startup, environments,
auth recovery, model reroute / verification / safety buffering, moderation, deprecation, goal,
realtime, raw response items; and ``live_mapped``, the row of the events the stateless mapper
writes on the live path (``LIVE_MAPPED``: the streaming deltas of ``mapping.DELTA_ROWS``, when
they reach the reducer rather than the hub's byte path, and two streaming events that have no
byte row). One row remembers
the value it reports and owns that part of ``ThreadState``: ``thread_settings_applied``
(``thread_settings``: the first report is the baseline, a change gives
``thread/settings/updated``). ``token_count`` remembers nothing: a resume's usage is replayed
from the history log (``server._token_replay``), and a usage kept per thread would be three
models per idle loaded thread.

Boundary: pure; no row looks at the turn or the item ledger (``_turns``, ``_items``). Builds on
``_state`` only; ``_reducer`` puts ``ROWS`` in its dispatch table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final

from pydantic import JsonValue

from codex_app_bridge.listener import _convert as convert
from codex_app_bridge.listener._realtime import realtime_notification
from codex_app_bridge.listener._state import (
    Audience,
    Emission,
    Handler,
    Params,
    ReduceContext,
    Reduction,
    ThreadState,
    emit,
    mapped,
    validated,
)
from codex_app_bridge.mapping import DELTA_ROWS
from codex_app_bridge.protocol._base import dump_jsonable
from codex_app_bridge.protocol.core import (
    AuthRecoveryCompletedEvent,
    AuthRecoveryStartedEvent,
    DeprecationNoticeEvent,
    EnvironmentConnectedEvent,
    EnvironmentDisconnectedEvent,
    EventEnvelope,
    EventMsg,
    GuardianWarningEvent,
    HookCompletedEvent,
    HookStartedEvent,
    McpStartupUpdateEvent,
    ModelRerouteEvent,
    ModelVerificationEvent,
    PatchApplyUpdatedEvent,
    PlanUpdateEvent,
    RawResponseCompletedEvent,
    RawResponseItemEvent,
    RealtimeConversationClosedEvent,
    RealtimeConversationRealtimeEvent,
    RealtimeConversationSdpEvent,
    RealtimeConversationStartedEvent,
    SafetyBufferingEvent,
    TerminalInteractionEvent,
    ThreadGoalUpdatedEvent,
    ThreadSettingsAppliedEvent,
    TokenCountEvent,
    TurnDiffEvent,
    TurnModerationMetadataEvent,
    WarningEvent,
)
from codex_app_bridge.protocol.v2 import (
    AccountRateLimitsUpdatedNotification,
    AuthRecoveryNotification,
    DeprecationNoticeNotification,
    EnvironmentConnectionNotification,
    GuardianWarningNotification,
    HookCompletedNotification,
    HookStartedNotification,
    McpServerStatusUpdatedNotification,
    ModelReroutedNotification,
    ModelSafetyBufferingUpdatedNotification,
    ModelVerificationNotification,
    RawResponseCompletedNotification,
    ThreadGoalUpdatedNotification,
    ThreadRealtimeClosedNotification,
    ThreadRealtimeSdpNotification,
    ThreadRealtimeStartedNotification,
    ThreadSettingsUpdatedNotification,
    ThreadTokenUsageUpdatedNotification,
    TurnDiffUpdatedNotification,
    TurnModerationMetadataNotification,
    TurnPlanUpdatedNotification,
    WarningNotification,
)

__all__ = ["LIVE_MAPPED", "ROWS", "live_mapped"]


def live_mapped(
    state: ThreadState, envelope: EventEnvelope, msg: EventMsg, ctx: ReduceContext
) -> Reduction:
    """An event the stateless mapper writes on the live path (deltas and friends)."""
    emission = mapped(msg, ctx, envelope.id)
    return Reduction(state, (emission,) if emission is not None else ())


def _token_count(
    state: ThreadState, envelope: EventEnvelope, msg: TokenCountEvent, ctx: ReduceContext
) -> Reduction:
    emissions: list[Emission] = []
    if msg.info is not None:
        usage = convert.token_usage(msg.info)
        params = ThreadTokenUsageUpdatedNotification(
            thread_id=ctx.thread_id, turn_id=envelope.id, token_usage=usage
        )
        emissions.append(emit("thread/tokenUsage/updated", params))
    if msg.rate_limits is not None:
        params_rl = AccountRateLimitsUpdatedNotification(
            rate_limits=convert.rate_limits(msg.rate_limits)
        )
        emissions.append(emit("account/rateLimits/updated", params_rl))
    return Reduction(state, tuple(emissions))


def _thread_settings(
    state: ThreadState, envelope: EventEnvelope, msg: ThreadSettingsAppliedEvent, ctx: ReduceContext
) -> Reduction:
    settings = convert.thread_settings(msg.thread_settings)
    new_state = replace(state, thread_settings=settings)
    if state.thread_settings is None:
        # the first report seeds the baseline: the real server starts from the settings the
        # thread was created with, which thread/start already returned to the client
        return Reduction(new_state)
    if state.thread_settings == settings:
        return Reduction(new_state)
    params = ThreadSettingsUpdatedNotification(thread_id=ctx.thread_id, thread_settings=settings)
    return Reduction(new_state, (emit("thread/settings/updated", params),))


def _realtime(
    state: ThreadState,
    envelope: EventEnvelope,
    msg: RealtimeConversationRealtimeEvent,
    ctx: ReduceContext,
) -> Reduction:
    result = realtime_notification(msg.payload, ctx.thread_id)
    if result is None:
        return Reduction(state)
    method, params = result
    return Reduction(state, (emit(method, params),))


def _raw_item(
    state: ThreadState, envelope: EventEnvelope, msg: RawResponseItemEvent, ctx: ReduceContext
) -> Reduction:
    # the ResponseItem is passed through in core's own form, losslessly (unknown fields kept)
    params: dict[str, JsonValue] = {
        "threadId": ctx.thread_id,
        "turnId": envelope.id,
        "item": dump_jsonable(msg.item),
    }
    return Reduction(state, (Emission("rawResponseItem/completed", params, Audience.RAW),))


def _raw_completed(
    state: ThreadState, envelope: EventEnvelope, msg: RawResponseCompletedEvent, ctx: ReduceContext
) -> Reduction:
    params = RawResponseCompletedNotification.model_validate(
        {
            "threadId": ctx.thread_id,
            "turnId": envelope.id,
            "responseId": msg.response_id,
            "usage": convert.usage_breakdown(msg.token_usage),
            "usageMetadata": msg.usage_metadata,
        }
    )
    return Reduction(state, (Emission("rawResponse/completed", params, Audience.RAW),))


def _simple(
    build: Callable[[Any, EventEnvelope, ReduceContext], tuple[str, Params, Audience]],
) -> Callable[[ThreadState, EventEnvelope, Any, ReduceContext], Reduction]:
    """A stateless row: one event -> one notification."""

    def handler(
        state: ThreadState, envelope: EventEnvelope, msg: Any, ctx: ReduceContext
    ) -> Reduction:
        method, params, audience = build(msg, envelope, ctx)
        return Reduction(state, (Emission(method, params, audience),))

    return handler


_S = Audience.SUBSCRIBERS


def _row_turn_diff(msg: TurnDiffEvent, env: EventEnvelope, ctx: ReduceContext) -> Any:
    params = TurnDiffUpdatedNotification(
        thread_id=ctx.thread_id, turn_id=env.id, diff=msg.unified_diff
    )
    return "turn/diff/updated", params, _S


def _row_plan_update(msg: PlanUpdateEvent, env: EventEnvelope, ctx: ReduceContext) -> Any:
    params = TurnPlanUpdatedNotification(
        thread_id=ctx.thread_id,
        turn_id=env.id,
        explanation=msg.explanation,
        plan=[convert.plan_step(step) for step in msg.plan],
    )
    return "turn/plan/updated", params, _S


def _row_warning(msg: WarningEvent, env: EventEnvelope, ctx: ReduceContext) -> Any:
    return "warning", WarningNotification(thread_id=ctx.thread_id, message=msg.message), _S


def _row_guardian_warning(msg: GuardianWarningEvent, env: EventEnvelope, ctx: ReduceContext) -> Any:
    params = GuardianWarningNotification(thread_id=ctx.thread_id, message=msg.message)
    return "guardianWarning", params, _S


def _row_hook_started(msg: HookStartedEvent, env: EventEnvelope, ctx: ReduceContext) -> Any:
    params = HookStartedNotification(
        thread_id=ctx.thread_id, turn_id=msg.turn_id, run=convert.hook_run(msg.run)
    )
    return "hook/started", params, _S


def _row_hook_completed(msg: HookCompletedEvent, env: EventEnvelope, ctx: ReduceContext) -> Any:
    params = HookCompletedNotification(
        thread_id=ctx.thread_id, turn_id=msg.turn_id, run=convert.hook_run(msg.run)
    )
    return "hook/completed", params, _S


def _row_mcp_startup(msg: McpStartupUpdateEvent, env: EventEnvelope, ctx: ReduceContext) -> Any:
    status, error, failure_reason = convert.mcp_startup(msg.status)
    params = validated(
        McpServerStatusUpdatedNotification,
        {
            "threadId": ctx.thread_id,
            "name": msg.server,
            "status": status,
            "error": error,
            "failureReason": failure_reason,
        },
    )
    return "mcpServer/startupStatus/updated", params, _S


def _row_env_connected(
    msg: EnvironmentConnectedEvent, env: EventEnvelope, ctx: ReduceContext
) -> Any:
    params = EnvironmentConnectionNotification(
        thread_id=ctx.thread_id, environment_id=msg.environment_id
    )
    return "thread/environment/connected", params, _S


def _row_env_disconnected(
    msg: EnvironmentDisconnectedEvent, env: EventEnvelope, ctx: ReduceContext
) -> Any:
    params = EnvironmentConnectionNotification(
        thread_id=ctx.thread_id, environment_id=msg.environment_id
    )
    return "thread/environment/disconnected", params, _S


def _row_auth_started(msg: AuthRecoveryStartedEvent, env: EventEnvelope, ctx: ReduceContext) -> Any:
    params = AuthRecoveryNotification(
        thread_id=ctx.thread_id, turn_id=env.id, provider=msg.provider, message=msg.message
    )
    return "modelProvider/authRecoveryStarted", params, _S


def _row_auth_completed(
    msg: AuthRecoveryCompletedEvent, env: EventEnvelope, ctx: ReduceContext
) -> Any:
    params = AuthRecoveryNotification(
        thread_id=ctx.thread_id, turn_id=env.id, provider=msg.provider, message=msg.message
    )
    return "modelProvider/authRecoveryCompleted", params, _S


def _row_model_reroute(msg: ModelRerouteEvent, env: EventEnvelope, ctx: ReduceContext) -> Any:
    params = validated(
        ModelReroutedNotification,
        {
            "threadId": ctx.thread_id,
            "turnId": env.id,
            "fromModel": msg.from_model,
            "toModel": msg.to_model,
            "reason": convert.camel(msg.reason),
        },
    )
    return "model/rerouted", params, _S


def _row_model_verification(
    msg: ModelVerificationEvent, env: EventEnvelope, ctx: ReduceContext
) -> Any:
    params = validated(
        ModelVerificationNotification,
        {
            "threadId": ctx.thread_id,
            "turnId": env.id,
            "verifications": [convert.camel(v) for v in msg.verifications],
        },
    )
    return "model/verification", params, _S


def _row_moderation(
    msg: TurnModerationMetadataEvent, env: EventEnvelope, ctx: ReduceContext
) -> Any:
    params = TurnModerationMetadataNotification(
        thread_id=ctx.thread_id, turn_id=env.id, metadata=msg.metadata
    )
    return "turn/moderationMetadata", params, _S


def _row_safety_buffering(msg: SafetyBufferingEvent, env: EventEnvelope, ctx: ReduceContext) -> Any:
    params = ModelSafetyBufferingUpdatedNotification(
        thread_id=ctx.thread_id,
        turn_id=env.id,
        model=msg.model,
        use_cases=list(msg.use_cases),
        reasons=list(msg.reasons),
        show_buffering_ui=msg.show_buffering_ui,
        faster_model=msg.faster_model,
    )
    return "model/safetyBuffering/updated", params, _S


def _row_deprecation(msg: DeprecationNoticeEvent, env: EventEnvelope, ctx: ReduceContext) -> Any:
    params = DeprecationNoticeNotification(summary=msg.summary, details=msg.details)
    return "deprecationNotice", params, _S


def _goal_updated(
    state: ThreadState, envelope: EventEnvelope, msg: ThreadGoalUpdatedEvent, ctx: ReduceContext
) -> Reduction:
    """``thread/goal/updated`` to every connection; a running turn remembers whether its goal
    is still active (then another goal turn follows and this one is no unread activity)."""
    params = ThreadGoalUpdatedNotification(
        thread_id=msg.thread_id, turn_id=msg.turn_id, goal=convert.thread_goal(msg.goal)
    )
    emission = Emission("thread/goal/updated", params, Audience.BROADCAST)
    turn = state.turn
    if msg.turn_id is not None and msg.turn_id == turn.turn_id:
        turn = replace(turn, goal_continues=msg.goal.status == "active")
        state = replace(state, turn=turn)
    return Reduction(state, (emission,))


def _row_realtime_started(
    msg: RealtimeConversationStartedEvent, env: EventEnvelope, ctx: ReduceContext
) -> Any:
    params = validated(
        ThreadRealtimeStartedNotification,
        {
            "threadId": ctx.thread_id,
            "realtimeSessionId": msg.realtime_session_id,
            "version": msg.version,
        },
    )
    return "thread/realtime/started", params, _S


def _row_realtime_sdp(
    msg: RealtimeConversationSdpEvent, env: EventEnvelope, ctx: ReduceContext
) -> Any:
    params = ThreadRealtimeSdpNotification(thread_id=ctx.thread_id, sdp=msg.sdp)
    return "thread/realtime/sdp", params, _S


def _row_realtime_closed(
    msg: RealtimeConversationClosedEvent, env: EventEnvelope, ctx: ReduceContext
) -> Any:
    params = ThreadRealtimeClosedNotification(thread_id=ctx.thread_id, reason=msg.reason)
    return "thread/realtime/closed", params, _S


LIVE_MAPPED: Final[frozenset[type[Any]]] = frozenset(
    {*DELTA_ROWS, TerminalInteractionEvent, PatchApplyUpdatedEvent}
)
"""Events the stateless mapper writes on the live path (``live_mapped``)."""

ROWS: dict[type[Any], Handler] = {
    **dict.fromkeys(LIVE_MAPPED, live_mapped),
    TokenCountEvent: _token_count,
    ThreadSettingsAppliedEvent: _thread_settings,
    RealtimeConversationRealtimeEvent: _realtime,
    RawResponseItemEvent: _raw_item,
    RawResponseCompletedEvent: _raw_completed,
    TurnDiffEvent: _simple(_row_turn_diff),
    PlanUpdateEvent: _simple(_row_plan_update),
    WarningEvent: _simple(_row_warning),
    GuardianWarningEvent: _simple(_row_guardian_warning),
    HookStartedEvent: _simple(_row_hook_started),
    HookCompletedEvent: _simple(_row_hook_completed),
    McpStartupUpdateEvent: _simple(_row_mcp_startup),
    EnvironmentConnectedEvent: _simple(_row_env_connected),
    EnvironmentDisconnectedEvent: _simple(_row_env_disconnected),
    AuthRecoveryStartedEvent: _simple(_row_auth_started),
    AuthRecoveryCompletedEvent: _simple(_row_auth_completed),
    ModelRerouteEvent: _simple(_row_model_reroute),
    ModelVerificationEvent: _simple(_row_model_verification),
    TurnModerationMetadataEvent: _simple(_row_moderation),
    SafetyBufferingEvent: _simple(_row_safety_buffering),
    DeprecationNoticeEvent: _simple(_row_deprecation),
    ThreadGoalUpdatedEvent: _goal_updated,
    RealtimeConversationStartedEvent: _simple(_row_realtime_started),
    RealtimeConversationSdpEvent: _simple(_row_realtime_sdp),
    RealtimeConversationClosedEvent: _simple(_row_realtime_closed),
}
"""Event type -> row, for ``_reducer``'s dispatch table."""
