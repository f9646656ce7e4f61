"""Contextual fragments: the text Codex injects into history that users never typed.

Codex stores environment context, AGENTS.md instructions, skill bodies, shell-command records,
turn-aborted markers, hook prompts and similar injections as ordinary ``user`` (or ``developer``)
messages. This module recognises them exactly as codex-cli 0.163.0 does, so that projections can
hide them from the visible history and skip them when counting user turns.

User-side matchers (``CONTEXTUAL_USER_FRAGMENT_MATCHERS`` of the 0.163.0 era):

* standard marker pairs (:func:`standard_marker_match`: trimmed, ASCII case-insensitive): AGENTS.md
  instructions (START ``# AGENTS.md instructions`` as in the 0.163.0 binary, not the older
  ``… for `` form), ``<environment_context>``, ``<agent_message_board_notification>``,
  ``<skill>``, ``<user_shell_command>``, ``<turn_aborted>``, ``<subagent_notification>`` and
  ``<recommended_plugins>`` (kept for older rollouts);
* additional context ``<external_KEY>…</external_KEY>``: case-sensitive on the trimmed text, the
  key runs to the first ``>`` and the text must end with the matching close tag;
* internal model context ``<codex_internal_context source="SOURCE">…</codex_internal_context>``
  (SOURCE ``[a-z][a-z0-9_]*``) and the legacy ``<goal_context>…</goal_context>``, both
  case-sensitive on the trimmed text;
* three legacy warnings, case-sensitive prefixes (and one suffix) of the trimmed text;
* hook prompt fragments (:func:`parse_hook_prompt_fragment`).

``<extension_context>`` and ``<user_instructions>`` are not 0.163.0 markers and are not matched.

Hook prompt XML: ``<hook_prompt hook_run_id="RUN">TEXT</hook_prompt>``, read the way Codex's serde
XML reader reads it: the root name is not checked, unknown attributes are ignored, entities are
decoded, a missing or blank ``hook_run_id`` fails, and only the first root element is read. Settled
here where the spec leaves a gap: text is kept as written (not trimmed), an empty or
whitespace-only element fails (serde reports the missing ``$text`` field), and an element with child
elements fails. A DOCTYPE is refused, so no entity can be declared.

Developer-side prefixes (rollback trimming only) are :data:`DEVELOPER_CONTEXTUAL_PREFIXES`.
"""

from __future__ import annotations

import xml.parsers.expat
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from codex_app_bridge.projection._ids import new_response_item_id
from codex_app_bridge.projection._text import (
    ascii_ci_startswith,
    rust_trim,
    rust_trim_start,
    standard_marker_match,
)
from codex_app_bridge.protocol.core import (
    ContentItem,
    HookPromptFragment,
    InputTextContentItem,
    MessageResponseItem,
)

__all__ = [
    "CONTEXTUAL_USER_MARKERS",
    "DEVELOPER_CONTEXTUAL_PREFIXES",
    "build_hook_prompt_message",
    "has_non_contextual_dev_message_content",
    "is_contextual_dev_fragment",
    "is_contextual_dev_message_content",
    "is_contextual_user_fragment",
    "is_contextual_user_message_content",
    "is_standard_contextual_user_text",
    "parse_hook_prompt_fragment",
    "parse_hook_prompt_message",
    "serialize_hook_prompt_fragment",
]

#: (START, END) pairs matched with the standard rule, in 0.163.0's registration order.
CONTEXTUAL_USER_MARKERS: tuple[tuple[str, str], ...] = (
    ("# AGENTS.md instructions", "</INSTRUCTIONS>"),
    ("<environment_context>", "</environment_context>"),
    ("<agent_message_board_notification>", "</agent_message_board_notification>"),
    ("<skill>", "</skill>"),
    ("<user_shell_command>", "</user_shell_command>"),
    ("<turn_aborted>", "</turn_aborted>"),
    ("<subagent_notification>", "</subagent_notification>"),
    ("<recommended_plugins>", "</recommended_plugins>"),
)

