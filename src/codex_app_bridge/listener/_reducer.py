"""The per-thread reducer: ``reduce(state, envelope, ctx) -> Reduction(state, emissions, ...)``.

Role: everything the real app-server's bespoke event handling does for one core event on one
thread, as a pure function. ``ThreadState`` is immutable; a reduction returns the next state and
the notifications to send, in order, each tagged with its audience. The clock is an input
(``ReduceContext.now_ms``), never read. The stateless per-event mapping is delegated to
``codex_app_bridge.mapping``; the reducer owns only the state around it.

Boundary: no connections, no I/O, no locks (``_hub`` does the fan-out and serialization).

Rules (0.163.0; ``spec/event-mapping.md`` §2, ``spec/app-server-runtime.md`` §2.6 and §3):

* Thread status is derived from a watch ``{loaded, running, system_error}``: ``notLoaded`` when
  unloaded, ``active {activeFlags: []}`` while running, ``systemError`` after a failing error,
  else ``idle``. ``thread/status/changed`` (to every connection) is emitted only when the
  derived value changes, at the point the real server changes the watch: before ``turn/started``
  on ``task_started``, before ``turn/completed`` on ``task_complete`` / ``turn_aborted``, before
  the ``error`` notification on ``error`` (every ``error`` event marks ``systemError``, as the
  real router does before it looks at the error kind), and on ``shutdown_complete``.
* ``task_complete`` fails the turn with the error recorded by an earlier ``error`` event; when no
  ``error`` event was seen but the payload itself carries ``error`` (a rollout replay, where
  ``error`` events are not persisted) that error is used and the thread is marked
  ``systemError``. The summary item is the last completed agent message whose phase is
  ``final_answer`` or absent and whose text is not blank.
* Item lifecycle, both event generations (issue 4.4): see "The item ledger" below.
* ``guardian_assessment`` (spec §3.4): a review of a command with a target item starts a
  synthetic ``commandExecution`` item (``startedAtMs`` = ``ReduceContext.now_ms``) unless that
  command already started; a denied/aborted (timed-out) review completes it as ``declined``
  (``failed``). Core's own later ``item_started`` for the id is suppressed, as in Codex.
* Approval and other server-request events (``exec_approval_request``,
  ``apply_patch_approval_request``, ``request_user_input``, ``elicitation_request``,
  ``request_permissions``) are not reduced here: ``_server_requests`` raises them (through
  ``ThreadListener.raise_request``); given to ``reduce`` they are skipped and counted. Pending
  requests show as ``ThreadWatch`` counters (``waitingOnApproval`` / ``waitingOnUserInput``),
  which a turn's start and end clear.
* Unknown event types and events whose conversion fails are skipped and counted; the state is
  left untouched, so one bad event never stalls the thread.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

import orjson
from pydantic import JsonValue

from codex_app_bridge.listener import _convert as convert
from codex_app_bridge.listener._read_state import READ_STATE_CHANGED, ReadState
from codex_app_bridge.listener._realtime import realtime_notification
from codex_app_bridge.mapping import (
    build_command_execution_item,
    map_event,
    thread_item_from_turn_item,
)
from codex_app_bridge.protocol._base import WireModel, dump_json, dump_jsonable
from codex_app_bridge.protocol.core import (
    AgentMessageItem,
    AuthRecoveryCompletedEvent,
    AuthRecoveryStartedEvent,
    CollabAgentInteractionBeginEvent,
    CollabAgentInteractionEndEvent,
    CollabAgentSpawnBeginEvent,
    CollabAgentSpawnEndEvent,
    CollabCloseBeginEvent,
    CollabCloseEndEvent,
    CollabResumeBeginEvent,
    CollabResumeEndEvent,
    CollabWaitingBeginEvent,
    CollabWaitingEndEvent,
    DeprecationNoticeEvent,
    DynamicToolCallResponseEvent,
    EnvironmentConnectedEvent,
    EnvironmentDisconnectedEvent,
    ErrorEvent,
    EventEnvelope,
    EventMsg,
    ExecCommandBeginEvent,
    ExecCommandEndEvent,
    GuardianAssessmentEvent,
    GuardianWarningEvent,
    HookCompletedEvent,
    HookStartedEvent,
    ItemCompletedEvent,
    ItemStartedEvent,
    McpStartupUpdateEvent,
    McpToolCallBeginEvent,
    McpToolCallEndEvent,
    ModelRerouteEvent,
    ModelVerificationEvent,
    PatchApplyBeginEvent,
    PatchApplyEndEvent,
    PlanUpdateEvent,
    RawResponseCompletedEvent,
    RawResponseItemEvent,
    RealtimeConversationClosedEvent,
    RealtimeConversationRealtimeEvent,
    RealtimeConversationSdpEvent,
    RealtimeConversationStartedEvent,
    SafetyBufferingEvent,
    ShutdownCompleteEvent,
    StreamErrorEvent,
    SubAgentActivityEvent,
    TaskCompleteEvent,
    TaskStartedEvent,
    TextAgentMessageContent,
    ThreadGoalUpdatedEvent,
    ThreadSettingsAppliedEvent,
    TokenCountEvent,
    TurnAbortedEvent,
    TurnDiffEvent,
    TurnModerationMetadataEvent,
    UnknownEventMsg,
    WarningEvent,
)
from codex_app_bridge.protocol.v2 import (
    AccountRateLimitsUpdatedNotification,
    ActiveThreadStatus,
    AuthRecoveryNotification,
    CommandExecutionThreadItem,
    DeprecationNoticeNotification,
    EnvironmentConnectionNotification,
    ErrorNotification,
    GuardianWarningNotification,
    HookCompletedNotification,
    HookStartedNotification,
    IdleThreadStatus,
    ItemCompletedNotification,
    ItemGuardianApprovalReviewCompletedNotification,
    ItemGuardianApprovalReviewStartedNotification,
    ItemStartedNotification,
    McpServerStatusUpdatedNotification,
    ModelReroutedNotification,
    ModelSafetyBufferingUpdatedNotification,
    ModelVerificationNotification,
    NotLoadedThreadStatus,
    RawResponseCompletedNotification,
    SystemErrorThreadStatus,
    ThreadGoalUpdatedNotification,
    ThreadRealtimeClosedNotification,
    ThreadRealtimeSdpNotification,
    ThreadRealtimeStartedNotification,
    ThreadSettings,
    ThreadSettingsUpdatedNotification,
    ThreadStatusChangedNotification,
    ThreadTokenUsage,
    ThreadTokenUsageUpdatedNotification,
    Turn,
    TurnCompletedNotification,
    TurnDiffUpdatedNotification,
    TurnError,
    TurnModerationMetadataNotification,
    TurnPlanUpdatedNotification,
    TurnStartedNotification,
    UnknownCommandAction,
    WarningNotification,
)

__all__ = [
    "APPROVAL_EVENT_TYPES",
    "Audience",
    "Emission",
    "ReduceContext",
    "Reduction",
    "ThreadState",
    "ThreadWatch",
    "TurnSummary",
    "reduce",
    "revert_read_state",
]

ThreadStatusModel: TypeAlias = (
    NotLoadedThreadStatus | IdleThreadStatus | SystemErrorThreadStatus | ActiveThreadStatus
)
Params: TypeAlias = WireModel | dict[str, JsonValue]


class Audience(enum.Enum):
    """Who receives a notification (runtime spec §2.3)."""

    SUBSCRIBERS = "subscribers"
    """Connections subscribed to the thread (turn, item, error, token traffic)."""
    BROADCAST = "broadcast"
    """Every initialized connection (``thread/status/changed``, ``thread/goal/updated``)."""
    RAW = "raw"
    """Subscribers that opted in to raw events (``rawResponseItem/*``, ``rawResponse/*``)."""


@dataclass(frozen=True, slots=True)
class Emission:
    """One notification the reduction produced: method, params and audience."""

    method: str
    params: Params
    audience: Audience = Audience.SUBSCRIBERS

    def params_json(self) -> bytes:
        """The params as wire JSON (the model decides null versus absent)."""
        return dump_json(self.params)

    def params_dict(self) -> dict[str, Any]:
        """The params as plain JSON data (tests and the CLI compare these)."""
        loaded: dict[str, Any] = orjson.loads(self.params_json())
        return loaded


@dataclass(frozen=True, slots=True)
class ReduceContext:
    """What a reduction needs besides the state and the event."""

    thread_id: str
    now_ms: int
    """Wall clock (unix ms) of this reduction; used only for the synthetic items' timestamps."""


@dataclass(frozen=True, slots=True)
class ThreadWatch:
    """The facts the thread status is derived from (Codex ``ThreadWatchManager``)."""

    loaded: bool = True
    running: bool = False
    system_error: bool = False
    pending_approvals: int = 0
    """Approval requests (command, file change, permissions, elicitation) not answered yet."""
    pending_user_inputs: int = 0
    """``item/tool/requestUserInput`` requests not answered yet."""

    def active_flags(self) -> list[str]:
        flags: list[str] = []
        if self.pending_approvals:
            flags.append("waitingOnApproval")
        if self.pending_user_inputs:
            flags.append("waitingOnUserInput")
        return flags

    def status(self) -> ThreadStatusModel:
        if not self.loaded:
            return NotLoadedThreadStatus()
        flags = self.active_flags()
        if self.running or flags:
            return ActiveThreadStatus(active_flags=flags)  # pyright: ignore[reportArgumentType]
        if self.system_error:
            return SystemErrorThreadStatus()
        return IdleThreadStatus()

    def key(self) -> str:
        """Equal for equal statuses (``thread/status/changed`` fires when it changes)."""
        status = self.status()
        if isinstance(status, ActiveThreadStatus):
            return "active:" + ",".join(self.active_flags())
        return status.type


_EMPTY: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class TurnSummary:
    """Per-turn facts (Codex ``TurnSummary`` plus the item ledger of both generations)."""

    turn_id: str | None = None
    root_turn_id: str | None = None
    started_at: int | None = None
    last_error: TurnError | None = None
    last_agent_message: WireModel | None = None
    command_execution_started: frozenset[str] = _EMPTY
    """Command item ids whose ``item/started`` was sent (core or synthetic), until completed."""
    started_ids: frozenset[str] = _EMPTY
    """Every item id an ``item/started`` was sent for in this turn."""
    completed_ids: frozenset[str] = _EMPTY
    """Every item id an ``item/completed`` was sent for in this turn."""
    legacy_started_ids: frozenset[str] = _EMPTY
    legacy_completed_ids: frozenset[str] = _EMPTY


@dataclass(frozen=True, slots=True)
class ThreadState:
    """Everything the listener remembers about one thread."""

    watch: ThreadWatch = field(default_factory=ThreadWatch)
    turn: TurnSummary = field(default_factory=TurnSummary)
    active_turn_id: str | None = None
    first_class_kinds: frozenset[str] = _EMPTY
    """TurnItem kinds this producer has sent as ``item_started`` / ``item_completed``."""
    thread_settings: ThreadSettings | None = None
    """The settings last reported (or seeded); ``None`` until the first is seen."""
    token_usage: ThreadTokenUsage | None = None
    """The last token usage reported (what a resuming client would be replayed; the server does
    not replay it yet)."""
    read_state: ReadState = field(default_factory=ReadState)
    """``firstUnread`` and revision (``_read_state``): moved by each turn that ends completed or
    failed."""


@dataclass(frozen=True, slots=True)
class Reduction:
    """The result of reducing one event."""

    state: ThreadState
    emissions: tuple[Emission, ...] = ()
    turn_ended: bool = False
    """The event ended the active turn (``task_complete`` / ``turn_aborted``)."""
    skipped: str | None = None
    """Why the event was skipped (unknown, malformed, out of scope); ``None`` when handled."""


APPROVAL_EVENT_TYPES: frozenset[str] = frozenset(
    {
        "exec_approval_request",
        "apply_patch_approval_request",
        "request_user_input",
        "elicitation_request",
        "request_permissions",
    }
)
"""Events that become server -> client requests (R rows): out of the listener's scope."""

# legacy begin/end events and the TurnItem kind their first-class counterpart carries
_LEGACY_ITEM_KIND: dict[type[Any], str] = {
    ExecCommandBeginEvent: "CommandExecution",
    ExecCommandEndEvent: "CommandExecution",
    PatchApplyBeginEvent: "FileChange",
    PatchApplyEndEvent: "FileChange",
    McpToolCallBeginEvent: "McpToolCall",
    McpToolCallEndEvent: "McpToolCall",
    DynamicToolCallResponseEvent: "DynamicToolCall",
    CollabAgentSpawnBeginEvent: "CollabAgentToolCall",
    CollabAgentSpawnEndEvent: "CollabAgentToolCall",
    CollabAgentInteractionBeginEvent: "CollabAgentToolCall",
    CollabAgentInteractionEndEvent: "CollabAgentToolCall",
    CollabWaitingBeginEvent: "CollabAgentToolCall",
    CollabWaitingEndEvent: "CollabAgentToolCall",
    CollabCloseBeginEvent: "CollabAgentToolCall",
    CollabCloseEndEvent: "CollabAgentToolCall",
    CollabResumeBeginEvent: "CollabAgentToolCall",
    CollabResumeEndEvent: "CollabAgentToolCall",
    SubAgentActivityEvent: "SubAgentActivity",
}

# events the stateless mapper turns into a notification on the live path (deltas and friends)
_LIVE_MAPPER_TYPES: frozenset[str] = frozenset(
    {
        "agent_message_content_delta",
        "plan_delta",
        "reasoning_content_delta",
        "reasoning_raw_content_delta",
        "agent_reasoning_section_break",
        "exec_command_output_delta",
        "terminal_interaction",
        "patch_apply_updated",
    }
)


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def _status_change(before: ThreadWatch, after: ThreadWatch, thread_id: str) -> tuple[Emission, ...]:
    if before.key() == after.key():
        return ()
    params = ThreadStatusChangedNotification(thread_id=thread_id, status=after.status())
    return (Emission("thread/status/changed", params, Audience.BROADCAST),)


def _emit(method: str, params: Params) -> Emission:
    return Emission(method, params, Audience.SUBSCRIBERS)


def _validated(model: type[WireModel], data: dict[str, Any]) -> WireModel:
    return model.model_validate(data)


def _mapped(msg: EventMsg, ctx: ReduceContext, turn_id: str) -> Emission | None:
    """The stateless mapper's notification for ``msg`` as an emission (``None`` if none)."""
    mapped = map_event(msg, ctx.thread_id, turn_id)
    if mapped is None:
        return None
    return _emit(*mapped)


def _item_id(emission: Emission) -> str | None:
    """The ``params.item.id`` of an ``item/started`` / ``item/completed`` emission."""
    item: object = getattr(emission.params, "item", None)
    item_id: object = getattr(item, "id", None)
    return item_id if isinstance(item_id, str) else None


def _turn_item_id(item: object) -> str:
    """A turn item's id (an unknown item type may have none)."""
    item_id: object = getattr(item, "id", None)
    return item_id if isinstance(item_id, str) else ""


def _is_summary_message(item: AgentMessageItem) -> bool:
    """Codex's turn-summary rule: final answer (or no phase) with non-blank text."""
    if item.phase not in (None, "final_answer"):
        return False
    return any(
        isinstance(part, TextAgentMessageContent) and part.text.strip() for part in item.content
    )


def _turn(
    turn_id: str,
    *,
    root_turn_id: str | None,
    status: str,
    started_at: int | None,
    completed_at: int | None = None,
    duration_ms: int | None = None,
    error: TurnError | None = None,
    summary: WireModel | None = None,
) -> Turn:
    return Turn.model_validate(
        {
            "id": turn_id,
            "rootTurnId": root_turn_id,
            "items": [summary] if summary is not None else [],
            "itemsView": "summary" if summary is not None else "notLoaded",
            "status": status,
            "error": error,
            "startedAt": started_at,
            "completedAt": completed_at,
            "durationMs": duration_ms,
        }
    )


# ---------------------------------------------------------------------------------------------
# Turn lifecycle
# ---------------------------------------------------------------------------------------------


def _task_started(
    state: ThreadState, envelope: EventEnvelope, msg: TaskStartedEvent, ctx: ReduceContext
) -> Reduction:
    watch = replace(
        state.watch,
        loaded=True,
        running=True,
        system_error=False,
        pending_approvals=0,
        pending_user_inputs=0,
    )
    root = msg.root_turn_id
    if root is None and msg.turn_attribution is not None:
        root = msg.turn_attribution.root_turn_id
    turn = TurnSummary(turn_id=msg.turn_id, root_turn_id=root, started_at=msg.started_at)
    started = TurnStartedNotification(
        thread_id=ctx.thread_id,
        turn=_turn(msg.turn_id, root_turn_id=root, status="inProgress", started_at=msg.started_at),
    )
    emissions = (*_status_change(state.watch, watch, ctx.thread_id), _emit("turn/started", started))
    new_state = replace(state, watch=watch, turn=turn, active_turn_id=msg.turn_id)
    return Reduction(new_state, emissions)


def _turn_end(
    state: ThreadState,
    envelope: EventEnvelope,
    ctx: ReduceContext,
    *,
    status: str,
    error: TurnError | None,
    summary: WireModel | None,
    root_turn_id: str | None,
    started_at: int | None,
    completed_at: int | None,
    duration_ms: int | None,
    system_error: bool,
) -> Reduction:
    watch = replace(
        state.watch,
        running=False,
        system_error=state.watch.system_error or system_error,
        pending_approvals=0,
        pending_user_inputs=0,
    )
    completed = TurnCompletedNotification(
        thread_id=ctx.thread_id,
        turn=_turn(
            envelope.id,
            root_turn_id=root_turn_id if root_turn_id is not None else state.turn.root_turn_id,
            status=status,
            started_at=state.turn.started_at if state.turn.started_at is not None else started_at,
            completed_at=completed_at,
            duration_ms=duration_ms,
            error=error,
            summary=summary,
        ),
    )
    read_state = state.read_state
    read: tuple[Emission, ...] = ()
    if status != "interrupted":  # an interrupted turn is no unread activity (0.163.0)
        read_state = read_state.after_turn(ctx.thread_id, envelope.id)
        read = (_emit(READ_STATE_CHANGED, read_state.changed(ctx.thread_id)),)
    emissions = (
        *read,
        *_status_change(state.watch, watch, ctx.thread_id),
        _emit("turn/completed", completed),
    )
    new_state = replace(
        state, watch=watch, turn=TurnSummary(), active_turn_id=None, read_state=read_state
    )
    return Reduction(new_state, emissions, turn_ended=True)


def revert_read_state(
    state: ThreadState, kept_turn_ids: Collection[str], ctx: ReduceContext
) -> Reduction:
    """A revert kept ``kept_turn_ids``: the read state forgets a dropped unread turn."""
    after = state.read_state.after_revert(ctx.thread_id, kept_turn_ids)
    if after is None:
        return Reduction(state)
    changed = _emit(READ_STATE_CHANGED, after.changed(ctx.thread_id))
    return Reduction(replace(state, read_state=after), (changed,))


def _task_complete(
    state: ThreadState, envelope: EventEnvelope, msg: TaskCompleteEvent, ctx: ReduceContext
) -> Reduction:
    error = state.turn.last_error
    fallback = error is None and msg.error is not None
    if error is None and msg.error is not None:
        error = convert.turn_error(msg.error.message, msg.error.codex_error_info)
    return _turn_end(
        state,
        envelope,
        ctx,
        status="failed" if error is not None else "completed",
        error=error,
        summary=None if error is not None else state.turn.last_agent_message,
        root_turn_id=msg.root_turn_id,
        started_at=msg.started_at,
        completed_at=msg.completed_at,
        duration_ms=msg.duration_ms,
        system_error=fallback,
    )


def _turn_aborted(
    state: ThreadState, envelope: EventEnvelope, msg: TurnAbortedEvent, ctx: ReduceContext
) -> Reduction:
    return _turn_end(
        state,
        envelope,
        ctx,
        status="interrupted",
        error=None,
        summary=None,
        root_turn_id=msg.root_turn_id,
        started_at=msg.started_at,
        completed_at=msg.completed_at,
        duration_ms=msg.duration_ms,
        system_error=False,
    )


def _error(
    state: ThreadState, envelope: EventEnvelope, msg: ErrorEvent, ctx: ReduceContext
) -> Reduction:
    watch = replace(state.watch, running=False, system_error=True)
    status = _status_change(state.watch, watch, ctx.thread_id)
    new_state = replace(state, watch=watch)
    info = msg.codex_error_info
    if not convert.error_affects_turn_status(info):
        # a rollback failure answers the pending rollback request (server side), and a
        # non-steerable-turn error does not fail the turn: neither reaches the client
        return Reduction(new_state, status)
    extras = msg.model_extra or {}
    error = convert.turn_error(msg.message, info, misalignment=extras.get("misalignment"))
    notification = ErrorNotification(
        error=error, will_retry=False, thread_id=ctx.thread_id, turn_id=envelope.id
    )
    new_state = replace(new_state, turn=replace(new_state.turn, last_error=error))
    return Reduction(new_state, (*status, _emit("error", notification)))


def _stream_error(
    state: ThreadState, envelope: EventEnvelope, msg: StreamErrorEvent, ctx: ReduceContext
) -> Reduction:
    error = convert.turn_error(
        msg.message, msg.codex_error_info, additional_details=msg.additional_details
    )
    notification = ErrorNotification(
        error=error, will_retry=True, thread_id=ctx.thread_id, turn_id=envelope.id
    )
    return Reduction(state, (_emit("error", notification),))


def _shutdown(
    state: ThreadState, envelope: EventEnvelope, msg: ShutdownCompleteEvent, ctx: ReduceContext
) -> Reduction:
    watch = replace(state.watch, running=False, loaded=False)
    return Reduction(replace(state, watch=watch), _status_change(state.watch, watch, ctx.thread_id))


# ---------------------------------------------------------------------------------------------
# Items: both event generations
# ---------------------------------------------------------------------------------------------
#
# The item ledger (issue 4.4). Codex 0.163.0 core sends every tool item twice: as first-class
# item_started / item_completed (TurnItem) and as legacy begin/end events; older producers send
# only the legacy events. The client must see exactly one item/started and one item/completed
# per item in every case, in either arrival order:
#
# 1. First-class events are always mapped, as the real server does, except that an
#    item_started is dropped when a legacy begin already started that id (and, as in Codex, a
#    CommandExecution start is dropped while its id is in command_execution_started: an earlier
#    core or synthetic start). item_completed is dropped when a legacy end already completed
#    that id.
# 2. Seeing a first-class event of a TurnItem kind marks the kind as first-class for the rest of
#    the thread; from then on legacy events of that kind are dropped (the 0.163.0 server drops
#    them all; dropping per kind keeps older producers, which mix first-class messages with
#    legacy-only tools, working).
# 3. Otherwise a legacy event goes through the mapper, and its item/started (item/completed) is
#    sent unless that item id already got one in this turn.
#
# The ledger is per turn (reset by task_started and by the turn's end).


def _item_started(
    state: ThreadState, envelope: EventEnvelope, msg: ItemStartedEvent, ctx: ReduceContext
) -> Reduction:
    kind = msg.item.type
    item_id = _turn_item_id(msg.item)
    turn = state.turn
    kinds = state.first_class_kinds | {kind}
    suppressed = item_id in turn.legacy_started_ids
    if kind == "CommandExecution":
        suppressed = suppressed or item_id in turn.command_execution_started
        turn = replace(turn, command_execution_started=turn.command_execution_started | {item_id})
    emissions: tuple[Emission, ...] = ()
    if not suppressed:
        emission = _mapped(msg, ctx, envelope.id)
        if emission is not None:
            emissions = (emission,)
            turn = replace(turn, started_ids=turn.started_ids | {item_id})
    return Reduction(replace(state, turn=turn, first_class_kinds=kinds), emissions)


def _item_completed(
    state: ThreadState, envelope: EventEnvelope, msg: ItemCompletedEvent, ctx: ReduceContext
) -> Reduction:
    kind = msg.item.type
    item_id = _turn_item_id(msg.item)
    turn = state.turn
    kinds = state.first_class_kinds | {kind}
    if kind == "CommandExecution":
        turn = replace(turn, command_execution_started=turn.command_execution_started - {item_id})
    if isinstance(msg.item, AgentMessageItem) and _is_summary_message(msg.item):
        turn = replace(turn, last_agent_message=thread_item_from_turn_item(msg.item))
    emissions: tuple[Emission, ...] = ()
    if item_id not in turn.legacy_completed_ids:
        emission = _mapped(msg, ctx, envelope.id)
        if emission is not None:
            emissions = (emission,)
            turn = replace(turn, completed_ids=turn.completed_ids | {item_id})
    return Reduction(replace(state, turn=turn, first_class_kinds=kinds), emissions)


def _legacy_item(
    state: ThreadState, envelope: EventEnvelope, msg: EventMsg, ctx: ReduceContext
) -> Reduction:
    if _LEGACY_ITEM_KIND[type(msg)] in state.first_class_kinds:
        return Reduction(state)
    emission = _mapped(msg, ctx, envelope.id)
    if emission is None:
        return Reduction(state)
    item_id = _item_id(emission)
    if item_id is None:
        return Reduction(state, (emission,))
    turn = state.turn
    if emission.method == "item/started":
        if item_id in turn.started_ids or item_id in turn.command_execution_started:
            return Reduction(state)
        turn = replace(
            turn,
            started_ids=turn.started_ids | {item_id},
            legacy_started_ids=turn.legacy_started_ids | {item_id},
        )
    elif emission.method == "item/completed":
        if item_id in turn.completed_ids:
            return Reduction(state)
        turn = replace(
            turn,
            completed_ids=turn.completed_ids | {item_id},
            legacy_completed_ids=turn.legacy_completed_ids | {item_id},
            command_execution_started=turn.command_execution_started - {item_id},
        )
    return Reduction(replace(state, turn=turn), (emission,))


def _live_mapped(
    state: ThreadState, envelope: EventEnvelope, msg: EventMsg, ctx: ReduceContext
) -> Reduction:
    emission = _mapped(msg, ctx, envelope.id)
    return Reduction(state, (emission,) if emission is not None else ())


# ---------------------------------------------------------------------------------------------
# One-to-one bespoke rows
# ---------------------------------------------------------------------------------------------


def _token_count(
    state: ThreadState, envelope: EventEnvelope, msg: TokenCountEvent, ctx: ReduceContext
) -> Reduction:
    emissions: list[Emission] = []
    usage = state.token_usage
    if msg.info is not None:
        usage = convert.token_usage(msg.info)
        params = ThreadTokenUsageUpdatedNotification(
            thread_id=ctx.thread_id, turn_id=envelope.id, token_usage=usage
        )
        emissions.append(_emit("thread/tokenUsage/updated", params))
    if msg.rate_limits is not None:
        params_rl = AccountRateLimitsUpdatedNotification(
            rate_limits=convert.rate_limits(msg.rate_limits)
        )
        emissions.append(_emit("account/rateLimits/updated", params_rl))
    return Reduction(replace(state, token_usage=usage), tuple(emissions))


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
    return Reduction(new_state, (_emit("thread/settings/updated", params),))


def _guardian_item(msg: GuardianAssessmentEvent, status: str) -> CommandExecutionThreadItem | None:
    """The command item a guardian review of a command is about (Codex
    ``build_item_from_guardian_event``): only ``command`` and ``execve`` actions with a target
    item id have one. An ``execve`` argv is shown shell-quoted with one ``unknown`` action (Codex
    parses it with its bash parser, which this bridge does not port)."""
    action = msg.action
    if msg.target_item_id is None or not isinstance(action, dict):
        return None
    extras = msg.model_extra or {}
    plugin_id = extras.get("plugin_id")
    script_path = extras.get("script_path")
    kind = action.get("type")
    if kind == "command" and isinstance(action.get("command"), str):
        command = str(action["command"])
        return CommandExecutionThreadItem.model_validate(
            {
                "id": msg.target_item_id,
                "command": command,
                "cwd": action.get("cwd"),
                "commandActions": [{"type": "unknown", "command": command}],
                "processId": None,
                "source": "agent",
                "status": status,
                "aggregatedOutput": None,
                "exitCode": None,
                "durationMs": None,
                "pluginId": plugin_id,
                "scriptPath": script_path,
            }
        )
    if kind == "execve" and isinstance(action.get("program"), str):
        program = str(action["program"])
        raw_argv = action.get("argv")
        rest = [str(a) for a in raw_argv[1:]] if isinstance(raw_argv, list) else []
        item = build_command_execution_item(
            item_id=msg.target_item_id,
            argv=[program, *rest],
            cwd=str(action.get("cwd", "")),
            parsed_cmd=[],
            source="agent",
            status=status,  # pyright: ignore[reportArgumentType]
            plugin_id=plugin_id if isinstance(plugin_id, str) else None,
            script_path=script_path if isinstance(script_path, str) else None,
        )
        return item.model_copy(
            update={"command_actions": [UnknownCommandAction(command=item.command)]}
        )
    return None


_GUARDIAN_COMPLETION: dict[str, str] = {
    "denied": "declined",
    "aborted": "declined",
    "timed_out": "failed",
}


def _guardian_assessment(
    state: ThreadState, envelope: EventEnvelope, msg: GuardianAssessmentEvent, ctx: ReduceContext
) -> Reduction:
    """An automatic approval review (spec §3.4): a synthetic command start while in progress,
    the review notification, and a synthetic completion when the command will not run."""
    turn_id = msg.turn_id or envelope.id
    turn = state.turn
    emissions: list[Emission] = []
    in_progress = msg.status == "in_progress"
    if in_progress:
        item = _guardian_item(msg, "inProgress")
        if item is not None and msg.target_item_id not in turn.command_execution_started:
            target = str(msg.target_item_id)
            started = ItemStartedNotification(
                item=item, thread_id=ctx.thread_id, turn_id=turn_id, started_at_ms=ctx.now_ms
            )
            emissions.append(_emit("item/started", started))
            turn = replace(
                turn,
                command_execution_started=turn.command_execution_started | {target},
                started_ids=turn.started_ids | {target},
            )
    common: dict[str, Any] = {
        "threadId": ctx.thread_id,
        "turnId": turn_id,
        "reviewId": msg.id,
        "startedAtMs": msg.started_at_ms,
        "targetItemId": msg.target_item_id,
        "review": convert.guardian_review(msg),
        "action": convert.guardian_action(msg.action),
    }
    if in_progress:
        params = _validated(ItemGuardianApprovalReviewStartedNotification, common)
        emissions.append(_emit("item/autoApprovalReview/started", params))
    else:
        completed_at = msg.completed_at_ms if msg.completed_at_ms is not None else msg.started_at_ms
        params = _validated(
            ItemGuardianApprovalReviewCompletedNotification,
            {
                **common,
                "completedAtMs": completed_at,
                "decisionSource": convert.camel(msg.decision_source or "agent"),
            },
        )
        emissions.append(_emit("item/autoApprovalReview/completed", params))
    completion = _GUARDIAN_COMPLETION.get(msg.status)
    target_id = msg.target_item_id
    if (
        completion is not None
        and target_id is not None
        and target_id in turn.command_execution_started
    ):
        item = _guardian_item(msg, completion)
        if item is not None:
            done = ItemCompletedNotification(
                item=item, thread_id=ctx.thread_id, turn_id=turn_id, completed_at_ms=ctx.now_ms
            )
            emissions.append(_emit("item/completed", done))
            turn = replace(
                turn,
                command_execution_started=turn.command_execution_started - {target_id},
                completed_ids=turn.completed_ids | {target_id},
            )
    return Reduction(replace(state, turn=turn), tuple(emissions))


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
    return Reduction(state, (_emit(method, params),))


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
    params = _validated(
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
    params = _validated(
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
    params = _validated(
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


def _row_goal(msg: ThreadGoalUpdatedEvent, env: EventEnvelope, ctx: ReduceContext) -> Any:
    params = ThreadGoalUpdatedNotification(
        thread_id=msg.thread_id, turn_id=msg.turn_id, goal=convert.thread_goal(msg.goal)
    )
    return "thread/goal/updated", params, Audience.BROADCAST


def _row_realtime_started(
    msg: RealtimeConversationStartedEvent, env: EventEnvelope, ctx: ReduceContext
) -> Any:
    params = _validated(
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


_Handler: TypeAlias = Callable[[ThreadState, EventEnvelope, Any, ReduceContext], Reduction]

_HANDLERS: dict[type[Any], _Handler] = {
    TaskStartedEvent: _task_started,
    TaskCompleteEvent: _task_complete,
    TurnAbortedEvent: _turn_aborted,
    ErrorEvent: _error,
    StreamErrorEvent: _stream_error,
    ShutdownCompleteEvent: _shutdown,
    ItemStartedEvent: _item_started,
    ItemCompletedEvent: _item_completed,
    TokenCountEvent: _token_count,
    ThreadSettingsAppliedEvent: _thread_settings,
    GuardianAssessmentEvent: _guardian_assessment,
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
    ThreadGoalUpdatedEvent: _simple(_row_goal),
    RealtimeConversationStartedEvent: _simple(_row_realtime_started),
    RealtimeConversationSdpEvent: _simple(_row_realtime_sdp),
    RealtimeConversationClosedEvent: _simple(_row_realtime_closed),
}
_HANDLERS.update(dict.fromkeys(_LEGACY_ITEM_KIND, _legacy_item))


def reduce(state: ThreadState, envelope: EventEnvelope, ctx: ReduceContext) -> Reduction:
    """Reduce one event. Never raises: a bad, unknown or out-of-scope event is skipped.

    A skipped event leaves the state as it was and gives ``Reduction.skipped`` its reason.
    """
    msg = envelope.msg
    if isinstance(msg, UnknownEventMsg):
        return Reduction(state, skipped=f"unknown event type {msg.type!r}")
    if msg.type in APPROVAL_EVENT_TYPES:
        return Reduction(state, skipped=f"{msg.type}: server requests are not handled here")
    if msg.type in _LIVE_MAPPER_TYPES:
        handler: _Handler | None = _live_mapped
    else:
        handler = _HANDLERS.get(type(msg))
    if handler is None:
        # a known event the live v2 path ignores (legacy messages, session_configured, ...)
        return Reduction(state)
    try:
        return handler(state, envelope, msg, ctx)
    except Exception as exc:  # one bad event must never stall the thread
        return Reduction(state, skipped=f"{msg.type}: {type(exc).__name__}: {exc}")
