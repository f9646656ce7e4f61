"""What a turn source is given for one turn, and the events every synthesized turn is made of.

A ``TurnSource`` (``_session``) produces the core events of one turn, in order, as an async
iterator of ``EventMsg``, from a ``TurnRequest``; ``TurnPlayer`` wraps each one in
``EventEnvelope(id=turn_id, msg=event)`` and owns interrupts, steering and the guarantee that every
turn ends. Sources never touch connections and never see JSON-RPC.

A well-behaved source yields, like Codex 0.163.0 core: ``task_started`` first, then items
(``item_started`` / deltas / ``item_completed``), ``token_count``, and a terminal ``task_complete``
(with ``error`` when the turn failed, preceded by an ``error`` event). Pacing (``anyio.sleep``
between events) is the source's business; the runner may cancel it at any ``await``.

The event types that open and end a turn (``TURN_START_TYPES``, ``TURN_END_TYPES``) and builders
for the events that sources and the runner both synthesize (``task_started_event``,
``failed_turn``, ``aborted_turn``, ``user_message_events``) live here too, so that every synthesized turn
looks the same whoever makes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from codex_app_bridge.protocol.core import (
    ErrorEvent,
    ItemCompletedEvent,
    ItemStartedEvent,
    TaskCompleteEvent,
    TaskError,
    TaskStartedEvent,
    TextUserInput,
    TokenUsage,
    TurnAbortedEvent,
    TurnAttribution,
    UserInput,
    UserMessageItem,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.sources._replies import Replies

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "LEGACY_ONLY_TYPES",
    "TURN_END_TYPES",
    "TURN_START_TYPES",
    "SourceDefaults",
    "TurnRequest",
    "aborted_turn",
    "failed_task_complete",
    "failed_turn",
    "input_text",
    "silent_event_note",
    "task_started_event",
    "user_message_events",
]

DEFAULT_CONTEXT_WINDOW = 258_400
"""The context window 0.163.0 reports when it has no model metadata (its fallback)."""

TURN_START_TYPES: Final = frozenset({"task_started", "turn_started"})
"""Event types that open a turn (``turn_started`` is the older spelling of ``task_started``)."""
TURN_END_TYPES: Final = frozenset({"task_complete", "turn_complete", "turn_aborted"})
"""Event types that end a turn."""

LEGACY_ONLY_TYPES: Final[dict[str, str]] = {
    "agent_message": "AgentMessage",
    "agent_reasoning": "Reasoning",
    "agent_reasoning_raw_content": "Reasoning",
    "user_message": "UserMessage",
    "web_search_begin": "WebSearch",
    "web_search_end": "WebSearch",
    "image_generation_begin": "ImageGeneration",
    "image_generation_end": "ImageGeneration",
    "context_compacted": "ContextCompaction",
    "entered_review_mode": "EnteredReviewMode",
    "exited_review_mode": "ExitedReviewMode",
}
"""Legacy events that 0.163.0 clients never see (core sends each beside an ``item_started`` /
``item_completed`` of the item kind named here, and only those become notifications)."""


def silent_event_note(kind: str, *, known: bool, turn_has_items: bool) -> str | None:
    """Why an event of type ``kind`` shows nothing to a client, or ``None`` when it may.

    ``known``: the type is an ``EventMsg`` the bridge knows. A legacy-only event is worth a note
    only in a turn without item events (recorded beside its items, it is what core sends)."""
    if not known:
        return f"unknown event type {kind!r}: clients see nothing of it"
    item = LEGACY_ONLY_TYPES.get(kind)
    if item is None or turn_has_items:
        return None
    return (
        f"{kind!r} is a legacy event that 0.163.0 clients never see: write item_started / "
        f"item_completed (item type {item}) instead"
    )


@dataclass(frozen=True, slots=True)
class SourceDefaults:
    """What a thread reports when the client names no model or provider."""

    model: str
    model_provider: str


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """One turn to produce, as the runner hands it to a source."""

    thread_id: str
    turn_id: str
    input: Sequence[UserInput]
    """The ``turn/start`` input, as core ``UserInput`` (``text``, ``image``, ``local_image``, ...)."""
    user_message_id: str
    """The id the user-message item of this turn should carry (a UUIDv7, as 0.163.0 mints)."""
    turn_index: int
    """0 for the first turn started on this thread, 1 for the next one, ..."""
    model: str
    cwd: str
    started_at_ms: int = field(default_factory=now_ms)
    replies: Replies = field(default_factory=Replies)
    """Answers to what this turn asks the client (``Replies.wait_for``; the optional op hook)."""
    token_total: TokenUsage | None = None
    """The thread's token usage so far: the ``total_token_usage`` of its last ``token_count``
    (this session's, else the history's it was opened with, as core seeds it on resume and
    fork); ``None``: none yet. A source adds its turn's usage to it, and keeps no total of its
    own, so nothing of a thread outlives its session."""


def input_text(inputs: Sequence[UserInput]) -> str:
    """The text parts of a user input, joined by newlines (what a thread preview shows)."""
    return "\n".join(part.text for part in inputs if isinstance(part, TextUserInput))


def task_started_event(turn_id: str, started_at_ms: int) -> TaskStartedEvent:
    """The ``task_started`` opening a root turn (``started_at`` in Unix seconds, as core)."""
    return TaskStartedEvent(
        turn_attribution=TurnAttribution(turn_id=turn_id, root_turn_id=turn_id),
        turn_id=turn_id,
        root_turn_id=turn_id,
        started_at=started_at_ms // 1000,
        model_context_window=DEFAULT_CONTEXT_WINDOW,
    )


def failed_task_complete(
    turn_id: str, message: str, *, started_at_ms: int, completed_at_ms: int
) -> TaskCompleteEvent:
    """The ``task_complete`` of a turn that failed with ``message`` (``codexErrorInfo: other``)."""
    return TaskCompleteEvent(
        root_turn_id=turn_id,
        turn_id=turn_id,
        last_agent_message=None,
        error=TaskError(message=message, codex_error_info="other"),
        started_at=started_at_ms // 1000,
        completed_at=completed_at_ms // 1000,
        duration_ms=max(0, completed_at_ms - started_at_ms),
    )


def failed_turn(
    turn_id: str, message: str, *, started_at_ms: int, completed_at_ms: int
) -> tuple[ErrorEvent, TaskCompleteEvent]:
    """The end of a turn that failed with ``message``, as core ends one: an ``error`` event,
    then the failed ``task_complete`` (both ``codexErrorInfo: other``)."""
    return (
        ErrorEvent(message=message, codex_error_info="other"),
        failed_task_complete(
            turn_id, message, started_at_ms=started_at_ms, completed_at_ms=completed_at_ms
        ),
    )


def aborted_turn(turn_id: str, started_at_ms: int, completed_at_ms: int) -> TurnAbortedEvent:
    """The ``turn_aborted`` of an interrupted root turn, with Codex's timings."""
    return TurnAbortedEvent(
        root_turn_id=turn_id,
        turn_id=turn_id,
        reason="interrupted",
        started_at=started_at_ms // 1000,
        completed_at=completed_at_ms // 1000,
        duration_ms=max(0, completed_at_ms - started_at_ms),
    )


def user_message_events(
    thread_id: str, turn_id: str, item: UserMessageItem, at_ms: int
) -> tuple[ItemStartedEvent, ItemCompletedEvent]:
    """A user message entering a turn: its ``item_started`` and ``item_completed``, both at
    ``at_ms`` (core records user input whole)."""
    return (
        ItemStartedEvent(thread_id=thread_id, turn_id=turn_id, item=item, started_at_ms=at_ms),
        ItemCompletedEvent(
            thread_id=thread_id,
            turn_id=turn_id,
            item=item,
            started_at_ms=at_ms,
            completed_at_ms=at_ms,
        ),
    )
