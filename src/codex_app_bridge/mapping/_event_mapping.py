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

Boundary: pure; no I/O, no state, no clock.
"""

from __future__ import annotations

from typing import TypeAlias

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
from codex_app_bridge.protocol.v2 import (
    AgentMessageDeltaNotification,
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

__all__ = ["ItemEventNotification", "item_event_to_server_notification"]

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


def item_event_to_server_notification(
    msg: core.EventMsg, thread_id: str, turn_id: str
) -> ItemEventNotification | None:
    """The notification one core event becomes for thread ``thread_id``, turn ``turn_id``.

    ``turn_id`` is the event envelope's id. ``None`` when the event has no item projection or
    cannot be shown (see the module doc); this never raises for a validated ``EventMsg``.
    """
    try:
        return _map(msg, thread_id, turn_id)
    except ValueError:  # an unmappable item value, a validation error, a chunk that is not base64
        return None


def _started(
    item: ThreadItem | None, thread_id: str, turn_id: str, started_at_ms: int
) -> ItemStartedServerNotification | None:
    if item is None:
        return None
    return ItemStartedServerNotification(
        params=ItemStartedNotification(
            item=item, thread_id=thread_id, turn_id=turn_id, started_at_ms=started_at_ms
        )
    )


def _completed(
    item: ThreadItem | None, thread_id: str, turn_id: str, completed_at_ms: int
) -> ItemCompletedServerNotification | None:
    if item is None:
        return None
    return ItemCompletedServerNotification(
        params=ItemCompletedNotification(
            item=item, thread_id=thread_id, turn_id=turn_id, completed_at_ms=completed_at_ms
        )
    )


def _producer_time(msg: core.EventMsg, field: str) -> int:
    """A time the producer added to an event whose 0.163.0 payload has none; else ``0``."""
    value = (msg.model_extra or {}).get(field)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _map(msg: core.EventMsg, thread_id: str, turn_id: str) -> ItemEventNotification | None:
    match msg:
        # the streaming deltas first: they are most of a live stream
        case core.AgentMessageContentDeltaEvent():
            return ItemAgentMessageDeltaServerNotification(
                params=AgentMessageDeltaNotification(
                    thread_id=thread_id, turn_id=turn_id, item_id=msg.item_id, delta=msg.delta
                )
            )
        case core.ExecCommandOutputDeltaEvent():
            return ItemCommandExecutionOutputDeltaServerNotification(
                params=CommandExecutionOutputDeltaNotification(
                    thread_id=thread_id,
                    turn_id=turn_id,
                    item_id=msg.call_id,
                    delta=msg.chunk_text(),
                )
            )
        case core.ReasoningContentDeltaEvent():
            return ItemReasoningSummaryTextDeltaServerNotification(
                params=ReasoningSummaryTextDeltaNotification(
                    thread_id=thread_id,
                    turn_id=turn_id,
                    item_id=msg.item_id,
                    delta=msg.delta,
                    summary_index=msg.summary_index,
                )
            )
        case core.ReasoningRawContentDeltaEvent():
            return ItemReasoningTextDeltaServerNotification(
                params=ReasoningTextDeltaNotification(
                    thread_id=thread_id,
                    turn_id=turn_id,
                    item_id=msg.item_id,
                    delta=msg.delta,
                    content_index=msg.content_index,
                )
            )
        case core.PlanDeltaEvent():
            return ItemPlanDeltaServerNotification(
                params=PlanDeltaNotification(
                    thread_id=thread_id, turn_id=turn_id, item_id=msg.item_id, delta=msg.delta
                )
            )
        case core.AgentReasoningSectionBreakEvent():
            return ItemReasoningSummaryPartAddedServerNotification(
                params=ReasoningSummaryPartAddedNotification(
                    thread_id=thread_id,
                    turn_id=turn_id,
                    item_id=msg.item_id,
                    summary_index=msg.summary_index,
                )
            )
        case core.TerminalInteractionEvent():
            return ItemCommandExecutionTerminalInteractionServerNotification(
                params=TerminalInteractionNotification(
                    thread_id=thread_id,
                    turn_id=turn_id,
                    item_id=msg.call_id,
                    process_id=msg.process_id,
                    stdin=msg.stdin,
                )
            )
        case core.PatchApplyUpdatedEvent():
            return ItemFileChangePatchUpdatedServerNotification(
                params=FileChangePatchUpdatedNotification(
                    thread_id=thread_id,
                    turn_id=turn_id,
                    item_id=msg.call_id,
                    changes=convert_patch_changes(msg.changes),
                )
            )
        # first-class items (live)
        case core.ItemStartedEvent():
            item = thread_item_from_turn_item(msg.item)
            return _started(item, thread_id, turn_id, msg.started_at_ms)
        case core.ItemCompletedEvent():
            item = thread_item_from_turn_item(msg.item)
            return _completed(item, thread_id, turn_id, msg.completed_at_ms)
        # legacy begin/end item events
        case core.ExecCommandBeginEvent():
            item = build_command_execution_begin_item(msg)
            return _started(item, thread_id, turn_id, msg.started_at_ms)
        case core.ExecCommandEndEvent():
            item = build_command_execution_end_item(msg)
            return _completed(item, thread_id, turn_id, msg.completed_at_ms)
        case core.McpToolCallBeginEvent():
            item = build_mcp_tool_call_begin_item(msg)
            return _started(item, thread_id, turn_id, _producer_time(msg, "started_at_ms"))
        case core.McpToolCallEndEvent():
            item = build_mcp_tool_call_end_item(msg)
            return _completed(item, thread_id, turn_id, _producer_time(msg, "completed_at_ms"))
        case core.PatchApplyBeginEvent():
            item = build_file_change_begin_item(msg)
            return _started(item, thread_id, turn_id, _producer_time(msg, "started_at_ms"))
        case core.PatchApplyEndEvent():
            item = build_file_change_end_item(msg)
            return _completed(item, thread_id, turn_id, _producer_time(msg, "completed_at_ms"))
        case core.DynamicToolCallResponseEvent():
            item = build_dynamic_tool_call_response_item(msg)
            return _completed(item, thread_id, msg.turn_id, msg.completed_at_ms)
        case core.SubAgentActivityEvent():
            item = build_sub_agent_activity_event_item(msg)
            return _completed(item, thread_id, turn_id, msg.occurred_at_ms)
        case _:
            return _map_collab(msg, thread_id, turn_id)


def _map_collab(msg: core.EventMsg, thread_id: str, turn_id: str) -> ItemEventNotification | None:
    """The ten collab agent events: begin -> an in-progress item, end -> the finished item."""
    match msg:
        case core.CollabAgentSpawnBeginEvent():
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
        case core.CollabAgentSpawnEndEvent():
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
        case core.CollabAgentInteractionBeginEvent():
            item = build_collab_agent_tool_call_item(
                call_id=msg.call_id,
                tool="sendInput",
                status="inProgress",
                sender_thread_id=msg.sender_thread_id,
                receiver_thread_ids=[msg.receiver_thread_id],
                prompt=msg.prompt,
            )
            return _started(item, thread_id, turn_id, msg.started_at_ms)
        case core.CollabAgentInteractionEndEvent():
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
        case core.CollabWaitingBeginEvent():
            item = build_collab_agent_tool_call_item(
                call_id=msg.call_id,
                tool="wait",
                status="inProgress",
                sender_thread_id=msg.sender_thread_id,
                receiver_thread_ids=msg.receiver_thread_ids,
            )
            return _started(item, thread_id, turn_id, msg.started_at_ms)
        case core.CollabWaitingEndEvent():
            item = build_collab_agent_tool_call_item(
                call_id=msg.call_id,
                tool="wait",
                status=collab_end_status(*msg.statuses.values()),
                sender_thread_id=msg.sender_thread_id,
                receiver_thread_ids=sorted(msg.statuses),
                agent_statuses=msg.statuses,
            )
            return _completed(item, thread_id, turn_id, msg.completed_at_ms)
        case core.CollabCloseBeginEvent() | core.CollabResumeBeginEvent():
            item = build_collab_agent_tool_call_item(
                call_id=msg.call_id,
                tool="closeAgent" if isinstance(msg, core.CollabCloseBeginEvent) else "resumeAgent",
                status="inProgress",
                sender_thread_id=msg.sender_thread_id,
                receiver_thread_ids=[msg.receiver_thread_id],
            )
            return _started(item, thread_id, turn_id, msg.started_at_ms)
        case core.CollabCloseEndEvent() | core.CollabResumeEndEvent():
            item = build_collab_agent_tool_call_item(
                call_id=msg.call_id,
                tool="closeAgent" if isinstance(msg, core.CollabCloseEndEvent) else "resumeAgent",
                status=collab_end_status(msg.status),
                sender_thread_id=msg.sender_thread_id,
                receiver_thread_ids=[msg.receiver_thread_id],
                agent_statuses={msg.receiver_thread_id: msg.status},
            )
            return _completed(item, thread_id, turn_id, msg.completed_at_ms)
        case _:
            # no item projection: handled by the listener itself, or an unknown event
            return None
