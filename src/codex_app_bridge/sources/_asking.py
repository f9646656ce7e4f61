"""What the built-in agent asks the client, on request: one trigger per server request kind.

A turn whose input text starts with one of these prefixes makes the built-in agent ask before it
answers, deterministically, so that any client's approval UI can be exercised without a model:

==================  ==========================================================================
``approve: CMD``    asks to run ``CMD`` (``item/commandExecution/requestApproval``); accepted:
                    the ``commandExecution`` item completes with canned output ``ran: CMD``;
                    declined: the item completes ``declined``; cancelled: the turn is aborted.
``patch: PATH``     asks to create ``PATH`` (``item/fileChange/requestApproval``); the
                    ``fileChange`` item completes ``completed`` or ``declined``.
``permissions: R``  asks for network access, reason ``R`` (``item/permissions/requestApproval``).
``ask: QUESTION``   asks ``QUESTION`` (``item/tool/requestUserInput``, question id ``answer``).
``elicit: MESSAGE`` an MCP elicitation from server ``codex-app-bridge``
                    (``mcpServer/elicitation/request``, a form with one string field ``name``).
``tool: NAME ARGS`` calls the client's dynamic tool ``NAME`` with the JSON ``ARGS`` (``{}`` when
                    absent) (``item/tool/call``); the ``dynamicToolCall`` item completes with the
                    client's result.
==================  ==========================================================================

The agent's final message then says what it got (``ask_outcome``). Nothing is executed or
written: outputs are canned. Boundary: core events only.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass

import orjson
from pydantic import JsonValue

from codex_app_bridge.protocol.core import (
    ApplyPatchApprovalRequestEvent,
    CommandExecutionItem,
    Duration,
    DynamicToolCallItem,
    DynamicToolCallRequestEvent,
    DynamicToolResponseOp,
    ElicitationRequestEvent,
    EventMsg,
    ExecApprovalOp,
    ExecApprovalRequestEvent,
    FileChange,
    FileChangeAdd,
    FileChangeItem,
    ItemCompletedEvent,
    ItemStartedEvent,
    Op,
    ParsedCommandUnknown,
    PatchApprovalOp,
    RequestPermissionsEvent,
    RequestPermissionsResponseOp,
    RequestUserInputEvent,
    ResolveElicitationOp,
    UserInputAnswerOp,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.sources._base import TurnRequest, input_text

__all__ = ["ELICITATION_SERVER", "TRIGGERS", "Ask", "ask_events", "parse_ask"]

TRIGGERS = ("approve:", "patch:", "permissions:", "ask:", "elicit:", "tool:")
ELICITATION_SERVER = "codex-app-bridge"


@dataclass(frozen=True, slots=True)
class Ask:
    trigger: str
    argument: str


@dataclass(slots=True)
class Outcome:
    """What the agent says after asking; ``aborted``: the client cancelled the turn."""

    text: str = ""
    aborted: bool = False


def parse_ask(request: TurnRequest) -> Ask | None:
    """The trigger a turn's input starts with (see the module docstring), if any."""
    text = input_text(request.input).strip()
    for trigger in TRIGGERS:
        if text.startswith(trigger):
            return Ask(trigger[:-1], text[len(trigger) :].strip())
    return None


def _file_uri(cwd: str) -> str:
    return cwd if cwd.startswith("file://") else "file://" + cwd


def _decision_name(decision: JsonValue) -> str:
    if isinstance(decision, str):
        return decision
    if isinstance(decision, dict) and decision:
        return next(iter(decision))
    return "denied"


