"""The stateless mapper: one core ``EventMsg`` in, at most one app-server notification out.

:func:`item_event_to_server_notification` covers every arm of the upstream mapper
(``spec/event-mapping.md`` §2, §3):

* live in 0.163.0: ``item_started`` / ``item_completed`` (through
  :func:`~codex_app_bridge.mapping.thread_item_from_turn_item`), the agent message, plan and
  reasoning deltas (a reasoning *content* delta is a *summary* text delta), the reasoning section
  break, command output deltas (the base64 chunk decoded on its own, invalid UTF-8 replaced, so a
  character split across two chunks shows as replacement characters in both), terminal
  interaction and patch updates;
* the legacy begin/end item events that 0.163.0's live server drops but history rebuilds and
  replays of older producers need: exec command, MCP tool call and patch apply begin/end, the
  dynamic tool call response (its ``turnId`` comes from the payload, not the envelope), the ten
  collab agent events and sub-agent activity.

``threadId`` is the conversation id given by the caller and ``turnId`` the envelope id; the
``thread_id`` / ``turn_id`` some payloads carry are ignored. ``startedAtMs`` / ``completedAtMs``
come from the payload; the MCP and patch events carry no time in 0.163.0, so they use a
``started_at_ms`` / ``completed_at_ms`` the producer added, else ``0``. ``emittedAtMs`` is left
unset: whoever sends the notification stamps it.

Everything else gives ``None`` instead of raising: an event with no item projection (the ones the
listener handles itself, and unknown events), and an item event whose item the 0.163.0 wire
cannot show (an unknown item type or status) or whose payload cannot be decoded (a chunk that is
not base64). A stream keeps going past such an event; the real server cannot read those events,
so it sends nothing for them either. The mapper does not know whether a legacy event is dropped
live: that is the listener's decision.

Shape: one table, ``EVENT_ROWS`` (core event class -> row function), each row giving the
notification's method and params model; :func:`map_event` looks the row up (the listener's live
path uses it as it is), :func:`item_event_to_server_notification` wraps the pair in its
``ServerNotification`` variant. The streaming deltas have a second, byte-level row each in
``_delta_wire`` (the hot path), tested byte-equal to these.

Boundary: pure; no I/O, no state, no clock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeAlias

from codex_app_bridge.mapping._builders import (
    build_collab_agent_tool_call_item,
    build_command_execution_begin_item,
    build_command_execution_end_item,
    build_dynamic_tool_call_response_item,
    build_file_change_begin_item,
    build_file_change_end_item,
    build_mcp_tool_call_begin_item,
    build_mcp_tool_call_end_item,
    build_sub_agent_activity_event_item,
    collab_end_status,
    convert_patch_changes,
)
from codex_app_bridge.mapping._thread_item import thread_item_from_turn_item
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol._base import WireModel
from codex_app_bridge.protocol.v2 import (
    AgentMessageDeltaNotification,
    CollabAgentTool,
    CommandExecutionOutputDeltaNotification,
    FileChangePatchUpdatedNotification,
    ItemAgentMessageDeltaServerNotification,
    ItemCommandExecutionOutputDeltaServerNotification,
    ItemCommandExecutionTerminalInteractionServerNotification,
    ItemCompletedNotification,
    ItemCompletedServerNotification,
    ItemFileChangePatchUpdatedServerNotification,
    ItemPlanDeltaServerNotification,
    ItemReasoningSummaryPartAddedServerNotification,
    ItemReasoningSummaryTextDeltaServerNotification,
    ItemReasoningTextDeltaServerNotification,
    ItemStartedNotification,
    ItemStartedServerNotification,
    PlanDeltaNotification,
    ReasoningSummaryPartAddedNotification,
    ReasoningSummaryTextDeltaNotification,
    ReasoningTextDeltaNotification,
    TerminalInteractionNotification,
    ThreadItem,
)

__all__ = [
    "EVENT_ROWS",
    "ItemEventNotification",
    "MappedNotification",
    "item_event_to_server_notification",
    "map_event",
]

ItemEventNotification: TypeAlias = (
    ItemStartedServerNotification
    | ItemCompletedServerNotification
    | ItemAgentMessageDeltaServerNotification
    | ItemPlanDeltaServerNotification
    | ItemReasoningSummaryTextDeltaServerNotification
    | ItemReasoningTextDeltaServerNotification
    | ItemReasoningSummaryPartAddedServerNotification
    | ItemCommandExecutionOutputDeltaServerNotification
    | ItemCommandExecutionTerminalInteractionServerNotification
    | ItemFileChangePatchUpdatedServerNotification
)
"""Every notification the stateless mapper can produce."""

MappedNotification: TypeAlias = tuple[str, WireModel]
"""A notification as ``(method, params model)``."""

_Row: TypeAlias = Callable[[Any, str, str], MappedNotification | None]

_WRAPPERS: Final[dict[str, Callable[..., ItemEventNotification]]] = {
    "item/started": ItemStartedServerNotification,
    "item/completed": ItemCompletedServerNotification,
    "item/agentMessage/delta": ItemAgentMessageDeltaServerNotification,
    "item/plan/delta": ItemPlanDeltaServerNotification,
    "item/reasoning/summaryTextDelta": ItemReasoningSummaryTextDeltaServerNotification,
    "item/reasoning/textDelta": ItemReasoningTextDeltaServerNotification,
    "item/reasoning/summaryPartAdded": ItemReasoningSummaryPartAddedServerNotification,
    "item/commandExecution/outputDelta": ItemCommandExecutionOutputDeltaServerNotification,
    "item/commandExecution/terminalInteraction": (
        ItemCommandExecutionTerminalInteractionServerNotification
    ),
    "item/fileChange/patchUpdated": ItemFileChangePatchUpdatedServerNotification,
}


def map_event(msg: core.EventMsg, thread_id: str, turn_id: str) -> MappedNotification | None:
    """``(method, params)`` of the notification ``msg`` becomes, or ``None`` (see the module
    doc); never raises for a validated ``EventMsg``."""
    row = EVENT_ROWS.get(type(msg))
    if row is None:
        return None  # no item projection: handled by the listener itself, or an unknown event
    try:
        return row(msg, thread_id, turn_id)
    except ValueError:  # an unmappable item value, a validation error, a chunk that is not base64
        return None


def item_event_to_server_notification(
    msg: core.EventMsg, thread_id: str, turn_id: str
) -> ItemEventNotification | None:
    """The notification one core event becomes for thread ``thread_id``, turn ``turn_id``.

    ``turn_id`` is the event envelope's id. ``None`` when the event has no item projection or
    cannot be shown (see the module doc); this never raises for a validated ``EventMsg``.
    """
    mapped = map_event(msg, thread_id, turn_id)
    if mapped is None:
        return None
    method, params = mapped
    return _WRAPPERS[method](params=params)


def _started(
    item: ThreadItem | None, thread_id: str, turn_id: str, started_at_ms: int
) -> MappedNotification | None:
    if item is None:
        return None
    params = ItemStartedNotification(
        item=item, thread_id=thread_id, turn_id=turn_id, started_at_ms=started_at_ms
    )
    return "item/started", params


def _completed(
    item: ThreadItem | None, thread_id: str, turn_id: str, completed_at_ms: int
) -> MappedNotification | None:
    if item is None:
        return None
    params = ItemCompletedNotification(
        item=item, thread_id=thread_id, turn_id=turn_id, completed_at_ms=completed_at_ms
    )
    return "item/completed", params


def _producer_time(msg: core.EventMsg, field: str) -> int:
    """A time the producer added to an event whose 0.163.0 payload has none; else ``0``."""
    value = (msg.model_extra or {}).get(field)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# --- the streaming deltas (most of a live stream) ---------------------------------------------


def _agent_message_delta(
    msg: core.AgentMessageContentDeltaEvent, thread_id: str, turn_id: str
) -> MappedNotification:
    params = AgentMessageDeltaNotification(
        thread_id=thread_id, turn_id=turn_id, item_id=msg.item_id, delta=msg.delta
    )
    return "item/agentMessage/delta", params


def _command_output_delta(
    msg: core.ExecCommandOutputDeltaEvent, thread_id: str, turn_id: str
) -> MappedNotification:
    params = CommandExecutionOutputDeltaNotification(
        thread_id=thread_id, turn_id=turn_id, item_id=msg.call_id, delta=msg.chunk_text()
    )
    return "item/commandExecution/outputDelta", params


def _reasoning_summary_delta(
    msg: core.ReasoningContentDeltaEvent, thread_id: str, turn_id: str
) -> MappedNotification:
    params = ReasoningSummaryTextDeltaNotification(
        thread_id=thread_id,
        turn_id=turn_id,
        item_id=msg.item_id,
        delta=msg.delta,
        summary_index=msg.summary_index,
    )
    return "item/reasoning/summaryTextDelta", params


def _reasoning_text_delta(
    msg: core.ReasoningRawContentDeltaEvent, thread_id: str, turn_id: str
) -> MappedNotification:
    params = ReasoningTextDeltaNotification(
        thread_id=thread_id,
        turn_id=turn_id,
        item_id=msg.item_id,
        delta=msg.delta,
        content_index=msg.content_index,
    )
    return "item/reasoning/textDelta", params


def _plan_delta(msg: core.PlanDeltaEvent, thread_id: str, turn_id: str) -> MappedNotification:
    params = PlanDeltaNotification(
        thread_id=thread_id, turn_id=turn_id, item_id=msg.item_id, delta=msg.delta
    )
    return "item/plan/delta", params


def _summary_part_added(
    msg: core.AgentReasoningSectionBreakEvent, thread_id: str, turn_id: str
) -> MappedNotification:
    params = ReasoningSummaryPartAddedNotification(
        thread_id=thread_id, turn_id=turn_id, item_id=msg.item_id, summary_index=msg.summary_index
    )
    return "item/reasoning/summaryPartAdded", params


def _terminal_interaction(
    msg: core.TerminalInteractionEvent, thread_id: str, turn_id: str
) -> MappedNotification:
    params = TerminalInteractionNotification(
        thread_id=thread_id,
        turn_id=turn_id,
        item_id=msg.call_id,
        process_id=msg.process_id,
        stdin=msg.stdin,
    )
    return "item/commandExecution/terminalInteraction", params


def _patch_updated(
    msg: core.PatchApplyUpdatedEvent, thread_id: str, turn_id: str
) -> MappedNotification:
    params = FileChangePatchUpdatedNotification(
        thread_id=thread_id,
        turn_id=turn_id,
        item_id=msg.call_id,
        changes=convert_patch_changes(msg.changes),
    )
    return "item/fileChange/patchUpdated", params


# --- first-class items (live) and the legacy begin/end item events ----------------------------


def _item_started(
    msg: core.ItemStartedEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    return _started(thread_item_from_turn_item(msg.item), thread_id, turn_id, msg.started_at_ms)


def _item_completed(
    msg: core.ItemCompletedEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = thread_item_from_turn_item(msg.item)
    return _completed(item, thread_id, turn_id, msg.completed_at_ms)


def _exec_begin(
    msg: core.ExecCommandBeginEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = build_command_execution_begin_item(msg)
    return _started(item, thread_id, turn_id, msg.started_at_ms)


def _exec_end(
    msg: core.ExecCommandEndEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = build_command_execution_end_item(msg)
    return _completed(item, thread_id, turn_id, msg.completed_at_ms)


def _mcp_begin(
    msg: core.McpToolCallBeginEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = build_mcp_tool_call_begin_item(msg)
    return _started(item, thread_id, turn_id, _producer_time(msg, "started_at_ms"))


def _mcp_end(
    msg: core.McpToolCallEndEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = build_mcp_tool_call_end_item(msg)
    return _completed(item, thread_id, turn_id, _producer_time(msg, "completed_at_ms"))


def _patch_begin(
    msg: core.PatchApplyBeginEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = build_file_change_begin_item(msg)
    return _started(item, thread_id, turn_id, _producer_time(msg, "started_at_ms"))


def _patch_end(
    msg: core.PatchApplyEndEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = build_file_change_end_item(msg)
    return _completed(item, thread_id, turn_id, _producer_time(msg, "completed_at_ms"))


def _dynamic_tool_response(
    msg: core.DynamicToolCallResponseEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = build_dynamic_tool_call_response_item(msg)
    # its turn is the payload's, not the envelope's
    return _completed(item, thread_id, msg.turn_id, msg.completed_at_ms)


def _sub_agent_activity(
    msg: core.SubAgentActivityEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = build_sub_agent_activity_event_item(msg)
    return _completed(item, thread_id, turn_id, msg.occurred_at_ms)


# --- the ten collab agent events: begin -> an in-progress item, end -> the finished item -------


def _spawn_begin(
    msg: core.CollabAgentSpawnBeginEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = build_collab_agent_tool_call_item(
        call_id=msg.call_id,
        tool="spawnAgent",
        status="inProgress",
        sender_thread_id=msg.sender_thread_id,
        prompt=msg.prompt,
        model=msg.model,
        reasoning_effort=msg.reasoning_effort,
    )
    return _started(item, thread_id, turn_id, msg.started_at_ms)


def _spawn_end(
    msg: core.CollabAgentSpawnEndEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    spawned = msg.new_thread_id
    # a spawn without a new thread failed, whatever status it reports
    status = collab_end_status(msg.status) if spawned is not None else "failed"
    item = build_collab_agent_tool_call_item(
        call_id=msg.call_id,
        tool="spawnAgent",
        status=status,
        sender_thread_id=msg.sender_thread_id,
        receiver_thread_ids=[] if spawned is None else [spawned],
        prompt=msg.prompt,
        model=msg.model,
        reasoning_effort=msg.reasoning_effort,
        agent_statuses={} if spawned is None else {spawned: msg.status},
    )
    return _completed(item, thread_id, turn_id, msg.completed_at_ms)


def _interaction_begin(
    msg: core.CollabAgentInteractionBeginEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = build_collab_agent_tool_call_item(
        call_id=msg.call_id,
        tool="sendInput",
        status="inProgress",
        sender_thread_id=msg.sender_thread_id,
        receiver_thread_ids=[msg.receiver_thread_id],
        prompt=msg.prompt,
    )
    return _started(item, thread_id, turn_id, msg.started_at_ms)


def _interaction_end(
    msg: core.CollabAgentInteractionEndEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = build_collab_agent_tool_call_item(
        call_id=msg.call_id,
        tool="sendInput",
        status=collab_end_status(msg.status),
        sender_thread_id=msg.sender_thread_id,
        receiver_thread_ids=[msg.receiver_thread_id],
        prompt=msg.prompt,
        agent_statuses={msg.receiver_thread_id: msg.status},
    )
    return _completed(item, thread_id, turn_id, msg.completed_at_ms)


def _waiting_begin(
    msg: core.CollabWaitingBeginEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = build_collab_agent_tool_call_item(
        call_id=msg.call_id,
        tool="wait",
        status="inProgress",
        sender_thread_id=msg.sender_thread_id,
        receiver_thread_ids=msg.receiver_thread_ids,
    )
    return _started(item, thread_id, turn_id, msg.started_at_ms)


def _waiting_end(
    msg: core.CollabWaitingEndEvent, thread_id: str, turn_id: str
) -> MappedNotification | None:
    item = build_collab_agent_tool_call_item(
        call_id=msg.call_id,
        tool="wait",
        status=collab_end_status(*msg.statuses.values()),
        sender_thread_id=msg.sender_thread_id,
        receiver_thread_ids=sorted(msg.statuses),
        agent_statuses=msg.statuses,
    )
    return _completed(item, thread_id, turn_id, msg.completed_at_ms)


def _receiver_begin(tool: CollabAgentTool) -> _Row:
    def row(
        msg: core.CollabCloseBeginEvent | core.CollabResumeBeginEvent, thread_id: str, turn_id: str
    ) -> MappedNotification | None:
        item = build_collab_agent_tool_call_item(
            call_id=msg.call_id,
            tool=tool,
            status="inProgress",
            sender_thread_id=msg.sender_thread_id,
            receiver_thread_ids=[msg.receiver_thread_id],
        )
        return _started(item, thread_id, turn_id, msg.started_at_ms)

    return row


def _receiver_end(tool: CollabAgentTool) -> _Row:
    def row(
        msg: core.CollabCloseEndEvent | core.CollabResumeEndEvent, thread_id: str, turn_id: str
    ) -> MappedNotification | None:
        item = build_collab_agent_tool_call_item(
            call_id=msg.call_id,
            tool=tool,
            status=collab_end_status(msg.status),
            sender_thread_id=msg.sender_thread_id,
            receiver_thread_ids=[msg.receiver_thread_id],
            agent_statuses={msg.receiver_thread_id: msg.status},
        )
        return _completed(item, thread_id, turn_id, msg.completed_at_ms)

    return row


EVENT_ROWS: Final[dict[type[Any], _Row]] = {
    core.AgentMessageContentDeltaEvent: _agent_message_delta,
    core.ExecCommandOutputDeltaEvent: _command_output_delta,
    core.ReasoningContentDeltaEvent: _reasoning_summary_delta,
    core.ReasoningRawContentDeltaEvent: _reasoning_text_delta,
    core.PlanDeltaEvent: _plan_delta,
    core.AgentReasoningSectionBreakEvent: _summary_part_added,
    core.TerminalInteractionEvent: _terminal_interaction,
    core.PatchApplyUpdatedEvent: _patch_updated,
    core.ItemStartedEvent: _item_started,
    core.ItemCompletedEvent: _item_completed,
    core.ExecCommandBeginEvent: _exec_begin,
    core.ExecCommandEndEvent: _exec_end,
    core.McpToolCallBeginEvent: _mcp_begin,
    core.McpToolCallEndEvent: _mcp_end,
    core.PatchApplyBeginEvent: _patch_begin,
    core.PatchApplyEndEvent: _patch_end,
    core.DynamicToolCallResponseEvent: _dynamic_tool_response,
    core.SubAgentActivityEvent: _sub_agent_activity,
    core.CollabAgentSpawnBeginEvent: _spawn_begin,
    core.CollabAgentSpawnEndEvent: _spawn_end,
    core.CollabAgentInteractionBeginEvent: _interaction_begin,
    core.CollabAgentInteractionEndEvent: _interaction_end,
    core.CollabWaitingBeginEvent: _waiting_begin,
    core.CollabWaitingEndEvent: _waiting_end,
    core.CollabCloseBeginEvent: _receiver_begin("closeAgent"),
    core.CollabResumeBeginEvent: _receiver_begin("resumeAgent"),
    core.CollabCloseEndEvent: _receiver_end("closeAgent"),
    core.CollabResumeEndEvent: _receiver_end("resumeAgent"),
}
"""Core event class -> its row (see the module docstring)."""
