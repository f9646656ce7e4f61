"""The model-visible history of a thread, as Codex 0.163.0 core rebuilds it from a rollout.

When core resumes, forks or reloads a thread it replays the rollout into its context manager
(``reconstruct_history_from_rollout``) and starts the next model request from what that gives.
:func:`model_history` is the same replay, forward over the thread's lines (already resolved
through their history bases: a revert segment or a fork starts from its base's lines up to the
cut, ``storage.ThreadCatalog.history``):

* a ``response_item`` line is recorded when the model can see it (:func:`is_model_visible`:
  every message but a ``system`` one, reasoning, tool calls and their outputs, web search and
  image generation calls, compaction items, ``agent_message``; not a ``compaction_trigger``, an
  ``other`` / unknown item nor a pre-0.163.0 ``ghost_snapshot``);
* a ``compacted`` line with ``replacement_history`` replaces everything recorded so far; one
  without (older rollouts) is rebuilt as core does: the real user messages kept so far (newest
  first, up to ``COMPACT_USER_MESSAGE_MAX_TOKENS``), then one user message holding the summary;
* a ``thread_rolled_back`` event drops the last ``num_turns`` instruction turns
  (:func:`drop_last_n_user_turns`, contextual messages right above the cut included);
* everything else (``session_meta``, ``turn_context``, ``world_state``, ``token_usage_record``,
  other events) shapes no history.

The same fold runs over a live thread's event log (:func:`model_history_of_events`): there a
``raw_response_item`` event is a recorded item, a ``compacted`` event
(``protocol.core.CompactedEvent``, the bridge's own record of a compaction) a replacement.

Items come back as they were recorded (ids, ``status``, ``phase``, metadata passthrough kept):
what a provider must not see (the passthrough for a non-OpenAI provider) and what a prompt
normalizes (a call without its output) is the request builder's concern, as in core.

Boundary: pure; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Final

from codex_app_bridge.projection._rollout import drop_last_n_user_turns
from codex_app_bridge.projection._turn_items import parse_turn_item
from codex_app_bridge.protocol._base import dump_jsonable
from codex_app_bridge.protocol.core import (
    RESPONSE_ITEM_ADAPTER,
    CompactedEvent,
    CompactedLine,
    CompactionTriggerResponseItem,
    EventEnvelope,
    EventMsgLine,
    GhostSnapshotResponseItem,
    InputTextContentItem,
    MessageResponseItem,
    OtherResponseItem,
    RawResponseItemEvent,
    ResponseItem,
    ResponseItemLine,
    RolloutLine,
    TextUserInput,
    ThreadRolledBackEvent,
    UnknownResponseItem,
    UserMessageItem,
)

__all__ = [
    "COMPACT_USER_MESSAGE_MAX_TOKENS",
    "SUMMARY_PREFIX",
    "ModelHistory",
    "approx_token_count",
    "compacted_history",
    "is_model_visible",
    "is_summary_message",
    "model_history",
    "model_history_json",
    "model_history_of_events",
    "user_message_texts",
]

COMPACT_USER_MESSAGE_MAX_TOKENS: Final = 20_000
"""Budget of the real user messages a local compaction keeps (core's constant)."""

SUMMARY_PREFIX: Final = (
    "The conversation so far was compacted to fit the context window. An earlier model wrote "
    "the summary below of what was asked, what was done, what was learned and what remains. "
    "The tools it used are in the state it left them. Continue the work from this summary "
    "without repeating what is already done:"
)
"""What precedes a compaction summary in the history (the summary follows after a newline).
The project's own words: 0.163.0's text (``templates/compact/summary_prefix.md``) is not
copied, so a summary the real binary wrote is not recognised as one here (a later compaction
keeps it as a user message)."""

_HIDDEN_TYPES: Final = (
    CompactionTriggerResponseItem,
    OtherResponseItem,
    UnknownResponseItem,
    GhostSnapshotResponseItem,
)


def is_model_visible(item: ResponseItem) -> bool:
    """Whether core records ``item`` into the history it sends the model (``is_api_message``)."""
    if isinstance(item, MessageResponseItem):
        return item.role != "system"
    return not isinstance(item, _HIDDEN_TYPES)


def approx_token_count(text: str) -> int:
    """Core's coarse token estimate: a token per four UTF-8 bytes, rounded up."""
    return math.ceil(len(text.encode()) / 4)


def user_message_texts(items: Iterable[ResponseItem]) -> list[str]:
    """The real user messages of a history, as text (core's ``collect_user_messages``):
    messages that project to a ``UserMessage``, their text parts joined, earlier summaries
    left out."""
    texts: list[str] = []
    for item in items:
        turn_item = parse_turn_item(item)
        if not isinstance(turn_item, UserMessageItem):
            continue
        text = "".join(part.text for part in turn_item.content if isinstance(part, TextUserInput))
        if not is_summary_message(text):
            texts.append(text)
    return texts


def is_summary_message(text: str) -> bool:
    """Whether a user message is a compaction summary (it starts with the summary prefix)."""
    return text.startswith(SUMMARY_PREFIX + "\n")


def _truncated(text: str, max_tokens: int) -> str:
    """``text`` cut to about ``max_tokens`` tokens, its middle replaced by a marker (the shape
    of core's ``truncate_text`` with a token policy: head and tail kept, halves of the budget)."""
    budget = max_tokens * 4
    encoded = text.encode()
    if len(encoded) <= budget:
        return text
    head = encoded[: budget // 2].decode(errors="ignore")
    tail = encoded[len(encoded) - budget // 2 :].decode(errors="ignore")
    removed = approx_token_count(text) - max_tokens
    return f"{head}…{removed} tokens truncated…{tail}"


def compacted_history(
    initial_context: Iterable[ResponseItem],
    user_messages: Iterable[str],
    summary_text: str,
    *,
    max_tokens: int = COMPACT_USER_MESSAGE_MAX_TOKENS,
) -> list[ResponseItem]:
    """The history a local compaction leaves (core's ``build_compacted_history``): the initial
    context, the newest user messages that fit ``max_tokens`` (the oldest one kept may be cut),
    in their order, then one user message holding ``summary_text``; the messages have no id."""
    history = list(initial_context)
    selected: list[str] = []
    remaining = max_tokens
    for message in reversed(list(user_messages)):
        if remaining <= 0:
            break
        tokens = approx_token_count(message)
        if tokens <= remaining:
            selected.append(message)
            remaining -= tokens
        else:
            selected.append(_truncated(message, remaining))
            break
    selected.reverse()
    for text in [*selected, summary_text or "(no summary available)"]:
        history.append(MessageResponseItem(role="user", content=[InputTextContentItem(text=text)]))
    return history


class ModelHistory:
    """The fold: record, replace (compaction), roll back; :attr:`items` is the history."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[ResponseItem] = []

    def record(self, item: ResponseItem) -> None:
        if is_model_visible(item):
            self.items.append(item)

    def compact(self, message: str, replacement: Iterable[ResponseItem] | None) -> None:
        if replacement is not None:
            self.items = [item for item in replacement if is_model_visible(item)]
        else:
            self.items = compacted_history((), user_message_texts(self.items), message)

    def roll_back(self, num_turns: int) -> None:
        self.items = drop_last_n_user_turns(self.items, max(0, num_turns)).items


def model_history(lines: Iterable[RolloutLine]) -> list[ResponseItem]:
    """The model-visible history a rollout's lines rebuild (see the module docstring)."""
    history = ModelHistory()
    for line in lines:
        if isinstance(line, ResponseItemLine):
            history.record(line.payload)
        elif isinstance(line, CompactedLine):
            history.compact(line.payload.message, line.payload.replacement_history)
        elif isinstance(line, EventMsgLine) and isinstance(line.payload, ThreadRolledBackEvent):
            history.roll_back(line.payload.num_turns)
    return history.items


def model_history_of_events(events: Iterable[EventEnvelope]) -> list[ResponseItem]:
    """The model-visible history a live thread's event log rebuilds (see the module docstring)."""
    history = ModelHistory()
    for envelope in events:
        msg = envelope.msg
        if isinstance(msg, RawResponseItemEvent):
            history.record(msg.item)
        elif isinstance(msg, CompactedEvent):
            history.compact(msg.message, msg.replacement_history)
        elif isinstance(msg, ThreadRolledBackEvent):
            history.roll_back(msg.num_turns)
    return history.items


def model_history_json(items: Iterable[ResponseItem]) -> list[dict[str, Any]]:
    """Items as the JSON objects ``SessionConfig.prior_items`` holds."""
    return [dump_jsonable(item, RESPONSE_ITEM_ADAPTER) for item in items]
