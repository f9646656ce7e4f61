"""Codex core ``EventMsg``: every event core emits, as hand-written pydantic models.

Role: the input contract of the bridge on the core side. An event is internally tagged on
``type`` (snake_case) with its payload flattened next to the tag, e.g.
``{"type": "agent_message_content_delta", "item_id": "m1", "delta": "Hel", ...}``.
``EventMsg`` is the union of one model per variant; an unknown ``type`` parses into
``UnknownEventMsg``, which keeps every field and writes it back unchanged (never rejected).

Boundary: models and the small pure helpers that belong to them (base64 ``chunk`` decoding,
``AgentStatus`` kinds, MCP result success). Shapes shared with turn items (``Duration`` with its
whole-millisecond helpers, ``FileChange``, ``ParsedCommand``, ...) come from ``_turn_item``. No
mapping to v2 notifications here.

Where the shapes come from, in order of trust:

1. Real codex-cli 0.163.0 rollouts (``tests/data/captures``): ``task_started``,
   ``task_complete``, ``turn_aborted``, ``token_count``, ``thread_settings_applied``,
   ``item_completed``. Round-trip tests over every captured line prove these.
2. The 0.163.0 binary: the variant names and, per payload struct, the field names and counts.
3. ``openai/codex`` ``protocol.rs`` and its split-out successors (several stored versions),
   for payload fields and their serde attributes.

Null versus absent (see ``docs/architecture.md``): a field the Rust side marks
``skip_serializing_if = "Option::is_none"`` is declared with ``omit_none()`` and left out when
``None``; every other field is always written (``None`` as ``null``). A field whose presence in
0.163.0 is uncertain (the binary's field count disagrees with the sources) is also declared with
``omit_none()``, which round-trips both shapes unless a producer writes an explicit ``null``.
Fields we do not declare at all are still kept verbatim (``extra="allow"``). Open-ended enums
(statuses, reasons, sources) are plain ``str`` so that a value added by a newer Codex does not
reject the whole event.
"""

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Self, TypeAlias

from pydantic import BaseModel, Field, JsonValue, Tag, TypeAdapter

from codex_app_bridge.protocol._base import CoreModel, is_none, omit_none, union_adapter
from codex_app_bridge.protocol._tagged import (
    UNKNOWN_TAG,
    tagged_discriminator,
    variant_models,
    variant_tags,
)
from codex_app_bridge.protocol.core._response_item import (
    MessagePhase,
    ResponseItem,
    WebSearchAction,
)
from codex_app_bridge.protocol.core._turn_item import (
    Duration,
    DynamicToolCallOutputContentItem,
    FileChange,
    MemoryCitation,
    ParsedCommand,
    TurnItem,
)
from codex_app_bridge.protocol.core._user_input import TextElement

__all__ = [
    "EVENT_MSG_ADAPTER",
    "EVENT_MSG_TAGS",
    "AgentMessageContentDeltaEvent",
    "AgentMessageEvent",
    "AgentReasoningEvent",
    "AgentReasoningRawContentEvent",
    "AgentReasoningSectionBreakEvent",
    "AgentStatus",
    "AgentStatusCompleted",
    "AgentStatusErrored",
    "ApplyPatchApprovalRequestEvent",
    "AuthRecoveryCompletedEvent",
    "AuthRecoveryStartedEvent",
    "CodexErrorInfo",
    "CollabAgentInteractionBeginEvent",
    "CollabAgentInteractionEndEvent",
    "CollabAgentRef",
    "CollabAgentSpawnBeginEvent",
    "CollabAgentSpawnEndEvent",
    "CollabAgentStatusEntry",
    "CollabCloseBeginEvent",
    "CollabCloseEndEvent",
    "CollabResumeBeginEvent",
    "CollabResumeEndEvent",
    "CollabWaitingBeginEvent",
    "CollabWaitingEndEvent",
    "CompactedEvent",
    "ContextCompactedEvent",
    "CreditsSnapshot",
    "DeprecationNoticeEvent",
    "DynamicToolCallRequestEvent",
    "DynamicToolCallResponseEvent",
    "ElicitationAbandonedEvent",
    "ElicitationRequestEvent",
    "EnteredReviewModeEvent",
    "EnvironmentConnectedEvent",
    "EnvironmentDisconnectedEvent",
    "ErrorEvent",
    "EventMsg",
    "ExecApprovalRequestEvent",
    "ExecCommandBeginEvent",
    "ExecCommandEndEvent",
    "ExecCommandOutputDeltaEvent",
    "ExitedReviewModeEvent",
    "GuardianAssessmentEvent",
    "GuardianWarningEvent",
    "HookCompletedEvent",
    "HookRunSummary",
    "HookStartedEvent",
    "ImageGenerationBeginEvent",
    "ImageGenerationEndEvent",
    "ItemCompletedEvent",
    "ItemStartedEvent",
    "McpInvocation",
    "McpStartupCompleteEvent",
    "McpStartupFailure",
    "McpStartupStatus",
    "McpStartupUpdateEvent",
    "McpToolCallBeginEvent",
    "McpToolCallEndEvent",
    "McpToolCallErr",
    "McpToolCallOk",
    "ModelRerouteEvent",
    "ModelVerificationEvent",
    "PatchApplyBeginEvent",
    "PatchApplyEndEvent",
    "PatchApplyUpdatedEvent",
    "PlanDeltaEvent",
    "PlanItemArg",
    "PlanUpdateEvent",
    "RateLimitSnapshot",
    "RateLimitWindow",
    "RawResponseCompletedEvent",
    "RawResponseItemEvent",
    "RealtimeConversationClosedEvent",
    "RealtimeConversationListVoicesResponseEvent",
    "RealtimeConversationRealtimeEvent",
    "RealtimeConversationSdpEvent",
    "RealtimeConversationStartedEvent",
    "ReasoningContentDeltaEvent",
    "ReasoningRawContentDeltaEvent",
    "RequestPermissionsEvent",
    "RequestUserInputEvent",
    "SafetyBufferingEvent",
    "SessionConfiguredEvent",
    "ShutdownCompleteEvent",
    "SpendControlLimitSnapshot",
    "StreamErrorEvent",
    "SubAgentActivityEvent",
    "TaskCompleteEvent",
    "TaskError",
    "TaskStartedEvent",
    "TerminalInteractionEvent",
    "ThreadGoal",
    "ThreadGoalUpdatedEvent",
    "ThreadNameUpdatedEvent",
    "ThreadQueueChangedEvent",
    "ThreadRolledBackEvent",
    "ThreadSettingsAppliedEvent",
    "ThreadSettingsSnapshot",
    "TokenCountEvent",
    "TokenUsage",
    "TokenUsageInfo",
    "TokenUsageRecord",
    "TokenUsageRecordEvent",
    "TurnAbortedEvent",
    "TurnAttribution",
    "TurnDiffEvent",
    "TurnModerationMetadataEvent",
    "UnknownEventMsg",
    "UserMessageEvent",
    "ViewImageToolCallEvent",
    "WarningEvent",
    "WebSearchBeginEvent",
    "WebSearchEndEvent",
    "WorldStateEvent",
    "agent_status_kind",
    "agent_status_message",
    "dump_event_msg",
    "parse_event_msg",
    "validate_event_msg",
]


