"""User-turn boundaries: which history items start an instruction turn (rollback, fork, drop).

``is_user_turn_boundary`` (``context_manager/history.rs`` of the 0.163.0 era) is true for:

1. the ``agent_message`` variant, always (whatever its content);
2. a ``user`` message with no contextual fragment (hook prompts count as contextual);
3. an ``assistant`` message that is an inter-agent instruction: exactly one ``input_text`` or
   ``output_text`` item whose text is the JSON of an ``InterAgentCommunication``.

Inter-agent JSON is read as Codex's serde does: an object with ``author`` and ``recipient``
(valid agent paths), ``other_recipients`` (default ``[]``; valid paths), ``content`` (string) and
``trigger_turn`` (boolean); unknown keys ignored; a duplicated known key, a wrong type, ``NaN`` or a
lone surrogate make it not an instruction. Agent paths are absolute: ``/morpheus``, or ``/root``
followed by ``/name`` segments of lowercase ASCII letters, digits and ``_`` (never ``root``, never
empty, no trailing ``/``). The legacy plain-text envelope (``author: /root\\n…``) is not an
instruction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

import orjson

from codex_app_bridge.projection._contextual import is_contextual_user_message_content
from codex_app_bridge.protocol.core import (
    AgentMessageResponseItem,
    ContentItem,
    InputTextContentItem,
    InterAgentCommunication,
    MessageResponseItem,
    OutputTextContentItem,
    ResponseItem,
)

__all__ = [
    "agent_path_error",
    "is_user_turn_boundary",
    "parse_inter_agent_communication",
]

_KNOWN_FIELDS = frozenset(
    {
        "id",
        "author",
        "recipient",
        "other_recipients",
        "content",
        "encrypted_content",
        "internal_chat_message_metadata_passthrough",
        "metadata",
        "trigger_turn",
    }
)
_ROOT = "root"
_MORPHEUS = "/morpheus"


def _agent_name_error(name: str) -> str | None:
    if not name:
        return "agent_name must not be empty"
    if name == _ROOT:
        return "agent_name `root` is reserved"
    if name in {".", ".."}:
        return f"agent_name `{name}` is reserved"
    if "/" in name:
        return "agent_name must not contain `/`"
    if not all("a" <= ch <= "z" or "0" <= ch <= "9" or ch == "_" for ch in name):
        return "agent_name must use only lowercase letters, digits, and underscores"
    return None


def agent_path_error(path: str) -> str | None:
    """Why ``path`` is not a valid absolute agent path (0.163.0 messages), or ``None``."""
    if path == _MORPHEUS:
        return None
    if not path.startswith("/"):
        return "absolute agent paths must start with `/root` or be `/morpheus`"
    stripped = path[1:]
    segments = stripped.split("/")
    if segments[0] != _ROOT:
        return "absolute agent paths must start with `/root` or be `/morpheus`"
    if stripped.endswith("/"):
        return "absolute agent path must not end with `/`"
    for segment in segments[1:]:
        error = _agent_name_error(segment)
        if error is not None:
            return error
    return None


def _is_agent_path(value: object) -> bool:
    return isinstance(value, str) and agent_path_error(value) is None


def _optional_str(value: object) -> bool:
    return value is None or isinstance(value, str)


def _has_duplicate_known_field(text: str) -> bool:
    # serde rejects a struct field given twice; orjson keeps the last one silently. The stdlib
    # parser exposes the key pairs; its hook runs for the outermost object last.
    outermost: list[str] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        outermost[:] = [key for key, _ in pairs]
        return dict(pairs)

    try:
        json.loads(text, object_pairs_hook=hook)
    except (ValueError, RecursionError):
        return True
    known = [key for key in outermost if key in _KNOWN_FIELDS]
    return len(known) != len(set(known))


def _communication_from_text(text: str) -> InterAgentCommunication | None:
    if not text.lstrip(" \t\r\n").startswith("{"):
        return None
    try:
        raw: object = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(raw, dict):
        return None
    data = cast("dict[str, object]", raw)
    author, recipient = data.get("author"), data.get("recipient")
    others: object = data.get("other_recipients", [])
    if not (_is_agent_path(author) and _is_agent_path(recipient)):
        return None
    if not isinstance(others, list) or not all(
        _is_agent_path(path) for path in cast("list[object]", others)
    ):
        return None
    if not isinstance(data.get("content"), str) or not isinstance(data.get("trigger_turn"), bool):
        return None
    if not (_optional_str(data.get("id")) and _optional_str(data.get("encrypted_content"))):
        return None
    if _has_duplicate_known_field(text):
        return None
    return InterAgentCommunication.model_validate(data)


def parse_inter_agent_communication(
    content: Sequence[ContentItem],
) -> InterAgentCommunication | None:
    """The inter-agent instruction an assistant message's content encodes, if it is one."""
    if len(content) != 1:
        return None
    item = content[0]
    if not isinstance(item, InputTextContentItem | OutputTextContentItem):
        return None
    return _communication_from_text(item.text)


def is_user_turn_boundary(item: ResponseItem) -> bool:
    """Whether ``item`` starts an instruction turn (see module doc)."""
    if isinstance(item, AgentMessageResponseItem):
        return True
    if not isinstance(item, MessageResponseItem):
        return False
    if item.role == "user":
        return not is_contextual_user_message_content(item.content)
    if item.role == "assistant":
        return parse_inter_agent_communication(item.content) is not None
    return False
