"""The core events behind a real run: a ``--script`` for the bridge from the real notifications
and rollouts.

Role: the real binary does not expose its ``EventMsg`` stream; its rollout keeps only some events
(``task_started``, ``item_completed``, ``token_count``, ``task_complete``, ``turn_aborted``, ...)
and no deltas. :func:`script_from_run` walks the real notification stream in order and, for each
message a core event causes, writes that event: the rollout's own payload where the rollout has
it (turn start and end, completed items, token counts), else the event rebuilt from the
notification's params (deltas, item starts, stream errors, command and patch approvals, tool
requests). Messages the server makes by itself (``thread/status/changed``, ``turn/started``,
rate limits, read state, ``serverRequest/resolved`` ...) add no event: the bridge must make them
too.

Started items: the rollout has only the completed ``TurnItem``; the started one is that item
put back in its starting state (no text yet, ``in_progress``, no output), as Codex core emits it.

Boundary: pure: JSON values in, JSON values out; no I/O.
"""

from __future__ import annotations

import base64
import shlex
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

__all__ = ["DerivedScript", "script_from_run", "snake", "snake_keys", "started_turn_item"]

JsonObject = dict[str, Any]

# notifications the server derives from other events or makes itself: no script event
_SERVER_MADE: Final = frozenset(
    {
        "thread/started",
        "thread/status/changed",
        "turn/started",
        "account/rateLimits/updated",
        "thread/readState/changed",
        "serverRequest/resolved",
        "warning",
        "deprecationNotice",
        "remoteControl/status/changed",
        "thread/reverted",
        "thread/name/updated",
        "thread/goal/cleared",
        "mcpServer/startupStatus/updated",
        "skills/changed",
    }
)


def snake(name: str) -> str:
    """``camelCase`` -> ``snake_case``."""
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def snake_keys(value: object) -> object:
    if isinstance(value, dict):
        return {snake(k): snake_keys(v) for k, v in cast(dict[str, object], value).items()}
    if isinstance(value, list):
        return [snake_keys(v) for v in cast(list[object], value)]
    return value


def _core_error_info(value: object) -> object:
    """The inverse of the mapper's ``codexErrorInfo`` spelling."""
    if isinstance(value, str):
        return snake(value)
    return snake_keys(value)


_STARTED_DROP: Final[dict[str, tuple[str, ...]]] = {
    "CommandExecution": ("aggregated_output", "exit_code", "duration"),
    "FileChange": ("stdout", "stderr", "auto_approved"),
    "DynamicToolCall": ("content_items", "success", "error", "duration"),
    "McpToolCall": ("result", "error", "duration"),
}


def started_turn_item(completed: JsonObject) -> JsonObject:
    """A completed core ``TurnItem`` back in the state its ``item_started`` carries."""
    item = dict(completed)
    kind = item.get("type")
    if kind == "AgentMessage":
        item["content"] = []
    elif kind == "Reasoning":
        item["summary_text"] = []
        item["raw_content"] = []
    elif kind == "Plan":
        item["text"] = ""
    for key in _STARTED_DROP.get(str(kind), ()):
        item.pop(key, None)
    if kind in ("CommandExecution", "FileChange", "DynamicToolCall"):
        item["status"] = "in_progress"
    elif kind == "McpToolCall":
        item["status"] = "inProgress"
    return item


def _with_started_fields(completed: JsonObject, started: JsonObject) -> JsonObject:
    """The fields a started command shows differently from its completion (an approved command
    starts with ``source: agent`` and no process): taken from the started notification."""
    if completed.get("type") != "CommandExecution":
        return completed
    out = dict(completed)
    if started.get("processId") is None:
        out.pop("process_id", None)
    else:
        out["process_id"] = started["processId"]
    if isinstance(started.get("source"), str):
        out["source"] = snake(started["source"])
    return out