# ---------------------------------------------------------------------------------------------
# Shared payload building blocks
# ---------------------------------------------------------------------------------------------


class AgentStatusCompleted(CoreModel):
    """``{"completed": <final message or null>}``: the agent finished."""

    completed: str | None


class AgentStatusErrored(CoreModel):
    """``{"errored": <message>}``: the agent failed."""

    errored: str


AgentStatus = Annotated[
    AgentStatusCompleted | AgentStatusErrored | str | dict[str, JsonValue],
    Field(union_mode="left_to_right"),
]
"""Core ``AgentStatus``, serde's externally tagged form.

Unit variants are bare strings (``"pending_init"``, ``"running"``, ``"interrupted"``,
``"shutdown"``, ``"not_found"``); data variants are one-key objects (``{"completed": "msg"}``,
``{"completed": null}``, ``{"errored": "msg"}``). Any other object is kept as a plain dict.
"""


def agent_status_kind(status: AgentStatus) -> str:
    """The snake_case variant name of an ``AgentStatus`` (``"completed"``, ``"running"``, ...)."""
    if isinstance(status, AgentStatusCompleted):
        return "completed"
    if isinstance(status, AgentStatusErrored):
        return "errored"
    if isinstance(status, str):
        return status
    return next(iter(status), "")


def agent_status_message(status: AgentStatus) -> str | None:
    """The message carried by ``completed`` / ``errored``; ``None`` for every other status."""
    if isinstance(status, AgentStatusCompleted):
        return status.completed
    if isinstance(status, AgentStatusErrored):
        return status.errored
    return None


CodexErrorInfo: TypeAlias = str | dict[str, JsonValue]
"""Core ``CodexErrorInfo``: a snake_case string (``"internal_server_error"``) or a one-key object
(``{"response_stream_disconnected": {"http_status_code": null}}``)."""


class TaskError(CoreModel):
    """The error a failed turn carries on ``task_complete.error`` (0.163.0)."""

    message: str
    codex_error_info: CodexErrorInfo | None = None


class TurnAttribution(CoreModel):
    """What caused a turn (0.163.0 ``task_started.turn_attribution``); all fields nullable."""

    turn_id: str | None = None
    turn_trigger: JsonValue = None
    parent_turn_id: str | None = None
    initiating_agent_path: str | None = None
    root_turn_id: str | None = None


class TokenUsage(CoreModel):
    """Token counts of one response, one turn or a whole thread."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0
    total_tokens: int = 0


class TokenUsageInfo(CoreModel):
    """Running totals plus the last response's usage, as ``token_count.info`` carries them."""

    total_token_usage: TokenUsage
    last_token_usage: TokenUsage
    model_context_window: int | None = None


class RateLimitWindow(CoreModel):
    """One rate-limit window: percent used, its length and when it resets."""

    used_percent: float
    window_minutes: int | None = None
    resets_at: int | None = None


class CreditsSnapshot(CoreModel):
    """The account's credit state."""

    has_credits: bool
    unlimited: bool
    balance: str | None = None


class SpendControlLimitSnapshot(CoreModel):
    """An individual spend-control limit."""

    limit: str
    used: str
    remaining_percent: int
    resets_at: int


class RateLimitSnapshot(CoreModel):
    """``token_count.rate_limits`` (0.163.0 writes every field, ``null`` when unknown)."""

    limit_id: str | None = None
    limit_name: str | None = None
    normal_model_slug: str | None = omit_none()
    primary: RateLimitWindow | None = None
    secondary: RateLimitWindow | None = None
    credits: CreditsSnapshot | None = None
    individual_limit: SpendControlLimitSnapshot | None = None
    spend_control_reached: JsonValue = None
    plan_type: str | None = None
    rate_limit_reached_type: str | None = None


class ThreadSettingsSnapshot(CoreModel):
    """The effective thread settings after an override was applied (0.163.0 shape).

    Policy objects (``approval_policy``, ``permission_profile``, ``collaboration_mode``) are kept
    as JSON; they are passed through to ``thread/settings/updated`` by the mapper.
    """

    model: str
    model_provider_id: str
    service_tier: str | None = omit_none()
    approval_policy: JsonValue
    approvals_reviewer: str | None = None
    permission_profile: JsonValue
    active_permission_profile: JsonValue = omit_none()
    cwd: str
    runtime_workspace_roots: list[str] | None = omit_none()
    reasoning_effort: str | None = omit_none()
    reasoning_summary: str | None = omit_none()
    personality: str | None = omit_none()
    collaboration_mode: JsonValue
    disabled_plugin_ids: list[str] = Field(default_factory=list[str])


class McpInvocation(CoreModel):
    """Which MCP tool was called, with its arguments (``null`` when none)."""

    server: str
    tool: str
    arguments: JsonValue = None


class McpToolCallOk(CoreModel):
    """``{"Ok": CallToolResult}``: the MCP server answered (it may still flag ``isError``)."""

    ok: dict[str, JsonValue] = Field(alias="Ok")


class McpToolCallErr(CoreModel):
    """``{"Err": "message"}``: the call failed before the server answered."""

    err: str = Field(alias="Err")


class McpStartupStatus(CoreModel):
    """MCP server startup state, internally tagged on ``state``.

    ``starting`` / ``ready`` / ``cancelled`` / ``failed`` (with ``error``).
    """

    state: str
    error: str | None = omit_none()


class McpStartupFailure(CoreModel):
    """One MCP server that failed to start."""

    server: str
    error: str


class CollabAgentRef(CoreModel):
    """A receiver agent of a collab wait, with its optional nickname and role."""

    thread_id: str
    agent_nickname: str | None = omit_none()
    agent_role: str | None = omit_none()


class CollabAgentStatusEntry(CoreModel):
    """A receiver agent of a collab wait with its final status."""

    thread_id: str
    agent_nickname: str | None = omit_none()
    agent_role: str | None = omit_none()
    status: AgentStatus


class HookRunSummary(CoreModel):
    """One hook run (``hook_started`` / ``hook_completed``); enums kept as strings."""

    id: str
    event_name: str
    handler_type: str
    execution_mode: str
    scope: str
    source_path: str
    source: str = "unknown"
    display_order: int
    status: str
    status_message: str | None = None
    started_at: int
    completed_at: int | None = None
    duration_ms: int | None = None
    entries: list[dict[str, JsonValue]] = Field(default_factory=list[dict[str, JsonValue]])