async def ask_events(request: TurnRequest, ask: Ask, outcome: Outcome) -> AsyncIterator[EventMsg]:
    """The events of asking, waiting for the answer, and reacting to it; fills ``outcome``."""
    turn_id, thread_id = request.turn_id, request.thread_id
    call_id = f"call_{turn_id.replace('-', '')}"
    now = now_ms()
    answer: Op
    if ask.trigger == "approve":
        command = ask.argument or "true"
        argv = ["/bin/bash", "-lc", command]
        event = ExecApprovalRequestEvent(
            call_id=call_id,
            turn_id=turn_id,
            started_at_ms=now,
            command=argv,
            cwd=request.cwd,
            reason=f"codex-app-bridge wants to run {command}",
            proposed_execpolicy_amendment=shlex.split(command) or [command],
            parsed_cmd=[ParsedCommandUnknown(cmd=command)],
        )
        yield event
        answer = await request.replies.wait_for(event)
        assert isinstance(answer, ExecApprovalOp)
        decision = _decision_name(answer.decision)
        if decision == "abort":
            outcome.aborted = True
            return
        if decision == "denied":
            outcome.text = f"You declined `{command}`; I did not run it."
            return
        item = CommandExecutionItem(
            id=call_id,
            process_id="1000",
            command=argv,
            cwd=_file_uri(request.cwd),
            parsed_cmd=[ParsedCommandUnknown(cmd=command)],
            source="unified_exec_startup",
            status="in_progress",
        )
        yield ItemStartedEvent(thread_id=thread_id, turn_id=turn_id, item=item, started_at_ms=now)
        done = item.model_copy(
            update={
                "status": "completed",
                "aggregated_output": f"ran: {command}\n",
                "exit_code": 0,
                "duration": Duration.from_millis(1),
            }
        )
        yield ItemCompletedEvent(
            thread_id=thread_id,
            turn_id=turn_id,
            item=done,
            started_at_ms=now,
            completed_at_ms=now_ms(),
        )
        outcome.text = f"I ran `{command}` ({decision}); it printed: ran: {command}"
    elif ask.trigger == "patch":
        path = ask.argument or "bridge.txt"
        changes: dict[str, FileChange] = {
            path: FileChangeAdd(content="created by codex-app-bridge\n")
        }
        event = ApplyPatchApprovalRequestEvent(
            call_id=call_id, turn_id=turn_id, started_at_ms=now, changes=changes
        )
        yield event
        answer = await request.replies.wait_for(event)
        assert isinstance(answer, PatchApprovalOp)
        decision = _decision_name(answer.decision)
        if decision == "abort":
            outcome.aborted = True
            return
        accepted = decision.startswith("approved")
        yield ItemCompletedEvent(
            thread_id=thread_id,
            turn_id=turn_id,
            item=FileChangeItem(
                id=call_id, changes=changes, status="completed" if accepted else "declined"
            ),
            started_at_ms=now,
            completed_at_ms=now_ms(),
        )
        outcome.text = f"I created {path}." if accepted else f"You declined creating {path}."
    elif ask.trigger == "permissions":
        event = RequestPermissionsEvent(
            call_id=call_id,
            turn_id=turn_id,
            reason=ask.argument or None,
            permissions={"network": {"enabled": True}},
            cwd=request.cwd,  # pyright: ignore[reportCallIssue]
        )
        yield event
        answer = await request.replies.wait_for(event)
        assert isinstance(answer, RequestPermissionsResponseOp)
        granted = orjson.dumps(answer.response).decode()
        outcome.text = f"Permissions granted: {granted}"
    elif ask.trigger == "ask":
        question = ask.argument or "What should I do?"
        event = RequestUserInputEvent(
            call_id=call_id,
            turn_id=turn_id,
            questions=[
                {
                    "id": "answer",
                    "header": "Question",
                    "question": question,
                    "is_other": True,
                    "is_secret": False,
                    "options": [{"label": "yes", "description": "Yes"}],
                }
            ],
        )
        yield event
        answer = await request.replies.wait_for(event)
        assert isinstance(answer, UserInputAnswerOp)
        response = answer.response if isinstance(answer.response, dict) else {}
        answers = response.get("answers")
        chosen = answers.get("answer") if isinstance(answers, dict) else None
        picked = chosen.get("answers") if isinstance(chosen, dict) else None
        text = ", ".join(str(a) for a in picked) if isinstance(picked, list) else ""
        outcome.text = f'You answered: "{text}".' if text else "You gave no answer."
    elif ask.trigger == "elicit":
        event = ElicitationRequestEvent(
            turn_id=turn_id,
            server_name=ELICITATION_SERVER,
            id=call_id,
            request={
                "mode": "form",
                "message": ask.argument or "Tell me your name",
                "requested_schema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            },
        )
        yield event
        answer = await request.replies.wait_for(event)
        assert isinstance(answer, ResolveElicitationOp)
        content = orjson.dumps(answer.content).decode()
        done = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}
        outcome.text = (
            f"The elicitation was {done.get(answer.decision, answer.decision)} with {content}."
        )
    else:
        name, _, raw = ask.argument.partition(" ")
        arguments: JsonValue
        try:
            arguments = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError:
            arguments = {"input": raw}
        event = DynamicToolCallRequestEvent(
            callId=call_id,
            turnId=turn_id,
            startedAtMs=now,
            tool=name or "lookup",
            arguments=arguments,
        )
        yield event
        answer = await request.replies.wait_for(event)
        assert isinstance(answer, DynamicToolResponseOp)
        response = answer.response if isinstance(answer.response, dict) else {}
        items = response.get("contentItems")
        success = response.get("success") is True
        yield ItemCompletedEvent(
            thread_id=thread_id,
            turn_id=turn_id,
            item=DynamicToolCallItem.model_validate(
                {
                    "id": call_id,
                    "tool": name or "lookup",
                    "arguments": arguments,
                    "status": "completed" if success else "failed",
                    "content_items": items if isinstance(items, list) else [],
                    "success": success,
                    "duration": {"secs": 0, "nanos": 0},
                }
            ),
            started_at_ms=now,
            completed_at_ms=now_ms(),
        )
        texts = [
            str(i.get("text"))
            for i in (items if isinstance(items, list) else [])
            if isinstance(i, dict) and i.get("type") == "inputText"
        ]
        outcome.text = f"The tool said: {' '.join(texts)}" if texts else "The tool said nothing."