#: Developer message prefixes that rollback may trim (0.163.0 list, in its order). Prefix-only:
#: the text with leading whitespace removed must start with one, ASCII case-insensitively.
DEVELOPER_CONTEXTUAL_PREFIXES: tuple[str, ...] = (
    "<permissions instructions>",
    "Approved command prefix saved:",
    "<model_switch>",
    "<persistent_mode>",
    "<apps_instructions>",
    "<collaboration_mode>",
    "<multi_agent_role>",
    "<multi_agent_mode>",
    "<environments_instructions>",
    "<git_attribution>",
    "<plugins_instructions>",
    "<realtime_conversation>",
    "<skills_instructions>",
    "<tools>",
    "<personality_spec>",
    "<token_budget>",
    "<context_window>",
    "<context_window_guidance>",
    "<rollout_budget>",
)

_EXTERNAL_START = "<external_"
_INTERNAL_START = "<codex_internal_context"
_INTERNAL_SOURCE_START = ' source="'
_INTERNAL_SOURCE_END = '">'
_INTERNAL_END = "</codex_internal_context>"
_GOAL_START = "<goal_context>"
_GOAL_END = "</goal_context>"
_WARN_UNIFIED_EXEC = "Warning: The maximum number of unified exec processes you can keep open is"
_WARN_APPLY_PATCH_START = "Warning: apply_patch was requested via "
_WARN_APPLY_PATCH_END = "Use the apply_patch tool instead of exec_command."
_WARN_MODEL_MISMATCH = "Warning: Your account was flagged for potentially high-risk cyber activity"


def _is_valid_internal_source(source: str) -> bool:
    if not source or not ("a" <= source[0] <= "z"):
        return False
    return all("a" <= ch <= "z" or "0" <= ch <= "9" or ch == "_" for ch in source)


def _matches_standard_markers(text: str) -> bool:
    return any(standard_marker_match(text, start, end) for start, end in CONTEXTUAL_USER_MARKERS)


def _matches_additional_context(text: str) -> bool:
    trimmed = rust_trim(text)
    if not trimmed.startswith(_EXTERNAL_START):
        return False
    key, sep, value_and_close = trimmed[len(_EXTERNAL_START) :].partition(">")
    return bool(sep) and value_and_close.endswith(f"</external_{key}>")


def _matches_internal_context(text: str) -> bool:
    trimmed = rust_trim(text)
    if trimmed.startswith(_GOAL_START) and trimmed.endswith(_GOAL_END):
        return True
    if not trimmed.startswith(_INTERNAL_START + _INTERNAL_SOURCE_START):
        return False
    rest = trimmed[len(_INTERNAL_START) + len(_INTERNAL_SOURCE_START) :]
    source, sep, body_and_close = rest.partition(_INTERNAL_SOURCE_END)
    return (
        bool(sep) and _is_valid_internal_source(source) and body_and_close.endswith(_INTERNAL_END)
    )


def _matches_legacy_warning(text: str) -> bool:
    trimmed = rust_trim(text)
    if trimmed.startswith((_WARN_UNIFIED_EXEC, _WARN_MODEL_MISMATCH)):
        return True
    return trimmed.startswith(_WARN_APPLY_PATCH_START) and trimmed.endswith(_WARN_APPLY_PATCH_END)


_STANDARD_MATCHERS: tuple[Callable[[str], bool], ...] = (
    _matches_standard_markers,
    _matches_additional_context,
    _matches_internal_context,
    _matches_legacy_warning,
)


def is_standard_contextual_user_text(text: str) -> bool:
    """Whether ``text`` is a registered contextual user fragment (hook prompts excluded)."""
    return any(matches(text) for matches in _STANDARD_MATCHERS)


def is_contextual_user_fragment(item: ContentItem) -> bool:
    """Whether a content item is injected context: an ``input_text`` that is a hook prompt
    fragment or a registered contextual fragment. Images, audio and ``output_text`` never are."""
    if not isinstance(item, InputTextContentItem):
        return False
    return parse_hook_prompt_fragment(item.text) is not None or is_standard_contextual_user_text(
        item.text
    )


def is_contextual_user_message_content(content: Sequence[ContentItem]) -> bool:
    """A user message is contextual as soon as **any** of its items is a contextual fragment."""
    return any(is_contextual_user_fragment(item) for item in content)