class ThreadGoal(CoreModel):
    """A thread's long-running goal (camelCase on the wire, unlike most core payloads)."""

    thread_id: str = Field(alias="threadId")
    objective: str
    status: str
    token_budget: int | None = Field(default=None, alias="tokenBudget", exclude_if=is_none)
    tokens_used: int = Field(alias="tokensUsed")
    time_used_seconds: int = Field(alias="timeUsedSeconds")
    created_at: int = Field(alias="createdAt")
    updated_at: int = Field(alias="updatedAt")


class PlanItemArg(CoreModel):
    """One step of an ``update_plan`` call (Rust ``PlanItemArg``)."""

    step: str
    status: str


# ---------------------------------------------------------------------------------------------
# EventMsg variants, in the order of the Rust enum
# ---------------------------------------------------------------------------------------------


class ErrorEvent(CoreModel):
    """``error``: a turn-level failure; becomes the v2 ``error`` notification."""

    type: Literal["error"] = "error"
    message: str
    codex_error_info: CodexErrorInfo | None = None


class WarningEvent(CoreModel):
    """``warning``: the turn continued, but the user should be told."""

    type: Literal["warning"] = "warning"
    message: str


class GuardianWarningEvent(CoreModel):
    """``guardian_warning``: a warning from the automatic approval reviewer."""

    type: Literal["guardian_warning"] = "guardian_warning"
    message: str


class RealtimeConversationStartedEvent(CoreModel):
    """``realtime_conversation_started``."""

    type: Literal["realtime_conversation_started"] = "realtime_conversation_started"
    realtime_session_id: str | None = None
    version: str = "v2"


class RealtimeConversationRealtimeEvent(CoreModel):
    """``realtime_conversation_realtime``: one streaming realtime payload (kept as JSON)."""

    type: Literal["realtime_conversation_realtime"] = "realtime_conversation_realtime"
    payload: JsonValue


class RealtimeConversationClosedEvent(CoreModel):
    """``realtime_conversation_closed``."""

    type: Literal["realtime_conversation_closed"] = "realtime_conversation_closed"
    reason: str | None = omit_none()


class RealtimeConversationSdpEvent(CoreModel):
    """``realtime_conversation_sdp``: a WebRTC session description."""

    type: Literal["realtime_conversation_sdp"] = "realtime_conversation_sdp"
    sdp: str


class ModelRerouteEvent(CoreModel):
    """``model_reroute``: the backend served the turn with another model."""

    type: Literal["model_reroute"] = "model_reroute"
    from_model: str
    to_model: str
    reason: str


class ModelVerificationEvent(CoreModel):
    """``model_verification``: the backend recommends extra account verification."""

    type: Literal["model_verification"] = "model_verification"
    verifications: list[str]


class TurnModerationMetadataEvent(CoreModel):
    """``turn_moderation_metadata``: opaque moderation metadata for the turn."""

    type: Literal["turn_moderation_metadata"] = "turn_moderation_metadata"
    metadata: JsonValue


class SafetyBufferingEvent(CoreModel):
    """``safety_buffering``: output is being buffered for a safety check."""

    type: Literal["safety_buffering"] = "safety_buffering"
    model: str
    use_cases: list[str] = Field(default_factory=list[str])
    reasons: list[str] = Field(default_factory=list[str])
    show_buffering_ui: bool = False
    faster_model: str | None = None


class ContextCompactedEvent(CoreModel):
    """``context_compacted``: history was compacted (a unit payload)."""

    type: Literal["context_compacted"] = "context_compacted"


class CompactedEvent(CoreModel):
    """``compacted``: the bridge's own event for a compaction's new history (not a core
    ``EventMsg``; core writes this straight to its rollout as a ``compacted`` line). A model
    source emits it where core records the compaction; storage writes it as that line and the
    thread's model history is replaced by ``replacement_history`` (``None``: rebuilt from the
    user messages and ``message``, as for an older rollout). Clients are never told of it."""

    type: Literal["compacted"] = "compacted"
    message: str
    replacement_history: list[ResponseItem] | None = omit_none()


class TokenUsageRecord(CoreModel):
    """A ``token_usage_record`` rollout line's payload: usage of one model response, with
    turn/thread totals."""

    thread_id: str
    turn_id: str | None = None
    session_id: str | None = None
    root_turn_id: str | None = None
    response_id: str | None = None
    usage: TokenUsage
    turn_token_usage: TokenUsage
    thread_token_usage: TokenUsage


class TokenUsageRecordEvent(TokenUsageRecord):
    """``token_usage_record``: the bridge's own event for one model response's usage (not a core
    ``EventMsg``: core writes this straight to its rollout as a ``token_usage_record`` line,
    after the response's items and before its ``token_count``). A model source emits it where
    core records it; storage writes its :class:`TokenUsageRecord` as that line. Clients are
    never told of it."""

    type: Literal["token_usage_record"] = "token_usage_record"


class WorldStateEvent(CoreModel):
    """``world_state``: the bridge's own event for the model-visible state a context baseline
    records (not a core ``EventMsg``: core writes it to its rollout as a ``world_state`` line
    after a turn's initial context, and after a compaction, followed by the ``turn_context``).
    ``state`` is the source's own (hashes of its own instruction texts). Clients are never
    told of it."""

    type: Literal["world_state"] = "world_state"
    full: bool
    state: JsonValue


class ThreadRolledBackEvent(CoreModel):
    """``thread_rolled_back``: the last ``num_turns`` user turns were dropped from context."""

    type: Literal["thread_rolled_back"] = "thread_rolled_back"
    num_turns: int


class TaskStartedEvent(CoreModel):
    """``task_started`` (Rust ``TurnStarted``; ``turn_started`` accepted as an input alias).

    0.163.0 shape: ``turn_attribution``, ``turn_id``, ``root_turn_id``, ``started_at`` (Unix
    seconds), ``model_context_window``, ``collaboration_mode_kind``; ``trace_id`` when set.
    """

    type: Literal["task_started", "turn_started"] = "task_started"
    turn_attribution: TurnAttribution | None = omit_none()
    turn_id: str
    root_turn_id: str | None = omit_none()
    trace_id: str | None = omit_none()
    started_at: int | None = omit_none()
    model_context_window: int | None = None
    collaboration_mode_kind: str = "default"


class ThreadSettingsAppliedEvent(CoreModel):
    """``thread_settings_applied``: settings in force after a submission's overrides."""

    type: Literal["thread_settings_applied"] = "thread_settings_applied"
    thread_id: str | None = omit_none()
    thread_settings: ThreadSettingsSnapshot


class TaskCompleteEvent(CoreModel):
    """``task_complete`` (Rust ``TurnComplete``; ``turn_complete`` accepted as an input alias).

    ``error`` is present only when the turn failed (0.163.0).
    """

    type: Literal["task_complete", "turn_complete"] = "task_complete"
    root_turn_id: str | None = omit_none()
    turn_id: str
    last_agent_message: str | None = None
    error: TaskError | None = omit_none()
    started_at: int | None = omit_none()
    completed_at: int | None = omit_none()
    duration_ms: int | None = omit_none()
    time_to_first_token_ms: int | None = omit_none()


