"""One row per arm of the stateless mapper (``spec/event-mapping.md`` §2, §3): a core event as
JSON in, the whole notification it becomes out, and that notification valid against the vendored
0.163.0 schema. The inputs and outputs are the spec's JSON examples where it gives one."""

from __future__ import annotations

from typing import Any

import pytest

from codex_app_bridge.mapping import item_event_to_server_notification
from codex_app_bridge.protocol.core import EVENT_MSG_ADAPTER
from codex_app_bridge.protocol.v2 import dump_dict
from tests.mapping.support import schema_errors

THREAD = "01a229f2-92b0-7cc1-8be7-6957c165a219"
TURN = "01a229f2-92c1-75f1-a5d5-b1d9dd36ad17"
SENDER = "01a229f2-0000-7000-8000-000000000001"
AGENT_A = "01a229f2-0000-7000-8000-00000000000a"
AGENT_B = "01a229f2-0000-7000-8000-00000000000b"

Json = dict[str, Any]


def ids(**params: Any) -> Json:
    """Notification params with the conversation and envelope ids in front."""
    return {"threadId": THREAD, "turnId": TURN, **params}


def collab_item(**fields: Any) -> Json:
    item: Json = {
        "type": "collabAgentToolCall",
        "senderThreadId": SENDER,
        "prompt": None,
        "model": None,
        "reasoningEffort": None,
        "agentsStates": {},
    }
    return item | fields


def command_item(**fields: Any) -> Json:
    item: Json = {
        "type": "commandExecution",
        "pluginId": None,
        "scriptPath": None,
        "processId": None,
        "source": "agent",
        "aggregatedOutput": None,
        "exitCode": None,
        "durationMs": None,
    }
    return item | fields


def mcp_item(**fields: Any) -> Json:
    item: Json = {
        "type": "mcpToolCall",
        "server": "docs",
        "tool": "search",
        "arguments": {"q": "x"},
        "appContext": None,
        "pluginId": None,
        "readOnlyHint": None,
        "mcpAppUi": None,
        "result": None,
        "error": None,
        "durationMs": None,
    }
    return item | fields


