"""Thread history in Codex's unpaginated mode: turns rebuilt from persisted core events.

This is Codex's ``ThreadHistoryBuilder`` for threads whose rollout has no ``history_mode:
"paginated"`` (every thread older than 0.163.0's paginated store; Codex names the mode
``legacy``, its ``ThreadHistoryMode::Legacy``, and so does the wire: ``historyMode: "legacy"``). Behaviour checked against the
0.163.0 binary (``thread/read`` and ``thread/resume`` on crafted legacy rollouts):

* **Replay filter.** Reading a legacy rollout, 0.163.0 keeps only the events its *limited*
  persistence policy writes (:data:`LEGACY_REPLAY_EVENTS`, plus ``item_completed`` of ``Plan``
  items); every other event line is dropped before the builder sees it and does not count as a
  rollout position. So an ``error``, ``exec_command_end``, ``view_image_tool_call``, a dynamic
  tool call or any ``*_begin`` in a legacy rollout shows nothing, and ``error`` events do not fail
  a turn on replay. Live events (:meth:`UnpaginatedHistory.handle_event`) are not filtered.
* **Turns.** ``task_started`` closes the current turn and opens an explicit one (``inProgress``,
  ``startedAt``, ``rootTurnId`` from the event's ``root_turn_id``). ``task_complete`` /
  ``turn_aborted`` apply to the turn with that id (current first, then earlier ones), else to the
  current turn: status ``completed`` (unless already failed or interrupted; ``failed`` with the
  event's ``error``) or ``interrupted``, and ``completedAt``/``durationMs`` from the event, null
  when it has none. A ``task_complete`` closes the current turn; an abort does not.
* **Implicit turns** open for content outside an explicit turn; a ``user_message`` closes an
  implicit turn first unless that turn only saw a compaction. Their id is ``rollout-<n>``, ``n``
  the position of the line that opened them (filtered lines not counted), or a UUIDv7 when the
  builder is fed live events only. A turn without items is dropped unless it was opened
  explicitly or saw a ``compacted`` line.
* **Items.** ``user_message`` / ``agent_message`` (non-empty) / ``agent_reasoning[_raw_content]``
  (appended to a trailing reasoning item) / ``context_compacted`` get synthetic ids ``item-<k>``
  from a thread-wide counter; user ``response_item`` messages made only of hook prompts become
  ``hookPrompt`` items (message id, else a fresh UUIDv7). Tool events are upserted by call id:
  into the turn named by the event's ``turn_id`` (exec, patch, dynamic tools; dropped when no turn
  has that id) or into the current turn (MCP, web search, image view and generation, collab).
  ``item_started``/``item_completed`` upsert the kinds Codex's builder takes from them (a
  non-empty ``Plan``, hook prompts, function outputs, commands, dynamic tools, collab, sub-agent
  activity, review mode) into the turn they name.
* ``thread_rolled_back{num_turns}`` closes the current turn, drops the last ``num_turns`` turns
  and restarts the item counter after the remaining items.

Not rebuilt: guardian assessments (live-only synthetic items the listener owns).

Boundary: pure; items come from the mapping layer's conversions and builders (collab agent
items from the stateless mapper, so that their per-event rules exist once).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast, get_args

from codex_app_bridge.mapping._builders import (
    build_command_execution_begin_item,
    build_command_execution_end_item,
    build_dynamic_tool_call_item,
    build_dynamic_tool_call_response_item,
    build_file_change_approval_request_item,
    build_file_change_begin_item,
    build_file_change_end_item,
    build_mcp_tool_call_begin_item,
    build_mcp_tool_call_end_item,
    build_sub_agent_activity_event_item,
)
from codex_app_bridge.mapping._errors import error_affects_turn_status, turn_error
from codex_app_bridge.mapping._event_mapping import item_event_to_server_notification
from codex_app_bridge.mapping._history_turns import TurnRecord
from codex_app_bridge.mapping._text import review_output_text
from codex_app_bridge.mapping._thread_item import thread_item_from_turn_item
from codex_app_bridge.projection import parse_hook_prompt_message, rust_trim, uuid7
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import (
    ContextCompactionThreadItem,
    EnteredReviewModeThreadItem,
    ExitedReviewModeThreadItem,
    HookPromptFragment,
    HookPromptThreadItem,
    ImageGenerationThreadItem,
    ItemCompletedServerNotification,
    ItemStartedServerNotification,
    ReasoningThreadItem,
    ThreadItem,
    WebSearchThreadItem,
)

__all__ = ["LEGACY_REPLAY_EVENTS", "UnpaginatedHistory", "legacy_replay_keeps"]

_log = logging.getLogger(__name__)

#: Event types a legacy rollout replay keeps (0.163.0's limited persistence policy; probed).
LEGACY_REPLAY_EVENTS: frozenset[str] = frozenset(
    {
        "user_message",
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "patch_apply_end",
        "token_count",
        "thread_goal_updated",
        "context_compacted",
        "entered_review_mode",
        "exited_review_mode",
        "mcp_tool_call_end",
        "thread_rolled_back",
        "turn_aborted",
        "task_started",
        "turn_started",
        "task_complete",
        "turn_complete",
        "web_search_end",
        "image_generation_end",
    }
)

# TurnItem kinds Codex's builder upserts from item_started / item_completed (Plan: non-empty).
_LIFECYCLE_ITEM_TYPES: tuple[type[Any], ...] = (
    core.HookPromptItem,
    core.FunctionCallOutputItem,
    core.CommandExecutionItem,
    core.DynamicToolCallItem,
    core.CollabAgentToolCallItem,
    core.SubAgentActivityItem,
    core.EnteredReviewModeItem,
    core.ExitedReviewModeItem,
)

REVIEW_REQUESTED = "Review requested."

_PHASES: frozenset[object] = frozenset(get_args(core.MessagePhase))
_IMAGE_DETAILS: frozenset[object] = frozenset(get_args(core.ImageDetail))


def legacy_replay_keeps(msg: core.EventMsg) -> bool:
    """Whether a legacy rollout replay keeps this persisted event (see the module docstring)."""
    if isinstance(msg, core.ItemCompletedEvent):
        return isinstance(msg.item, core.PlanItem)
    return msg.type in LEGACY_REPLAY_EVENTS


def _extra(model: core.EventMsg, name: str) -> object:
    return (model.model_extra or {}).get(name)


def _extra_str(model: core.EventMsg, name: str) -> str | None:
    value = _extra(model, name)
    return value if isinstance(value, str) else None


class UnpaginatedHistory:
    """Incremental legacy-thread history (see the module docstring)."""

    def __init__(self) -> None:
        self.turns: list[TurnRecord] = []
        self.current: TurnRecord | None = None
        self.skipped_items = 0
        self._next_item_index = 1
        self._current_rollout_index = 0
        self._next_rollout_index = 0

    # ------------------------------------------------------------------ input

    def handle_rollout_line(self, line: core.RolloutLine) -> None:
        """One persisted line, through the replay filter."""
        if isinstance(line, core.EventMsgLine) and not legacy_replay_keeps(line.payload):
            return
        self._current_rollout_index = self._next_rollout_index
        self._next_rollout_index += 1
        if isinstance(line, core.EventMsgLine):
            self.handle_event(line.payload)
        elif isinstance(line, core.CompactedLine):
            self._ensure_turn().saw_compaction = True
        elif isinstance(line, core.ResponseItemLine):
            self._handle_response_item(line.payload)

    def handle_event(self, msg: core.EventMsg) -> None:
        """One core event (live or replayed); unknown and irrelevant events are ignored."""
        handler = _HANDLERS.get(type(msg))
        if handler is None:
            return
        try:
            handler(self, msg)
        except ValueError as exc:
            # UnmappableItemError or a validation error: a value the wire cannot spell, and the
            # real server cannot read such an event either.
            self.skipped_items += 1
            _log.debug("history: skipped %s: %s", msg.type, exc)

    # ------------------------------------------------------------------ output

    def records(self) -> list[TurnRecord]:
        """Every turn so far, the open one last if it would survive ``finish``."""
        records = list(self.turns)
        if self.current is not None and self._keeps(self.current):
            records.append(self.current)
        return records

    # ------------------------------------------------------------------ turns

    def _new_turn(self, turn_id: str | None) -> TurnRecord:
        if turn_id is None:
            turn_id = (
                str(uuid7())
                if self._next_rollout_index == 0
                else f"rollout-{self._current_rollout_index}"
            )
        return TurnRecord(id=turn_id)

    def _ensure_turn(self) -> TurnRecord:
        if self.current is None:
            self.current = self._new_turn(None)
        return self.current

    @staticmethod
    def _keeps(turn: TurnRecord) -> bool:
        return bool(turn.items) or turn.opened_explicitly or turn.saw_compaction

    def _finish_current(self) -> None:
        turn, self.current = self.current, None
        if turn is not None and self._keeps(turn):
            self.turns.append(turn)

    def _find(self, turn_id: str) -> TurnRecord | None:
        if self.current is not None and self.current.id == turn_id:
            return self.current
        for turn in self.turns:
            if turn.id == turn_id:
                return turn
        return None

    def _next_item_id(self) -> str:
        item_id = f"item-{self._next_item_index}"
        self._next_item_index += 1
        return item_id

    def _push(self, item: ThreadItem) -> None:
        self._ensure_turn().push(item)

    def _upsert_current(self, item: ThreadItem) -> None:
        self._ensure_turn().upsert(item)

    def _upsert_in_turn(self, turn_id: str, item: ThreadItem) -> None:
        turn = self._find(turn_id)
        if turn is None:
            _log.debug("history: dropped item %s for unknown turn %s", item.id, turn_id)
            return
        turn.upsert(item)

    def _upsert_by_turn_or_current(self, turn_id: str, item: ThreadItem) -> None:
        if turn_id:
            self._upsert_in_turn(turn_id, item)
        else:
            self._upsert_current(item)

    # ------------------------------------------------------------------ handlers

    def on_task_started(self, msg: core.TaskStartedEvent) -> None:
        self._finish_current()
        self.current = TurnRecord(
            id=msg.turn_id,
            status="inProgress",
            root_turn_id=msg.root_turn_id,
            started_at=msg.started_at,
            opened_explicitly=True,
        )

    def on_task_complete(self, msg: core.TaskCompleteEvent) -> None:
        error = (
            None if msg.error is None else turn_error(msg.error.message, msg.error.codex_error_info)
        )

        def complete(turn: TurnRecord) -> None:
            if error is not None:
                turn.status = "failed"
                turn.error = error
            elif turn.status in ("completed", "inProgress"):
                turn.status = "completed"
            turn.completed_at = msg.completed_at
            turn.duration_ms = msg.duration_ms

        if self.current is not None and self.current.id == msg.turn_id:
            complete(self.current)
            self._finish_current()
            return
        for turn in self.turns:
            if turn.id == msg.turn_id:
                complete(turn)
                return
        if self.current is not None:
            complete(self.current)
            self._finish_current()

    def on_turn_aborted(self, msg: core.TurnAbortedEvent) -> None:
        def abort(turn: TurnRecord) -> None:
            turn.status = "interrupted"
            turn.completed_at = msg.completed_at
            turn.duration_ms = msg.duration_ms

        if msg.turn_id is not None:
            turn = self._find(msg.turn_id)
            if turn is not None:
                abort(turn)
                return
        if self.current is not None:
            abort(self.current)

    def on_error(self, msg: core.ErrorEvent) -> None:
        if self.current is not None and error_affects_turn_status(msg.codex_error_info):
            self.current.status = "failed"
            self.current.error = turn_error(msg.message, msg.codex_error_info)

    def on_thread_rolled_back(self, msg: core.ThreadRolledBackEvent) -> None:
        self._finish_current()
        count = max(msg.num_turns, 0)
        if count:
            del self.turns[max(len(self.turns) - count, 0) :]
        self._next_item_index = sum(len(turn.items) for turn in self.turns) + 1

    def on_user_message(self, msg: core.UserMessageEvent) -> None:
        current = self.current
        if (
            current is not None
            and not current.opened_explicitly
            and not (current.saw_compaction and not current.items)
        ):
            self._finish_current()
        content: list[core.UserInput] = []
        if rust_trim(msg.message):
            content.append(core.TextUserInput(text=msg.message, text_elements=msg.text_elements))
        image_details = _extra(msg, "image_details")
        for index, url in enumerate(msg.images or []):
            content.append(
                core.ImageUserInput(image_url=url, detail=_detail_at(image_details, index))
            )
        local_details = _extra(msg, "local_image_details")
        for index, path in enumerate(msg.local_images):
            content.append(
                core.LocalImageUserInput(path=path, detail=_detail_at(local_details, index))
            )
        item = thread_item_from_turn_item(
            core.UserMessageItem(
                id=self._next_item_id(), client_id=_extra_str(msg, "client_id"), content=content
            )
        )
        self._push_converted(item)

    def on_agent_message(self, msg: core.AgentMessageEvent) -> None:
        if not msg.message:
            return
        phase = cast("core.MessagePhase", msg.phase) if msg.phase in _PHASES else None
        item = thread_item_from_turn_item(
            core.AgentMessageItem(
                id=self._next_item_id(),
                content=[core.TextAgentMessageContent(text=msg.message)],
                phase=phase,
                memory_citation=msg.memory_citation,
                delivery=_extra_str(msg, "delivery"),
            )
        )
        self._push_converted(item)

    def _push_converted(self, item: ThreadItem | None) -> None:
        if item is None:
            self.skipped_items += 1
            return
        self._push(item)

    def _reasoning(self, text: str, *, raw: bool) -> None:
        if not text:
            return
        turn = self._ensure_turn()
        last = turn.items[-1] if turn.items else None
        if isinstance(last, ReasoningThreadItem):
            if raw:
                turn.replace_last(last.model_copy(update={"content": [*last.content, text]}))
            else:
                turn.replace_last(last.model_copy(update={"summary": [*last.summary, text]}))
            return
        item_id = self._next_item_id()
        turn.push(
            ReasoningThreadItem(id=item_id, summary=[], content=[text])
            if raw
            else ReasoningThreadItem(id=item_id, summary=[text], content=[])
        )

    def on_agent_reasoning(self, msg: core.AgentReasoningEvent) -> None:
        self._reasoning(msg.text, raw=False)

    def on_agent_reasoning_raw(self, msg: core.AgentReasoningRawContentEvent) -> None:
        self._reasoning(msg.text, raw=True)

    def on_context_compacted(self, _msg: core.ContextCompactedEvent) -> None:
        self._push(ContextCompactionThreadItem(id=self._next_item_id()))

    def on_item_lifecycle(self, msg: core.ItemStartedEvent | core.ItemCompletedEvent) -> None:
        item = msg.item
        if isinstance(item, core.PlanItem):
            if not item.text:
                return
        elif not isinstance(item, _LIFECYCLE_ITEM_TYPES):
            return
        converted = thread_item_from_turn_item(item)
        if converted is None:
            self.skipped_items += 1
            return
        if isinstance(converted, EnteredReviewModeThreadItem | ExitedReviewModeThreadItem):
            self._upsert_review_item(msg.turn_id, converted)
        else:
            self._upsert_in_turn(msg.turn_id, converted)

    def _upsert_review_item(self, turn_id: str | None, item: ThreadItem) -> None:
        if turn_id is None:
            self._upsert_current(item)
            return
        if self._find(turn_id) is None:
            # A review names its own turn; open it when it is not known yet.
            self._finish_current()
            self.current = TurnRecord(id=turn_id)
        self._upsert_in_turn(turn_id, item)

    def on_entered_review_mode(self, msg: core.EnteredReviewModeEvent) -> None:
        item = EnteredReviewModeThreadItem(
            id=_extra_str(msg, "item_id") or self._next_item_id(),
            review=msg.user_facing_hint or REVIEW_REQUESTED,
        )
        self._upsert_review_item(_extra_str(msg, "turn_id"), item)

    def on_exited_review_mode(self, msg: core.ExitedReviewModeEvent) -> None:
        item = ExitedReviewModeThreadItem(
            id=_extra_str(msg, "item_id") or self._next_item_id(),
            review=review_output_text(msg.review_output),
        )
        self._upsert_review_item(_extra_str(msg, "turn_id"), item)

    def on_web_search_begin(self, msg: core.WebSearchBeginEvent) -> None:
        self._upsert_current(WebSearchThreadItem(id=msg.call_id, query="", action=None))

    def on_web_search_end(self, msg: core.WebSearchEndEvent) -> None:
        results = _extra(msg, "results")
        self._upsert_converted(
            core.WebSearchItem(
                id=msg.call_id,
                query=msg.query,
                action=msg.action,
                results=cast("list[Any]", results) if isinstance(results, list) else None,
            )
        )

    def _upsert_converted(self, item: core.TurnItem) -> None:
        converted = thread_item_from_turn_item(item)
        if converted is None:
            self.skipped_items += 1
            return
        self._upsert_current(converted)

    def on_view_image(self, msg: core.ViewImageToolCallEvent) -> None:
        self._upsert_converted(core.ImageViewItem(id=msg.call_id, path=msg.path))

    def on_image_generation_begin(self, msg: core.ImageGenerationBeginEvent) -> None:
        self._upsert_current(
            ImageGenerationThreadItem(id=msg.call_id, status="", revised_prompt=None, result="")
        )

    def on_image_generation_end(self, msg: core.ImageGenerationEndEvent) -> None:
        self._upsert_converted(
            core.ImageGenerationItem.model_validate(
                {
                    **(msg.model_extra or {}),
                    "id": msg.call_id,
                    "status": msg.status,
                    "revised_prompt": msg.revised_prompt,
                    "result": msg.result,
                    "saved_path": msg.saved_path,
                }
            )
        )

    def on_exec_begin(self, msg: core.ExecCommandBeginEvent) -> None:
        self._upsert_in_turn(msg.turn_id, build_command_execution_begin_item(msg))

    def on_exec_end(self, msg: core.ExecCommandEndEvent) -> None:
        # Completions can arrive after a newer turn started (a background process that exited
        # late): the event's turn id keeps the item where it began.
        self._upsert_in_turn(msg.turn_id, build_command_execution_end_item(msg))

    def on_patch_approval(self, msg: core.ApplyPatchApprovalRequestEvent) -> None:
        self._upsert_by_turn_or_current(msg.turn_id, build_file_change_approval_request_item(msg))

    def on_patch_begin(self, msg: core.PatchApplyBeginEvent) -> None:
        self._upsert_by_turn_or_current(msg.turn_id, build_file_change_begin_item(msg))

    def on_patch_end(self, msg: core.PatchApplyEndEvent) -> None:
        self._upsert_by_turn_or_current(msg.turn_id, build_file_change_end_item(msg))

    def on_dynamic_request(self, msg: core.DynamicToolCallRequestEvent) -> None:
        item = build_dynamic_tool_call_item(
            item_id=msg.call_id,
            namespace=msg.namespace,
            tool=msg.tool,
            arguments=msg.arguments,
            status="inProgress",
            content_items=None,
            success=None,
            duration=None,
        )
        self._upsert_by_turn_or_current(msg.turn_id, item)

    def on_dynamic_response(self, msg: core.DynamicToolCallResponseEvent) -> None:
        self._upsert_by_turn_or_current(msg.turn_id, build_dynamic_tool_call_response_item(msg))

    def on_mcp_begin(self, msg: core.McpToolCallBeginEvent) -> None:
        self._upsert_current(build_mcp_tool_call_begin_item(msg))

    def on_mcp_end(self, msg: core.McpToolCallEndEvent) -> None:
        self._upsert_current(build_mcp_tool_call_end_item(msg))

    def on_sub_agent_activity(self, msg: core.SubAgentActivityEvent) -> None:
        self._upsert_current(build_sub_agent_activity_event_item(msg))

    def on_mapped_item(self, msg: core.EventMsg) -> None:
        """Collab agent events: the stateless mapper's item (one rule for both), current turn."""
        notification = item_event_to_server_notification(msg, "", "")
        if not isinstance(
            notification, ItemStartedServerNotification | ItemCompletedServerNotification
        ):
            self.skipped_items += 1
            return
        self._upsert_current(notification.params.item)

    def _handle_response_item(self, item: core.ResponseItem) -> None:
        if not isinstance(item, core.MessageResponseItem) or item.role != "user":
            return
        fragments = parse_hook_prompt_message(item.content)
        if fragments is None:
            return
        self._push(
            HookPromptThreadItem(
                id=item.id if item.id is not None else str(uuid7()),
                fragments=[
                    HookPromptFragment(text=f.text, hook_run_id=f.hook_run_id) for f in fragments
                ],
            )
        )


