"""The event-source contract: what a source is given for one turn and what it gives back.

A source produces the core events of one turn, in order, as an async iterator of ``EventMsg``.
The server's turn runner wraps each one in ``EventEnvelope(id=turn_id, msg=event)`` and feeds it to
the thread's listener; it owns everything else: the turn id, interrupts (it stops pulling from the
source and feeds a ``turn_aborted`` event itself), steering (it injects the steered user message),
and the guarantee that every turn ends (a source that stops without a terminal event or raises gets
a failed turn). Sources never touch connections and never see JSON-RPC.

A well-behaved source yields, like Codex 0.163.0 core: ``task_started`` first, then items
(``item_started`` / deltas / ``item_completed``), ``token_count``, and a terminal ``task_complete``
(with ``error`` when the turn failed, preceded by an ``error`` event). Pacing (``anyio.sleep``
between events) is the source's business; the runner may cancel it at any ``await``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from codex_app_bridge.protocol.core import EventMsg, TextUserInput, UserInput

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "EventSource",
    "SourceDefaults",
    "TurnRequest",
    "input_text",
]

DEFAULT_CONTEXT_WINDOW = 258_400
"""The context window 0.163.0 reports when it has no model metadata (its fallback)."""


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
    started_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))


@runtime_checkable
class EventSource(Protocol):
    """Produces the core events of each turn (see the module docstring)."""

    @property
    def defaults(self) -> SourceDefaults: ...

    def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        """The events of the turn ``request`` describes (an async generator, usually)."""
        ...


def input_text(inputs: Sequence[UserInput]) -> str:
    """The text parts of a user input, joined by newlines (what a thread preview shows)."""
    return "\n".join(part.text for part in inputs if isinstance(part, TextUserInput))
