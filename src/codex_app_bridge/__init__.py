"""codex-app-bridge: a Python implementation of the Codex app-server notification bridge.

The package turns Codex core runtime events (``EventMsg`` in ``{id, msg}`` envelopes) and rollout
history (``ResponseItem`` lines) into the JSON-RPC notifications that ``codex app-server`` 0.163.0
sends to its clients, and serves them over the same wire protocol.

Public surface: the names listed in ``__all__``. Everything else lives in private modules.
"""

from __future__ import annotations

import typing as _typing

from codex_app_bridge._reexports import import_reexport as _import_reexport
from codex_app_bridge._version import CODEX_PROTOCOL_VERSION, __version__

if _typing.TYPE_CHECKING:
    from codex_app_bridge.listener import ListenerHub, ThreadListener
    from codex_app_bridge.mapping import (
        convert_patch_changes,
        item_event_to_server_notification,
        thread_item_from_turn_item,
    )
    from codex_app_bridge.mapping.thread_history import ThreadHistoryBuilder, build_turns
    from codex_app_bridge.projection import (
        DroppedUserTurns,
        build_hook_prompt_message,
        drop_last_n_user_turns,
        fork_turn_positions_in_rollout,
        is_contextual_dev_message_content,
        is_contextual_user_message_content,
        is_user_turn_boundary,
        parse_hook_prompt_fragment,
        parse_turn_item,
        truncate_rollout_before_nth_user_message_from_start,
        truncate_rollout_to_last_n_fork_turns,
        user_message_positions_in_rollout,
        web_search_action_detail,
    )
    from codex_app_bridge.protocol.core import (
        CONTENT_ITEM_ADAPTER,
        EVENT_ENVELOPE_ADAPTER,
        EVENT_MSG_ADAPTER,
        RESPONSE_ITEM_ADAPTER,
        ROLLOUT_LINE_ADAPTER,
        TURN_ITEM_ADAPTER,
        ContentItem,
        EventEnvelope,
        EventMsg,
        ResponseItem,
        RolloutLine,
        TurnItem,
        UserInput,
    )
    from codex_app_bridge.protocol.v2 import (
        CLIENT_REQUEST_ADAPTER,
        SERVER_NOTIFICATION_ADAPTER,
        SERVER_REQUEST_ADAPTER,
        THREAD_ITEM_ADAPTER,
        AnyClientRequest,
        AnyServerNotification,
        AnyServerRequest,
        AnyThreadItem,
        Thread,
        Turn,
    )
    from codex_app_bridge.server import BridgeServer
    from codex_app_bridge.sources import DefaultAgent, EventSource, ScriptSource, TurnRequest

# where each public name lives: imported on first use, so that ``import codex_app_bridge`` (and
# every ``python -m codex_app_bridge`` command) loads only the modules it needs
_SOURCES: dict[str, str] = {
    **dict.fromkeys(("ListenerHub", "ThreadListener"), "codex_app_bridge.listener"),
    **dict.fromkeys(
        (
            "convert_patch_changes",
            "item_event_to_server_notification",
            "thread_item_from_turn_item",
        ),
        "codex_app_bridge.mapping",
    ),
    **dict.fromkeys(
        ("ThreadHistoryBuilder", "build_turns"), "codex_app_bridge.mapping.thread_history"
    ),
    **dict.fromkeys(
        (
            "DroppedUserTurns",
            "build_hook_prompt_message",
            "drop_last_n_user_turns",
            "fork_turn_positions_in_rollout",
            "is_contextual_dev_message_content",
            "is_contextual_user_message_content",
            "is_user_turn_boundary",
            "parse_hook_prompt_fragment",
            "parse_turn_item",
            "truncate_rollout_before_nth_user_message_from_start",
            "truncate_rollout_to_last_n_fork_turns",
            "user_message_positions_in_rollout",
            "web_search_action_detail",
        ),
        "codex_app_bridge.projection",
    ),
    **dict.fromkeys(
        (
            "CONTENT_ITEM_ADAPTER",
            "EVENT_ENVELOPE_ADAPTER",
            "EVENT_MSG_ADAPTER",
            "RESPONSE_ITEM_ADAPTER",
            "ROLLOUT_LINE_ADAPTER",
            "TURN_ITEM_ADAPTER",
            "ContentItem",
            "EventEnvelope",
            "EventMsg",
            "ResponseItem",
            "RolloutLine",
            "TurnItem",
            "UserInput",
        ),
        "codex_app_bridge.protocol.core",
    ),
    **dict.fromkeys(
        (
            "CLIENT_REQUEST_ADAPTER",
            "SERVER_NOTIFICATION_ADAPTER",
            "SERVER_REQUEST_ADAPTER",
            "THREAD_ITEM_ADAPTER",
            "AnyClientRequest",
            "AnyServerNotification",
            "AnyServerRequest",
            "AnyThreadItem",
            "Thread",
            "Turn",
        ),
        "codex_app_bridge.protocol.v2",
    ),
    **dict.fromkeys(("BridgeServer",), "codex_app_bridge.server"),
    **dict.fromkeys(
        ("DefaultAgent", "EventSource", "ScriptSource", "TurnRequest"), "codex_app_bridge.sources"
    ),
}

__all__ = [
    "CLIENT_REQUEST_ADAPTER",
    "CODEX_PROTOCOL_VERSION",
    "CONTENT_ITEM_ADAPTER",
    "EVENT_ENVELOPE_ADAPTER",
    "EVENT_MSG_ADAPTER",
    "RESPONSE_ITEM_ADAPTER",
    "ROLLOUT_LINE_ADAPTER",
    "SERVER_NOTIFICATION_ADAPTER",
    "SERVER_REQUEST_ADAPTER",
    "THREAD_ITEM_ADAPTER",
    "TURN_ITEM_ADAPTER",
    "AnyClientRequest",
    "AnyServerNotification",
    "AnyServerRequest",
    "AnyThreadItem",
    "BridgeServer",
    "ContentItem",
    "DefaultAgent",
    "DroppedUserTurns",
    "EventEnvelope",
    "EventMsg",
    "EventSource",
    "ListenerHub",
    "ResponseItem",
    "RolloutLine",
    "ScriptSource",
    "Thread",
    "ThreadHistoryBuilder",
    "ThreadListener",
    "Turn",
    "TurnItem",
    "TurnRequest",
    "UserInput",
    "__version__",
    "build_hook_prompt_message",
    "build_turns",
    "convert_patch_changes",
    "drop_last_n_user_turns",
    "fork_turn_positions_in_rollout",
    "is_contextual_dev_message_content",
    "is_contextual_user_message_content",
    "is_user_turn_boundary",
    "item_event_to_server_notification",
    "parse_hook_prompt_fragment",
    "parse_turn_item",
    "thread_item_from_turn_item",
    "truncate_rollout_before_nth_user_message_from_start",
    "truncate_rollout_to_last_n_fork_turns",
    "user_message_positions_in_rollout",
    "web_search_action_detail",
]


def __getattr__(name: str) -> object:
    return _import_reexport(__name__, globals(), _SOURCES, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