# (name, core event payload, the notification it becomes)
ROWS: list[tuple[str, Json, Json]] = [
    (
        "agent_message_content_delta",
        {
            "type": "agent_message_content_delta",
            "thread_id": "ignored",
            "turn_id": "ignored",
            "item_id": "msg_1",
            "delta": "Hel",
        },
        {"method": "item/agentMessage/delta", "params": ids(itemId="msg_1", delta="Hel")},
    ),
    (
        "plan_delta",
        {
            "type": "plan_delta",
            "thread_id": "x",
            "turn_id": "y",
            "item_id": "plan_1",
            "delta": "- step",
        },
        {"method": "item/plan/delta", "params": ids(itemId="plan_1", delta="- step")},
    ),
    (
        "reasoning_content_delta",
        {
            "type": "reasoning_content_delta",
            "item_id": "rs_1",
            "delta": "Think",
            "summary_index": 0,
        },
        {
            "method": "item/reasoning/summaryTextDelta",
            "params": ids(itemId="rs_1", delta="Think", summaryIndex=0),
        },
    ),
    (
        "reasoning_raw_content_delta",
        {
            "type": "reasoning_raw_content_delta",
            "item_id": "rs_1",
            "delta": "raw",
            "content_index": 2,
        },
        {
            "method": "item/reasoning/textDelta",
            "params": ids(itemId="rs_1", delta="raw", contentIndex=2),
        },
    ),
    (
        "agent_reasoning_section_break",
        {"type": "agent_reasoning_section_break", "item_id": "rs_1", "summary_index": 1},
        {"method": "item/reasoning/summaryPartAdded", "params": ids(itemId="rs_1", summaryIndex=1)},
    ),
    (
        "exec_command_output_delta",
        {
            "type": "exec_command_output_delta",
            "call_id": "call-1",
            "stream": "stdout",
            "chunk": "aGVsbG8=",
        },
        {
            "method": "item/commandExecution/outputDelta",
            "params": ids(itemId="call-1", delta="hello"),
        },
    ),
    (
        "terminal_interaction",
        {"type": "terminal_interaction", "call_id": "call-1", "process_id": "42", "stdin": "y\n"},
        {
            "method": "item/commandExecution/terminalInteraction",
            "params": ids(itemId="call-1", processId="42", stdin="y\n"),
        },
    ),
    (
        "patch_apply_updated",
        {
            "type": "patch_apply_updated",
            "call_id": "p1",
            "changes": {
                "/r/b.txt": {"type": "add", "content": "x\n"},
                "/r/a.txt": {"type": "delete", "content": "y\n"},
            },
        },
        {
            "method": "item/fileChange/patchUpdated",
            "params": ids(
                itemId="p1",
                changes=[
                    {"path": "/r/a.txt", "kind": {"type": "delete"}, "diff": "y\n"},
                    {"path": "/r/b.txt", "kind": {"type": "add"}, "diff": "x\n"},
                ],
            ),
        },
    ),
    (
        "item_started",
        {
            "type": "item_started",
            "thread_id": THREAD,
            "turn_id": TURN,
            "item": {
                "type": "AgentMessage",
                "id": "msg_pre_0",
                "content": [],
                "phase": "commentary",
            },
            "started_at_ms": 1796000092914,
        },
        {
            "method": "item/started",
            "params": ids(
                item={
                    "type": "agentMessage",
                    "id": "msg_pre_0",
                    "text": "",
                    "phase": "commentary",
                    "memoryCitation": None,
                    "delivery": None,
                    "questions": None,
                },
                startedAtMs=1796000092914,
            ),
        },
    ),
    (
        "item_completed",
        {
            "type": "item_completed",
            "thread_id": THREAD,
            "turn_id": TURN,
            "item": {
                "type": "CommandExecution",
                "id": "call_shell_1",
                "process_id": "18480",
                "command": ["/bin/bash", "-lc", "echo hello"],
                "cwd": "file:///home/dev/project",
                "parsed_cmd": [{"type": "unknown", "cmd": "echo hello"}],
                "source": "unified_exec_startup",
                "status": "completed",
                "aggregated_output": "hello\n",
                "exit_code": 0,
                "duration": {"secs": 0, "nanos": 18285},
            },
            "started_at_ms": 1796000092983,
            "completed_at_ms": 1796000092984,
        },
        {
            "method": "item/completed",
            "params": ids(
                item=command_item(
                    id="call_shell_1",
                    command="/bin/bash -lc 'echo hello'",
                    cwd="/home/dev/project",
                    processId="18480",
                    source="unifiedExecStartup",
                    status="completed",
                    commandActions=[{"type": "unknown", "command": "echo hello"}],
                    aggregatedOutput="hello\n",
                    exitCode=0,
                    durationMs=0,
                ),
                completedAtMs=1796000092984,
            ),
        },
    ),
    (
        "exec_command_begin",
        {
            "type": "exec_command_begin",
            "call_id": "c1",
            "process_id": "p9",
            "turn_id": "t",
            "command": ["bash", "-lc", "ls -a"],
            "cwd": "/repo",
            "parsed_cmd": [{"type": "list_files", "cmd": "ls -a", "path": None}],
            "source": "agent",
            "started_at_ms": 1000,
        },
        {
            "method": "item/started",
            "params": ids(
                startedAtMs=1000,
                item=command_item(
                    id="c1",
                    command="bash -lc 'ls -a'",
                    cwd="/repo",
                    processId="p9",
                    status="inProgress",
                    commandActions=[{"type": "listFiles", "command": "ls -a", "path": None}],
                ),
            ),
        },
    ),
    (
        "exec_command_end",
        {
            "type": "exec_command_end",
            "call_id": "c1",
            "process_id": "p9",
            "turn_id": "t",
            "completed_at_ms": 2000,
            "command": ["cat", "notes.txt"],
            "cwd": "file:///repo",
            "parsed_cmd": [
                {"type": "read", "cmd": "cat notes.txt", "name": "notes.txt", "path": "notes.txt"}
            ],
            "source": "user_shell",
            "stdout": "ignored",
            "stderr": "",
            "aggregated_output": "",
            "exit_code": 1,
            "duration": {"secs": 1, "nanos": 5_999_999},
            "formatted_output": "ignored",
            "status": "failed",
        },
        {
            "method": "item/completed",
            "params": ids(
                completedAtMs=2000,
                item=command_item(
                    id="c1",
                    command="cat notes.txt",
                    cwd="/repo",
                    processId="p9",
                    source="userShell",
                    status="failed",
                    commandActions=[
                        {
                            "type": "read",
                            "command": "cat notes.txt",
                            "name": "notes.txt",
                            "path": "/repo/notes.txt",
                        }
                    ],
                    exitCode=1,
                    durationMs=1005,
                ),
            ),
        },
    ),
    (
        "mcp_tool_call_begin",
        {
            "type": "mcp_tool_call_begin",
            "call_id": "mcp-1",
            "invocation": {"server": "docs", "tool": "search", "arguments": {"q": "x"}},
            "mcp_app_resource_uri": "ui://widget/list-resources.html",
        },
        {
            "method": "item/started",
            "params": ids(
                startedAtMs=0,
                item=mcp_item(
                    id="mcp-1",
                    status="inProgress",
                    mcpAppResourceUri="ui://widget/list-resources.html",
                ),
            ),
        },
    ),
    (
        "mcp_tool_call_end",
        {
            "type": "mcp_tool_call_end",
            "call_id": "mcp-1",
            "invocation": {"server": "docs", "tool": "search", "arguments": {"q": "x"}},
            "plugin_id": "plugin-7",
            "duration": {"secs": 0, "nanos": 3_500_000},
            "result": {"Ok": {"content": [{"type": "text", "text": "found"}], "isError": False}},
            "completed_at_ms": 5000,
        },
        {
            "method": "item/completed",
            "params": ids(
                completedAtMs=5000,
                item=mcp_item(
                    id="mcp-1",
                    status="completed",
                    pluginId="plugin-7",
                    result={
                        "content": [{"type": "text", "text": "found"}],
                        "structuredContent": None,
                        "_meta": None,
                    },
                    durationMs=3,
                ),
            ),
        },
    ),
    (
        "patch_apply_begin",
        {
            "type": "patch_apply_begin",
            "call_id": "call_patch_1",
            "turn_id": "t",
            "auto_approved": True,
            "changes": {
                "/r/z.txt": {
                    "type": "update",
                    "unified_diff": "@@ -1 +1 @@\n-a\n+b\n",
                    "move_path": "/r/y.txt",
                },
                "/r/hello.txt": {"type": "add", "content": "hello\n"},
            },
        },
        {
            "method": "item/started",
            "params": ids(
                startedAtMs=0,
                item={
                    "type": "fileChange",
                    "id": "call_patch_1",
                    "changes": [
                        {"path": "/r/hello.txt", "kind": {"type": "add"}, "diff": "hello\n"},
                        {
                            "path": "/r/z.txt",
                            "kind": {"type": "update", "move_path": "/r/y.txt"},
                            "diff": "@@ -1 +1 @@\n-a\n+b\n\n\nMoved to: /r/y.txt",
                        },
                    ],
                    "status": "inProgress",
                },
            ),
        },
    ),
    (
        "patch_apply_end",
        {
            "type": "patch_apply_end",
            "call_id": "call_patch_1",
            "turn_id": "t",
            "stdout": "Success.",
            "stderr": "",
            "success": True,
            "changes": {"/r/hello.txt": {"type": "add", "content": "hello\n"}},
            "status": "completed",
            "completed_at_ms": 7000,
        },
        {
            "method": "item/completed",
            "params": ids(
                completedAtMs=7000,
                item={
                    "type": "fileChange",
                    "id": "call_patch_1",
                    "changes": [
                        {"path": "/r/hello.txt", "kind": {"type": "add"}, "diff": "hello\n"}
                    ],
                    "status": "completed",
                },
            ),
        },
    ),
    (
        "dynamic_tool_call_response",
        {
            "type": "dynamic_tool_call_response",
            "call_id": "call_dyn_1",
            "turn_id": "turn-from-payload",
            "completed_at_ms": 9000,
            "namespace": None,
            "tool": "lookup_weather",
            "arguments": {"city": "Paris"},
            "content_items": [
                {"type": "inputText", "text": "Sunny"},
                {"type": "inputImage", "imageUrl": "data:image/png;base64,AA==", "detail": "high"},
            ],
            "success": False,
            "error": "partly",
            "duration": {"secs": 0, "nanos": 2_853_521},
        },
        {
            "method": "item/completed",
            "params": {
                "threadId": THREAD,
                "turnId": "turn-from-payload",
                "completedAtMs": 9000,
                "item": {
                    "type": "dynamicToolCall",
                    "id": "call_dyn_1",
                    "namespace": None,
                    "tool": "lookup_weather",
                    "arguments": {"city": "Paris"},
                    "status": "failed",
                    "contentItems": [
                        {"type": "inputText", "text": "Sunny"},
                        {"type": "inputImage", "imageUrl": "data:image/png;base64,AA=="},
                    ],
                    "success": False,
                    "durationMs": 2,
                },
            },
        },
    ),
    (
        "collab_agent_spawn_begin",
        {
            "type": "collab_agent_spawn_begin",
            "call_id": "spawn-1",
            "started_at_ms": 100,
            "sender_thread_id": SENDER,
            "prompt": "review the diff",
            "model": "gpt-5.4",
            "reasoning_effort": "high",
        },
        {
            "method": "item/started",
            "params": ids(
                startedAtMs=100,
                item=collab_item(
                    id="spawn-1",
                    tool="spawnAgent",
                    status="inProgress",
                    receiverThreadIds=[],
                    prompt="review the diff",
                    model="gpt-5.4",
                    reasoningEffort="high",
                ),
            ),
        },
    ),
    (
        "collab_agent_spawn_end",
        {
            "type": "collab_agent_spawn_end",
            "call_id": "spawn-1",
            "completed_at_ms": 200,
            "sender_thread_id": SENDER,
            "new_thread_id": AGENT_A,
            "prompt": "review the diff",
            "model": "gpt-5.4",
            "reasoning_effort": "high",
            "status": "pending_init",
        },
        {
            "method": "item/completed",
            "params": ids(
                completedAtMs=200,
                item=collab_item(
                    id="spawn-1",
                    tool="spawnAgent",
                    status="completed",
                    receiverThreadIds=[AGENT_A],
                    prompt="review the diff",
                    model="gpt-5.4",
                    reasoningEffort="high",
                    agentsStates={AGENT_A: {"status": "pendingInit", "message": None}},
                ),
            ),
        },
    ),
    (
        "collab_agent_interaction_begin",
        {
            "type": "collab_agent_interaction_begin",
            "call_id": "send-1",
            "started_at_ms": 300,
            "sender_thread_id": SENDER,
            "receiver_thread_id": AGENT_A,
            "prompt": "also check tests",
        },
        {
            "method": "item/started",
            "params": ids(
                startedAtMs=300,
                item=collab_item(
                    id="send-1",
                    tool="sendInput",
                    status="inProgress",
                    receiverThreadIds=[AGENT_A],
                    prompt="also check tests",
                ),
            ),
        },
    ),
    (
        "collab_agent_interaction_end",
        {
            "type": "collab_agent_interaction_end",
            "call_id": "send-1",
            "completed_at_ms": 400,
            "sender_thread_id": SENDER,
            "receiver_thread_id": AGENT_A,
            "prompt": "also check tests",
            "status": {"errored": "model overloaded"},
        },
        {
            "method": "item/completed",
            "params": ids(
                completedAtMs=400,
                item=collab_item(
                    id="send-1",
                    tool="sendInput",
                    status="failed",
                    receiverThreadIds=[AGENT_A],
                    prompt="also check tests",
                    agentsStates={AGENT_A: {"status": "errored", "message": "model overloaded"}},
                ),
            ),
        },
    ),
    (
        "collab_waiting_begin",
        {
            "type": "collab_waiting_begin",
            "started_at_ms": 500,
            "sender_thread_id": SENDER,
            "receiver_thread_ids": [AGENT_B, AGENT_A],
            "call_id": "wait-1",
        },
        {
            "method": "item/started",
            "params": ids(
                startedAtMs=500,
                item=collab_item(
                    id="wait-1",
                    tool="wait",
                    status="inProgress",
                    receiverThreadIds=[AGENT_B, AGENT_A],
                ),
            ),
        },
    ),
    (
        "collab_waiting_end",
        {
            "type": "collab_waiting_end",
            "sender_thread_id": SENDER,
            "call_id": "wait-1",
            "completed_at_ms": 600,
            "statuses": {AGENT_B: {"completed": "done"}, AGENT_A: "not_found"},
        },
        {
            "method": "item/completed",
            "params": ids(
                completedAtMs=600,
                item=collab_item(
                    id="wait-1",
                    tool="wait",
                    status="failed",
                    receiverThreadIds=[AGENT_A, AGENT_B],
                    agentsStates={
                        AGENT_A: {"status": "notFound", "message": None},
                        AGENT_B: {"status": "completed", "message": "done"},
                    },
                ),
            ),
        },
    ),
    (
        "collab_close_begin",
        {
            "type": "collab_close_begin",
            "call_id": "close-1",
            "started_at_ms": 700,
            "sender_thread_id": SENDER,
            "receiver_thread_id": AGENT_A,
        },
        {
            "method": "item/started",
            "params": ids(
                startedAtMs=700,
                item=collab_item(
                    id="close-1",
                    tool="closeAgent",
                    status="inProgress",
                    receiverThreadIds=[AGENT_A],
                ),
            ),
        },
    ),
    (
        "collab_close_end",
        {
            "type": "collab_close_end",
            "call_id": "close-1",
            "completed_at_ms": 800,
            "sender_thread_id": SENDER,
            "receiver_thread_id": AGENT_A,
            "status": "shutdown",
        },
        {
            "method": "item/completed",
            "params": ids(
                completedAtMs=800,
                item=collab_item(
                    id="close-1",
                    tool="closeAgent",
                    status="completed",
                    receiverThreadIds=[AGENT_A],
                    agentsStates={AGENT_A: {"status": "shutdown", "message": None}},
                ),
            ),
        },
    ),
    (
        "collab_resume_begin",
        {
            "type": "collab_resume_begin",
            "call_id": "resume-1",
            "started_at_ms": 900,
            "sender_thread_id": SENDER,
            "receiver_thread_id": AGENT_A,
        },
        {
            "method": "item/started",
            "params": ids(
                startedAtMs=900,
                item=collab_item(
                    id="resume-1",
                    tool="resumeAgent",
                    status="inProgress",
                    receiverThreadIds=[AGENT_A],
                ),
            ),
        },
    ),
    (
        "collab_resume_end",
        {
            "type": "collab_resume_end",
            "call_id": "resume-1",
            "completed_at_ms": 1000,
            "sender_thread_id": SENDER,
            "receiver_thread_id": AGENT_A,
            "status": "running",
        },
        {
            "method": "item/completed",
            "params": ids(
                completedAtMs=1000,
                item=collab_item(
                    id="resume-1",
                    tool="resumeAgent",
                    status="completed",
                    receiverThreadIds=[AGENT_A],
                    agentsStates={AGENT_A: {"status": "running", "message": None}},
                ),
            ),
        },
    ),
    (
        "sub_agent_activity",
        {
            "type": "sub_agent_activity",
            "event_id": "activity-1",
            "occurred_at_ms": 456,
            "agent_thread_id": AGENT_A,
            "agent_path": "/root/worker",
            "kind": "interacted",
        },
        {
            "method": "item/completed",
            "params": ids(
                completedAtMs=456,
                item={
                    "type": "subAgentActivity",
                    "id": "activity-1",
                    "kind": "interacted",
                    "agentThreadId": AGENT_A,
                    "agentPath": "/root/worker",
                    "model": None,
                    "reasoningEffort": None,
                },
            ),
        },
    ),
]


def test_the_table_has_one_row_per_mapper_arm() -> None:
    # the 27 arms spec §2 lists by name (its total says 30), plus the older generation's
    # patch_apply_end
    assert len({name for name, _, _ in ROWS}) == len(ROWS) == 28


@pytest.mark.parametrize(
    ("payload", "expected"), [(p, e) for _, p, e in ROWS], ids=[n for n, _, _ in ROWS]
)
def test_event_becomes_the_whole_notification(payload: Json, expected: Json) -> None:
    msg = EVENT_MSG_ADAPTER.validate_python(payload)
    notification = item_event_to_server_notification(msg, THREAD, TURN)
    assert notification is not None
    written = dump_dict(notification)
    assert written == expected
    assert "emittedAtMs" not in written  # the sender stamps it
    assert schema_errors(written) == []