def _detail_at(details: object, index: int) -> core.ImageDetail | None:
    if isinstance(details, list):
        values = cast("list[object]", details)
        if index < len(values) and values[index] in _IMAGE_DETAILS:
            return cast("core.ImageDetail", values[index])
    return None


_Handler = Callable[[UnpaginatedHistory, Any], None]

_HANDLERS: dict[type[Any], _Handler] = {
    core.TaskStartedEvent: UnpaginatedHistory.on_task_started,
    core.TaskCompleteEvent: UnpaginatedHistory.on_task_complete,
    core.TurnAbortedEvent: UnpaginatedHistory.on_turn_aborted,
    core.ErrorEvent: UnpaginatedHistory.on_error,
    core.ThreadRolledBackEvent: UnpaginatedHistory.on_thread_rolled_back,
    core.UserMessageEvent: UnpaginatedHistory.on_user_message,
    core.AgentMessageEvent: UnpaginatedHistory.on_agent_message,
    core.AgentReasoningEvent: UnpaginatedHistory.on_agent_reasoning,
    core.AgentReasoningRawContentEvent: UnpaginatedHistory.on_agent_reasoning_raw,
    core.ContextCompactedEvent: UnpaginatedHistory.on_context_compacted,
    core.ItemStartedEvent: UnpaginatedHistory.on_item_lifecycle,
    core.ItemCompletedEvent: UnpaginatedHistory.on_item_lifecycle,
    core.EnteredReviewModeEvent: UnpaginatedHistory.on_entered_review_mode,
    core.ExitedReviewModeEvent: UnpaginatedHistory.on_exited_review_mode,
    core.WebSearchBeginEvent: UnpaginatedHistory.on_web_search_begin,
    core.WebSearchEndEvent: UnpaginatedHistory.on_web_search_end,
    core.ViewImageToolCallEvent: UnpaginatedHistory.on_view_image,
    core.ImageGenerationBeginEvent: UnpaginatedHistory.on_image_generation_begin,
    core.ImageGenerationEndEvent: UnpaginatedHistory.on_image_generation_end,
    core.ExecCommandBeginEvent: UnpaginatedHistory.on_exec_begin,
    core.ExecCommandEndEvent: UnpaginatedHistory.on_exec_end,
    core.ApplyPatchApprovalRequestEvent: UnpaginatedHistory.on_patch_approval,
    core.PatchApplyBeginEvent: UnpaginatedHistory.on_patch_begin,
    core.PatchApplyEndEvent: UnpaginatedHistory.on_patch_end,
    core.DynamicToolCallRequestEvent: UnpaginatedHistory.on_dynamic_request,
    core.DynamicToolCallResponseEvent: UnpaginatedHistory.on_dynamic_response,
    core.McpToolCallBeginEvent: UnpaginatedHistory.on_mcp_begin,
    core.McpToolCallEndEvent: UnpaginatedHistory.on_mcp_end,
    core.SubAgentActivityEvent: UnpaginatedHistory.on_sub_agent_activity,
    core.CollabAgentSpawnBeginEvent: UnpaginatedHistory.on_mapped_item,
    core.CollabAgentSpawnEndEvent: UnpaginatedHistory.on_mapped_item,
    core.CollabAgentInteractionBeginEvent: UnpaginatedHistory.on_mapped_item,
    core.CollabAgentInteractionEndEvent: UnpaginatedHistory.on_mapped_item,
    core.CollabWaitingBeginEvent: UnpaginatedHistory.on_mapped_item,
    core.CollabWaitingEndEvent: UnpaginatedHistory.on_mapped_item,
    core.CollabCloseBeginEvent: UnpaginatedHistory.on_mapped_item,
    core.CollabCloseEndEvent: UnpaginatedHistory.on_mapped_item,
    core.CollabResumeBeginEvent: UnpaginatedHistory.on_mapped_item,
    core.CollabResumeEndEvent: UnpaginatedHistory.on_mapped_item,
}
