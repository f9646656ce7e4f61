"""The reducer's item ledger: ``item/started`` and ``item/completed``, both event generations.

Role: the item events (first-class ``item_started`` / ``item_completed`` and the legacy
begin/end events) and guardian reviews, which start and complete synthetic command items. This
module owns the ledger: ``TurnSummary.items`` (``ItemLedger``: what got ``item/started`` and
``item/completed`` in this turn, from which generation, and which commands are running),
``TurnSummary.last_agent_message`` (the turn's summary item, which ``_turns`` puts in
``turn/completed``) and ``ThreadState.first_class_kinds``. ``_requests`` records the
synthetic items it starts for approval requests in the same ledger.

Rules (issue 4.4). Codex 0.163.0 core sends every tool item twice: as first-class
item_started / item_completed (TurnItem) and as legacy begin/end events; older producers send
only the legacy events. The client must see exactly one item/started and one item/completed
per item in every case, in either arrival order:

1. First-class events are always mapped, as the real server does, except that an
   item_started is dropped when a legacy begin already started that id (and, as in Codex, a
   CommandExecution start is dropped while its id is in command_execution_started: an earlier
   core or synthetic start). item_completed is dropped when a legacy end already completed
   that id.
2. Seeing a first-class event of a TurnItem kind marks the kind as first-class for the rest of
   the thread; from then on legacy events of that kind are dropped (the 0.163.0 server drops
   them all; dropping per kind keeps older producers, which mix first-class messages with
   legacy-only tools, working).
3. Otherwise a legacy event goes through the mapper, and its item/started (item/completed) is
   sent unless that item id already got one in this turn.
4. The summary item is the last completed agent message whose phase is ``final_answer`` or
   absent and whose text is not blank.
5. ``guardian_assessment`` (spec §3.4): a review of a command with a target item starts a
   synthetic ``commandExecution`` item (``startedAtMs`` = ``ReduceContext.now_ms``) unless that
   command already started; a denied/aborted (timed-out) review completes it as ``declined``
   (``failed``). Core's own later ``item_started`` for the id is suppressed, as in Codex.

The ledger is per turn (reset by task_started and by the turn's end, in ``_turns``).

Boundary: pure; builds on ``_state`` only; ``_reducer`` dispatches to the handlers here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from codex_app_bridge.listener import _convert as convert
from codex_app_bridge.listener._state import (
    Emission,
    ReduceContext,
    Reduction,
    ThreadState,
    emit,
    mapped,
    validated,
)
from codex_app_bridge.mapping import (
    build_command_execution_item,
    thread_item_from_turn_item,
)
from codex_app_bridge.protocol.core import (
    AgentMessageItem,
    CollabAgentInteractionBeginEvent,
    CollabAgentInteractionEndEvent,
    CollabAgentSpawnBeginEvent,
    CollabAgentSpawnEndEvent,
    CollabCloseBeginEvent,
    CollabCloseEndEvent,
    CollabResumeBeginEvent,
    CollabResumeEndEvent,
    CollabWaitingBeginEvent,
    CollabWaitingEndEvent,
    DynamicToolCallResponseEvent,
    EventEnvelope,
    EventMsg,
    ExecCommandBeginEvent,
    ExecCommandEndEvent,
    GuardianAssessmentEvent,
    ItemCompletedEvent,
    ItemStartedEvent,
    McpToolCallBeginEvent,
    McpToolCallEndEvent,
    PatchApplyBeginEvent,
    PatchApplyEndEvent,
    SubAgentActivityEvent,
    TextAgentMessageContent,
)
from codex_app_bridge.protocol.v2 import (
    CommandExecutionThreadItem,
    ItemCompletedNotification,
    ItemGuardianApprovalReviewCompletedNotification,
    ItemGuardianApprovalReviewStartedNotification,
    ItemStartedNotification,
    UnknownCommandAction,
)

__all__ = [
    "LEGACY_ITEM_KIND",
    "guardian_assessment",
    "item_completed",
    "item_started",
    "legacy_item",
]


LEGACY_ITEM_KIND: dict[type[Any], str] = {
    ExecCommandBeginEvent: "CommandExecution",
    ExecCommandEndEvent: "CommandExecution",
    PatchApplyBeginEvent: "FileChange",
    PatchApplyEndEvent: "FileChange",
    McpToolCallBeginEvent: "McpToolCall",
    McpToolCallEndEvent: "McpToolCall",
    DynamicToolCallResponseEvent: "DynamicToolCall",
    CollabAgentSpawnBeginEvent: "CollabAgentToolCall",
    CollabAgentSpawnEndEvent: "CollabAgentToolCall",
    CollabAgentInteractionBeginEvent: "CollabAgentToolCall",
    CollabAgentInteractionEndEvent: "CollabAgentToolCall",
    CollabWaitingBeginEvent: "CollabAgentToolCall",
    CollabWaitingEndEvent: "CollabAgentToolCall",
    CollabCloseBeginEvent: "CollabAgentToolCall",
    CollabCloseEndEvent: "CollabAgentToolCall",
    CollabResumeBeginEvent: "CollabAgentToolCall",
    CollabResumeEndEvent: "CollabAgentToolCall",
    SubAgentActivityEvent: "SubAgentActivity",
}
"""Legacy begin/end events and the TurnItem kind their first-class counterpart carries."""


def _item_id(emission: Emission) -> str | None:
    """The ``params.item.id`` of an ``item/started`` / ``item/completed`` emission."""
    item: object = getattr(emission.params, "item", None)
    item_id: object = getattr(item, "id", None)
    return item_id if isinstance(item_id, str) else None


def _turn_item_id(item: object) -> str:
    """A turn item's id (an unknown item type may have none)."""
    item_id: object = getattr(item, "id", None)
    return item_id if isinstance(item_id, str) else ""


