"""Codex core ``ResponseItem`` and ``ContentItem``: model/history items as rollouts store them.

Mirrors ``codex-rs/protocol/src/models.rs`` as shipped in codex-cli 0.163.0 (variant and field sets
checked against the 0.163.0 JSON Schema of ``rawResponseItem/completed`` and the field counts in the
0.163.0 binary; shapes checked against the 0.163.0 rollouts in ``tests/data/captures``).

Conventions (serde, as 0.163.0 writes them):

* Internally tagged by ``type``, snake_case variant names.
* Ids are optional on input and **written back when present** (0.163.0 rollouts write ids such as
  ``msg_01a2…``); the same holds for ``status``, ``phase``, ``namespace`` and the other fields
  declared ``omit_none()``. The other fields are always written, ``None`` as ``null``
  (``encrypted_content`` and ``content`` of ``reasoning``, ``call_id`` of ``local_shell_call``, the
  ``LocalShellAction`` options, ...).
* ``reasoning.content`` follows Codex's odd rule: ``null`` is written as ``null``; a list is written
  only when it holds at least one ``reasoning_text`` entry, otherwise the key is omitted.
* Input tolerance: older rollouts (Family A) carry ``end_turn`` on messages and omit ids; newer ones
  add ``internal_chat_message_metadata_passthrough`` everywhere and ``status`` /
  ``encrypted_content`` on messages. All are accepted; unknown fields are kept (``extra="allow"``).
* ``compaction_summary`` is accepted as an input alias of ``compaction`` and written as
  ``compaction``.

Unknown variants: an unknown ``type`` parses into :class:`UnknownResponseItem`, which keeps every
field and re-serializes unchanged. This differs deliberately from Codex, whose catch-all ``Other``
drops everything and serializes as ``{"type":"other"}``; a literal ``{"type":"other"}`` still parses
into :class:`OtherResponseItem`. Projections treat both the same way (no turn item, no boundary).
``ghost_snapshot`` is no longer a 0.163.0 variant (0.163.0 skips such rollout lines); it is kept as a
typed model so older rollouts stay readable. ``WebSearchAction`` keeps unknown action types in
:class:`UnknownWebSearchAction`; Codex reads them as ``Other`` and the projection does the same.

Boundary: shapes only; no projection logic lives here.
"""

from typing import Annotated, Any, Literal, Self, TypeAlias

from pydantic import BeforeValidator, Field, Tag, TypeAdapter, model_validator

from codex_app_bridge.protocol._base import CoreModel, omit_none, union_adapter
from codex_app_bridge.protocol._tagged import UNKNOWN_TAG, tagged_discriminator
from codex_app_bridge.protocol.core._user_input import ImageDetail

__all__ = [
    "CONTENT_ITEM_ADAPTER",
    "FUNCTION_CALL_OUTPUT_BODY_ADAPTER",
    "RESPONSE_ITEM_ADAPTER",
    "WEB_SEARCH_ACTION_ADAPTER",
    "AdditionalToolsResponseItem",
    "AgentMessageInputContent",
    "AgentMessageResponseItem",
    "CompactionResponseItem",
    "CompactionTriggerResponseItem",
    "ConfigurationReasoning",
    "ConfigurationUpdateResponseItem",
    "ContentItem",
    "ContextCompactionResponseItem",
    "CustomToolCallOutputResponseItem",
    "CustomToolCallResponseItem",
    "EncryptedContentItem",
    "FunctionCallOutputBody",
    "FunctionCallOutputContentItem",
    "FunctionCallOutputResponseItem",
    "FunctionCallResponseItem",
    "GhostCommit",
    "GhostSnapshotResponseItem",
    "ImageGenerationCallResponseItem",
    "InputAudioContentItem",
    "InputImageContentItem",
    "InputTextContentItem",
    "InternalChatMessageMetadataPassthrough",
    "LocalShellAction",
    "LocalShellCallResponseItem",
    "LocalShellExecAction",
    "LocalShellStatus",
    "MessagePhase",
    "MessageResponseItem",
    "OtherResponseItem",
    "OutputTextContentItem",
    "ReasoningItemContent",
    "ReasoningItemReasoningSummary",
    "ReasoningResponseItem",
    "ReasoningTextContent",
    "ResponseItem",
    "SummaryTextContent",
    "TextReasoningContent",
    "ToolSearchCallResponseItem",
    "ToolSearchOutputResponseItem",
    "UnknownContentItem",
    "UnknownLocalShellAction",
    "UnknownReasoningPart",
    "UnknownResponseItem",
    "UnknownWebSearchAction",
    "WebSearchAction",
    "WebSearchCallResponseItem",
    "WebSearchFindInPageAction",
    "WebSearchOpenPageAction",
    "WebSearchOtherAction",
    "WebSearchSearchAction",
]

