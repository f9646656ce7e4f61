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

from typing import TYPE_CHECKING

from codex_app_bridge._reexports import import_reexport as _import_reexport

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

_SOURCES: dict[str, str] = {
    "Audience": "codex_app_bridge.listener._state",
    "Emission": "codex_app_bridge.listener._state",
    "ItemLedger": "codex_app_bridge.listener._state",
    "ListenerHub": "codex_app_bridge.listener._hub",
    "REQUEST_EVENT_TYPES": "codex_app_bridge.listener._state",
    "ReadState": "codex_app_bridge.listener._read_state",
    "ReduceContext": "codex_app_bridge.listener._state",
    "Reduction": "codex_app_bridge.listener._state",
    "ThreadExistsError": "codex_app_bridge.listener._hub",
    "ThreadListener": "codex_app_bridge.listener._hub",
    "ThreadState": "codex_app_bridge.listener._state",
    "ThreadWatch": "codex_app_bridge.listener._state",
    "TurnSummary": "codex_app_bridge.listener._state",
    "UnsubscribeStatus": "codex_app_bridge.listener._hub",
    "read_state_of_history": "codex_app_bridge.listener._read_state",
    "read_state_of_turns": "codex_app_bridge.listener._read_state",
    "reduce": "codex_app_bridge.listener._reducer",
}


def __getattr__(name: str) -> object:
    return _import_reexport(__name__, globals(), _SOURCES, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
