"""Codex core ``TurnItem``: the visible semantic items of a turn (``codex-rs/protocol/src/items.rs``).

``TurnItem`` is internally tagged by ``type`` and, unlike most Codex unions, keeps the **PascalCase**
variant names (``"UserMessage"``, ``"AgentMessage"``, ...); each variant's fields sit next to the
tag in snake_case (``McpToolCall`` is the exception: its fields are camelCase). Core emits these in
``item_started`` / ``item_completed`` events and rollouts persist the completed ones.

Shapes follow codex-cli 0.163.0: the field sets come from the 0.163.0 binary (its ``struct … with N
elements`` counts) and the rollouts in ``tests/data/captures``, e.g. ``CommandExecution`` with a
``{"secs","nanos"}`` duration, a ``file://`` cwd and ``parsed_cmd``; ``DynamicToolCall`` with
``content_items`` in the app-server's camelCase content shape.

Null versus absent follows Codex: optional fields declared ``omit_none()`` (or with ``exclude_if``
beside an alias) are omitted when ``None`` (``UserMessage.client_id``, ``AgentMessage.phase`` /
``memory_citation`` / ``delivery``, ``DynamicToolCall.namespace``, ...); the others are always
written. Unknown fields are kept, and an unknown variant (including 0.163.0's extension-owned
``Extension`` items) parses into :class:`UnknownTurnItem`, which re-serializes unchanged.

Boundary: shapes only. Building turn items from history is ``projection.parse_turn_item``; turning
them into app-server ``ThreadItem`` s is the mapping layer's job.
"""

from typing import Annotated, Any, Literal, Self, TypeAlias

from pydantic import Field, Tag, TypeAdapter

from codex_app_bridge.protocol._base import CoreModel, is_none, omit_none, union_adapter
from codex_app_bridge.protocol._tagged import UNKNOWN_TAG, tagged_discriminator
from codex_app_bridge.protocol.core._response_item import (
    FunctionCallOutputBody,
    MessagePhase,
    WebSearchAction,
)
from codex_app_bridge.protocol.core._user_input import UserInput

__all__ = [
    "I64_MAX",
    "TURN_ITEM_ADAPTER",
    "AgentMessageContent",
    "AgentMessageItem",
    "CollabAgentToolCallItem",
    "CommandExecutionItem",
    "ContextCompactionItem",
    "Duration",
    "DynamicToolCallItem",
    "DynamicToolCallOutputContentItem",
    "DynamicToolInputAudio",
    "DynamicToolInputImage",
    "DynamicToolInputText",
    "EnteredReviewModeItem",
    "ExitedReviewModeItem",
    "FileChange",
    "FileChangeAdd",
    "FileChangeDelete",
    "FileChangeItem",
    "FileChangeUpdate",
    "FunctionCallOutputItem",
    "HookPromptFragment",
    "HookPromptItem",
    "ImageGenerationItem",
    "ImageViewItem",
    "McpToolCallError",
    "McpToolCallItem",
    "MemoryCitation",
    "MemoryCitationEntry",
    "ParsedCommand",
    "ParsedCommandListFiles",
    "ParsedCommandRead",
    "ParsedCommandSearch",
    "ParsedCommandUnknown",
    "PlanItem",
    "ReasoningItem",
    "SleepItem",
    "SubAgentActivityItem",
    "TextAgentMessageContent",
    "TurnItem",
    "UnknownAgentMessageContent",
    "UnknownDynamicToolContentItem",
    "UnknownFileChange",
    "UnknownParsedCommand",
    "UnknownTurnItem",
    "UserMessageItem",
    "WebSearchItem",
]


I64_MAX = 2**63 - 1
"""Largest value of a Rust ``i64``: the saturation point of millisecond conversions."""


