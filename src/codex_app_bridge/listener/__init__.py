"""Listener layer: the per-thread reducer (pure: state, event -> state, notifications) and the
per-thread subscriptions and fan-out. The only place that holds thread state.

``ListenerHub`` (one per server process) owns the loaded threads and the initialized
connections; ``ThreadListener`` (one per thread) reduces core events and delivers the resulting
notifications to its subscribers' outboxes. ``reduce`` is the pure reducer behind it. The API is
the contract of ``docs/architecture.md`` ("The listener API").

Each name is imported from its module when first used: a read state (``_read_state``, a leaf)
does not load the hub, the reducer and the models they build (a process's first ``thread/list``
needs only the read states of stored threads).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_MODULES: dict[str, str] = {
    "Audience": "_state",
    "Emission": "_state",
    "ItemLedger": "_state",
    "ListenerHub": "_hub",
    "REQUEST_EVENT_TYPES": "_state",
    "ReadState": "_read_state",
    "ReduceContext": "_state",
    "Reduction": "_state",
    "ThreadExistsError": "_hub",
    "ThreadListener": "_hub",
    "ThreadState": "_state",
    "ThreadWatch": "_state",
    "TurnSummary": "_state",
    "UnsubscribeStatus": "_hub",
    "read_state_of_history": "_read_state",
    "read_state_of_turns": "_read_state",
    "reduce": "_reducer",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
