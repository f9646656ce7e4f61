"""Mapping layer (pure): the stateless mapper from one core EventMsg to at most one app-server
notification, TurnItem -> ThreadItem conversion and the item builders. No I/O, no state.

* :func:`item_event_to_server_notification`: the notification one core event becomes (``None``
  when it has no item projection or cannot be shown).
* :func:`thread_item_from_turn_item`: the ``ThreadItem`` a client sees for a core ``TurnItem``
  (``None`` when the 0.163.0 wire cannot show it).
* The item builders (``build_*``, :func:`convert_patch_changes`, :func:`command_actions`,
  :func:`collab_agent_state`): one rule per item kind, shared by the conversions here and by the
  listener's synthetic items.
* Core errors in their v2 spelling (:func:`codex_error_info`, :func:`turn_error`,
  :func:`error_affects_turn_status`): one rule for live notifications and rebuilt history.
"""

from codex_app_bridge.mapping._builders import (
    UnmappableItemError,
    build_collab_agent_tool_call_item,
    build_command_execution_approval_request_item,
    build_command_execution_begin_item,
    build_command_execution_end_item,
    build_command_execution_item,
    build_dynamic_tool_call_item,
    build_dynamic_tool_call_response_item,
    build_file_change_approval_request_item,
    build_file_change_begin_item,
    build_file_change_end_item,
    build_file_change_item,
    build_mcp_tool_call_begin_item,
    build_mcp_tool_call_end_item,
    build_sub_agent_activity_event_item,
    build_sub_agent_activity_item,
    collab_agent_state,
    command_actions,
    convert_patch_changes,
)
from codex_app_bridge.mapping._delta_wire import DELTA_ROWS, DeltaRow
from codex_app_bridge.mapping._errors import (
    camel,
    camel_keys,
    codex_error_info,
    error_affects_turn_status,
    is_rollback_failure,
    turn_error,
)
from codex_app_bridge.mapping._event_mapping import (
    EVENT_ROWS,
    ItemEventNotification,
    MappedNotification,
    item_event_to_server_notification,
    map_event,
)
from codex_app_bridge.mapping._thread_item import thread_item_from_turn_item

__all__ = [
    "DELTA_ROWS",
    "EVENT_ROWS",
    "DeltaRow",
    "ItemEventNotification",
    "MappedNotification",
    "UnmappableItemError",
    "build_collab_agent_tool_call_item",
    "build_command_execution_approval_request_item",
    "build_command_execution_begin_item",
    "build_command_execution_end_item",
    "build_command_execution_item",
    "build_dynamic_tool_call_item",
    "build_dynamic_tool_call_response_item",
    "build_file_change_approval_request_item",
    "build_file_change_begin_item",
    "build_file_change_end_item",
    "build_file_change_item",
    "build_mcp_tool_call_begin_item",
    "build_mcp_tool_call_end_item",
    "build_sub_agent_activity_event_item",
    "build_sub_agent_activity_item",
    "camel",
    "camel_keys",
    "codex_error_info",
    "collab_agent_state",
    "command_actions",
    "convert_patch_changes",
    "error_affects_turn_status",
    "is_rollback_failure",
    "item_event_to_server_notification",
    "map_event",
    "thread_item_from_turn_item",
    "turn_error",
]