class TokenCountEvent(CoreModel):
    """``token_count``: usage totals (``info``) and rate limits; either may be ``null``."""

    type: Literal["token_count"] = "token_count"
    info: TokenUsageInfo | None = None
    rate_limits: RateLimitSnapshot | None = None


class AgentMessageEvent(CoreModel):
    """``agent_message``: legacy whole assistant message (the live v2 path ignores it)."""

    type: Literal["agent_message"] = "agent_message"
    message: str
    phase: MessagePhase | str | None = None
    memory_citation: MemoryCitation | None = None


class UserMessageEvent(CoreModel):
    """``user_message``: legacy user input event (the live v2 path ignores it).

    Only the fields whose serialization is stable across versions are declared; image detail
    lists and newer attachments stay verbatim in the extras.
    """

    type: Literal["user_message"] = "user_message"
    message: str
    images: list[str] | None = omit_none()
    local_images: list[str] = Field(default_factory=list[str])
    text_elements: list[TextElement] = Field(default_factory=list[TextElement])


class AgentReasoningEvent(CoreModel):
    """``agent_reasoning``: legacy reasoning summary text."""

    type: Literal["agent_reasoning"] = "agent_reasoning"
    text: str


class AgentReasoningRawContentEvent(CoreModel):
    """``agent_reasoning_raw_content``: legacy raw reasoning text."""

    type: Literal["agent_reasoning_raw_content"] = "agent_reasoning_raw_content"
    text: str


class AgentReasoningSectionBreakEvent(CoreModel):
    """``agent_reasoning_section_break``: a new reasoning summary part begins."""

    type: Literal["agent_reasoning_section_break"] = "agent_reasoning_section_break"
    item_id: str = ""
    summary_index: int = 0


class SessionConfiguredEvent(CoreModel):
    """``session_configured``: acknowledges a thread's configuration (live v2 ignores it).

    ``initial_messages`` (earlier events of a resumed session) is kept as raw JSON.
    """

    type: Literal["session_configured"] = "session_configured"
    session_id: str
    thread_id: str | None = omit_none()
    forked_from_id: str | None = omit_none()
    thread_source: str | None = omit_none()
    thread_name: str | None = omit_none()
    model: str
    model_provider_id: str
    service_tier: str | None = omit_none()
    approval_policy: JsonValue
    approvals_reviewer: str | None = omit_none()
    permission_profile: JsonValue = omit_none()
    active_permission_profile: JsonValue = omit_none()
    cwd: str
    reasoning_effort: str | None = omit_none()
    initial_messages: list[JsonValue] | None = omit_none()
    network_proxy: JsonValue = omit_none()
    rollout_path: str | None = omit_none()


class ThreadGoalUpdatedEvent(CoreModel):
    """``thread_goal_updated`` (camelCase payload fields, like ``ThreadGoal``)."""

    type: Literal["thread_goal_updated"] = "thread_goal_updated"
    thread_id: str = Field(alias="threadId")
    turn_id: str | None = Field(default=None, alias="turnId", exclude_if=is_none)
    goal: ThreadGoal


class ThreadQueueChangedEvent(CoreModel):
    """``thread_queue_changed``: the thread's input queue changed (payload kept verbatim)."""

    type: Literal["thread_queue_changed"] = "thread_queue_changed"


class McpStartupUpdateEvent(CoreModel):
    """``mcp_startup_update``: one MCP server's startup progress."""

    type: Literal["mcp_startup_update"] = "mcp_startup_update"
    server: str
    status: McpStartupStatus


class McpStartupCompleteEvent(CoreModel):
    """``mcp_startup_complete``: summary once every MCP server settled."""

    type: Literal["mcp_startup_complete"] = "mcp_startup_complete"
    ready: list[str] = Field(default_factory=list[str])
    failed: list[McpStartupFailure] = Field(default_factory=list[McpStartupFailure])
    cancelled: list[str] | None = omit_none()


class McpToolCallBeginEvent(CoreModel):
    """``mcp_tool_call_begin`` (legacy item event; live v2 uses ``item_started``)."""

    type: Literal["mcp_tool_call_begin"] = "mcp_tool_call_begin"
    call_id: str
    invocation: McpInvocation
    mcp_app_resource_uri: str | None = omit_none()
    plugin_id: str | None = omit_none()


class McpToolCallEndEvent(CoreModel):
    """``mcp_tool_call_end``: ``result`` is Rust ``Result`` JSON, ``{"Ok": ...}`` or ``{"Err": ...}``."""

    type: Literal["mcp_tool_call_end"] = "mcp_tool_call_end"
    call_id: str
    invocation: McpInvocation
    mcp_app_resource_uri: str | None = omit_none()
    plugin_id: str | None = omit_none()
    duration: Duration
    result: Annotated[McpToolCallOk | McpToolCallErr | JsonValue, Field(union_mode="left_to_right")]

    def is_success(self) -> bool:
        """``Ok`` and not flagged ``isError`` by the server."""
        return isinstance(self.result, McpToolCallOk) and self.result.ok.get("isError") is not True


class WebSearchBeginEvent(CoreModel):
    """``web_search_begin``."""

    type: Literal["web_search_begin"] = "web_search_begin"
    call_id: str


class WebSearchEndEvent(CoreModel):
    """``web_search_end``."""

    type: Literal["web_search_end"] = "web_search_end"
    call_id: str
    query: str
    action: WebSearchAction


class ImageGenerationBeginEvent(CoreModel):
    """``image_generation_begin``."""

    type: Literal["image_generation_begin"] = "image_generation_begin"
    call_id: str


class ImageGenerationEndEvent(CoreModel):
    """``image_generation_end``; ``result`` is the base64 image."""

    type: Literal["image_generation_end"] = "image_generation_end"
    call_id: str
    status: str
    revised_prompt: str | None = omit_none()
    result: str
    saved_path: str | None = omit_none()


class ExecCommandBeginEvent(CoreModel):
    """``exec_command_begin`` (legacy item event; live v2 uses ``item_started``)."""

    type: Literal["exec_command_begin"] = "exec_command_begin"
    call_id: str
    process_id: str | None = omit_none()
    turn_id: str = ""
    started_at_ms: int = 0
    command: list[str]
    cwd: str
    parsed_cmd: list[ParsedCommand] = Field(default_factory=list[ParsedCommand])
    source: str = "agent"
    interaction_input: str | None = omit_none()
    plugin_id: str | None = omit_none()
    script_path: str | None = omit_none()


