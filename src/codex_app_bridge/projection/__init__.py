"""Projection layer (pure): ResponseItem -> TurnItem, user-turn boundaries, rollout user positions
and rollout truncation for rollback and fork. No I/O, no state.

Codex has three views of "a message": the model/history item (``ResponseItem``), the visible
semantic item (``TurnItem``, :func:`parse_turn_item`) and the instruction-turn boundary that
rollback, fork and truncation count (:func:`is_user_turn_boundary` and the rollout helpers). They
disagree on purpose, exactly where Codex 0.163.0's do; each module documents its rules.
"""

from __future__ import annotations

from codex_app_bridge.projection._boundaries import (
    agent_path_error,
    is_user_turn_boundary,
    parse_inter_agent_communication,
)
from codex_app_bridge.projection._contextual import (
    CONTEXTUAL_USER_MARKERS,
    DEVELOPER_CONTEXTUAL_PREFIXES,
    build_hook_prompt_message,
    has_non_contextual_dev_message_content,
    is_contextual_dev_fragment,
    is_contextual_dev_message_content,
    is_contextual_user_fragment,
    is_contextual_user_message_content,
    is_standard_contextual_user_text,
    parse_hook_prompt_fragment,
    parse_hook_prompt_message,
    serialize_hook_prompt_fragment,
)
from codex_app_bridge.projection._ids import new_item_id, new_response_item_id, uuid7
from codex_app_bridge.projection._model_history import (
    COMPACT_USER_MESSAGE_MAX_TOKENS,
    SUMMARY_PREFIX,
    ModelHistory,
    approx_token_count,
    compacted_history,
    is_model_visible,
    is_summary_message,
    model_history,
    model_history_json,
    model_history_of_events,
    user_message_texts,
)
from codex_app_bridge.projection._rollout import (
    DroppedUserTurns,
    drop_last_n_user_turns,
    fork_turn_positions_in_rollout,
    last_n_fork_turns_start,
    nth_user_message_cut,
    projects_to_user_message,
    truncate_rollout_before_nth_user_message_from_start,
    truncate_rollout_to_last_n_fork_turns,
    user_message_positions_in_rollout,
)
from codex_app_bridge.projection._text import rust_trim
from codex_app_bridge.projection._turn_items import (
    parse_agent_message,
    parse_turn_item,
    parse_user_message,
    parse_visible_hook_prompt_message,
    web_search_action_detail,
)

__all__ = [
    "COMPACT_USER_MESSAGE_MAX_TOKENS",
    "CONTEXTUAL_USER_MARKERS",
    "DEVELOPER_CONTEXTUAL_PREFIXES",
    "SUMMARY_PREFIX",
    "DroppedUserTurns",
    "ModelHistory",
    "agent_path_error",
    "approx_token_count",
    "build_hook_prompt_message",
    "compacted_history",
    "drop_last_n_user_turns",
    "fork_turn_positions_in_rollout",
    "has_non_contextual_dev_message_content",
    "is_contextual_dev_fragment",
    "is_contextual_dev_message_content",
    "is_contextual_user_fragment",
    "is_contextual_user_message_content",
    "is_model_visible",
    "is_standard_contextual_user_text",
    "is_summary_message",
    "is_user_turn_boundary",
    "last_n_fork_turns_start",
    "model_history",
    "model_history_json",
    "model_history_of_events",
    "new_item_id",
    "new_response_item_id",
    "nth_user_message_cut",
    "parse_agent_message",
    "parse_hook_prompt_fragment",
    "parse_hook_prompt_message",
    "parse_inter_agent_communication",
    "parse_turn_item",
    "parse_user_message",
    "parse_visible_hook_prompt_message",
    "projects_to_user_message",
    "rust_trim",
    "serialize_hook_prompt_fragment",
    "truncate_rollout_before_nth_user_message_from_start",
    "truncate_rollout_to_last_n_fork_turns",
    "user_message_positions_in_rollout",
    "user_message_texts",
    "uuid7",
    "web_search_action_detail",
]