def _turn_item_from_thread_item(item: JsonObject) -> JsonObject | None:
    """A fallback for an item the rollout never completed (an interrupted message)."""
    if item.get("type") == "agentMessage":
        text = str(item.get("text") or "")
        out: JsonObject = {
            "type": "AgentMessage",
            "id": item["id"],
            "content": [{"type": "Text", "text": text}] if text else [],
        }
        if item.get("phase") is not None:
            out["phase"] = item["phase"]
        return out
    if item.get("type") == "userMessage":
        return {"type": "UserMessage", "id": item["id"], "content": item.get("content") or []}
    return None


@dataclass
class _Turn:
    started: JsonObject | None = None
    ended: JsonObject | None = None
    items: dict[str, JsonObject] = field(default_factory=dict[str, JsonObject])
    """item id -> the rollout's whole ``item_completed`` payload"""
    token_counts: deque[JsonObject] = field(default_factory=deque[JsonObject])
    errors: deque[JsonObject] = field(default_factory=deque[JsonObject])


def _rollout_turns(rollouts: Iterable[Sequence[JsonObject]]) -> dict[str, _Turn]:
    """The rollout events of each turn. A fork's rollout repeats its parent's turns: the first
    file that has a turn owns it."""
    turns: dict[str, _Turn] = {}
    for lines in rollouts:
        seen_here: set[str] = set()
        current: str | None = None
        for line in lines:
            if line.get("type") != "event_msg":
                continue
            payload = cast(JsonObject, line.get("payload") or {})
            kind = payload.get("type")
            if kind == "task_started":
                current = str(payload.get("turn_id"))
                if current in turns and current not in seen_here:
                    current = None  # a copied turn
                    continue
                seen_here.add(current)
                turns[current] = _Turn(started=payload)
                continue
            turn_id = payload.get("turn_id") or current
            if turn_id is None or turn_id not in seen_here:
                continue
            turn = turns[str(turn_id)]
            if kind == "item_completed":
                item = cast(JsonObject, payload.get("item") or {})
                turn.items[str(item.get("id"))] = payload
            elif kind == "token_count":
                turn.token_counts.append(payload)
            elif kind == "error":
                turn.errors.append(payload)
            elif kind in ("task_complete", "turn_aborted"):
                turn.ended = payload
    return turns


@dataclass
class DerivedScript:
    envelopes: list[JsonObject]
    """``{"id": turn id, "msg": EventMsg}`` lines for ``serve --script``."""
    notes: list[str]
    """What could not be derived (a message with no known core event)."""