def is_contextual_dev_fragment(item: ContentItem) -> bool:
    """Whether a developer content item is rollback-trimmable context (prefix-only match)."""
    if not isinstance(item, InputTextContentItem):
        return False
    trimmed = rust_trim_start(item.text)
    return any(ascii_ci_startswith(trimmed, prefix) for prefix in DEVELOPER_CONTEXTUAL_PREFIXES)


def is_contextual_dev_message_content(content: Sequence[ContentItem]) -> bool:
    """Whether any developer content item is rollback-trimmable context."""
    return any(is_contextual_dev_fragment(item) for item in content)


def has_non_contextual_dev_message_content(content: Sequence[ContentItem]) -> bool:
    """Whether a developer message also holds something that is not trimmable context."""
    return any(not is_contextual_dev_fragment(item) for item in content)


# --------------------------------------------------------------------------- hook prompts


class _StopParsing(Exception):
    pass


@dataclass
class _HookXmlState:
    depth: int = 0
    root_closed: bool = False
    has_child: bool = False
    hook_run_id: str | None = None
    saw_root: bool = False


def parse_hook_prompt_fragment(text: str) -> HookPromptFragment | None:
    """Parse one hook prompt fragment, or ``None`` when ``text`` is not one (see module doc)."""
    trimmed = rust_trim(text)
    # A fragment needs the attribute; this cheap test keeps ordinary text away from the parser.
    if "hook_run_id" not in trimmed or not trimmed.startswith("<"):
        return None
    state = _HookXmlState()
    parts: list[str] = []

    def start(_name: str, attributes: dict[str, str]) -> None:
        if state.root_closed:
            raise _StopParsing
        state.depth += 1
        if state.depth == 1:
            state.saw_root = True
            state.hook_run_id = attributes.get("hook_run_id")
        else:
            state.has_child = True

    def end(_name: str) -> None:
        state.depth -= 1
        if state.depth == 0:
            state.root_closed = True
            raise _StopParsing

    def characters(data: str) -> None:
        if state.depth == 1:
            parts.append(data)

    def doctype(*_args: object) -> None:
        raise _StopParsing

    parser = xml.parsers.expat.ParserCreate()
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = characters
    parser.StartDoctypeDeclHandler = doctype
    try:
        parser.Parse(trimmed, True)
    except _StopParsing:
        pass
    except (xml.parsers.expat.ExpatError, UnicodeError, ValueError):
        return None
    if not state.root_closed or state.has_child or state.hook_run_id is None:
        return None
    body = "".join(parts)
    if not body.strip(" \t\r\n") or not rust_trim(state.hook_run_id):
        return None
    return HookPromptFragment(text=body, hook_run_id=state.hook_run_id)


def _escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _escape_attribute(text: str) -> str:
    return _escape_text(text).replace('"', "&quot;")


def serialize_hook_prompt_fragment(text: str, hook_run_id: str) -> str | None:
    """``<hook_prompt hook_run_id="…">…</hook_prompt>`` with XML escaping; ``None`` if the run
    id is blank."""
    if not rust_trim(hook_run_id):
        return None
    return f'<hook_prompt hook_run_id="{_escape_attribute(hook_run_id)}">{_escape_text(text)}</hook_prompt>'


def build_hook_prompt_message(
    fragments: Sequence[HookPromptFragment],
) -> MessageResponseItem | None:
    """The user message Codex records for hook prompts: one ``input_text`` per fragment with a
    non-blank run id and a fresh ``msg_`` id; ``None`` when no fragment is left."""
    content: list[ContentItem] = []
    for fragment in fragments:
        text = serialize_hook_prompt_fragment(fragment.text, fragment.hook_run_id)
        if text is not None:
            content.append(InputTextContentItem(text=text))
    if not content:
        return None
    return MessageResponseItem(id=new_response_item_id("msg"), role="user", content=content)


def parse_hook_prompt_message(content: Sequence[ContentItem]) -> list[HookPromptFragment] | None:
    """Strict parse: every item must be a hook prompt fragment (used for round trips)."""
    fragments: list[HookPromptFragment] = []
    for item in content:
        if not isinstance(item, InputTextContentItem):
            return None
        fragment = parse_hook_prompt_fragment(item.text)
        if fragment is None:
            return None
        fragments.append(fragment)
    return fragments or None
