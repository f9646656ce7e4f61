"""Local compaction, as 0.163.0 core runs it for a provider that is not OpenAI's.

``thread/compact/start`` (and, later, the automatic check at the context window) runs a turn of
its own: one streamed request with ``request_kind: "compaction"`` in the turn metadata, no
tools, ``parallel_tool_calls: false``, whose ``input`` is the history plus one user message
without id asking for a summary (:data:`COMPACT_PROMPT`, the project's own words). The
response's last assistant text is the summary. The history is then replaced by
(:func:`replacement_history`): fresh contextual messages (new ids), the real user messages kept
so far (the items as recorded, newest first within ``COMPACT_USER_MESSAGE_MAX_TOKENS``), and
one user message (a new id) holding ``SUMMARY_PREFIX`` + ``"\\n"`` + the summary. Probed on the
binary: the rollout gets the compaction response's message as a ``response_item``, then a
``compacted`` line ``{message: <prefix>\\n<summary>, replacement_history}``; clients see a
``contextCompaction`` item, token usage, the ``Heads up`` warning and a completed turn with no
items.

Boundary: pure helpers; the session (``_session.ModelSession._compact``) streams and records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from codex_app_bridge.projection import (
    COMPACT_USER_MESSAGE_MAX_TOKENS,
    SUMMARY_PREFIX,
    approx_token_count,
    is_summary_message,
    new_response_item_id,
    parse_turn_item,
)
from codex_app_bridge.protocol.core import RESPONSE_ITEM_ADAPTER, TextUserInput, UserMessageItem

__all__ = [
    "COMPACTION_WARNING",
    "COMPACT_PROMPT",
    "compaction_input",
    "replacement_history",
    "summary_text",
]

COMPACT_PROMPT: Final = (
    "Context checkpoint: the conversation above is about to be replaced by a summary that a "
    "fresh model will continue from. Write that summary now, as a handoff: what the user asked "
    "for and any constraints or preferences they stated; what has been done so far and the "
    "decisions taken; what was learned about the code, the environment and the tools; what "
    "remains to do, with the next concrete steps. Keep it brief and factual, with the details "
    "(names, paths, commands, values) the next model needs to go on without asking again."
)
"""The user message that asks for the summary (0.163.0's own text is not copied)."""

COMPACTION_WARNING: Final = (
    "Heads up: Long threads and multiple compactions can cause the model to be less accurate. "
    "Start a new thread when possible to keep threads small and targeted."
)
"""The ``warning`` every compaction ends with (a notice the client shows, as the binary's)."""

Item = dict[str, Any]


def compaction_input(
    history: Sequence[Mapping[str, Any]], prompt: str = COMPACT_PROMPT
) -> list[Item]:
    """The history the compaction request sends (after the base instructions): the thread's
    history, then the prompt as a user message without id."""
    items: list[Item] = [dict(item) for item in history]
    items.append(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}
    )
    return items


def summary_text(summary: str) -> str:
    """The text of the summary message (and of the ``compacted`` line's ``message``)."""
    return f"{SUMMARY_PREFIX}\n{summary}"


def _user_text(item: Mapping[str, Any]) -> str | None:
    """The text of a real user message (``None``: not one, or an earlier summary)."""
    if item.get("type") != "message" or item.get("role") != "user":
        return None
    turn_item = parse_turn_item(RESPONSE_ITEM_ADAPTER.validate_python(item))
    if not isinstance(turn_item, UserMessageItem):
        return None
    text = "".join(part.text for part in turn_item.content if isinstance(part, TextUserInput))
    return None if is_summary_message(text) else text


def replacement_history(
    context: Iterable[Mapping[str, Any]],
    history: Sequence[Mapping[str, Any]],
    summary: str,
    *,
    max_tokens: int = COMPACT_USER_MESSAGE_MAX_TOKENS,
) -> list[Item]:
    """The history after a compaction: ``context`` (fresh contextual messages), the newest real
    user messages of ``history`` that fit ``max_tokens`` (as recorded, in order; one that does
    not fit ends the selection), then the summary message."""
    kept: list[Item] = []
    remaining = max_tokens
    for item in reversed(history):
        text = _user_text(item)
        if text is None:
            continue
        tokens = approx_token_count(text)
        if tokens > remaining:
            break
        kept.append(dict(item))
        remaining -= tokens
    kept.reverse()
    summary_message: Item = {
        "type": "message",
        "id": new_response_item_id("msg"),
        "role": "user",
        "content": [{"type": "input_text", "text": summary_text(summary)}],
    }
    return [*(dict(item) for item in context), *kept, summary_message]