#: Assistant message phase (0.163.0 adds ``partial_answer``).
MessagePhase = Literal["commentary", "partial_answer", "final_answer"]

#: ``local_shell_call`` status.
LocalShellStatus = Literal["completed", "in_progress", "incomplete"]


# --------------------------------------------------------------------------- content items


class InputTextContentItem(CoreModel):
    """``{"type":"input_text","text":…}``."""

    type: Literal["input_text"] = "input_text"
    text: str


class InputImageContentItem(CoreModel):
    """``{"type":"input_image","image_url":…,"detail"?:…}`` (0.163.0 also allows ``file_id``)."""

    type: Literal["input_image"] = "input_image"
    image_url: str | None = omit_none()
    file_id: str | None = omit_none()
    detail: ImageDetail | None = omit_none()

    @model_validator(mode="after")
    def _needs_a_reference(self) -> Self:
        if self.image_url is None and self.file_id is None:
            raise ValueError("input_image needs an image_url or a file_id")
        return self


class InputAudioContentItem(CoreModel):
    """``{"type":"input_audio","audio_url":…}``."""

    type: Literal["input_audio"] = "input_audio"
    audio_url: str


class OutputTextContentItem(CoreModel):
    """``{"type":"output_text","text":…}``; ``annotations``/``logprobs`` are kept when present."""

    type: Literal["output_text"] = "output_text"
    text: str
    annotations: list[Any] | None = omit_none()
    logprobs: list[Any] | None = omit_none()


class EncryptedContentItem(CoreModel):
    """``{"type":"encrypted_content","encrypted_content":…}`` (tool outputs, agent messages)."""

    type: Literal["encrypted_content"] = "encrypted_content"
    encrypted_content: str


class UnknownContentItem(CoreModel):
    """A content item whose ``type`` this version does not know; every field is kept."""

    type: str


_ContentItemVariants: TypeAlias = (
    Annotated[InputTextContentItem, Tag("input_text")]
    | Annotated[InputImageContentItem, Tag("input_image")]
    | Annotated[InputAudioContentItem, Tag("input_audio")]
    | Annotated[OutputTextContentItem, Tag("output_text")]
    | Annotated[UnknownContentItem, Tag(UNKNOWN_TAG)]
)
ContentItem = Annotated[
    _ContentItemVariants, tagged_discriminator(_ContentItemVariants, "ContentItem")
]
"""Message content item (``input_text``, ``input_image``, ``input_audio``, ``output_text``)."""

_FunctionCallOutputContentItemVariants: TypeAlias = (
    Annotated[InputTextContentItem, Tag("input_text")]
    | Annotated[InputImageContentItem, Tag("input_image")]
    | Annotated[InputAudioContentItem, Tag("input_audio")]
    | Annotated[EncryptedContentItem, Tag("encrypted_content")]
    | Annotated[UnknownContentItem, Tag(UNKNOWN_TAG)]
)
FunctionCallOutputContentItem = Annotated[
    _FunctionCallOutputContentItemVariants,
    tagged_discriminator(_FunctionCallOutputContentItemVariants, "FunctionCallOutputContentItem"),
]
"""Structured tool output item."""

FunctionCallOutputBody = str | list[FunctionCallOutputContentItem]
"""``output`` of ``function_call_output`` / ``custom_tool_call_output``.

On the wire a bare JSON string (text) or an array of content items; Codex's in-memory ``success``
flag is never serialized, so it has no field here.
"""

_AgentMessageInputContentVariants: TypeAlias = (
    Annotated[InputTextContentItem, Tag("input_text")]
    | Annotated[EncryptedContentItem, Tag("encrypted_content")]
    | Annotated[UnknownContentItem, Tag(UNKNOWN_TAG)]
)
AgentMessageInputContent = Annotated[
    _AgentMessageInputContentVariants,
    tagged_discriminator(_AgentMessageInputContentVariants, "AgentMessageInputContent"),
]
"""Content of the ``agent_message`` variant."""


# --------------------------------------------------------------------------- sub-shapes


class InternalChatMessageMetadataPassthrough(CoreModel):
    """Responses API passthrough metadata (``turn_id`` and harness classifications)."""

    turn_id: str | None = omit_none()
    create_time: float | None = omit_none()
    content_item_kinds: list[str] | None = omit_none()