def script_from_run(
    received: Sequence[JsonObject], rollouts: Iterable[Sequence[JsonObject]]
) -> DerivedScript:
    """The script that makes a faithful bridge send ``received`` again (module docstring)."""
    turns = _rollout_turns(rollouts)
    out: list[JsonObject] = []
    notes: list[str] = []
    opened: set[str] = set()
    unknown: defaultdict[str, int] = defaultdict(int)

    def emit(turn_id: str, msg: JsonObject) -> None:
        out.append({"id": turn_id, "msg": msg})

    previous: str | None = None
    current_turn: str | None = None
    for index, message in enumerate(received):
        method = message.get("method")
        before, previous = previous, method if isinstance(method, str) else previous
        if method == "account/rateLimits/updated" and before != "thread/tokenUsage/updated":
            # a token_count without usage (rate limits only) gives this notification alone
            turn = turns.get(current_turn or "")
            if turn is not None and turn.token_counts and turn.token_counts[0].get("info") is None:
                emit(current_turn or "", turn.token_counts.popleft())
            continue
        if not isinstance(method, str) or method in _SERVER_MADE:
            continue
        params = cast(JsonObject, message.get("params") or {})
        if params.get("turnId"):
            current_turn = str(params["turnId"])
        elif method == "turn/completed":
            current_turn = None
        thread_id = str(params.get("threadId") or "")
        turn_id = str(params.get("turnId") or "")
        turn = turns.get(turn_id)
        if method == "turn/started":
            continue
        if method == "turn/completed":
            turn_id = str(params["turn"]["id"])
            turn = turns.get(turn_id)
            _open_turn(emit, turns, turn_id, opened)
            if turn is not None and turn.ended is not None:
                emit(turn_id, turn.ended)
            else:
                notes.append(f"turn/completed {turn_id}: no task_complete in the rollout")
            continue
        if method in ("item/started", "item/completed"):
            item = cast(JsonObject, params["item"])
            if method == "item/started" and _started_for_approval(received, index, item):
                continue  # the server makes it from the approval request that follows
            _open_turn(emit, turns, turn_id, opened)
            recorded = turn.items.get(str(item.get("id"))) if turn is not None else None
            completed = recorded["item"] if recorded is not None else None
            if completed is None:
                completed = _turn_item_from_thread_item(item)
            if completed is None:
                notes.append(f"{method} {item.get('type')}: item not in the rollout")
                continue
            ids = {"thread_id": thread_id, "turn_id": turn_id}
            if method == "item/started":
                started_at = params.get("startedAtMs") or 0
                completed = _with_started_fields(completed, item)
                emit(
                    turn_id,
                    {
                        "type": "item_started",
                        **ids,
                        "item": started_turn_item(completed),
                        "started_at_ms": started_at,
                    },
                )
            elif recorded is not None:
                emit(turn_id, recorded)
            else:
                completed_at = params.get("completedAtMs") or 0
                emit(
                    turn_id,
                    {
                        "type": "item_completed",
                        **ids,
                        "item": completed,
                        "completed_at_ms": completed_at,
                    },
                )
            continue
        msg = _event_for(method, params, turn)
        if msg is None:
            unknown[method] += 1
            continue
        _open_turn(emit, turns, turn_id, opened)
        emit(turn_id, msg)
    notes.extend(f"{method}: no core event known ({n}x)" for method, n in sorted(unknown.items()))
    return DerivedScript(out, notes)


def _started_for_approval(received: Sequence[JsonObject], index: int, item: JsonObject) -> bool:
    """A ``commandExecution`` ``item/started`` the server sends right before the approval
    request about that item (not a core event: the request's ``exec_approval_request`` makes it)."""
    if item.get("type") != "commandExecution":
        return False
    for later in received[index + 1 : index + 3]:
        if later.get("method") == "item/commandExecution/requestApproval":
            params = cast(JsonObject, later.get("params") or {})
            return params.get("itemId") == item.get("id")
    return False


def _open_turn(
    emit: Callable[[str, JsonObject], None],
    turns: dict[str, _Turn],
    turn_id: str,
    opened: set[str],
) -> None:
    """The turn's ``task_started`` goes before its first event."""
    if turn_id in opened:
        return
    opened.add(turn_id)
    turn = turns.get(turn_id)
    if turn is not None and turn.started is not None:
        emit(turn_id, turn.started)


