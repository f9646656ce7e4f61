"""The reducer's part in server -> client requests: raising one, resolving it, abandoning it.

Role: what the real app-server's bespoke event handling does around the core events that ask
the client something (``exec_approval_request``, ``apply_patch_approval_request``,
``request_permissions``, ``request_user_input``, ``elicitation_request``,
``dynamic_tool_call_request``), for one thread, as functions of ``ThreadState``:

* ``raise_request(state, envelope, ctx)``: the notifications that precede the request and the
  request itself (``RaisedRequest``: method, params, and what its answer needs). An approval
  bumps ``ThreadWatch.pending_approvals`` (``waitingOnApproval``), a user-input question
  ``pending_user_inputs`` (``waitingOnUserInput``); a dynamic tool call changes neither.
  Order (0.163.0 capture ``shell_approval``): ``thread/status/changed``, then the synthetic
  ``item/started`` (an in-progress ``commandExecution`` with ``processId: null``, ``source:
  agent``; an in-progress ``fileChange``; a ``dynamicToolCall``), then the request. The
  command's id joins ``command_execution_started``, so core's own later ``item_started`` for it
  is suppressed: the approval's item is the one a client sees.
* ``resolve_request(state, raised, request_id, answer, ctx)``: a client's answer (result or
  error object): ``serverRequest/resolved`` (not for dynamic tool calls, as the real server),
  for a declined or cancelled command the synthetic ``item/completed`` (``declined``; ``failed``
  for an error answer or a malformed one), then the status change (probed order), and the Codex
  ``Op`` that carries the decision to the source. A malformed answer gets the real server's
  fallback: a denied command whose item ``failed``, a denied patch, empty answers, a declined
  elicitation, ``dynamic tool response was invalid``; an error answer the same.
* ``unraisable_answer(envelope)``: the ``Op`` a request that cannot be raised (its payload does
  not convert) gets at once, so that the source never waits for it: the error fallback of its
  kind (an elicitation is cancelled, as the real server does with one it cannot parse).
* ``abandon_request(state, raised, request_id)``: a request the turn's end (or start) cleans up:
  ``serverRequest/resolved`` only; the turn's end itself clears the counters, and no ``Op`` is
  sent (the turn is over).

Kept apart from ``_reducer`` (which owns the per-event table) so each side changes on its own;
the state types and ``status_change`` are ``_state``'s.
Boundary: pure; no ids are allocated and nothing is sent here (``server`` does both).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from pydantic import JsonValue, ValidationError

from codex_app_bridge.listener._state import (
    REQUEST_EVENT_TYPES,
    Emission,
    ReduceContext,
    Reduction,
    ThreadState,
    ThreadWatch,
    status_change,
)
from codex_app_bridge.mapping import (
    build_command_execution_approval_request_item,
    build_dynamic_tool_call_item,
    build_file_change_approval_request_item,
)
from codex_app_bridge.protocol._base import WireModel, dump_jsonable
from codex_app_bridge.protocol.core import (
    ApplyPatchApprovalRequestEvent,
    DynamicToolCallRequestEvent,
    DynamicToolResponseOp,
    ElicitationRequestEvent,
    EventEnvelope,
    ExecApprovalOp,
    ExecApprovalRequestEvent,
    Op,
    PatchApprovalOp,
    RequestPermissionsEvent,
    RequestPermissionsResponseOp,
    RequestUserInputEvent,
    ResolveElicitationOp,
    UserInputAnswerOp,
)
from codex_app_bridge.protocol.jsonrpc import ErrorObject
from codex_app_bridge.protocol.v2 import (
    CommandExecutionRequestApprovalParams,
    CommandExecutionThreadItem,
    DynamicToolCallParams,
    FileChangeRequestApprovalParams,
    ItemCompletedNotification,
    ItemStartedNotification,
    PermissionsRequestApprovalParams,
    ServerRequestResolvedNotification,
    ToolRequestUserInputParams,
)

__all__ = [
    "REQUEST_EVENT_TYPES",
    "RaisedRequest",
    "RequestKind",
    "abandon_request",
    "raise_request",
    "resolve_request",
    "unraisable_answer",
]

ENVIRONMENT_ID: Final = "local"
"""``environmentId`` of every request (the one local environment, as the real server)."""


class RequestKind(enum.Enum):
    COMMAND = "item/commandExecution/requestApproval"
    FILE_CHANGE = "item/fileChange/requestApproval"
    PERMISSIONS = "item/permissions/requestApproval"
    USER_INPUT = "item/tool/requestUserInput"
    ELICITATION = "mcpServer/elicitation/request"
    DYNAMIC_TOOL = "item/tool/call"


_Flag = Literal["approval", "userInput"] | None

_FLAGS: dict[RequestKind, _Flag] = {
    RequestKind.COMMAND: "approval",
    RequestKind.FILE_CHANGE: "approval",
    RequestKind.PERMISSIONS: "approval",
    RequestKind.ELICITATION: "approval",
    RequestKind.USER_INPUT: "userInput",
    RequestKind.DYNAMIC_TOOL: None,
}


@dataclass(frozen=True, slots=True)
class RaisedRequest:
    """A request to send, and what turning its answer into an ``Op`` needs."""

    kind: RequestKind
    params: WireModel | dict[str, JsonValue]
    turn_id: str
    """The turn that asked (the envelope's id)."""
    call_id: str
    """The item / call the request is about (the ``Op``'s id for most kinds)."""
    approval_id: str | None = None
    completion_item: CommandExecutionThreadItem | None = None
    """The in-progress command item a decline completes (commands only)."""
    server_name: str = ""
    elicitation_id: JsonValue = None

    @property
    def method(self) -> str:
        return self.kind.value

    @property
    def flag(self) -> _Flag:
        return _FLAGS[self.kind]

    def params_data(self) -> JsonValue:
        return dump_jsonable(self.params)


# --------------------------------------------------------------------------- helpers


def _watch(watch: ThreadWatch, flag: _Flag, delta: int) -> ThreadWatch:
    if flag == "approval":
        return replace(watch, pending_approvals=max(0, watch.pending_approvals + delta))
    if flag == "userInput":
        return replace(watch, pending_user_inputs=max(0, watch.pending_user_inputs + delta))
    return watch


def _resolved(raised: RaisedRequest, request_id: int, thread_id: str) -> list[Emission]:
    if raised.kind is RequestKind.DYNAMIC_TOOL:
        return []  # the real server sends no serverRequest/resolved for item/tool/call
    params = ServerRequestResolvedNotification(thread_id=thread_id, request_id=request_id)
    return [Emission("serverRequest/resolved", params)]


def _core_decisions(decisions: list[JsonValue]) -> list[JsonValue]:
    """Core ``ReviewDecision`` s as the v2 ``CommandExecutionApprovalDecision`` s."""
    names = {
        "approved": "accept",
        "approved_for_session": "acceptForSession",
        "denied": "decline",
        "abort": "cancel",
    }
    converted: list[JsonValue] = []
    for decision in decisions:
        if isinstance(decision, str):
            if decision in names:
                converted.append(names[decision])
        elif isinstance(decision, dict):
            amendment = decision.get("approved_execpolicy_amendment")
            network = decision.get("network_policy_amendment")
            if isinstance(amendment, dict):
                value = amendment.get("proposed_execpolicy_amendment")
                converted.append({"acceptWithExecpolicyAmendment": {"execpolicy_amendment": value}})
            elif isinstance(network, dict):
                value = network.get("network_policy_amendment")
                converted.append(
                    {"applyNetworkPolicyAmendment": {"network_policy_amendment": value}}
                )
    return converted


def _available_decisions(msg: ExecApprovalRequestEvent) -> list[JsonValue]:
    """What the client may answer (Codex ``effective_available_decisions``)."""
    if msg.available_decisions is not None:
        return _core_decisions(msg.available_decisions)
    decisions: list[JsonValue] = ["accept"]
    if msg.network_approval_context is not None:
        decisions.append("acceptForSession")
    elif msg.proposed_execpolicy_amendment is not None:
        amendment: list[JsonValue] = list(msg.proposed_execpolicy_amendment)
        decisions.append({"acceptWithExecpolicyAmendment": {"execpolicy_amendment": amendment}})
    decisions.append("cancel")
    return decisions


# --------------------------------------------------------------------------- raising


def _command(
    state: ThreadState, envelope: EventEnvelope, msg: ExecApprovalRequestEvent, ctx: ReduceContext
) -> tuple[ThreadState, list[Emission], RaisedRequest]:
    turn_id = msg.turn_id or envelope.id
    item = build_command_execution_approval_request_item(msg)
    ledger = state.turn.items
    emissions: list[Emission] = []
    network = msg.network_approval_context is not None
    if (
        msg.approval_id is None
        and not network
        and msg.call_id not in ledger.command_execution_started
    ):
        started = ItemStartedNotification(
            item=item, thread_id=ctx.thread_id, turn_id=envelope.id, started_at_ms=ctx.now_ms
        )
        emissions.append(Emission("item/started", started))
        ledger = ledger.start(msg.call_id, command=True)
    fields: dict[str, Any] = {
        "threadId": ctx.thread_id,
        "turnId": turn_id,
        "itemId": msg.call_id,
        "approvalId": msg.approval_id,
        "startedAtMs": msg.started_at_ms if msg.started_at_ms is not None else ctx.now_ms,
        "environmentId": ENVIRONMENT_ID,
        "reason": msg.reason,
        "proposedExecpolicyAmendment": msg.proposed_execpolicy_amendment,
        "proposedNetworkPolicyAmendments": msg.proposed_network_policy_amendments,
    }
    if network:
        fields["networkApprovalContext"] = msg.network_approval_context
    else:
        fields["command"] = item.command
        fields["cwd"] = item.cwd
        fields["commandActions"] = [dump_jsonable(action) for action in item.command_actions]
    if msg.additional_permissions is not None:
        fields["additionalPermissions"] = msg.additional_permissions
    fields["availableDecisions"] = _available_decisions(msg)
    params = CommandExecutionRequestApprovalParams.model_validate(fields)
    raised = RaisedRequest(
        RequestKind.COMMAND,
        params,
        envelope.id,
        msg.call_id,
        approval_id=msg.approval_id,
        completion_item=None if network else item,
    )
    return replace(state, turn=replace(state.turn, items=ledger)), emissions, raised


def _file_change(
    state: ThreadState,
    envelope: EventEnvelope,
    msg: ApplyPatchApprovalRequestEvent,
    ctx: ReduceContext,
) -> tuple[ThreadState, list[Emission], RaisedRequest]:
    ledger = state.turn.items
    emissions: list[Emission] = []
    if msg.call_id not in ledger.started_ids:
        item = build_file_change_approval_request_item(msg)
        started = ItemStartedNotification(
            item=item, thread_id=ctx.thread_id, turn_id=envelope.id, started_at_ms=ctx.now_ms
        )
        emissions.append(Emission("item/started", started))
        ledger = ledger.start(msg.call_id, legacy=True)
    params = FileChangeRequestApprovalParams(
        thread_id=ctx.thread_id,
        turn_id=msg.turn_id or envelope.id,
        item_id=msg.call_id,
        reason=msg.reason,
        grant_root=msg.grant_root,
        started_at_ms=msg.started_at_ms if msg.started_at_ms is not None else ctx.now_ms,
    )
    raised = RaisedRequest(RequestKind.FILE_CHANGE, params, envelope.id, msg.call_id)
    return replace(state, turn=replace(state.turn, items=ledger)), emissions, raised


def _permissions(
    state: ThreadState, envelope: EventEnvelope, msg: RequestPermissionsEvent, ctx: ReduceContext
) -> tuple[ThreadState, list[Emission], RaisedRequest]:
    extras = msg.model_extra or {}
    cwd = extras.get("cwd")
    started_at = extras.get("started_at_ms")
    params = PermissionsRequestApprovalParams.model_validate(
        {
            "threadId": ctx.thread_id,
            "turnId": msg.turn_id or envelope.id,
            "itemId": msg.call_id,
            "startedAtMs": started_at if isinstance(started_at, int) else ctx.now_ms,
            "environmentId": ENVIRONMENT_ID,
            "cwd": cwd if isinstance(cwd, str) else "",
            "reason": msg.reason,
            "permissions": msg.permissions if isinstance(msg.permissions, dict) else {},
        }
    )
    raised = RaisedRequest(RequestKind.PERMISSIONS, params, envelope.id, msg.call_id)
    return state, [], raised


def _question(question: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    options = question.get("options")
    return {
        "id": question.get("id"),
        "header": question.get("header"),
        "question": question.get("question"),
        "isOther": bool(question.get("is_other", question.get("isOther", False))),
        "isSecret": bool(question.get("is_secret", question.get("isSecret", False))),
        "options": [
            {"label": o.get("label"), "description": o.get("description")}
            for o in options
            if isinstance(o, dict)
        ]
        if isinstance(options, list)
        else None,
    }


def _user_input(
    state: ThreadState, envelope: EventEnvelope, msg: RequestUserInputEvent, ctx: ReduceContext
) -> tuple[ThreadState, list[Emission], RaisedRequest]:
    params = ToolRequestUserInputParams.model_validate(
        {
            "threadId": ctx.thread_id,
            "turnId": msg.turn_id or envelope.id,
            "itemId": msg.call_id,
            "questions": [_question(q) for q in msg.questions],
            "isBlocking": True,
            "autoResolutionMs": None,
        }
    )
    raised = RaisedRequest(RequestKind.USER_INPUT, params, envelope.id, msg.call_id)
    return state, [], raised


def _elicitation(
    state: ThreadState, envelope: EventEnvelope, msg: ElicitationRequestEvent, ctx: ReduceContext
) -> tuple[ThreadState, list[Emission], RaisedRequest]:
    request = msg.request if isinstance(msg.request, dict) else {}
    params: dict[str, JsonValue] = {
        "threadId": ctx.thread_id,
        "turnId": msg.turn_id if msg.turn_id is not None else state.active_turn_id,
        "serverName": msg.server_name,
    }
    for key, value in request.items():
        wire = {
            "requested_schema": "requestedSchema",
            "elicitation_id": "elicitationId",
            "meta": "_meta",
        }.get(key, key)
        params[wire] = value
    params.setdefault("mode", "form")
    params.setdefault("_meta", None)
    raised = RaisedRequest(
        RequestKind.ELICITATION,
        params,
        envelope.id,
        str(msg.id),
        server_name=msg.server_name,
        elicitation_id=msg.id,
    )
    return state, [], raised


def _dynamic_tool(
    state: ThreadState,
    envelope: EventEnvelope,
    msg: DynamicToolCallRequestEvent,
    ctx: ReduceContext,
) -> tuple[ThreadState, list[Emission], RaisedRequest]:
    ledger = state.turn.items
    emissions: list[Emission] = []
    turn_id = msg.turn_id or envelope.id
    if msg.call_id not in ledger.started_ids:
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
        started_at = msg.started_at_ms if msg.started_at_ms is not None else ctx.now_ms
        started = ItemStartedNotification(
            item=item, thread_id=ctx.thread_id, turn_id=turn_id, started_at_ms=started_at
        )
        emissions.append(Emission("item/started", started))
        ledger = ledger.start(msg.call_id, legacy=True)
    params = DynamicToolCallParams(
        thread_id=ctx.thread_id,
        turn_id=turn_id,
        call_id=msg.call_id,
        namespace=msg.namespace,
        tool=msg.tool,
        arguments=msg.arguments,
    )
    raised = RaisedRequest(RequestKind.DYNAMIC_TOOL, params, envelope.id, msg.call_id)
    return replace(state, turn=replace(state.turn, items=ledger)), emissions, raised


_RAISERS: dict[type[Any], Any] = {
    ExecApprovalRequestEvent: _command,
    ApplyPatchApprovalRequestEvent: _file_change,
    RequestPermissionsEvent: _permissions,
    RequestUserInputEvent: _user_input,
    ElicitationRequestEvent: _elicitation,
    DynamicToolCallRequestEvent: _dynamic_tool,
}


def raise_request(
    state: ThreadState, envelope: EventEnvelope, ctx: ReduceContext
) -> tuple[Reduction, RaisedRequest | None]:
    """The notifications preceding the request ``envelope`` raises, and the request (see the
    module docstring); ``(Reduction(state, skipped=...), None)`` if it cannot be raised."""
    raiser = _RAISERS.get(type(envelope.msg))
    if raiser is None:
        return Reduction(state, skipped=f"{envelope.msg.type}: not a server request"), None
    try:
        new_state, emissions, raised = raiser(state, envelope, envelope.msg, ctx)
    except (ValidationError, ValueError, TypeError) as exc:
        reason = f"{envelope.msg.type}: {type(exc).__name__}: {exc}"
        return Reduction(state, skipped=reason), None
    assert isinstance(new_state, ThreadState)
    assert isinstance(raised, RaisedRequest)
    watch = _watch(new_state.watch, raised.flag, +1)
    status = status_change(state.watch, watch, ctx.thread_id)
    final = replace(new_state, watch=watch)
    return Reduction(final, (*status, *emissions)), raised


# --------------------------------------------------------------------------- answers


Answer = JsonValue | ErrorObject
"""A client's ``result``, or the error object it answered with."""

_COMMAND_DECISIONS: dict[str, tuple[JsonValue, str | None]] = {
    "accept": ("approved", None),
    "acceptForSession": ("approved_for_session", None),
    "decline": ("denied", "declined"),
    "cancel": ("abort", "declined"),
}

_PATCH_DECISIONS: dict[str, str] = {
    "accept": "approved",
    "acceptForSession": "approved_for_session",
    "decline": "denied",
    "cancel": "abort",
}


def _command_decision(answer: Answer) -> tuple[JsonValue, str | None]:
    """The core ``ReviewDecision`` and the status the server completes the item with."""
    if isinstance(answer, ErrorObject):
        return "denied", "failed"
    decision = answer.get("decision") if isinstance(answer, dict) else None
    if isinstance(decision, str) and decision in _COMMAND_DECISIONS:
        return _COMMAND_DECISIONS[decision]
    if isinstance(decision, dict) and len(decision) == 1:
        ((tag, body),) = decision.items()
        if tag == "acceptWithExecpolicyAmendment" and isinstance(body, dict):
            amendment = body.get("execpolicy_amendment")
            if isinstance(amendment, list) and all(isinstance(a, str) for a in amendment):
                inner: dict[str, JsonValue] = {"proposed_execpolicy_amendment": amendment}
                return {"approved_execpolicy_amendment": inner}, None
        if tag == "applyNetworkPolicyAmendment" and isinstance(body, dict):
            amendment = body.get("network_policy_amendment")
            if isinstance(amendment, dict) and amendment.get("action") in ("allow", "deny"):
                status = "declined" if amendment.get("action") == "deny" else None
                network: dict[str, JsonValue] = {"network_policy_amendment": amendment}
                return {"network_policy_amendment": network}, status
    return "denied", "failed"  # malformed: 0.163.0 treats it as a failed request (probed)


def _patch_decision(answer: Answer) -> str:
    decision = answer.get("decision") if isinstance(answer, dict) else None
    if isinstance(decision, str) and decision in _PATCH_DECISIONS:
        return _PATCH_DECISIONS[decision]
    return "denied"


def _user_answers(answer: Answer) -> dict[str, JsonValue]:
    answers = answer.get("answers") if isinstance(answer, dict) else None
    if not isinstance(answers, dict):
        return {"answers": {}}
    converted: dict[str, JsonValue] = {}
    for question_id, value in answers.items():
        chosen = value.get("answers") if isinstance(value, dict) else None
        if not isinstance(chosen, list) or not all(isinstance(a, str) for a in chosen):
            return {"answers": {}}  # one malformed answer fails the whole response, as serde
        converted[question_id] = {"answers": chosen}
    return {"answers": converted}


def _elicitation_op(raised: RaisedRequest, answer: Answer) -> ResolveElicitationOp:
    action = answer.get("action") if isinstance(answer, dict) else None
    if isinstance(action, str) and action in ("accept", "decline", "cancel"):
        assert isinstance(answer, dict)
        content, meta = answer.get("content"), answer.get("_meta")
    else:
        action, content, meta = "decline", None, None
    return ResolveElicitationOp(
        server_name=raised.server_name,
        request_id=raised.elicitation_id,
        decision=action,
        content=content,
        meta=meta,
    )


def _permissions_response(answer: Answer) -> dict[str, JsonValue]:
    empty: dict[str, JsonValue] = {"permissions": {}, "scope": "turn"}
    if not isinstance(answer, dict):
        return empty
    permissions = answer.get("permissions")
    scope = answer.get("scope", "turn")
    strict = answer.get("strictAutoReview")
    if not isinstance(permissions, dict) or scope not in ("turn", "session"):
        return empty
    if strict is True and scope == "session":
        return empty  # strict auto review is only for turn-scoped grants
    granted: dict[str, JsonValue] = {}
    if permissions.get("network") is not None:
        granted["network"] = permissions["network"]
    if permissions.get("fileSystem") is not None:
        granted["file_system"] = permissions["fileSystem"]
    response: dict[str, JsonValue] = {"permissions": granted, "scope": scope}
    if strict is True:
        response["strict_auto_review"] = True
    return response


def _tool_response(answer: Answer) -> dict[str, JsonValue]:
    if isinstance(answer, ErrorObject):
        return _tool_fallback("dynamic tool request failed")
    items = answer.get("contentItems") if isinstance(answer, dict) else None
    success = answer.get("success") if isinstance(answer, dict) else None
    if not isinstance(items, list) or not isinstance(success, bool):
        return _tool_fallback("dynamic tool response was invalid")
    for item in items:
        if not isinstance(item, dict) or item.get("type") not in (
            "inputText",
            "inputImage",
            "inputAudio",
        ):
            return _tool_fallback("dynamic tool response was invalid")
    return {"contentItems": items, "success": success}


def _tool_fallback(message: str) -> dict[str, JsonValue]:
    return {"contentItems": [{"type": "inputText", "text": message}], "success": False}


def _op(raised: RaisedRequest, answer: Answer) -> tuple[Op, str | None]:
    """The ``Op`` carrying ``answer`` to the source, and a command item's completion status."""
    kind = raised.kind
    if kind is RequestKind.COMMAND:
        decision, status = _command_decision(answer)
        op_id = raised.approval_id if raised.approval_id is not None else raised.call_id
        return ExecApprovalOp(id=op_id, turn_id=raised.turn_id, decision=decision), status
    if kind is RequestKind.FILE_CHANGE:
        return PatchApprovalOp(id=raised.call_id, decision=_patch_decision(answer)), None
    if kind is RequestKind.PERMISSIONS:
        response = _permissions_response(answer)
        return RequestPermissionsResponseOp(id=raised.call_id, response=response), None
    if kind is RequestKind.USER_INPUT:
        return UserInputAnswerOp(id=raised.turn_id, response=_user_answers(answer)), None
    if kind is RequestKind.ELICITATION:
        return _elicitation_op(raised, answer), None
    return DynamicToolResponseOp(id=raised.call_id, response=_tool_response(answer)), None


def resolve_request(
    state: ThreadState,
    raised: RaisedRequest,
    request_id: int,
    answer: Answer,
    ctx: ReduceContext,
) -> tuple[Reduction, Op]:
    """The notifications a client's answer causes and the ``Op`` for the source (see the
    module docstring)."""
    op, completion = _op(raised, answer)
    emissions = _resolved(raised, request_id, ctx.thread_id)
    watch = _watch(state.watch, raised.flag, -1)
    ledger = state.turn.items
    item = raised.completion_item
    suppressed = raised.approval_id is not None
    if (
        completion is not None
        and item is not None
        and not suppressed
        and raised.call_id in ledger.command_execution_started
    ):
        done = item.model_copy(update={"status": completion})
        completed = ItemCompletedNotification(
            item=done, thread_id=ctx.thread_id, turn_id=raised.turn_id, completed_at_ms=ctx.now_ms
        )
        emissions.append(Emission("item/completed", completed))
        ledger = ledger.complete(raised.call_id, legacy=True, command=True)
    # the status changes last: the real server drops its "waiting" guard after the item
    emissions += status_change(state.watch, watch, ctx.thread_id)
    turn = replace(state.turn, items=ledger)
    return Reduction(replace(state, watch=watch, turn=turn), tuple(emissions)), op


def abandon_request(
    state: ThreadState, raised: RaisedRequest, request_id: int, ctx: ReduceContext
) -> Reduction:
    """A pending request the turn's end cleans up: ``serverRequest/resolved`` only."""
    return Reduction(state, tuple(_resolved(raised, request_id, ctx.thread_id)))


_KINDS: dict[type[Any], RequestKind] = {
    ExecApprovalRequestEvent: RequestKind.COMMAND,
    ApplyPatchApprovalRequestEvent: RequestKind.FILE_CHANGE,
    RequestPermissionsEvent: RequestKind.PERMISSIONS,
    RequestUserInputEvent: RequestKind.USER_INPUT,
    ElicitationRequestEvent: RequestKind.ELICITATION,
    DynamicToolCallRequestEvent: RequestKind.DYNAMIC_TOOL,
}

_UNSENT: Final = ErrorObject(code=-32603, message="codex-app-bridge: the request could not be sent")


def unraisable_answer(envelope: EventEnvelope) -> Op | None:
    """The answer a request that could not be raised gets at once (see the module docstring)."""
    msg = envelope.msg
    kind = _KINDS.get(type(msg))
    if kind is None:
        return None
    call_id = getattr(msg, "call_id", "")
    raised = RaisedRequest(
        kind,
        {},
        envelope.id,
        str(msg.id) if isinstance(msg, ElicitationRequestEvent) else str(call_id),
        approval_id=msg.approval_id if isinstance(msg, ExecApprovalRequestEvent) else None,
        server_name=msg.server_name if isinstance(msg, ElicitationRequestEvent) else "",
        elicitation_id=msg.id if isinstance(msg, ElicitationRequestEvent) else None,
    )
    if kind is RequestKind.ELICITATION:
        return _elicitation_op(raised, {"action": "cancel"})
    return _op(raised, _UNSENT)[0]