def _is_summary_message(item: AgentMessageItem) -> bool:
    """Codex's turn-summary rule: final answer (or no phase) with non-blank text."""
    if item.phase not in (None, "final_answer"):
        return False
    return any(
        isinstance(part, TextAgentMessageContent) and part.text.strip() for part in item.content
    )


def item_started(
    state: ThreadState, envelope: EventEnvelope, msg: ItemStartedEvent, ctx: ReduceContext
) -> Reduction:
    kind = msg.item.type
    item_id = _turn_item_id(msg.item)
    ledger = state.turn.items
    kinds = state.first_class_kinds | {kind}
    command = kind == "CommandExecution"
    suppressed = item_id in ledger.legacy_started_ids or (
        command and item_id in ledger.command_execution_started
    )
    emission = None if suppressed else mapped(msg, ctx, envelope.id)
    if emission is not None:
        ledger = ledger.start(item_id, command=command)
    elif command:
        ledger = ledger.command_started(item_id)
    turn = replace(state.turn, items=ledger)
    emissions = (emission,) if emission is not None else ()
    return Reduction(replace(state, turn=turn, first_class_kinds=kinds), emissions)


def item_completed(
    state: ThreadState, envelope: EventEnvelope, msg: ItemCompletedEvent, ctx: ReduceContext
) -> Reduction:
    kind = msg.item.type
    item_id = _turn_item_id(msg.item)
    turn = state.turn
    ledger = turn.items
    kinds = state.first_class_kinds | {kind}
    command = kind == "CommandExecution"
    summary = turn.last_agent_message
    if isinstance(msg.item, AgentMessageItem) and _is_summary_message(msg.item):
        summary = thread_item_from_turn_item(msg.item)
    emission = None if item_id in ledger.legacy_completed_ids else mapped(msg, ctx, envelope.id)
    if emission is not None:
        ledger = ledger.complete(item_id, command=command)
    elif command:
        ledger = ledger.command_ended(item_id)
    turn = replace(turn, items=ledger, last_agent_message=summary)
    emissions = (emission,) if emission is not None else ()
    return Reduction(replace(state, turn=turn, first_class_kinds=kinds), emissions)


def legacy_item(
    state: ThreadState, envelope: EventEnvelope, msg: EventMsg, ctx: ReduceContext
) -> Reduction:
    if LEGACY_ITEM_KIND[type(msg)] in state.first_class_kinds:
        return Reduction(state)
    emission = mapped(msg, ctx, envelope.id)
    if emission is None:
        return Reduction(state)
    item_id = _item_id(emission)
    if item_id is None:
        return Reduction(state, (emission,))
    ledger = state.turn.items
    if emission.method == "item/started":
        if item_id in ledger.started_ids or item_id in ledger.command_execution_started:
            return Reduction(state)
        ledger = ledger.start(item_id, legacy=True)
    elif emission.method == "item/completed":
        if item_id in ledger.completed_ids:
            return Reduction(state)
        ledger = ledger.complete(item_id, legacy=True, command=True)
    return Reduction(replace(state, turn=replace(state.turn, items=ledger)), (emission,))