class SummaryTextContent(CoreModel):
    """Reasoning summary entry ``{"type":"summary_text","text":…}``."""

    type: Literal["summary_text"] = "summary_text"
    text: str


class ReasoningTextContent(CoreModel):
    """Raw reasoning entry ``{"type":"reasoning_text","text":…}``."""

    type: Literal["reasoning_text"] = "reasoning_text"
    text: str


class TextReasoningContent(CoreModel):
    """Raw reasoning entry ``{"type":"text","text":…}``."""

    type: Literal["text"] = "text"
    text: str


class UnknownReasoningPart(CoreModel):
    """A reasoning summary/content entry of unknown ``type``; every field is kept."""

    type: str


_ReasoningItemReasoningSummaryVariants: TypeAlias = (
    Annotated[SummaryTextContent, Tag("summary_text")]
    | Annotated[UnknownReasoningPart, Tag(UNKNOWN_TAG)]
)
ReasoningItemReasoningSummary = Annotated[
    _ReasoningItemReasoningSummaryVariants,
    tagged_discriminator(_ReasoningItemReasoningSummaryVariants, "ReasoningItemReasoningSummary"),
]

_ReasoningItemContentVariants: TypeAlias = (
    Annotated[ReasoningTextContent, Tag("reasoning_text")]
    | Annotated[TextReasoningContent, Tag("text")]
    | Annotated[UnknownReasoningPart, Tag(UNKNOWN_TAG)]
)
ReasoningItemContent = Annotated[
    _ReasoningItemContentVariants,
    tagged_discriminator(_ReasoningItemContentVariants, "ReasoningItemContent"),
]


class LocalShellExecAction(CoreModel):
    """``{"type":"exec","command":[…],"timeout_ms":…,"working_directory":…,"env":…,"user":…}``."""

    type: Literal["exec"] = "exec"
    command: list[str]
    timeout_ms: int | None = None
    working_directory: str | None = None
    env: dict[str, str] | None = None
    user: str | None = None


class UnknownLocalShellAction(CoreModel):
    """A local shell action of unknown ``type``; every field is kept."""

    type: str


_LocalShellActionVariants: TypeAlias = (
    Annotated[LocalShellExecAction, Tag("exec")]
    | Annotated[UnknownLocalShellAction, Tag(UNKNOWN_TAG)]
)
LocalShellAction = Annotated[
    _LocalShellActionVariants, tagged_discriminator(_LocalShellActionVariants, "LocalShellAction")
]


class WebSearchSearchAction(CoreModel):
    """``{"type":"search","query"?:…,"queries"?:[…]}``."""

    type: Literal["search"] = "search"
    query: str | None = omit_none()
    queries: list[str] | None = omit_none()


class WebSearchOpenPageAction(CoreModel):
    """``{"type":"open_page","url"?:…}``."""

    type: Literal["open_page"] = "open_page"
    url: str | None = omit_none()


class WebSearchFindInPageAction(CoreModel):
    """``{"type":"find_in_page","url"?:…,"pattern"?:…}``."""

    type: Literal["find_in_page"] = "find_in_page"
    url: str | None = omit_none()
    pattern: str | None = omit_none()


class WebSearchOtherAction(CoreModel):
    """``{"type":"other"}``: Codex's catch-all web search action."""

    type: Literal["other"] = "other"


class UnknownWebSearchAction(CoreModel):
    """A web search action of unknown ``type``, kept losslessly; Codex reads it as ``other``."""

    type: str


_WebSearchActionVariants: TypeAlias = (
    Annotated[WebSearchSearchAction, Tag("search")]
    | Annotated[WebSearchOpenPageAction, Tag("open_page")]
    | Annotated[WebSearchFindInPageAction, Tag("find_in_page")]
    | Annotated[WebSearchOtherAction, Tag("other")]
    | Annotated[UnknownWebSearchAction, Tag(UNKNOWN_TAG)]
)
WebSearchAction = Annotated[
    _WebSearchActionVariants, tagged_discriminator(_WebSearchActionVariants, "WebSearchAction")
]
"""Responses API web search action (shared by ``web_search_call`` and the ``WebSearch`` item)."""


class GhostCommit(CoreModel):
    """Snapshot commit of a legacy ``ghost_snapshot`` item."""

    id: str
    parent: str | None = None
    preexisting_untracked_files: list[str] = Field(default_factory=list[str])
    preexisting_untracked_dirs: list[str] = Field(default_factory=list[str])


class ConfigurationReasoning(CoreModel):
    """Reasoning settings of a ``configuration_update`` item."""

    effort: str


# --------------------------------------------------------------------------- response items