def _event_for(method: str, params: JsonObject, turn: _Turn | None) -> JsonObject | None:
    thread_id = str(params.get("threadId") or "")
    turn_id = str(params.get("turnId") or "")
    ids = {"thread_id": thread_id, "turn_id": turn_id}
    if method == "item/agentMessage/delta":
        return {
            "type": "agent_message_content_delta",
            **ids,
            "item_id": params["itemId"],
            "delta": params["delta"],
        }
    if method == "item/reasoning/summaryTextDelta":
        return {
            "type": "reasoning_content_delta",
            **ids,
            "item_id": params["itemId"],
            "delta": params["delta"],
            "summary_index": params.get("summaryIndex", 0),
        }
    if method == "item/reasoning/summaryPartAdded":
        return {
            "type": "agent_reasoning_section_break",
            "item_id": params["itemId"],
            "summary_index": params.get("summaryIndex", 0),
        }
    if method == "item/reasoning/textDelta":
        return {
            "type": "reasoning_raw_content_delta",
            **ids,
            "item_id": params["itemId"],
            "delta": params["delta"],
            "content_index": params.get("contentIndex", 0),
        }
    if method == "item/plan/delta":
        return {"type": "plan_delta", **ids, "item_id": params["itemId"], "delta": params["delta"]}
    if method == "item/commandExecution/outputDelta":
        chunk = base64.b64encode(str(params["delta"]).encode()).decode("ascii")
        return {
            "type": "exec_command_output_delta",
            "call_id": params["itemId"],
            "stream": "stdout",
            "chunk": chunk,
        }
    if method == "turn/plan/updated":
        plan = [{"step": p["step"], "status": snake(str(p["status"]))} for p in params["plan"]]
        return {"type": "plan_update", "explanation": params.get("explanation"), "plan": plan}
    if method == "turn/diff/updated":
        return {"type": "turn_diff", "unified_diff": params["diff"]}
    if method == "thread/tokenUsage/updated":
        if turn is not None and turn.token_counts:
            return turn.token_counts.popleft()
        return None  # a replay to a resuming or forking client: the server makes it
    if method == "error":
        error = cast(JsonObject, params.get("error") or {})
        info = _core_error_info(error.get("codexErrorInfo"))
        if params.get("willRetry"):
            return {
                "type": "stream_error",
                "message": error.get("message", ""),
                "codex_error_info": info,
                "additional_details": error.get("additionalDetails"),
            }
        if turn is not None and turn.errors:
            return turn.errors.popleft()
        return {"type": "error", "message": error.get("message", ""), "codex_error_info": info}
    if method == "item/commandExecution/requestApproval":
        command = params.get("command")
        actions = params.get("commandActions")
        event: JsonObject = {
            "type": "exec_approval_request",
            "call_id": params.get("itemId"),
            "turn_id": turn_id,
            "command": shlex.split(command) if isinstance(command, str) else [],
            "cwd": params.get("cwd") or "",
            "parsed_cmd": _parsed_commands(actions),
        }
        for wire, core in (
            ("approvalId", "approval_id"),
            ("startedAtMs", "started_at_ms"),
            ("reason", "reason"),
            ("proposedExecpolicyAmendment", "proposed_execpolicy_amendment"),
        ):
            if params.get(wire) is not None:
                event[core] = params[wire]
        return event
    if method == "item/fileChange/requestApproval":
        # the server sent the item's item/started itself, before the request: the changes are
        # the completed item's (the rollout's), as core asked about them
        item_id = str(params.get("itemId"))
        recorded = turn.items.get(item_id) if turn is not None else None
        completed = cast(JsonObject, (recorded or {}).get("item") or {})
        event: JsonObject = {
            "type": "apply_patch_approval_request",
            "call_id": item_id,
            "turn_id": turn_id,
            "changes": completed.get("changes") or {},
        }
        for wire, core in (
            ("startedAtMs", "started_at_ms"),
            ("reason", "reason"),
            ("grantRoot", "grant_root"),
        ):
            if params.get(wire) is not None:
                event[core] = params[wire]
        return event
    if method == "item/tool/call":
        return {
            "type": "dynamic_tool_call_request",
            "callId": params.get("callId"),
            "turnId": turn_id,
            "tool": params.get("tool"),
            "arguments": params.get("arguments"),
        }
    return None


def _parsed_commands(actions: object) -> list[JsonObject]:
    """v2 ``CommandAction`` s as the core ``ParsedCommand`` s they were made from (``command``
    -> ``cmd``, the other fields as they are)."""
    parsed: list[JsonObject] = []
    for action in cast(list[Any], actions) if isinstance(actions, list) else []:
        fields = cast(JsonObject, action) if isinstance(action, dict) else {}
        one: JsonObject = {k: v for k, v in fields.items() if k != "command"}
        one["cmd"] = fields.get("command", "")
        parsed.append(one)
    return parsed