def _guardian_item(msg: GuardianAssessmentEvent, status: str) -> CommandExecutionThreadItem | None:
    """The command item a guardian review of a command is about (Codex
    ``build_item_from_guardian_event``): only ``command`` and ``execve`` actions with a target
    item id have one. An ``execve`` argv is shown shell-quoted with one ``unknown`` action (Codex
    parses it with its bash parser, which this bridge does not port)."""
    action = msg.action
    if msg.target_item_id is None or not isinstance(action, dict):
        return None
    extras = msg.model_extra or {}
    plugin_id = extras.get("plugin_id")
    script_path = extras.get("script_path")
    kind = action.get("type")
    if kind == "command" and isinstance(action.get("command"), str):
        command = str(action["command"])
        return CommandExecutionThreadItem.model_validate(
            {
                "id": msg.target_item_id,
                "command": command,
                "cwd": action.get("cwd"),
                "commandActions": [{"type": "unknown", "command": command}],
                "processId": None,
                "source": "agent",
                "status": status,
                "aggregatedOutput": None,
                "exitCode": None,
                "durationMs": None,
                "pluginId": plugin_id,
                "scriptPath": script_path,
            }
        )
    if kind == "execve" and isinstance(action.get("program"), str):
        program = str(action["program"])
        raw_argv = action.get("argv")
        rest = [str(a) for a in raw_argv[1:]] if isinstance(raw_argv, list) else []
        item = build_command_execution_item(
            item_id=msg.target_item_id,
            argv=[program, *rest],
            cwd=str(action.get("cwd", "")),
            parsed_cmd=[],
            source="agent",
            status=status,  # pyright: ignore[reportArgumentType]
            plugin_id=plugin_id if isinstance(plugin_id, str) else None,
            script_path=script_path if isinstance(script_path, str) else None,
        )
        return item.model_copy(
            update={"command_actions": [UnknownCommandAction(command=item.command)]}
        )
    return None


_GUARDIAN_COMPLETION: dict[str, str] = {
    "denied": "declined",
    "aborted": "declined",
    "timed_out": "failed",
}


def guardian_assessment(
    state: ThreadState, envelope: EventEnvelope, msg: GuardianAssessmentEvent, ctx: ReduceContext
) -> Reduction:
    """An automatic approval review (spec §3.4): a synthetic command start while in progress,
    the review notification, and a synthetic completion when the command will not run."""
    turn_id = msg.turn_id or envelope.id
    ledger = state.turn.items
    emissions: list[Emission] = []
    in_progress = msg.status == "in_progress"
    if in_progress:
        item = _guardian_item(msg, "inProgress")
        if item is not None and msg.target_item_id not in ledger.command_execution_started:
            target = str(msg.target_item_id)
            started = ItemStartedNotification(
                item=item, thread_id=ctx.thread_id, turn_id=turn_id, started_at_ms=ctx.now_ms
            )
            emissions.append(emit("item/started", started))
            ledger = ledger.start(target, command=True)
    common: dict[str, Any] = {
        "threadId": ctx.thread_id,
        "turnId": turn_id,
        "reviewId": msg.id,
        "startedAtMs": msg.started_at_ms,
        "targetItemId": msg.target_item_id,
        "review": convert.guardian_review(msg),
        "action": convert.guardian_action(msg.action),
    }
    if in_progress:
        params = validated(ItemGuardianApprovalReviewStartedNotification, common)
        emissions.append(emit("item/autoApprovalReview/started", params))
    else:
        completed_at = msg.completed_at_ms if msg.completed_at_ms is not None else msg.started_at_ms
        params = validated(
            ItemGuardianApprovalReviewCompletedNotification,
            {
                **common,
                "completedAtMs": completed_at,
                "decisionSource": convert.camel(msg.decision_source or "agent"),
            },
        )
        emissions.append(emit("item/autoApprovalReview/completed", params))
    completion = _GUARDIAN_COMPLETION.get(msg.status)
    target_id = msg.target_item_id
    if (
        completion is not None
        and target_id is not None
        and target_id in ledger.command_execution_started
    ):
        item = _guardian_item(msg, completion)
        if item is not None:
            done = ItemCompletedNotification(
                item=item, thread_id=ctx.thread_id, turn_id=turn_id, completed_at_ms=ctx.now_ms
            )
            emissions.append(emit("item/completed", done))
            ledger = ledger.complete(target_id, command=True)
    return Reduction(replace(state, turn=replace(state.turn, items=ledger)), tuple(emissions))