def _reasoning_content_omitted(value: object) -> bool:
    # Codex omits a present list that holds no ``reasoning_text`` entry (and writes ``null`` for
    # None). Unknown entries are never dropped, so they count as "something to write".
    if not isinstance(value, list):
        return False
    return not any(
        isinstance(entry, ReasoningTextContent | UnknownReasoningPart)
        for entry in value  # pyright: ignore[reportUnknownVariableType]
    )


def _compaction_alias(value: object) -> object:
    return "compaction" if value == "compaction_summary" else value


class MessageResponseItem(CoreModel):
    """``message``: a user, assistant, developer or system message."""

    type: Literal["message"] = "message"
    status: str | None = omit_none()
    id: str | None = omit_none()
    role: str
    content: list[ContentItem]
    phase: MessagePhase | None = omit_none()
    end_turn: bool | None = omit_none()
    encrypted_content: str | None = omit_none()
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class AgentMessageResponseItem(CoreModel):
    """``agent_message``: an inter-agent message ``{author, recipient, content}``."""

    type: Literal["agent_message"] = "agent_message"
    id: str | None = omit_none()
    author: str
    recipient: str
    content: list[AgentMessageInputContent]
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class ReasoningResponseItem(CoreModel):
    """``reasoning``: summary parts, optional raw content, opaque encrypted content."""

    type: Literal["reasoning"] = "reasoning"
    id: str | None = omit_none()
    summary: list[ReasoningItemReasoningSummary]
    content: list[ReasoningItemContent] | None = Field(
        default=None, exclude_if=_reasoning_content_omitted
    )
    encrypted_content: str | None = None
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class LocalShellCallResponseItem(CoreModel):
    """``local_shell_call``."""

    type: Literal["local_shell_call"] = "local_shell_call"
    id: str | None = omit_none()
    call_id: str | None = None
    status: LocalShellStatus
    action: LocalShellAction
    encrypted_content: str | None = omit_none()
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class FunctionCallResponseItem(CoreModel):
    """``function_call``; ``arguments`` is a string holding JSON, as the Responses API sends it."""

    type: Literal["function_call"] = "function_call"
    status: str | None = omit_none()
    id: str | None = omit_none()
    name: str
    namespace: str | None = omit_none()
    arguments: str
    encrypted_function_args: list[str] | None = omit_none()
    call_id: str
    encrypted_content: str | None = omit_none()
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class ToolSearchCallResponseItem(CoreModel):
    """``tool_search_call``; ``arguments`` is any JSON value."""

    type: Literal["tool_search_call"] = "tool_search_call"
    id: str | None = omit_none()
    call_id: str | None = None
    status: str | None = omit_none()
    execution: str
    arguments: Any = None
    encrypted_content: str | None = omit_none()
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class FunctionCallOutputResponseItem(CoreModel):
    """``function_call_output``."""

    type: Literal["function_call_output"] = "function_call_output"
    id: str | None = omit_none()
    call_id: str | None = omit_none()
    name: str | None = omit_none()
    namespace: str | None = omit_none()
    output: FunctionCallOutputBody
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class CustomToolCallResponseItem(CoreModel):
    """``custom_tool_call`` (free-form tools such as ``apply_patch``)."""

    type: Literal["custom_tool_call"] = "custom_tool_call"
    id: str | None = omit_none()
    status: str | None = omit_none()
    call_id: str
    name: str
    namespace: str | None = omit_none()
    input: str
    encrypted_content: str | None = omit_none()
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class CustomToolCallOutputResponseItem(CoreModel):
    """``custom_tool_call_output`` (same ``output`` encoding as ``function_call_output``)."""

    type: Literal["custom_tool_call_output"] = "custom_tool_call_output"
    id: str | None = omit_none()
    call_id: str
    name: str | None = omit_none()
    output: FunctionCallOutputBody
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class ToolSearchOutputResponseItem(CoreModel):
    """``tool_search_output``."""

    type: Literal["tool_search_output"] = "tool_search_output"
    id: str | None = omit_none()
    call_id: str | None = None
    status: str
    execution: str
    tools: list[Any]
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class WebSearchCallResponseItem(CoreModel):
    """``web_search_call``; ``action`` may be missing on partial items."""

    type: Literal["web_search_call"] = "web_search_call"
    id: str | None = omit_none()
    status: str | None = omit_none()
    action: WebSearchAction | None = omit_none()
    encrypted_content: str | None = omit_none()
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class ImageGenerationCallResponseItem(CoreModel):
    """``image_generation_call``; ``result`` is the base64 image."""

    type: Literal["image_generation_call"] = "image_generation_call"
    id: str | None = omit_none()
    status: str
    revised_prompt: str | None = omit_none()
    result: str
    encrypted_content: str | None = omit_none()
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class GhostSnapshotResponseItem(CoreModel):
    """``ghost_snapshot`` (pre-0.163.0 rollouts only)."""

    type: Literal["ghost_snapshot"] = "ghost_snapshot"
    ghost_commit: GhostCommit