class ExecCommandOutputDeltaEvent(CoreModel):
    """``exec_command_output_delta``: ``chunk`` is base64 (standard alphabet, padded) in JSON.

    The string is kept as it came on the wire; ``chunk_bytes()`` decodes it.
    """

    type: Literal["exec_command_output_delta"] = "exec_command_output_delta"
    call_id: str
    stream: str
    chunk: str

    @classmethod
    def from_bytes(cls, call_id: str, stream: str, data: bytes) -> Self:
        """Build the event for raw output bytes (encodes ``chunk`` as the binary does)."""
        return cls(call_id=call_id, stream=stream, chunk=base64.b64encode(data).decode("ascii"))

    def chunk_bytes(self) -> bytes:
        """The raw output bytes; ``ValueError`` if ``chunk`` is not valid base64."""
        try:
            return base64.b64decode(self.chunk, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"exec_command_output_delta.chunk is not base64: {exc}") from exc

    def chunk_text(self) -> str:
        """The chunk as text, invalid UTF-8 replaced by U+FFFD (Rust ``from_utf8_lossy``)."""
        return self.chunk_bytes().decode("utf-8", errors="replace")


class TerminalInteractionEvent(CoreModel):
    """``terminal_interaction``: stdin sent to a running command."""

    type: Literal["terminal_interaction"] = "terminal_interaction"
    call_id: str
    process_id: str
    stdin: str


class ExecCommandEndEvent(CoreModel):
    """``exec_command_end`` (legacy item event; live v2 uses ``item_completed``).

    ``stdout`` / ``stderr`` / ``formatted_output`` are optional here: the 0.163.0 binary's field
    count says some of the older fields are gone, and the mapper ignores all three.
    """

    type: Literal["exec_command_end"] = "exec_command_end"
    call_id: str
    process_id: str | None = omit_none()
    turn_id: str = ""
    completed_at_ms: int = 0
    command: list[str]
    cwd: str
    parsed_cmd: list[ParsedCommand] = Field(default_factory=list[ParsedCommand])
    source: str = "agent"
    interaction_input: str | None = omit_none()
    plugin_id: str | None = omit_none()
    script_path: str | None = omit_none()
    stdout: str | None = omit_none()
    stderr: str | None = omit_none()
    aggregated_output: str = ""
    exit_code: int
    duration: Duration
    formatted_output: str | None = omit_none()
    status: str


class ViewImageToolCallEvent(CoreModel):
    """``view_image_tool_call``: the agent attached a local image."""

    type: Literal["view_image_tool_call"] = "view_image_tool_call"
    call_id: str
    path: str


class ExecApprovalRequestEvent(CoreModel):
    """``exec_approval_request``: becomes ``item/commandExecution/requestApproval``."""

    type: Literal["exec_approval_request"] = "exec_approval_request"
    call_id: str
    approval_id: str | None = omit_none()
    turn_id: str = ""
    started_at_ms: int | None = omit_none()
    command: list[str]
    cwd: str
    reason: str | None = omit_none()
    network_approval_context: JsonValue = omit_none()
    proposed_execpolicy_amendment: list[str] | None = omit_none()
    proposed_network_policy_amendments: list[JsonValue] | None = omit_none()
    additional_permissions: JsonValue = omit_none()
    available_decisions: list[JsonValue] | None = omit_none()
    parsed_cmd: list[ParsedCommand] = Field(default_factory=list[ParsedCommand])

    def effective_approval_id(self) -> str:
        """The id the decision answers: ``approval_id`` for sub-approvals, else ``call_id``."""
        return self.approval_id if self.approval_id is not None else self.call_id


class RequestPermissionsEvent(CoreModel):
    """``request_permissions``: becomes ``item/permissions/requestApproval``."""

    type: Literal["request_permissions"] = "request_permissions"
    call_id: str
    turn_id: str = ""
    reason: str | None = omit_none()
    permissions: JsonValue
    suggested_scope: str = "turn"


class RequestUserInputEvent(CoreModel):
    """``request_user_input``: becomes ``item/tool/requestUserInput``."""

    type: Literal["request_user_input"] = "request_user_input"
    call_id: str
    turn_id: str = ""
    questions: list[dict[str, JsonValue]]


class DynamicToolCallRequestEvent(CoreModel):
    """``dynamic_tool_call_request`` (camelCase payload: ``callId``, ``turnId``, ...)."""

    type: Literal["dynamic_tool_call_request"] = "dynamic_tool_call_request"
    call_id: str = Field(alias="callId")
    turn_id: str = Field(alias="turnId")
    started_at_ms: int | None = Field(default=None, alias="startedAtMs", exclude_if=is_none)
    namespace: str | None = omit_none()
    tool: str
    arguments: JsonValue


class DynamicToolCallResponseEvent(CoreModel):
    """``dynamic_tool_call_response``: note that its own ``turn_id`` wins over the envelope's."""

    type: Literal["dynamic_tool_call_response"] = "dynamic_tool_call_response"
    call_id: str
    turn_id: str
    completed_at_ms: int = 0
    namespace: str | None = None
    tool: str
    arguments: JsonValue
    content_items: list[DynamicToolCallOutputContentItem]
    success: bool
    error: str | None = None
    duration: Duration


class ElicitationRequestEvent(CoreModel):
    """``elicitation_request``: an MCP server asks the user for input."""

    type: Literal["elicitation_request"] = "elicitation_request"
    turn_id: str | None = omit_none()
    server_name: str
    id: str | int
    request: JsonValue


class ElicitationAbandonedEvent(CoreModel):
    """``elicitation_abandoned``: a pending elicitation was dropped (payload kept verbatim)."""

    type: Literal["elicitation_abandoned"] = "elicitation_abandoned"


class ApplyPatchApprovalRequestEvent(CoreModel):
    """``apply_patch_approval_request``: becomes ``item/fileChange/requestApproval``."""

    type: Literal["apply_patch_approval_request"] = "apply_patch_approval_request"
    call_id: str
    turn_id: str = ""
    started_at_ms: int | None = omit_none()
    changes: dict[str, FileChange]
    reason: str | None = omit_none()
    grant_root: str | None = omit_none()


class GuardianAssessmentEvent(CoreModel):
    """``guardian_assessment``: lifecycle of an automatic approval review."""

    type: Literal["guardian_assessment"] = "guardian_assessment"
    id: str
    target_item_id: str | None = omit_none()
    turn_id: str = ""
    started_at_ms: int = 0
    completed_at_ms: int | None = omit_none()
    status: str
    risk_level: str | None = omit_none()
    user_authorization: str | None = omit_none()
    rationale: str | None = omit_none()
    decision_source: str | None = omit_none()
    action: JsonValue


class DeprecationNoticeEvent(CoreModel):
    """``deprecation_notice``."""

    type: Literal["deprecation_notice"] = "deprecation_notice"
    summary: str
    details: str | None = omit_none()


class StreamErrorEvent(CoreModel):
    """``stream_error``: the model stream broke and core is retrying."""

    type: Literal["stream_error"] = "stream_error"
    message: str
    codex_error_info: CodexErrorInfo | None = None
    additional_details: str | None = None


