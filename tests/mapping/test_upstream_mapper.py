"""The upstream mapper and item builder tests (``spec/event-mapping.md`` §5.1), one test each,
named as upstream names them, asserting whole notifications and items."""

from __future__ import annotations

from typing import Any

from codex_app_bridge.mapping import command_actions, item_event_to_server_notification
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import dump_dict
from tests.mapping.support import schema_errors

SENDER = "01a229f2-1111-7000-8000-000000000001"
RECEIVER = "01a229f2-2222-7000-8000-000000000002"
RECEIVER_A = "01a229f2-aaaa-7000-8000-00000000000a"
RECEIVER_B = "01a229f2-bbbb-7000-8000-00000000000b"


def mapped(msg: core.EventMsg, thread_id: str = "thread-1", turn_id: str = "turn-1") -> Any:
    notification = item_event_to_server_notification(msg, thread_id, turn_id)
    assert notification is not None
    written = dump_dict(notification)
    assert schema_errors(written) == []
    return written


def test_collab_resume_begin_maps_to_item_started_resume_agent() -> None:
    event = core.CollabResumeBeginEvent(
        call_id="call-1", started_at_ms=123, sender_thread_id=SENDER, receiver_thread_id=RECEIVER
    )
    assert mapped(event) == {
        "method": "item/started",
        "params": {
            "threadId": "thread-1",
            "turnId": "turn-1",
            "startedAtMs": 123,
            "item": {
                "type": "collabAgentToolCall",
                "id": "call-1",
                "tool": "resumeAgent",
                "status": "inProgress",
                "senderThreadId": SENDER,
                "receiverThreadIds": [RECEIVER],
                "prompt": None,
                "model": None,
                "reasoningEffort": None,
                "agentsStates": {},
            },
        },
    }


def test_collab_resume_end_maps_to_item_completed_resume_agent() -> None:
    event = core.CollabResumeEndEvent(
        call_id="call-2",
        completed_at_ms=456,
        sender_thread_id=SENDER,
        receiver_thread_id=RECEIVER,
        status="not_found",
    )
    assert mapped(event, "thread-2", "turn-2") == {
        "method": "item/completed",
        "params": {
            "threadId": "thread-2",
            "turnId": "turn-2",
            "completedAtMs": 456,
            "item": {
                "type": "collabAgentToolCall",
                "id": "call-2",
                "tool": "resumeAgent",
                "status": "failed",
                "senderThreadId": SENDER,
                "receiverThreadIds": [RECEIVER],
                "prompt": None,
                "model": None,
                "reasoningEffort": None,
                "agentsStates": {RECEIVER: {"status": "notFound", "message": None}},
            },
        },
    }


def test_collab_wait_completion_matches_sorted_history_projection() -> None:
    # upstream also compares with its history builder's item for the same event; that builder is
    # the projection layer's (thread history), which reuses this very item
    event = core.CollabWaitingEndEvent(
        sender_thread_id=SENDER,
        call_id="wait-1",
        completed_at_ms=456,
        agent_statuses=[],
        statuses={RECEIVER_B: core.AgentStatusCompleted(completed=None), RECEIVER_A: "running"},
    )
    item = mapped(event)["params"]["item"]
    assert item["receiverThreadIds"] == [RECEIVER_A, RECEIVER_B]
    assert item["status"] == "completed"
    assert item["agentsStates"] == {
        RECEIVER_A: {"status": "running", "message": None},
        RECEIVER_B: {"status": "completed", "message": None},
    }


def test_exec_command_output_delta_maps_to_command_execution_output_delta() -> None:
    event = core.ExecCommandOutputDeltaEvent.from_bytes("call-1", "stdout", b"hello")
    assert mapped(event) == {
        "method": "item/commandExecution/outputDelta",
        "params": {
            "threadId": "thread-1",
            "turnId": "turn-1",
            "itemId": "call-1",
            "delta": "hello",
        },
    }


def test_sub_agent_activity_maps_model_to_completed_item() -> None:
    event = core.SubAgentActivityEvent(
        event_id="activity-1",
        occurred_at_ms=456,
        agent_thread_id=RECEIVER,
        agent_path="/root/worker",
        kind="started",
        model="gpt-5.4",
        reasoning_effort="high",
    )
    assert mapped(event) == {
        "method": "item/completed",
        "params": {
            "threadId": "thread-1",
            "turnId": "turn-1",
            "completedAtMs": 456,
            "item": {
                "type": "subAgentActivity",
                "id": "activity-1",
                "kind": "started",
                "agentThreadId": RECEIVER,
                "agentPath": "/root/worker",
                "model": "gpt-5.4",
                "reasoningEffort": "high",
            },
        },
    }