class CompactionResponseItem(CoreModel):
    """``compaction`` (input alias ``compaction_summary``)."""

    type: Annotated[Literal["compaction"], BeforeValidator(_compaction_alias)] = "compaction"
    id: str | None = omit_none()
    encrypted_content: str
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class AdditionalToolsResponseItem(CoreModel):
    """``additional_tools``: tools announced to the model mid-history."""

    type: Literal["additional_tools"] = "additional_tools"
    id: str | None = omit_none()
    role: str
    tools: list[Any]


class ConfigurationUpdateResponseItem(CoreModel):
    """``configuration_update``: a durable input control (reasoning effort)."""

    type: Literal["configuration_update"] = "configuration_update"
    reasoning: ConfigurationReasoning


class CompactionTriggerResponseItem(CoreModel):
    """``compaction_trigger``: a request control with no fields."""

    type: Literal["compaction_trigger"] = "compaction_trigger"


class ContextCompactionResponseItem(CoreModel):
    """``context_compaction``."""

    type: Literal["context_compaction"] = "context_compaction"
    id: str | None = omit_none()
    encrypted_content: str | None = omit_none()
    internal_chat_message_metadata_passthrough: InternalChatMessageMetadataPassthrough | None = (
        omit_none()
    )


class OtherResponseItem(CoreModel):
    """A literal ``{"type":"other"}`` (what Codex writes for items it did not understand)."""

    type: Literal["other"] = "other"


class UnknownResponseItem(CoreModel):
    """A ``ResponseItem`` of unknown ``type``: every field is kept and written back unchanged."""

    type: str


_ResponseItemVariants: TypeAlias = (
    Annotated[MessageResponseItem, Tag("message")]
    | Annotated[AgentMessageResponseItem, Tag("agent_message")]
    | Annotated[ReasoningResponseItem, Tag("reasoning")]
    | Annotated[LocalShellCallResponseItem, Tag("local_shell_call")]
    | Annotated[FunctionCallResponseItem, Tag("function_call")]
    | Annotated[ToolSearchCallResponseItem, Tag("tool_search_call")]
    | Annotated[FunctionCallOutputResponseItem, Tag("function_call_output")]
    | Annotated[CustomToolCallResponseItem, Tag("custom_tool_call")]
    | Annotated[CustomToolCallOutputResponseItem, Tag("custom_tool_call_output")]
    | Annotated[ToolSearchOutputResponseItem, Tag("tool_search_output")]
    | Annotated[WebSearchCallResponseItem, Tag("web_search_call")]
    | Annotated[ImageGenerationCallResponseItem, Tag("image_generation_call")]
    | Annotated[GhostSnapshotResponseItem, Tag("ghost_snapshot")]
    | Annotated[CompactionResponseItem, Tag("compaction")]
    | Annotated[AdditionalToolsResponseItem, Tag("additional_tools")]
    | Annotated[ConfigurationUpdateResponseItem, Tag("configuration_update")]
    | Annotated[CompactionTriggerResponseItem, Tag("compaction_trigger")]
    | Annotated[ContextCompactionResponseItem, Tag("context_compaction")]
    | Annotated[OtherResponseItem, Tag("other")]
    | Annotated[UnknownResponseItem, Tag(UNKNOWN_TAG)]
)
ResponseItem = Annotated[
    _ResponseItemVariants,
    tagged_discriminator(
        _ResponseItemVariants, "ResponseItem", aliases={"compaction_summary": "compaction"}
    ),
]
"""Core ``ResponseItem`` union (tagged by ``type``, unknown variants kept)."""

RESPONSE_ITEM_ADAPTER: TypeAdapter[ResponseItem] = union_adapter(ResponseItem)
CONTENT_ITEM_ADAPTER: TypeAdapter[ContentItem] = union_adapter(ContentItem)
FUNCTION_CALL_OUTPUT_BODY_ADAPTER: TypeAdapter[FunctionCallOutputBody] = union_adapter(
    FunctionCallOutputBody
)
WEB_SEARCH_ACTION_ADAPTER: TypeAdapter[WebSearchAction] = union_adapter(WebSearchAction)
