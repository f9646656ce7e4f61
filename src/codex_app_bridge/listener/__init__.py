"""Listener layer: the per-thread reducer (pure: state, event -> state, notifications) and the
per-thread subscriptions and fan-out. The only place that holds thread state.

``ListenerHub`` (one per server process) owns the loaded threads and the initialized
connections; ``ThreadListener`` (one per thread) reduces core events and delivers the resulting
notifications to its subscribers' outboxes. ``reduce`` is the pure reducer behind it. The API is
the contract of ``docs/architecture.md`` ("The listener API").
"""

from codex_app_bridge.listener._hub import (
    ListenerHub,
    ThreadExistsError,
    ThreadListener,
    UnsubscribeStatus,
)
from codex_app_bridge.listener._read_state import (
    ReadState,
    read_state_of_history,
    read_state_of_turns,
)
from codex_app_bridge.listener._reducer import reduce
from codex_app_bridge.listener._state import (
    REQUEST_EVENT_TYPES,
    Audience,
    Emission,
    ItemLedger,
    ReduceContext,
    Reduction,
    ThreadState,
    ThreadWatch,
    TurnSummary,
)

__all__ = [
    "REQUEST_EVENT_TYPES",
    "Audience",
    "Emission",
    "ItemLedger",
    "ListenerHub",
    "ReadState",
    "ReduceContext",
    "Reduction",
    "ThreadExistsError",
    "ThreadListener",
    "ThreadState",
    "ThreadWatch",
    "TurnSummary",
    "UnsubscribeStatus",
    "read_state_of_history",
    "read_state_of_turns",
    "reduce",
]