def mcp_item(**fields: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "mcpToolCall",
        "id": "call_123",
        "server": "codex",
        "tool": "list_mcp_resources",
        "appContext": None,
        "pluginId": None,
        "readOnlyHint": None,
        "mcpAppUi": None,
        "result": None,
        "error": None,
        "durationMs": None,
    }
    return item | fields


def test_mcp_tool_call_begin_maps_to_item_started_notification_with_args() -> None:
    event = core.McpToolCallBeginEvent(
        call_id="call_123",
        invocation=core.McpInvocation(
            server="codex", tool="list_mcp_resources", arguments={"server": ""}
        ),
        mcp_app_resource_uri="ui://widget/list-resources.html",
    )
    assert mapped(event)["params"]["item"] == mcp_item(
        status="inProgress",
        arguments={"server": ""},
        mcpAppResourceUri="ui://widget/list-resources.html",
    )


def test_mcp_tool_call_begin_maps_to_item_started_notification_without_args() -> None:
    event = core.McpToolCallBeginEvent(
        call_id="call_123",
        invocation=core.McpInvocation(server="codex", tool="list_mcp_resources", arguments=None),
    )
    item = mapped(event)["params"]["item"]
    assert item == mcp_item(status="inProgress", arguments=None)
    assert "mcpAppResourceUri" not in item


def test_mcp_tool_call_end_maps_to_item_completed_notification_on_success() -> None:
    content = [{"type": "text", "text": '{"resources":[]}'}]
    event = core.McpToolCallEndEvent(
        call_id="call_123",
        invocation=core.McpInvocation(
            server="codex", tool="list_mcp_resources", arguments={"server": ""}
        ),
        mcp_app_resource_uri="ui://widget/list-resources.html",
        duration=core.Duration(secs=0, nanos=92_708),
        result=core.McpToolCallOk.model_validate(
            {
                "Ok": {
                    "content": content,
                    "isError": False,
                    "structuredContent": None,
                    "_meta": {"ui/resourceUri": "ui://widget/list-resources.html"},
                }
            }
        ),
    )
    assert mapped(event)["params"]["item"] == mcp_item(
        status="completed",
        arguments={"server": ""},
        mcpAppResourceUri="ui://widget/list-resources.html",
        result={
            "content": content,
            "structuredContent": None,
            "_meta": {"ui/resourceUri": "ui://widget/list-resources.html"},
        },
        durationMs=0,
    )


def test_mcp_tool_call_end_maps_to_item_completed_notification_on_error() -> None:
    event = core.McpToolCallEndEvent(
        call_id="call_123",
        invocation=core.McpInvocation(server="codex", tool="list_mcp_resources", arguments=None),
        duration=core.Duration(secs=0, nanos=1_000_000),
        result=core.McpToolCallErr.model_validate({"Err": "boom"}),
    )
    assert mapped(event)["params"]["item"] == mcp_item(
        status="failed", arguments=None, error={"message": "boom"}, durationMs=1
    )


def test_mcp_result_flagged_as_error_fails_but_keeps_the_result() -> None:
    event = core.McpToolCallEndEvent(
        call_id="call_123",
        invocation=core.McpInvocation(server="codex", tool="list_mcp_resources"),
        duration=core.Duration(),
        result=core.McpToolCallOk.model_validate({"Ok": {"content": [], "isError": True}}),
    )
    item = mapped(event)["params"]["item"]
    assert (item["status"], item["error"]) == ("failed", None)
    assert item["result"] == {"content": [], "structuredContent": None, "_meta": None}


def test_foreign_read_retains_target_native_path_without_dropping_other_command_actions() -> None:
    parsed: list[core.ParsedCommand] = [
        core.ParsedCommandRead(cmd="cat file.txt", name="file.txt", path="file.txt"),
        core.ParsedCommandListFiles(cmd="ls", path="subdir"),
        core.ParsedCommandSearch(cmd="rg needle", query="needle", path="src"),
    ]
    # this host is POSIX: a Windows cwd URI is the foreign family
    actions = command_actions(parsed, "file:///C:/src")
    assert [dump_dict(action) for action in actions] == [
        {
            "type": "read",
            "command": "cat file.txt",
            "name": "file.txt",
            "path": "C:\\src\\file.txt",
        },
        {"type": "listFiles", "command": "ls", "path": "subdir"},
        {"type": "search", "command": "rg needle", "query": "needle", "path": "src"},
    ]
