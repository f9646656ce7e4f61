"""Server -> client requests as pure reductions: what raising each kind sends (whole objects), and
which Codex ``Op`` each answer becomes (table-driven; the shapes are 0.163.0's, see the captures
in ``tests/data/request_captures``)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from codex_app_bridge.listener._requests import (
    RaisedRequest,
    RequestKind,
    abandon_request,
    raise_request,
    resolve_request,
)
from codex_app_bridge.protocol._base import dump_jsonable
from codex_app_bridge.protocol.jsonrpc import ErrorObject
from tests.listener.support import NOW_MS, THREAD, TURN, Driver, as_wire, envelope, task_started

CALL = "call_1"

COMMAND_EVENT: dict[str, Any] = {
    "type": "exec_approval_request",
    "call_id": CALL,
    "turn_id": TURN,
    "started_at_ms": 1_796_000_000_500,
    "command": ["/bin/bash", "-lc", "echo hi"],
    "cwd": "/home/dev/project",
    "proposed_execpolicy_amendment": ["echo", "hi"],
    "parsed_cmd": [{"type": "unknown", "cmd": "echo hi"}],
}
COMMAND_ITEM: dict[str, Any] = {
    "type": "commandExecution",
    "id": CALL,
    "command": "/bin/bash -lc 'echo hi'",
    "cwd": "/home/dev/project",
    "processId": None,
    "source": "agent",
    "status": "inProgress",
    "commandActions": [{"type": "unknown", "command": "echo hi"}],
    "aggregatedOutput": None,
    "exitCode": None,
    "durationMs": None,
    "pluginId": None,
    "scriptPath": None,
}


def status(*flags: str) -> dict[str, Any]:
    return {
        "method": "thread/status/changed",
        "params": {"threadId": THREAD, "status": {"type": "active", "activeFlags": list(flags)}},
        "audience": "broadcast",
    }


def raised(driver: Driver, msg: dict[str, Any]) -> tuple[list[dict[str, Any]], RaisedRequest]:
    reduction, request = raise_request(driver.state, envelope(msg), driver.ctx)
    assert reduction.skipped is None, reduction.skipped
    assert request is not None
    driver.state = reduction.state
    return [as_wire(e.method, e.params_dict(), e.audience) for e in reduction.emissions], request


def running() -> Driver:
    driver = Driver()
    driver.feed(task_started())
    return driver


def test_a_command_approval_starts_its_item_then_asks_with_the_real_params() -> None:
    driver = running()
    sent, request = raised(driver, COMMAND_EVENT)
    assert sent == [
        status("waitingOnApproval"),
        {
            "method": "item/started",
            "params": {
                "item": COMMAND_ITEM,
                "threadId": THREAD,
                "turnId": TURN,
                "startedAtMs": NOW_MS,
            },
        },
    ]
    assert request.method == "item/commandExecution/requestApproval"
    assert request.params_data() == {
        "kind": "command",
        "threadId": THREAD,
        "turnId": TURN,
        "itemId": CALL,
        "startedAtMs": 1_796_000_000_500,
        "environmentId": "local",
        "command": "/bin/bash -lc 'echo hi'",
        "cwd": "/home/dev/project",
        "commandActions": [{"type": "unknown", "command": "echo hi"}],
        "proposedExecpolicyAmendment": ["echo", "hi"],
        "availableDecisions": [
            "accept",
            {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["echo", "hi"]}},
            "cancel",
        ],
    }
    # core's own item_started for the call is not sent again
    again = driver.notifications(
        {
            "type": "item_started",
            "thread_id": THREAD,
            "turn_id": TURN,
            "started_at_ms": NOW_MS,
            "item": {
                "type": "CommandExecution",
                "id": CALL,
                "command": ["/bin/bash", "-lc", "echo hi"],
                "cwd": "file:///home/dev/project",
                "parsed_cmd": [],
                "source": "unified_exec_startup",
                "status": "in_progress",
            },
        }
    )
    assert again == []


@pytest.mark.parametrize(
    ("msg", "method", "flag", "params"),
    [
        (
            {
                "type": "apply_patch_approval_request",
                "call_id": CALL,
                "turn_id": TURN,
                "started_at_ms": 5,
                "changes": {"a.txt": {"type": "add", "content": "x\n"}},
                "reason": "write a.txt",
            },
            "item/fileChange/requestApproval",
            "waitingOnApproval",
            {
                "threadId": THREAD,
                "turnId": TURN,
                "itemId": CALL,
                "startedAtMs": 5,
                "reason": "write a.txt",
                "grantRoot": None,
            },
        ),
        (
            {
                "type": "request_permissions",
                "call_id": CALL,
                "turn_id": TURN,
                "reason": "network",
                "permissions": {"network": {"enabled": True}},
                "cwd": "/w",
            },
            "item/permissions/requestApproval",
            "waitingOnApproval",
            {
                "threadId": THREAD,
                "turnId": TURN,
                "itemId": CALL,
                "startedAtMs": NOW_MS,
                "environmentId": "local",
                "cwd": "/w",
                "reason": "network",
                "permissions": {"network": {"enabled": True}, "fileSystem": None},
            },
        ),
        (
            {
                "type": "request_user_input",
                "call_id": CALL,
                "turn_id": TURN,
                "questions": [
                    {
                        "id": "q",
                        "header": "H",
                        "question": "Why?",
                        "is_other": True,
                        "options": None,
                    }
                ],
            },
            "item/tool/requestUserInput",
            "waitingOnUserInput",
            {
                "threadId": THREAD,
                "turnId": TURN,
                "itemId": CALL,
                "isBlocking": True,
                "autoResolutionMs": None,
                "questions": [
                    {
                        "id": "q",
                        "header": "H",
                        "question": "Why?",
                        "isOther": True,
                        "isSecret": False,
                        "options": None,
                    }
                ],
            },
        ),
        (
            {
                "type": "elicitation_request",
                "server_name": "srv",
                "id": 7,
                "request": {"mode": "form", "message": "Name?", "requested_schema": {}},
            },
            "mcpServer/elicitation/request",
            "waitingOnApproval",
            {
                "threadId": THREAD,
                "turnId": TURN,
                "serverName": "srv",
                "mode": "form",
                "message": "Name?",
                "requestedSchema": {},
                "_meta": None,
            },
        ),
    ],
)
def test_each_kind_sets_its_flag_and_asks_with_the_real_params(
    msg: dict[str, Any], method: str, flag: str, params: dict[str, Any]
) -> None:
    driver = running()
    sent, request = raised(driver, msg)
    assert sent[0] == status(flag)
    assert request.method == method
    assert request.params_data() == params


def test_a_dynamic_tool_call_starts_its_item_and_changes_no_status() -> None:
    driver = running()
    sent, request = raised(
        driver,
        {
            "type": "dynamic_tool_call_request",
            "callId": CALL,
            "turnId": TURN,
            "startedAtMs": 9,
            "tool": "lookup",
            "arguments": {"city": "Paris"},
        },
    )
    assert [m["method"] for m in sent] == ["item/started"]
    assert sent[0]["params"]["item"] == {
        "type": "dynamicToolCall",
        "id": CALL,
        "namespace": None,
        "tool": "lookup",
        "arguments": {"city": "Paris"},
        "status": "inProgress",
        "contentItems": None,
        "success": None,
        "durationMs": None,
    }
    assert request.params_data() == {
        "threadId": THREAD,
        "turnId": TURN,
        "callId": CALL,
        "namespace": None,
        "tool": "lookup",
        "arguments": {"city": "Paris"},
    }


ERROR = ErrorObject(code=-32000, message="no")


@pytest.mark.parametrize(
    ("answer", "op", "completed"),
    [
        ({"decision": "accept"}, {"decision": "approved"}, None),
        ({"decision": "acceptForSession"}, {"decision": "approved_for_session"}, None),
        (
            {"decision": {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["echo"]}}},
            {
                "decision": {
                    "approved_execpolicy_amendment": {"proposed_execpolicy_amendment": ["echo"]}
                }
            },
            None,
        ),
        ({"decision": "decline"}, {"decision": "denied"}, "declined"),
        ({"decision": "cancel"}, {"decision": "abort"}, "declined"),
        ({"decision": "maybe"}, {"decision": "denied"}, "failed"),
        (None, {"decision": "denied"}, "failed"),
        (ERROR, {"decision": "denied"}, "failed"),
    ],
)
def test_each_command_answer_becomes_its_exec_approval_op(
    answer: Any, op: dict[str, Any], completed: str | None
) -> None:
    driver = running()
    _, request = raised(driver, COMMAND_EVENT)
    reduction, result = resolve_request(driver.state, request, 3, answer, driver.ctx)
    assert dump_jsonable(result) == {"type": "exec_approval", "id": CALL, "turn_id": TURN, **op}
    sent = [as_wire(e.method, e.params_dict(), e.audience) for e in reduction.emissions]
    resolved = {"method": "serverRequest/resolved", "params": {"threadId": THREAD, "requestId": 3}}
    if completed is None:
        assert sent == [resolved, status()]
    else:
        item = {**COMMAND_ITEM, "status": completed}
        assert sent == [
            resolved,
            {
                "method": "item/completed",
                "params": {
                    "item": item,
                    "threadId": THREAD,
                    "turnId": TURN,
                    "completedAtMs": NOW_MS,
                },
            },
            status(),
        ]
    assert reduction.state.watch.pending_approvals == 0


@pytest.mark.parametrize(
    ("msg", "answer", "op"),
    [
        (
            {"type": "apply_patch_approval_request", "call_id": CALL, "changes": {}},
            {"decision": "acceptForSession"},
            {"type": "patch_approval", "id": CALL, "decision": "approved_for_session"},
        ),
        (
            {"type": "apply_patch_approval_request", "call_id": CALL, "changes": {}},
            ERROR,
            {"type": "patch_approval", "id": CALL, "decision": "denied"},
        ),
        (
            {"type": "request_user_input", "call_id": CALL, "questions": []},
            {"answers": {"q": {"answers": ["a", "b"]}}},
            {
                "type": "user_input_answer",
                "id": TURN,
                "response": {"answers": {"q": {"answers": ["a", "b"]}}},
            },
        ),
        (
            {"type": "request_user_input", "call_id": CALL, "questions": []},
            {"answers": {"q": "a"}},
            {"type": "user_input_answer", "id": TURN, "response": {"answers": {}}},
        ),
        (
            {"type": "request_permissions", "call_id": CALL, "permissions": {}},
            {"permissions": {"network": {"enabled": True}}, "scope": "session"},
            {
                "type": "request_permissions_response",
                "id": CALL,
                "response": {"permissions": {"network": {"enabled": True}}, "scope": "session"},
            },
        ),
        (
            {"type": "request_permissions", "call_id": CALL, "permissions": {}},
            ERROR,
            {
                "type": "request_permissions_response",
                "id": CALL,
                "response": {"permissions": {}, "scope": "turn"},
            },
        ),
        (
            {"type": "elicitation_request", "server_name": "s", "id": 7, "request": {}},
            {"action": "accept", "content": {"name": "Ada"}},
            {
                "type": "resolve_elicitation",
                "server_name": "s",
                "request_id": 7,
                "decision": "accept",
                "content": {"name": "Ada"},
                "meta": None,
            },
        ),
        (
            {"type": "elicitation_request", "server_name": "s", "id": 7, "request": {}},
            {"action": "sure"},
            {
                "type": "resolve_elicitation",
                "server_name": "s",
                "request_id": 7,
                "decision": "decline",
                "content": None,
                "meta": None,
            },
        ),
        (
            {
                "type": "dynamic_tool_call_request",
                "callId": CALL,
                "turnId": TURN,
                "tool": "t",
                "arguments": None,
            },
            ERROR,
            {
                "type": "dynamic_tool_response",
                "id": CALL,
                "response": {
                    "contentItems": [{"type": "inputText", "text": "dynamic tool request failed"}],
                    "success": False,
                },
            },
        ),
    ],
)
def test_each_answer_becomes_the_op_codex_expects(
    msg: dict[str, Any], answer: Any, op: dict[str, Any]
) -> None:
    driver = running()
    _, request = raised(driver, msg)
    reduction, result = resolve_request(driver.state, request, 0, answer, driver.ctx)
    assert orjson.loads(orjson.dumps(dump_jsonable(result))) == op
    assert reduction.state.watch.active_flags() == []
    resolved = [e.method for e in reduction.emissions].count("serverRequest/resolved")
    assert resolved == (0 if request.kind is RequestKind.DYNAMIC_TOOL else 1)


def test_a_request_cleaned_up_at_turn_end_is_only_resolved() -> None:
    driver = running()
    _, request = raised(driver, COMMAND_EVENT)
    reduction = abandon_request(driver.state, request, 4, driver.ctx)
    assert [as_wire(e.method, e.params_dict(), e.audience) for e in reduction.emissions] == [
        {"method": "serverRequest/resolved", "params": {"threadId": THREAD, "requestId": 4}}
    ]
    driver.state = reduction.state
    ended = driver.notifications({"type": "turn_aborted", "turn_id": TURN, "reason": "interrupted"})
    assert ended[0]["params"]["status"] == {"type": "idle"}
    assert driver.state.watch.pending_approvals == 0


def test_a_request_that_cannot_be_converted_is_skipped_with_its_reason() -> None:
    driver = running()
    bad = {**COMMAND_EVENT, "proposed_execpolicy_amendment": None, "parsed_cmd": []}
    reduction, request = raise_request(
        driver.state,
        envelope({"type": "request_user_input", "call_id": CALL, "questions": [{"id": 1}]}),
        driver.ctx,
    )
    assert request is None
    assert reduction.skipped is not None
    assert raise_request(driver.state, envelope(bad), driver.ctx)[1] is not None
