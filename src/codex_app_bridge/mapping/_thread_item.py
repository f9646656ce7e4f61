"""Core ``TurnItem`` -> app-server ``ThreadItem``: what a client sees for each item of a turn.

Every 0.163.0 variant has its rule (``spec/event-mapping.md`` §3.2; the rows for user and agent
messages, reasoning, commands, file changes, dynamic tools and web search are checked against
what the real 0.163.0 server sent for the items in ``tests/data/captures``):

* ``UserMessage``: content converted piece by piece to the wire ``UserInput`` (``local_image`` ->
  ``localImage``, ``image_url`` -> ``url``, ...; a piece of an unknown type is left out),
  ``clientId`` ``null`` when absent;
* ``AgentMessage``: the texts of its content joined with no separator, ``phase``,
  ``memoryCitation`` (``rolloutIds`` -> ``threadIds``), ``delivery``; ``questions`` is ``null``;
* ``Reasoning``: ``summary`` and ``content`` from ``summary_text`` and ``raw_content``;
* ``CommandExecution`` / ``FileChange`` / ``McpToolCall`` / ``DynamicToolCall`` /
  ``CollabAgentToolCall`` / ``SubAgentActivity``: through the shared item builders (a turn item's
  command duration is ``null`` on overflow, unlike the saturating ``exec_command_end``);
* ``WebSearch``: the action in its wire form (``open_page`` -> ``openPage``, an unknown action ->
  ``other``), ``query`` and ``results`` kept;
* ``EnteredReviewMode`` shows its ``user_facing_hint``; ``ExitedReviewMode`` the rendered review;
* ``Extension`` items (0.163.0's extension-owned image generation, sleep and web search, tagged
  by ``kind``) become the matching ``imageGeneration`` / ``sleep`` / ``webSearch`` items.

What cannot be shown gives ``None`` rather than an error: a ``TurnItem`` of a type this version
does not know (or an ``Extension`` of an unknown ``kind``), and an item holding a value the wire
cannot spell (an unknown status, tool, source or kind; a malformed value). The real server cannot
read such an item at all, so it sends nothing for it either; callers skip it.

Boundary: pure; no I/O, no state.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

from pydantic import ValidationError

from codex_app_bridge.mapping._builders import (
    build_collab_agent_tool_call_item,
    build_command_execution_item,
    build_dynamic_tool_call_item,
    build_file_change_item,
    build_mcp_tool_call_result,
    build_sub_agent_activity_item,
    collab_status,
    collab_tool,
    command_status,
    dynamic_tool_status,
    patch_status,
)
from codex_app_bridge.mapping._paths import render_cwd
from codex_app_bridge.mapping._text import review_output_text
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import (
    AgentMessageThreadItem,
    AudioUserInput,
    ByteRange,
    ContextCompactionThreadItem,
    EncryptedContentFunctionCallOutputContentItem,
    EnteredReviewModeThreadItem,
    ExitedReviewModeThreadItem,
    FileIdFunctionCallOutputContentItem,
    FileIdUserInput,
    FindInPageWebSearchAction,
    FunctionCallOutputBody,
    FunctionCallOutputContentItem,
    FunctionCallOutputThreadItem,
    HookPromptFragment,
    HookPromptThreadItem,
    ImageGenerationFailure,
    ImageGenerationThreadItem,
    ImageUrlFunctionCallOutputContentItem,
    ImageViewThreadItem,
    InputAudioFunctionCallOutputContentItem,
    InputTextFunctionCallOutputContentItem,
    LocalAudioUserInput,
    LocalImageUserInput,
    McpAppUi,
    McpToolCallAppContext,
    McpToolCallError,
    McpToolCallThreadItem,
    MemoryCitation,
    MemoryCitationEntry,
    MentionUserInput,
    OpenPageWebSearchAction,
    OtherWebSearchAction,
    PlanThreadItem,
    ReasoningThreadItem,
    SearchWebSearchAction,
    SkillUserInput,
    SleepThreadItem,
    TextElement,
    TextUserInput,
    ThreadItem,
    UrlUserInput,
    UserInput,
    UserMessageThreadItem,
    WebSearchAction,
    WebSearchThreadItem,
)

__all__ = ["thread_item_from_turn_item"]

_M = TypeVar("_M", McpAppUi, ImageGenerationFailure)


def thread_item_from_turn_item(item: core.TurnItem) -> ThreadItem | None:
    """The ``ThreadItem`` a client sees for a core ``TurnItem``; ``None`` when it has none.

    ``None`` means the item cannot be shown on the 0.163.0 wire (an unknown item type or a value
    outside the wire's enums, see the module doc); it never raises for a validated ``TurnItem``.
    """
    try:
        return _convert(item)
    except ValueError:  # UnmappableItemError and pydantic's ValidationError alike
        return None


def _convert(item: core.TurnItem) -> ThreadItem | None:
    match item:
        case core.UserMessageItem():
            return UserMessageThreadItem(
                id=item.id,
                client_id=item.client_id,
                content=[c for c in map(_user_input, item.content) if c is not None],
            )
        case core.AgentMessageItem():
            return _agent_message(item)
        case core.ReasoningItem():
            return ReasoningThreadItem(
                id=item.id, summary=list(item.summary_text), content=list(item.raw_content)
            )
        case core.CommandExecutionItem():
            return build_command_execution_item(
                item_id=item.id,
                argv=item.command,
                cwd=item.cwd,
                parsed_cmd=item.parsed_cmd,
                source=item.source,
                status=command_status(item.status),
                process_id=item.process_id,
                aggregated_output=item.aggregated_output,
                exit_code=item.exit_code,
                duration_ms=None if item.duration is None else item.duration.whole_ms(),
                plugin_id=item.plugin_id,
                script_path=item.script_path,
            )
        case core.FileChangeItem():
            return build_file_change_item(item.id, item.changes, patch_status(item.status))
        case core.DynamicToolCallItem():
            return build_dynamic_tool_call_item(
                item_id=item.id,
                namespace=item.namespace,
                tool=item.tool,
                arguments=item.arguments,
                status=dynamic_tool_status(item.status),
                content_items=item.content_items,
                success=item.success,
                duration=item.duration,
            )
        case core.McpToolCallItem():
            return _mcp_tool_call(item)
        case core.CollabAgentToolCallItem():
            return build_collab_agent_tool_call_item(
                call_id=item.id,
                tool=collab_tool(item.tool),
                status=collab_status(item.status),
                sender_thread_id=item.sender_thread_id,
                receiver_thread_ids=item.receiver_thread_ids,
                prompt=item.prompt,
                model=item.model,
                reasoning_effort=item.reasoning_effort,
                agent_statuses=item.agents_states,
            )
        case core.SubAgentActivityItem():
            return build_sub_agent_activity_item(
                item_id=item.id,
                kind=item.kind,
                agent_thread_id=item.agent_thread_id,
                agent_path=item.agent_path,
                model=item.model,
                reasoning_effort=item.reasoning_effort,
            )
        case core.WebSearchItem():
            return WebSearchThreadItem(
                id=item.id,
                query=item.query,
                action=_web_search_action(item.action),
                results=item.results,
            )
        case core.PlanItem():
            return PlanThreadItem(id=item.id, text=item.text)
        case core.HookPromptItem():
            return HookPromptThreadItem(
                id=item.id,
                fragments=[
                    HookPromptFragment(text=f.text, hook_run_id=f.hook_run_id)
                    for f in item.fragments
                ],
            )
        case core.FunctionCallOutputItem():
            return FunctionCallOutputThreadItem(
                id=item.id,
                name=item.name,
                namespace=item.namespace,
                output=_function_call_output(item.output),
            )
        case core.ImageViewItem():
            return ImageViewThreadItem(id=item.id, path=render_cwd(item.path))
        case core.ImageGenerationItem():
            return ImageGenerationThreadItem(
                id=item.id,
                status=item.status,
                revised_prompt=item.revised_prompt,
                result=item.result,
                saved_path=item.saved_path,
                failure=_image_generation_failure(item.failure),
                transparent_background=item.transparent_background,
            )
        case core.SleepItem():
            return SleepThreadItem(id=item.id, duration_ms=item.duration_ms)
        case core.EnteredReviewModeItem():
            return EnteredReviewModeThreadItem(id=item.id, review=item.user_facing_hint)
        case core.ExitedReviewModeItem():
            return ExitedReviewModeThreadItem(
                id=item.id, review=review_output_text(item.review_output)
            )
        case core.ContextCompactionItem():
            return ContextCompactionThreadItem(id=item.id)
        case core.UnknownTurnItem():
            return _extension_item(item)


# --------------------------------------------------------------------------- messages


def _user_input(piece: core.UserInput) -> UserInput | None:
    """One core ``UserInput`` in its wire form; ``None`` for a type this version does not know."""
    match piece:
        case core.TextUserInput():
            return TextUserInput(
                text=piece.text,
                text_elements=[
                    TextElement(
                        byte_range=ByteRange(start=e.byte_range.start, end=e.byte_range.end),
                        placeholder=e.placeholder,
                    )
                    for e in piece.text_elements
                ],
            )
        case core.ImageUserInput():
            if piece.image_url is not None:
                return UrlUserInput(url=piece.image_url, detail=piece.detail)
            return FileIdUserInput(file_id=piece.file_id or "", detail=piece.detail)
        case core.LocalImageUserInput():
            return LocalImageUserInput(path=piece.path, detail=piece.detail)
        case core.AudioUserInput():
            return AudioUserInput(url=piece.audio_url)
        case core.LocalAudioUserInput():
            return LocalAudioUserInput(path=piece.path)
        case core.SkillUserInput():
            return SkillUserInput(name=piece.name, path=piece.path)
        case core.MentionUserInput():
            return MentionUserInput(name=piece.name, path=piece.path)
        case core.UnknownUserInput():
            return None


def _agent_message(item: core.AgentMessageItem) -> AgentMessageThreadItem:
    text = "".join(c.text for c in item.content if isinstance(c, core.TextAgentMessageContent))
    citation = item.memory_citation
    return AgentMessageThreadItem(
        id=item.id,
        text=text,
        phase=item.phase,
        memory_citation=None
        if citation is None
        else MemoryCitation(
            entries=[
                MemoryCitationEntry(
                    path=e.path, line_start=e.line_start, line_end=e.line_end, note=e.note
                )
                for e in citation.entries
            ],
            thread_ids=list(citation.rollout_ids),
        ),
        # the only delivery 0.163.0 knows; anything else is not shown
        delivery="async" if item.delivery == "async" else None,
        questions=None,
    )


def _function_call_output(output: core.FunctionCallOutputBody) -> FunctionCallOutputBody:
    if isinstance(output, str):
        return output
    converted: list[FunctionCallOutputContentItem] = []
    for piece in output:
        match piece:
            case core.InputTextContentItem():
                converted.append(InputTextFunctionCallOutputContentItem(text=piece.text))
            case core.InputImageContentItem() if piece.image_url is not None:
                converted.append(
                    ImageUrlFunctionCallOutputContentItem(
                        image_url=piece.image_url, detail=piece.detail
                    )
                )
            case core.InputImageContentItem():
                converted.append(
                    FileIdFunctionCallOutputContentItem(
                        file_id=piece.file_id or "", detail=piece.detail
                    )
                )
            case core.InputAudioContentItem():
                converted.append(InputAudioFunctionCallOutputContentItem(audio_url=piece.audio_url))
            case core.EncryptedContentItem():
                converted.append(
                    EncryptedContentFunctionCallOutputContentItem(
                        encrypted_content=piece.encrypted_content
                    )
                )
            case _:
                pass  # a content type this version does not know
    return converted


# --------------------------------------------------------------------------- tools and media


def _web_search_action(action: core.WebSearchAction) -> WebSearchAction:
    """The wire action; Codex reads any action type it does not know as ``other``."""
    match action:
        case core.WebSearchSearchAction():
            return SearchWebSearchAction(
                query=action.query,
                queries=None if action.queries is None else list(action.queries),
            )
        case core.WebSearchOpenPageAction():
            return OpenPageWebSearchAction(url=action.url)
        case core.WebSearchFindInPageAction():
            return FindInPageWebSearchAction(url=action.url, pattern=action.pattern)
        case _:
            return OtherWebSearchAction()


def _mcp_tool_call(item: core.McpToolCallItem) -> McpToolCallThreadItem:
    return McpToolCallThreadItem(
        id=item.id,
        server=item.server,
        tool=item.tool,
        status=item.status,
        arguments=item.arguments,
        app_context=None
        if item.connector_id is None
        else McpToolCallAppContext(
            connector_id=item.connector_id,
            link_id=item.link_id,
            resource_uri=item.mcp_app_resource_uri,
            app_name=item.app_name,
            action_name=item.action_name,
        ),
        mcp_app_resource_uri=item.mcp_app_resource_uri,
        mcp_app_ui=_optional(McpAppUi, item.mcp_app_ui),
        plugin_id=item.plugin_id,
        read_only_hint=item.read_only_hint,
        result=None if item.result is None else build_mcp_tool_call_result(item.result),
        error=None if item.error is None else McpToolCallError(message=item.error.message),
        duration_ms=None if item.duration is None else item.duration.whole_ms(),
    )


def _image_generation_failure(failure: object) -> ImageGenerationFailure | None:
    return _optional(ImageGenerationFailure, failure)


def _optional(model: type[_M], value: object) -> _M | None:
    """``value`` as the optional wire ``model``; ``null`` when it is absent or does not fit."""
    if value is None:
        return None
    try:
        return model.model_validate(value)
    except ValidationError:
        return None


# --------------------------------------------------------------------------- extension items

# 0.163.0 extension-owned items: ``{"type": "Extension", "kind": ..., "id": ..., <the fields of
# the wire item>}``; older builds nest the fields under ``payload`` in snake_case.
_EXTENSION_KINDS: dict[
    str, type[ImageGenerationThreadItem | SleepThreadItem | WebSearchThreadItem]
] = {
    "image_gen.generation": ImageGenerationThreadItem,
    "image_gen.image_generation": ImageGenerationThreadItem,
    "clock.sleep": SleepThreadItem,
    "web.search": WebSearchThreadItem,
}


def _extension_item(item: core.UnknownTurnItem) -> ThreadItem | None:
    fields = dict(item.model_extra or {})
    model = _EXTENSION_KINDS.get(str(fields.pop("kind", ""))) if item.type == "Extension" else None
    if model is None:
        return None
    payload = fields.pop("payload", None)
    if isinstance(payload, dict):
        fields.update(cast("dict[str, Any]", payload))
    # accept the fields by Python (snake_case) name or wire (camelCase) name alike
    fields.pop("type", None)
    return model.model_validate(fields)