class Duration(CoreModel):
    """Rust ``std::time::Duration`` in serde's default JSON form ``{"secs": u64, "nanos": u32}``."""

    secs: int = 0
    nanos: int = 0

    @classmethod
    def from_millis(cls, millis: int) -> Self:
        """The duration of ``millis`` whole milliseconds."""
        return cls(secs=millis // 1000, nanos=(millis % 1000) * 1_000_000)

    def total_millis(self) -> int:
        """Whole milliseconds, sub-millisecond nanos truncated (Rust ``as_millis``)."""
        return self.secs * 1000 + self.nanos // 1_000_000

    def whole_ms(self) -> int | None:
        """Truncated milliseconds as an ``i64``, or ``None`` when they overflow it.

        This is how MCP and dynamic tool call items fill ``durationMs``.
        """
        millis = self.total_millis()
        return millis if millis <= I64_MAX else None

    def whole_ms_saturating(self) -> int:
        """Truncated milliseconds, saturating at ``i64::MAX`` (command execution items)."""
        return min(self.total_millis(), I64_MAX)


# --------------------------------------------------------------------------- messages


class UserMessageItem(CoreModel):
    """``UserMessage``: what the user sent, as ``UserInput`` pieces."""

    type: Literal["UserMessage"] = "UserMessage"
    id: str
    client_id: str | None = omit_none()
    content: list[UserInput]


class HookPromptFragment(CoreModel):
    """One hook prompt fragment; ``hookRunId`` is camelCase on the wire."""

    text: str
    hook_run_id: str = Field(validation_alias="hookRunId", serialization_alias="hookRunId")


class HookPromptItem(CoreModel):
    """``HookPrompt``: prompt text injected by hooks, kept apart from user messages."""

    type: Literal["HookPrompt"] = "HookPrompt"
    id: str
    fragments: list[HookPromptFragment]


class TextAgentMessageContent(CoreModel):
    """``{"type":"Text","text":…}`` (PascalCase tag)."""

    type: Literal["Text"] = "Text"
    text: str


class UnknownAgentMessageContent(CoreModel):
    """Agent message content of unknown ``type``; every field is kept."""

    type: str


_AgentMessageContentVariants: TypeAlias = (
    Annotated[TextAgentMessageContent, Tag("Text")]
    | Annotated[UnknownAgentMessageContent, Tag(UNKNOWN_TAG)]
)
AgentMessageContent = Annotated[
    _AgentMessageContentVariants,
    tagged_discriminator(_AgentMessageContentVariants, "AgentMessageContent"),
]


class MemoryCitationEntry(CoreModel):
    """One memory citation (camelCase on the wire)."""

    path: str
    line_start: int = Field(validation_alias="lineStart", serialization_alias="lineStart")
    line_end: int = Field(validation_alias="lineEnd", serialization_alias="lineEnd")
    note: str


class MemoryCitation(CoreModel):
    """Memory citations of an agent message (``rolloutIds`` is camelCase on the wire)."""

    entries: list[MemoryCitationEntry] = Field(default_factory=list[MemoryCitationEntry])
    rollout_ids: list[str] = Field(
        default_factory=list[str], validation_alias="rolloutIds", serialization_alias="rolloutIds"
    )


class AgentMessageItem(CoreModel):
    """``AgentMessage``: assistant text, with the model's ``phase`` when it sent one."""

    type: Literal["AgentMessage"] = "AgentMessage"
    id: str
    content: list[AgentMessageContent]
    phase: MessagePhase | None = omit_none()
    memory_citation: MemoryCitation | None = omit_none()
    delivery: str | None = omit_none()


class PlanItem(CoreModel):
    """``Plan``: proposed plan text."""

    type: Literal["Plan"] = "Plan"
    id: str
    text: str


class ReasoningItem(CoreModel):
    """``Reasoning``: summary texts and raw reasoning texts (``raw_content`` defaults to ``[]``)."""

    type: Literal["Reasoning"] = "Reasoning"
    id: str
    summary_text: list[str]
    raw_content: list[str] = Field(default_factory=list[str])


class FunctionCallOutputItem(CoreModel):
    """``FunctionCallOutput``: a tool output surfaced as its own item."""

    type: Literal["FunctionCallOutput"] = "FunctionCallOutput"
    id: str
    name: str
    namespace: str | None = omit_none()
    output: FunctionCallOutputBody


# --------------------------------------------------------------------------- commands


class ParsedCommandRead(CoreModel):
    """``{"type":"read","cmd":…,"name":…,"path":…}``."""

    type: Literal["read"] = "read"
    cmd: str
    name: str
    path: str


class ParsedCommandListFiles(CoreModel):
    """``{"type":"list_files","cmd":…,"path":…|null}``."""

    type: Literal["list_files"] = "list_files"
    cmd: str
    path: str | None = None


class ParsedCommandSearch(CoreModel):
    """``{"type":"search","cmd":…,"query":…|null,"path":…|null}``."""

    type: Literal["search"] = "search"
    cmd: str
    query: str | None = None
    path: str | None = None


class ParsedCommandUnknown(CoreModel):
    """``{"type":"unknown","cmd":…}``: Codex's own "could not classify" command."""

    type: Literal["unknown"] = "unknown"
    cmd: str


class UnknownParsedCommand(CoreModel):
    """A parsed command of a ``type`` this version does not know; every field is kept."""

    type: str


_ParsedCommandVariants: TypeAlias = (
    Annotated[ParsedCommandRead, Tag("read")]
    | Annotated[ParsedCommandListFiles, Tag("list_files")]
    | Annotated[ParsedCommandSearch, Tag("search")]
    | Annotated[ParsedCommandUnknown, Tag("unknown")]
    | Annotated[UnknownParsedCommand, Tag(UNKNOWN_TAG)]
)
ParsedCommand = Annotated[
    _ParsedCommandVariants, tagged_discriminator(_ParsedCommandVariants, "ParsedCommand")
]


class CommandExecutionItem(CoreModel):
    """``CommandExecution``: ``cwd`` is a ``file://`` URI, ``duration`` a Rust ``Duration``."""

    type: Literal["CommandExecution"] = "CommandExecution"
    id: str
    plugin_id: str | None = omit_none()
    script_path: str | None = omit_none()
    process_id: str | None = omit_none()
    command: list[str]
    cwd: str
    parsed_cmd: list[ParsedCommand]
    source: str
    interaction_input: str | None = omit_none()
    status: Literal["in_progress", "completed", "failed", "declined"]
    aggregated_output: str | None = omit_none()
    exit_code: int | None = omit_none()
    duration: Duration | None = omit_none()


class DynamicToolInputText(CoreModel):
    """``{"type":"inputText","text":…}``."""

    type: Literal["inputText"] = "inputText"
    text: str


class DynamicToolInputImage(CoreModel):
    """``{"type":"inputImage","imageUrl":…,"detail"?:…}``."""

    type: Literal["inputImage"] = "inputImage"
    image_url: str = Field(validation_alias="imageUrl", serialization_alias="imageUrl")
    detail: str | None = omit_none()


class DynamicToolInputAudio(CoreModel):
    """``{"type":"inputAudio","audioUrl":…}``."""

    type: Literal["inputAudio"] = "inputAudio"
    audio_url: str = Field(validation_alias="audioUrl", serialization_alias="audioUrl")


class UnknownDynamicToolContentItem(CoreModel):
    """Dynamic tool output content of unknown ``type``; every field is kept."""

    type: str


_DynamicToolCallOutputContentItemVariants: TypeAlias = (
    Annotated[DynamicToolInputText, Tag("inputText")]
    | Annotated[DynamicToolInputImage, Tag("inputImage")]
    | Annotated[DynamicToolInputAudio, Tag("inputAudio")]
    | Annotated[UnknownDynamicToolContentItem, Tag(UNKNOWN_TAG)]
)
DynamicToolCallOutputContentItem = Annotated[
    _DynamicToolCallOutputContentItemVariants,
    tagged_discriminator(
        _DynamicToolCallOutputContentItemVariants, "DynamicToolCallOutputContentItem"
    ),
]


class DynamicToolCallItem(CoreModel):
    """``DynamicToolCall``: a client-implemented tool call (``namespace`` omitted when null)."""

    type: Literal["DynamicToolCall"] = "DynamicToolCall"
    id: str
    namespace: str | None = omit_none()
    tool: str
    arguments: Any = None
    status: Literal["in_progress", "completed", "failed"]
    content_items: list[DynamicToolCallOutputContentItem] | None = omit_none()
    success: bool | None = omit_none()
    error: str | None = omit_none()
    duration: Duration | None = omit_none()


class McpToolCallError(CoreModel):
    """``{"message": …}``."""

    message: str


class McpToolCallItem(CoreModel):
    """``McpToolCall``: fields are camelCase on the wire (Codex renames this struct)."""

    type: Literal["McpToolCall"] = "McpToolCall"
    id: str
    server: str
    tool: str
    arguments: Any = None
    connector_id: str | None = Field(
        default=None,
        exclude_if=is_none,
        validation_alias="connectorId",
        serialization_alias="connectorId",
    )
    mcp_app_resource_uri: str | None = Field(
        default=None,
        exclude_if=is_none,
        validation_alias="mcpAppResourceUri",
        serialization_alias="mcpAppResourceUri",
    )
    link_id: str | None = Field(
        default=None, exclude_if=is_none, validation_alias="linkId", serialization_alias="linkId"
    )
    app_name: str | None = Field(
        default=None, exclude_if=is_none, validation_alias="appName", serialization_alias="appName"
    )
    action_name: str | None = Field(
        default=None,
        exclude_if=is_none,
        validation_alias="actionName",
        serialization_alias="actionName",
    )
    plugin_id: str | None = Field(
        default=None,
        exclude_if=is_none,
        validation_alias="pluginId",
        serialization_alias="pluginId",
    )
    read_only_hint: bool | None = Field(
        default=None,
        exclude_if=is_none,
        validation_alias="readOnlyHint",
        serialization_alias="readOnlyHint",
    )
    mcp_app_ui: dict[str, Any] | None = Field(
        default=None,
        exclude_if=is_none,
        validation_alias="mcpAppUi",
        serialization_alias="mcpAppUi",
    )
    status: Literal["inProgress", "completed", "failed"]
    result: dict[str, Any] | None = omit_none()
    error: McpToolCallError | None = omit_none()
    duration: Duration | None = omit_none()


# --------------------------------------------------------------------------- agents


class CollabAgentToolCallItem(CoreModel):
    """``CollabAgentToolCall``: a multi-agent tool call (``tool`` in snake_case)."""

    type: Literal["CollabAgentToolCall"] = "CollabAgentToolCall"
    id: str
    tool: str
    status: str
    sender_thread_id: str
    receiver_thread_ids: list[str] = Field(default_factory=list[str])
    receiver_agents: list[dict[str, Any]] = Field(default_factory=list[dict[str, Any]])
    prompt: str | None = omit_none()
    model: str | None = omit_none()
    reasoning_effort: str | None = omit_none()
    # AgentStatus is externally tagged: a bare string ("running") or {"completed": msg|null}.
    agents_states: dict[str, Any] = Field(default_factory=dict[str, Any])


class SubAgentActivityItem(CoreModel):
    """``SubAgentActivity``: a sub-agent started, was interacted with or interrupted."""

    type: Literal["SubAgentActivity"] = "SubAgentActivity"
    id: str
    kind: str
    agent_thread_id: str
    agent_path: str
    model: str | None = omit_none()
    reasoning_effort: str | None = omit_none()


# --------------------------------------------------------------------------- tools and media


class WebSearchItem(CoreModel):
    """``WebSearch``: ``query`` is the display string Codex derives from ``action``."""

    type: Literal["WebSearch"] = "WebSearch"
    id: str
    query: str
    action: WebSearchAction
    results: list[Any] | None = omit_none()


class ImageViewItem(CoreModel):
    """``ImageView``: the model looked at an image file."""

    type: Literal["ImageView"] = "ImageView"
    id: str
    path: str


class SleepItem(CoreModel):
    """``Sleep``: the agent waited ``duration_ms``."""

    type: Literal["Sleep"] = "Sleep"
    id: str
    duration_ms: int


class ImageGenerationItem(CoreModel):
    """``ImageGeneration``: a generated image (``result`` is base64)."""

    type: Literal["ImageGeneration"] = "ImageGeneration"
    id: str
    status: str
    revised_prompt: str | None = omit_none()
    result: str
    saved_path: str | None = omit_none()
    failure: Any = omit_none()
    transparent_background: bool | None = omit_none()


class FileChangeAdd(CoreModel):
    """``{"type":"add","content":…}``."""

    type: Literal["add"] = "add"
    content: str


class FileChangeDelete(CoreModel):
    """``{"type":"delete","content":…}``."""

    type: Literal["delete"] = "delete"
    content: str


class FileChangeUpdate(CoreModel):
    """``{"type":"update","unified_diff":…,"move_path":…|null}``."""

    type: Literal["update"] = "update"
    unified_diff: str
    move_path: str | None = None


class UnknownFileChange(CoreModel):
    """A file change of unknown ``type``; every field is kept."""

    type: str


_FileChangeVariants: TypeAlias = (
    Annotated[FileChangeAdd, Tag("add")]
    | Annotated[FileChangeDelete, Tag("delete")]
    | Annotated[FileChangeUpdate, Tag("update")]
    | Annotated[UnknownFileChange, Tag(UNKNOWN_TAG)]
)
FileChange = Annotated[_FileChangeVariants, tagged_discriminator(_FileChangeVariants, "FileChange")]


class FileChangeItem(CoreModel):
    """``FileChange``: a patch, keyed by path; ``status`` is absent while it is in progress."""

    type: Literal["FileChange"] = "FileChange"
    id: str
    changes: dict[str, FileChange]
    status: Literal["in_progress", "completed", "failed", "declined"] | None = omit_none()
    auto_approved: bool | None = omit_none()
    stdout: str | None = omit_none()
    stderr: str | None = omit_none()


class EnteredReviewModeItem(CoreModel):
    """``EnteredReviewMode``: a review started (``target`` is Codex's ``ReviewTarget``)."""

    type: Literal["EnteredReviewMode"] = "EnteredReviewMode"
    id: str
    target: Any = None
    user_facing_hint: str


class ExitedReviewModeItem(CoreModel):
    """``ExitedReviewMode``: a review ended (``review_output`` is written as ``null`` if none)."""

    type: Literal["ExitedReviewMode"] = "ExitedReviewMode"
    id: str
    review_output: Any = None


class ContextCompactionItem(CoreModel):
    """``ContextCompaction``: the history was compacted."""

    type: Literal["ContextCompaction"] = "ContextCompaction"
    id: str


class UnknownTurnItem(CoreModel):
    """A ``TurnItem`` of unknown ``type`` (e.g. ``Extension``); kept and written back unchanged."""

    type: str


_TurnItemVariants: TypeAlias = (
    Annotated[UserMessageItem, Tag("UserMessage")]
    | Annotated[HookPromptItem, Tag("HookPrompt")]
    | Annotated[AgentMessageItem, Tag("AgentMessage")]
    | Annotated[PlanItem, Tag("Plan")]
    | Annotated[ReasoningItem, Tag("Reasoning")]
    | Annotated[FunctionCallOutputItem, Tag("FunctionCallOutput")]
    | Annotated[CommandExecutionItem, Tag("CommandExecution")]
    | Annotated[DynamicToolCallItem, Tag("DynamicToolCall")]
    | Annotated[CollabAgentToolCallItem, Tag("CollabAgentToolCall")]
    | Annotated[SubAgentActivityItem, Tag("SubAgentActivity")]
    | Annotated[WebSearchItem, Tag("WebSearch")]
    | Annotated[ImageViewItem, Tag("ImageView")]
    | Annotated[SleepItem, Tag("Sleep")]
    | Annotated[ImageGenerationItem, Tag("ImageGeneration")]
    | Annotated[EnteredReviewModeItem, Tag("EnteredReviewMode")]
    | Annotated[ExitedReviewModeItem, Tag("ExitedReviewMode")]
    | Annotated[FileChangeItem, Tag("FileChange")]
    | Annotated[McpToolCallItem, Tag("McpToolCall")]
    | Annotated[ContextCompactionItem, Tag("ContextCompaction")]
    | Annotated[UnknownTurnItem, Tag(UNKNOWN_TAG)]
)
TurnItem = Annotated[_TurnItemVariants, tagged_discriminator(_TurnItemVariants, "TurnItem")]
"""Core ``TurnItem`` union (PascalCase tags, unknown variants kept)."""

TURN_ITEM_ADAPTER: TypeAdapter[TurnItem] = union_adapter(TurnItem)