class PatchApplyBeginEvent(CoreModel):
    """``patch_apply_begin`` (legacy item event)."""

    type: Literal["patch_apply_begin"] = "patch_apply_begin"
    call_id: str
    turn_id: str = ""
    auto_approved: bool
    changes: dict[str, FileChange]


class PatchApplyUpdatedEvent(CoreModel):
    """``patch_apply_updated``: latest structured changes parsed from a streaming patch."""

    type: Literal["patch_apply_updated"] = "patch_apply_updated"
    call_id: str
    changes: dict[str, FileChange]


class PatchApplyEndEvent(CoreModel):
    """``patch_apply_end`` (legacy item event)."""

    type: Literal["patch_apply_end"] = "patch_apply_end"
    call_id: str
    turn_id: str = ""
    stdout: str
    stderr: str
    success: bool
    changes: dict[str, FileChange] = Field(default_factory=dict[str, FileChange])
    status: str


class TurnDiffEvent(CoreModel):
    """``turn_diff``: the turn's aggregated unified diff."""

    type: Literal["turn_diff"] = "turn_diff"
    unified_diff: str


class RealtimeConversationListVoicesResponseEvent(CoreModel):
    """``realtime_conversation_list_voices_response``."""

    type: Literal["realtime_conversation_list_voices_response"] = (
        "realtime_conversation_list_voices_response"
    )
    voices: JsonValue


class PlanUpdateEvent(CoreModel):
    """``plan_update``: the ``update_plan`` tool arguments."""

    type: Literal["plan_update"] = "plan_update"
    explanation: str | None = None
    plan: list[PlanItemArg]


class TurnAbortedEvent(CoreModel):
    """``turn_aborted``: the turn ended without completing (``reason``: interrupted, ...)."""

    type: Literal["turn_aborted"] = "turn_aborted"
    root_turn_id: str | None = omit_none()
    turn_id: str | None = None
    reason: str
    started_at: int | None = omit_none()
    completed_at: int | None = omit_none()
    duration_ms: int | None = omit_none()


class ShutdownCompleteEvent(CoreModel):
    """``shutdown_complete``: the agent shut down (a unit payload)."""

    type: Literal["shutdown_complete"] = "shutdown_complete"


class EnteredReviewModeEvent(CoreModel):
    """``entered_review_mode``: the payload is the review request."""

    type: Literal["entered_review_mode"] = "entered_review_mode"
    target: JsonValue
    user_facing_hint: str | None = omit_none()


class ExitedReviewModeEvent(CoreModel):
    """``exited_review_mode``: the review result, ``null`` when there is none."""

    type: Literal["exited_review_mode"] = "exited_review_mode"
    review_output: JsonValue = None


class RawResponseItemEvent(CoreModel):
    """``raw_response_item``: a Responses API item as the model produced it (opt-in for v2)."""

    type: Literal["raw_response_item"] = "raw_response_item"
    item: ResponseItem


class RawResponseCompletedEvent(CoreModel):
    """``raw_response_completed``: a model response finished (opt-in for v2)."""

    type: Literal["raw_response_completed"] = "raw_response_completed"
    response_id: str
    token_usage: JsonValue = omit_none()
    usage_metadata: JsonValue = omit_none()


class ItemStartedEvent(CoreModel):
    """``item_started``: the live source of ``item/started``."""

    type: Literal["item_started"] = "item_started"
    thread_id: str
    turn_id: str
    item: TurnItem
    started_at_ms: int


class ItemCompletedEvent(CoreModel):
    """``item_completed``: the live source of ``item/completed`` (0.163.0 shape)."""

    type: Literal["item_completed"] = "item_completed"
    thread_id: str
    turn_id: str
    item: TurnItem
    started_at_ms: int | None = None
    completed_at_ms: int = 0


class HookStartedEvent(CoreModel):
    """``hook_started``."""

    type: Literal["hook_started"] = "hook_started"
    turn_id: str | None = None
    run: HookRunSummary


class HookCompletedEvent(CoreModel):
    """``hook_completed``."""

    type: Literal["hook_completed"] = "hook_completed"
    turn_id: str | None = None
    run: HookRunSummary


class AgentMessageContentDeltaEvent(CoreModel):
    """``agent_message_content_delta``: streamed assistant text."""

    type: Literal["agent_message_content_delta"] = "agent_message_content_delta"
    thread_id: str = ""
    turn_id: str = ""
    item_id: str
    delta: str


class PlanDeltaEvent(CoreModel):
    """``plan_delta``: streamed plan text."""

    type: Literal["plan_delta"] = "plan_delta"
    thread_id: str = ""
    turn_id: str = ""
    item_id: str
    delta: str


class ReasoningContentDeltaEvent(CoreModel):
    """``reasoning_content_delta``: streamed reasoning *summary* text."""

    type: Literal["reasoning_content_delta"] = "reasoning_content_delta"
    thread_id: str = ""
    turn_id: str = ""
    item_id: str
    delta: str
    summary_index: int = 0


class ReasoningRawContentDeltaEvent(CoreModel):
    """``reasoning_raw_content_delta``: streamed raw reasoning text."""

    type: Literal["reasoning_raw_content_delta"] = "reasoning_raw_content_delta"
    thread_id: str = ""
    turn_id: str = ""
    item_id: str
    delta: str
    content_index: int = 0


class CollabAgentSpawnBeginEvent(CoreModel):
    """``collab_agent_spawn_begin``."""

    type: Literal["collab_agent_spawn_begin"] = "collab_agent_spawn_begin"
    call_id: str
    started_at_ms: int = 0
    sender_thread_id: str
    prompt: str
    model: str
    reasoning_effort: str


class CollabAgentSpawnEndEvent(CoreModel):
    """``collab_agent_spawn_end``."""

    type: Literal["collab_agent_spawn_end"] = "collab_agent_spawn_end"
    call_id: str
    completed_at_ms: int = 0
    sender_thread_id: str
    new_thread_id: str | None = None
    new_agent_nickname: str | None = omit_none()
    new_agent_role: str | None = omit_none()
    prompt: str
    model: str
    reasoning_effort: str
    status: AgentStatus


class CollabAgentInteractionBeginEvent(CoreModel):
    """``collab_agent_interaction_begin``."""

    type: Literal["collab_agent_interaction_begin"] = "collab_agent_interaction_begin"
    call_id: str
    started_at_ms: int = 0
    sender_thread_id: str
    receiver_thread_id: str
    prompt: str


class CollabAgentInteractionEndEvent(CoreModel):
    """``collab_agent_interaction_end``."""

    type: Literal["collab_agent_interaction_end"] = "collab_agent_interaction_end"
    call_id: str
    completed_at_ms: int = 0
    sender_thread_id: str
    receiver_thread_id: str
    receiver_agent_nickname: str | None = omit_none()
    receiver_agent_role: str | None = omit_none()
    prompt: str
    status: AgentStatus


