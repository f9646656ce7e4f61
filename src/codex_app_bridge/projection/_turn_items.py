"""``parse_turn_item``: which history items become visible turn items, and how (Codex 0.163.0).

Rules (``codex-rs/core/src/event_mapping.rs`` of the 0.163.0 era, in our own words):

* ``message`` role ``user``: a hook prompt message (every item a hook fragment or other contextual
  text, at least one fragment) becomes ``HookPrompt`` with the message id (or a fresh one).
  Otherwise any contextual fragment hides the whole message (``None``); else it becomes
  ``UserMessage`` with a **fresh** id (the ``msg_…`` id is not reused) and its content converted:
  ``input_text`` to text (image/audio label texts dropped only next to the media they label),
  ``input_image`` to image, ``input_audio`` to audio, ``output_text`` dropped with a warning.
* ``message`` role ``assistant``: always ``AgentMessage`` (id kept or fresh, ``phase`` carried);
  ``input_text`` and ``output_text`` become text, anything else is dropped with a warning.
* any other role (``system``, ``developer``, …; exact, case-sensitive): ``None``.
* ``reasoning``: ``Reasoning`` (missing id gives ``""``); ``web_search_call``: ``WebSearch``
  (missing id ``""``; missing action gives ``other`` and an empty query; an action type Codex does
  not know is read as ``other``); ``image_generation_call``: ``ImageGeneration``, or ``None`` when
  it has no id. Every other variant: ``None``.

Fresh ids are UUIDv7 strings, so projecting the same item twice gives different ids: compare
content, not ids. Unknown content items (which Codex would reject outright) are skipped with a
warning rather than failing the message.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from codex_app_bridge.projection._contextual import (
    is_contextual_user_message_content,
    is_standard_contextual_user_text,
    parse_hook_prompt_fragment,
)
from codex_app_bridge.projection._ids import new_item_id
from codex_app_bridge.protocol.core import (
    AgentMessageContent,
    AgentMessageItem,
    AudioUserInput,
    ContentItem,
    HookPromptFragment,
    HookPromptItem,
    ImageGenerationCallResponseItem,
    ImageGenerationItem,
    ImageUserInput,
    InputAudioContentItem,
    InputImageContentItem,
    InputTextContentItem,
    MessagePhase,
    MessageResponseItem,
    OutputTextContentItem,
    ReasoningItem,
    ReasoningResponseItem,
    ReasoningTextContent,
    ResponseItem,
    SummaryTextContent,
    TextAgentMessageContent,
    TextReasoningContent,
    TextUserInput,
    TurnItem,
    UserInput,
    UserMessageItem,
    WebSearchAction,
    WebSearchCallResponseItem,
    WebSearchFindInPageAction,
    WebSearchItem,
    WebSearchOpenPageAction,
    WebSearchOtherAction,
    WebSearchSearchAction,
)

__all__ = [
    "parse_agent_message",
    "parse_turn_item",
    "parse_user_message",
    "parse_visible_hook_prompt_message",
    "web_search_action_detail",
]

logger = logging.getLogger(__name__)

_IMAGE_OPEN = "<image>"
_IMAGE_CLOSE = "</image>"
_LOCAL_IMAGE_OPEN_PREFIX = "<image name="
_AUDIO_OPEN = "<audio>"
_AUDIO_CLOSE = "</audio>"
_LOCAL_AUDIO_OPEN_PREFIX = "<audio name="


def _is_image_open_label(text: str) -> bool:
    return text == _IMAGE_OPEN or (text.startswith(_LOCAL_IMAGE_OPEN_PREFIX) and text.endswith(">"))


def _is_audio_open_label(text: str) -> bool:
    return text == _AUDIO_OPEN or (text.startswith(_LOCAL_AUDIO_OPEN_PREFIX) and text.endswith(">"))


def _is_media_label(content: Sequence[ContentItem], index: int, text: str) -> bool:
    # Labels are exact and case-sensitive, and dropped only when adjacent to their own media
    # kind: an open label before the media, a close label after it. They are not paired.
    following = content[index + 1] if index + 1 < len(content) else None
    preceding = content[index - 1] if index > 0 else None
    if _is_image_open_label(text) and isinstance(following, InputImageContentItem):
        return True
    if text == _IMAGE_CLOSE and isinstance(preceding, InputImageContentItem):
        return True
    if _is_audio_open_label(text) and isinstance(following, InputAudioContentItem):
        return True
    return text == _AUDIO_CLOSE and isinstance(preceding, InputAudioContentItem)


def parse_user_message(content: Sequence[ContentItem]) -> UserMessageItem | None:
    """The ``UserMessage`` for a user message's content, or ``None`` when it is contextual."""
    if is_contextual_user_message_content(content):
        return None
    inputs: list[UserInput] = []
    for index, item in enumerate(content):
        if isinstance(item, InputTextContentItem):
            if not _is_media_label(content, index, item.text):
                inputs.append(TextUserInput(text=item.text))
        elif isinstance(item, InputImageContentItem):
            inputs.append(
                ImageUserInput(image_url=item.image_url, file_id=item.file_id, detail=item.detail)
            )
        elif isinstance(item, InputAudioContentItem):
            inputs.append(AudioUserInput(audio_url=item.audio_url))
        elif isinstance(item, OutputTextContentItem):
            logger.warning("Output text in user message: %s", item.text)
        else:
            logger.warning("Unexpected content item in user message: %s", item.type)
    return UserMessageItem(id=new_item_id(), content=inputs)