class CollabWaitingBeginEvent(CoreModel):
    """``collab_waiting_begin``."""

    type: Literal["collab_waiting_begin"] = "collab_waiting_begin"
    started_at_ms: int = 0
    sender_thread_id: str
    receiver_thread_ids: list[str]
    receiver_agents: list[CollabAgentRef] | None = omit_none()
    call_id: str


class CollabWaitingEndEvent(CoreModel):
    """``collab_waiting_end``: ``statuses`` maps receiver thread id to its ``AgentStatus``."""

    type: Literal["collab_waiting_end"] = "collab_waiting_end"
    sender_thread_id: str
    call_id: str
    completed_at_ms: int = 0
    agent_statuses: list[CollabAgentStatusEntry] | None = omit_none()
    statuses: dict[str, AgentStatus]


class CollabCloseBeginEvent(CoreModel):
    """``collab_close_begin``."""

    type: Literal["collab_close_begin"] = "collab_close_begin"
    call_id: str
    started_at_ms: int = 0
    sender_thread_id: str
    receiver_thread_id: str


class CollabCloseEndEvent(CoreModel):
    """``collab_close_end``."""

    type: Literal["collab_close_end"] = "collab_close_end"
    call_id: str
    completed_at_ms: int = 0
    sender_thread_id: str
    receiver_thread_id: str
    receiver_agent_nickname: str | None = omit_none()
    receiver_agent_role: str | None = omit_none()
    status: AgentStatus


class CollabResumeBeginEvent(CoreModel):
    """``collab_resume_begin``."""

    type: Literal["collab_resume_begin"] = "collab_resume_begin"
    call_id: str
    started_at_ms: int = 0
    sender_thread_id: str
    receiver_thread_id: str
    receiver_agent_nickname: str | None = omit_none()
    receiver_agent_role: str | None = omit_none()


class CollabResumeEndEvent(CoreModel):
    """``collab_resume_end``."""

    type: Literal["collab_resume_end"] = "collab_resume_end"
    call_id: str
    completed_at_ms: int = 0
    sender_thread_id: str
    receiver_thread_id: str
    receiver_agent_nickname: str | None = omit_none()
    receiver_agent_role: str | None = omit_none()
    status: AgentStatus


class SubAgentActivityEvent(CoreModel):
    """``sub_agent_activity``: a sub-agent started, was interacted with, ... (0.163.0)."""

    type: Literal["sub_agent_activity"] = "sub_agent_activity"
    event_id: str
    occurred_at_ms: int = 0
    agent_thread_id: str
    agent_path: str
    kind: str
    model: str | None = omit_none()
    reasoning_effort: str | None = omit_none()


class EnvironmentConnectedEvent(CoreModel):
    """``environment_connected``."""

    type: Literal["environment_connected"] = "environment_connected"
    environment_id: str


class EnvironmentDisconnectedEvent(CoreModel):
    """``environment_disconnected``."""

    type: Literal["environment_disconnected"] = "environment_disconnected"
    environment_id: str


class AuthRecoveryStartedEvent(CoreModel):
    """``auth_recovery_started``: the model provider's credentials are being refreshed."""

    type: Literal["auth_recovery_started"] = "auth_recovery_started"
    provider: str
    message: str


class AuthRecoveryCompletedEvent(CoreModel):
    """``auth_recovery_completed``."""

    type: Literal["auth_recovery_completed"] = "auth_recovery_completed"
    provider: str
    message: str


class ThreadNameUpdatedEvent(CoreModel):
    """``thread_name_updated``: written by older Codex versions; 0.163.0 no longer emits it."""

    type: Literal["thread_name_updated"] = "thread_name_updated"
    thread_id: str
    thread_name: str | None = omit_none()


class UnknownEventMsg(CoreModel):
    """An event whose ``type`` this bridge does not know; every field is kept and written back."""

    type: str


_EventMsgVariants: TypeAlias = (
    Annotated[ErrorEvent, Tag("error")]
    | Annotated[WarningEvent, Tag("warning")]
    | Annotated[GuardianWarningEvent, Tag("guardian_warning")]
    | Annotated[RealtimeConversationStartedEvent, Tag("realtime_conversation_started")]
    | Annotated[RealtimeConversationRealtimeEvent, Tag("realtime_conversation_realtime")]
    | Annotated[RealtimeConversationClosedEvent, Tag("realtime_conversation_closed")]
    | Annotated[RealtimeConversationSdpEvent, Tag("realtime_conversation_sdp")]
    | Annotated[ModelRerouteEvent, Tag("model_reroute")]
    | Annotated[ModelVerificationEvent, Tag("model_verification")]
    | Annotated[TurnModerationMetadataEvent, Tag("turn_moderation_metadata")]
    | Annotated[SafetyBufferingEvent, Tag("safety_buffering")]
    | Annotated[ContextCompactedEvent, Tag("context_compacted")]
    | Annotated[CompactedEvent, Tag("compacted")]
    | Annotated[TokenUsageRecordEvent, Tag("token_usage_record")]
    | Annotated[WorldStateEvent, Tag("world_state")]
    | Annotated[ThreadRolledBackEvent, Tag("thread_rolled_back")]
    | Annotated[TaskStartedEvent, Tag("task_started")]
    | Annotated[ThreadSettingsAppliedEvent, Tag("thread_settings_applied")]
    | Annotated[TaskCompleteEvent, Tag("task_complete")]
    | Annotated[TokenCountEvent, Tag("token_count")]
    | Annotated[AgentMessageEvent, Tag("agent_message")]
    | Annotated[UserMessageEvent, Tag("user_message")]
    | Annotated[AgentReasoningEvent, Tag("agent_reasoning")]
    | Annotated[AgentReasoningRawContentEvent, Tag("agent_reasoning_raw_content")]
    | Annotated[AgentReasoningSectionBreakEvent, Tag("agent_reasoning_section_break")]
    | Annotated[SessionConfiguredEvent, Tag("session_configured")]
    | Annotated[EnvironmentConnectedEvent, Tag("environment_connected")]
    | Annotated[EnvironmentDisconnectedEvent, Tag("environment_disconnected")]
    | Annotated[ThreadGoalUpdatedEvent, Tag("thread_goal_updated")]
    | Annotated[ThreadQueueChangedEvent, Tag("thread_queue_changed")]
    | Annotated[McpStartupUpdateEvent, Tag("mcp_startup_update")]
    | Annotated[McpStartupCompleteEvent, Tag("mcp_startup_complete")]
    | Annotated[McpToolCallBeginEvent, Tag("mcp_tool_call_begin")]
    | Annotated[McpToolCallEndEvent, Tag("mcp_tool_call_end")]
    | Annotated[WebSearchBeginEvent, Tag("web_search_begin")]
    | Annotated[WebSearchEndEvent, Tag("web_search_end")]
    | Annotated[ImageGenerationBeginEvent, Tag("image_generation_begin")]
    | Annotated[ImageGenerationEndEvent, Tag("image_generation_end")]
    | Annotated[ExecCommandBeginEvent, Tag("exec_command_begin")]
    | Annotated[ExecCommandOutputDeltaEvent, Tag("exec_command_output_delta")]
    | Annotated[TerminalInteractionEvent, Tag("terminal_interaction")]
    | Annotated[ExecCommandEndEvent, Tag("exec_command_end")]
    | Annotated[ViewImageToolCallEvent, Tag("view_image_tool_call")]
    | Annotated[ExecApprovalRequestEvent, Tag("exec_approval_request")]
    | Annotated[RequestPermissionsEvent, Tag("request_permissions")]
    | Annotated[RequestUserInputEvent, Tag("request_user_input")]
    | Annotated[DynamicToolCallRequestEvent, Tag("dynamic_tool_call_request")]
    | Annotated[DynamicToolCallResponseEvent, Tag("dynamic_tool_call_response")]
    | Annotated[ElicitationRequestEvent, Tag("elicitation_request")]
    | Annotated[ElicitationAbandonedEvent, Tag("elicitation_abandoned")]
    | Annotated[ApplyPatchApprovalRequestEvent, Tag("apply_patch_approval_request")]
    | Annotated[GuardianAssessmentEvent, Tag("guardian_assessment")]
    | Annotated[DeprecationNoticeEvent, Tag("deprecation_notice")]
    | Annotated[StreamErrorEvent, Tag("stream_error")]
    | Annotated[PatchApplyBeginEvent, Tag("patch_apply_begin")]
    | Annotated[PatchApplyUpdatedEvent, Tag("patch_apply_updated")]
    | Annotated[PatchApplyEndEvent, Tag("patch_apply_end")]
    | Annotated[TurnDiffEvent, Tag("turn_diff")]
    | Annotated[
        RealtimeConversationListVoicesResponseEvent,
        Tag("realtime_conversation_list_voices_response"),
    ]
    | Annotated[PlanUpdateEvent, Tag("plan_update")]
    | Annotated[TurnAbortedEvent, Tag("turn_aborted")]
    | Annotated[ShutdownCompleteEvent, Tag("shutdown_complete")]
    | Annotated[EnteredReviewModeEvent, Tag("entered_review_mode")]
    | Annotated[ExitedReviewModeEvent, Tag("exited_review_mode")]
    | Annotated[RawResponseItemEvent, Tag("raw_response_item")]
    | Annotated[RawResponseCompletedEvent, Tag("raw_response_completed")]
    | Annotated[ItemStartedEvent, Tag("item_started")]
    | Annotated[ItemCompletedEvent, Tag("item_completed")]
    | Annotated[HookStartedEvent, Tag("hook_started")]
    | Annotated[HookCompletedEvent, Tag("hook_completed")]
    | Annotated[AgentMessageContentDeltaEvent, Tag("agent_message_content_delta")]
    | Annotated[PlanDeltaEvent, Tag("plan_delta")]
    | Annotated[ReasoningContentDeltaEvent, Tag("reasoning_content_delta")]
    | Annotated[ReasoningRawContentDeltaEvent, Tag("reasoning_raw_content_delta")]
    | Annotated[CollabAgentSpawnBeginEvent, Tag("collab_agent_spawn_begin")]
    | Annotated[CollabAgentSpawnEndEvent, Tag("collab_agent_spawn_end")]
    | Annotated[CollabAgentInteractionBeginEvent, Tag("collab_agent_interaction_begin")]
    | Annotated[CollabAgentInteractionEndEvent, Tag("collab_agent_interaction_end")]
    | Annotated[CollabWaitingBeginEvent, Tag("collab_waiting_begin")]
    | Annotated[CollabWaitingEndEvent, Tag("collab_waiting_end")]
    | Annotated[CollabCloseBeginEvent, Tag("collab_close_begin")]
    | Annotated[CollabCloseEndEvent, Tag("collab_close_end")]
    | Annotated[CollabResumeBeginEvent, Tag("collab_resume_begin")]
    | Annotated[CollabResumeEndEvent, Tag("collab_resume_end")]
    | Annotated[SubAgentActivityEvent, Tag("sub_agent_activity")]
    | Annotated[AuthRecoveryStartedEvent, Tag("auth_recovery_started")]
    | Annotated[AuthRecoveryCompletedEvent, Tag("auth_recovery_completed")]
    | Annotated[ThreadNameUpdatedEvent, Tag("thread_name_updated")]
    | Annotated[UnknownEventMsg, Tag(UNKNOWN_TAG)]
)

EVENT_MSG_TAGS: Mapping[str, str] = variant_tags(_EventMsgVariants)
"""Every wire ``type`` the bridge knows (input aliases included) mapped to its variant tag."""

EventMsg = Annotated[_EventMsgVariants, tagged_discriminator(_EventMsgVariants, "EventMsg")]
"""Every core event; the discriminator is ``type``, unknown types become ``UnknownEventMsg``."""


EVENT_MSG_ADAPTER: TypeAdapter[EventMsg] = union_adapter(EventMsg, title="EventMsg")

_EVENT_MODELS: dict[str, type[BaseModel]] = {}
_EVENT_VALIDATORS: dict[str, Callable[[Any], Any]] = {}
"""``wire tag -> validate_python`` of the member model, bound on the tag's first use (models
build lazily): pydantic-core's own, without the Python-level ``BaseModel.model_validate``
wrapper, which is a third of the cost of a small event."""


def validate_event_msg(data: dict[str, Any]) -> EventMsg:
    """Validate one decoded ``EventMsg`` object, as ``EVENT_MSG_ADAPTER.validate_python`` does,
    but straight with the model its tag names (the hot path of scripts and producers); an
    unknown tag goes through the union (``UnknownEventMsg``)."""
    tag = data.get("type")
    validate = _EVENT_VALIDATORS.get(tag)  # type: ignore[arg-type]
    if validate is None:
        if not _EVENT_MODELS:
            _EVENT_MODELS.update(variant_models(_EventMsgVariants))
        model = _EVENT_MODELS.get(tag)  # type: ignore[arg-type]
        if model is None:
            return EVENT_MSG_ADAPTER.validate_python(data)
        event: EventMsg = model.model_validate(data)  # pyright: ignore[reportAssignmentType]
        _EVENT_VALIDATORS[str(tag)] = model.__pydantic_validator__.validate_python
        return event
    return validate(data)


def parse_event_msg(data: bytes | str) -> EventMsg:
    """Validate one JSON-encoded event (``pydantic.ValidationError`` when malformed)."""
    return EVENT_MSG_ADAPTER.validate_json(data)


def dump_event_msg(msg: EventMsg) -> bytes:
    """The event as compact JSON bytes, with the model's null-versus-absent choices."""
    return EVENT_MSG_ADAPTER.dump_json(msg, by_alias=True)