def parse_visible_hook_prompt_message(
    message_id: str | None, content: Sequence[ContentItem]
) -> HookPromptItem | None:
    """A ``HookPrompt`` when the message holds hook fragments and nothing but other contextual
    text; any non-text item or ordinary text makes it ``None``."""
    fragments: list[HookPromptFragment] = []
    for item in content:
        if not isinstance(item, InputTextContentItem):
            return None
        fragment = parse_hook_prompt_fragment(item.text)
        if fragment is not None:
            fragments.append(fragment)
        elif not is_standard_contextual_user_text(item.text):
            return None
    if not fragments:
        return None
    return HookPromptItem(
        id=message_id if message_id is not None else new_item_id(), fragments=fragments
    )


def parse_agent_message(
    message_id: str | None, content: Sequence[ContentItem], phase: MessagePhase | None
) -> AgentMessageItem:
    """The ``AgentMessage`` of an assistant message (never ``None``)."""
    texts: list[AgentMessageContent] = []
    for item in content:
        if isinstance(item, InputTextContentItem | OutputTextContentItem):
            texts.append(TextAgentMessageContent(text=item.text))
        else:
            logger.warning("Unexpected content item in agent message: %s", item.type)
    return AgentMessageItem(
        id=message_id if message_id is not None else new_item_id(), content=texts, phase=phase
    )


def web_search_action_detail(action: WebSearchAction) -> str:
    """The display query Codex derives from a web search action."""
    if isinstance(action, WebSearchSearchAction):
        if action.query:
            return action.query
        queries = action.queries or []
        first = queries[0] if queries else ""
        return f"{first} ..." if len(queries) > 1 and first else first
    if isinstance(action, WebSearchOpenPageAction):
        return action.url or ""
    if isinstance(action, WebSearchFindInPageAction):
        if action.pattern is not None and action.url is not None:
            return f"'{action.pattern}' in {action.url}"
        if action.pattern is not None:
            return f"'{action.pattern}'"
        return action.url or ""
    return ""


def _web_search_item(item: WebSearchCallResponseItem) -> WebSearchItem:
    action = item.action
    if action is None:
        return WebSearchItem(id=item.id or "", query="", action=WebSearchOtherAction())
    if not isinstance(
        action, WebSearchSearchAction | WebSearchOpenPageAction | WebSearchFindInPageAction
    ):
        # ``other`` and action types this version does not know: Codex reads both as ``Other``.
        return WebSearchItem(id=item.id or "", query="", action=WebSearchOtherAction())
    return WebSearchItem(
        id=item.id or "", query=web_search_action_detail(action), action=action.model_copy()
    )


def _reasoning_item(item: ReasoningResponseItem) -> ReasoningItem:
    summary = [entry.text for entry in item.summary if isinstance(entry, SummaryTextContent)]
    raw = [
        entry.text
        for entry in item.content or []
        if isinstance(entry, ReasoningTextContent | TextReasoningContent)
    ]
    return ReasoningItem(id=item.id or "", summary_text=summary, raw_content=raw)


def _image_generation_item(item: ImageGenerationCallResponseItem) -> ImageGenerationItem | None:
    if item.id is None:
        return None
    return ImageGenerationItem(
        id=item.id, status=item.status, revised_prompt=item.revised_prompt, result=item.result
    )


def parse_turn_item(item: ResponseItem) -> TurnItem | None:
    """The visible turn item Codex 0.163.0 derives from one history item, or ``None``."""
    if isinstance(item, MessageResponseItem):
        if item.role == "user":
            hook_prompt = parse_visible_hook_prompt_message(item.id, item.content)
            return hook_prompt if hook_prompt is not None else parse_user_message(item.content)
        if item.role == "assistant":
            return parse_agent_message(item.id, item.content, item.phase)
        return None
    if isinstance(item, ReasoningResponseItem):
        return _reasoning_item(item)
    if isinstance(item, WebSearchCallResponseItem):
        return _web_search_item(item)
    if isinstance(item, ImageGenerationCallResponseItem):
        return _image_generation_item(item)
    return None
