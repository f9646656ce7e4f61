"""Core ``EventMsg`` and the ``{id, msg}`` envelope: every variant parses into its model and is
written back as the same JSON; unknown events survive; bad input gives a pydantic error.

Examples come from spec/event-mapping.md (sections 3.1, 3.3 and 7, the 0.163.0-confirmed shapes
written out in full where the spec shortens them) and, for the variants no capture contains,
from the payload shapes the 0.163.0 binary and the upstream sources describe.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError

from codex_app_bridge.protocol.core import (
    EVENT_ENVELOPE_ADAPTER,
    EVENT_MSG_ADAPTER,
    EVENT_MSG_TAGS,
    TURN_ITEM_ADAPTER,
    AgentMessageContentDeltaEvent,
    AgentReasoningSectionBreakEvent,
    AgentStatusCompleted,
    AgentStatusErrored,
    CollabWaitingEndEvent,
    Duration,
    DynamicToolCallItem,
    DynamicToolCallRequestEvent,
    EventEnvelope,
    ExecCommandBeginEvent,
    ExecCommandOutputDeltaEvent,
    FileChangeAdd,
    FileChangeDelete,
    FileChangeUpdate,
    ItemCompletedEvent,
    McpToolCallEndEvent,
    PatchApplyUpdatedEvent,
    PlanDeltaEvent,
    ReasoningContentDeltaEvent,
    ReasoningRawContentDeltaEvent,
    TaskCompleteEvent,
    TaskStartedEvent,
    TerminalInteractionEvent,
    ThreadSettingsAppliedEvent,
    TokenCountEvent,
    TurnAbortedEvent,
    UnknownEventMsg,
    UnknownFileChange,
    agent_status_kind,
    agent_status_message,
    core_json_schemas,
    dump_event_envelope,
    dump_event_msg,
    dump_trusted_envelope,
    parse_event_envelope,
    parse_event_msg,
    parse_trusted_envelope,
)
from codex_app_bridge.protocol.core._turn_item import I64_MAX


def _roundtrip(payload: dict[str, Any]) -> Any:
    return json.loads(dump_event_msg(parse_event_msg(json.dumps(payload))))


USAGE = {
    "input_tokens": 100,
    "cached_input_tokens": 0,
    "cache_write_input_tokens": 0,
    "output_tokens": 20,
    "reasoning_output_tokens": 0,
    "total_tokens": 120,
}
RATE_LIMITS = {
    "limit_id": "codex",
    "limit_name": None,
    "primary": None,
    "secondary": None,
    "credits": None,
    "individual_limit": None,
    "spend_control_reached": None,
    "plan_type": None,
    "rate_limit_reached_type": None,
}

# (name, payload, model) - spec/event-mapping.md sections 3.1, 3.3 and 7.
SPEC_EXAMPLES: list[tuple[str, dict[str, Any], type[BaseModel]]] = [
    (
        "3.1 agent_message_content_delta",
        {
            "type": "agent_message_content_delta",
            "thread_id": "T",
            "turn_id": "u",
            "item_id": "msg_1",
            "delta": "Hel",
        },
        AgentMessageContentDeltaEvent,
    ),
    (
        "3.1 plan_delta",
        {
            "type": "plan_delta",
            "thread_id": "T",
            "turn_id": "u",
            "item_id": "plan_1",
            "delta": "- step",
        },
        PlanDeltaEvent,
    ),
    (
        "3.1 reasoning_content_delta",
        {
            "type": "reasoning_content_delta",
            "thread_id": "T",
            "turn_id": "u",
            "item_id": "rs_1",
            "delta": "Think",
            "summary_index": 0,
        },
        ReasoningContentDeltaEvent,
    ),
    (
        "3.1 reasoning_raw_content_delta",
        {
            "type": "reasoning_raw_content_delta",
            "thread_id": "T",
            "turn_id": "u",
            "item_id": "rs_1",
            "delta": "raw",
            "content_index": 2,
        },
        ReasoningRawContentDeltaEvent,
    ),
    (
        "3.1 agent_reasoning_section_break",
        {"type": "agent_reasoning_section_break", "item_id": "rs_1", "summary_index": 1},
        AgentReasoningSectionBreakEvent,
    ),
    (
        "3.1 exec_command_output_delta",
        {
            "type": "exec_command_output_delta",
            "call_id": "call-1",
            "stream": "stdout",
            "chunk": "aGVsbG8=",
        },
        ExecCommandOutputDeltaEvent,
    ),
    (
        "3.1 terminal_interaction",
        {"type": "terminal_interaction", "call_id": "call-1", "process_id": "42", "stdin": "y\n"},
        TerminalInteractionEvent,
    ),
    (
        "3.1 patch_apply_updated",
        {
            "type": "patch_apply_updated",
            "call_id": "p1",
            "changes": {
                "/r/b.txt": {"type": "add", "content": "x\n"},
                "/r/a.txt": {"type": "delete", "content": "y\n"},
            },
        },
        PatchApplyUpdatedEvent,
    ),
    (
        "3.3 exec_command_begin",
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
        ExecCommandBeginEvent,
    ),
    (
        "7 task_started",
        {
            "type": "task_started",
            "turn_attribution": {
                "turn_id": "U",
                "turn_trigger": None,
                "parent_turn_id": None,
                "initiating_agent_path": None,
                "root_turn_id": "U",
            },
            "turn_id": "U",
            "root_turn_id": "U",
            "started_at": 1796000092,
            "model_context_window": 258400,
            "collaboration_mode_kind": "default",
        },
        TaskStartedEvent,
    ),
    (
        "7 task_complete success",
        {
            "type": "task_complete",
            "root_turn_id": "U",
            "turn_id": "U",
            "last_agent_message": "The command printed hello.",
            "started_at": 1796000092,
            "completed_at": 1796000093,
            "duration_ms": 154,
            "time_to_first_token_ms": 47,
        },
        TaskCompleteEvent,
    ),
    (
        "7 task_complete failed",
        {
            "type": "task_complete",
            "root_turn_id": "U",
            "turn_id": "U",
            "last_agent_message": None,
            "error": {
                "message": "mock: the prompt was rejected",
                "codex_error_info": "invalid_prompt",
            },
            "started_at": 1796000101,
            "completed_at": 1796000101,
            "duration_ms": 64,
            "time_to_first_token_ms": 49,
        },
        TaskCompleteEvent,
    ),
    (
        "7 turn_aborted",
        {
            "type": "turn_aborted",
            "root_turn_id": "U",
            "turn_id": "U",
            "reason": "interrupted",
            "started_at": 1796000102,
            "completed_at": 1796000102,
            "duration_ms": 548,
        },
        TurnAbortedEvent,
    ),
    (
        "7 token_count",
        {
            "type": "token_count",
            "info": {
                "total_token_usage": USAGE,
                "last_token_usage": USAGE,
                "model_context_window": 258400,
            },
            "rate_limits": RATE_LIMITS,
        },
        TokenCountEvent,
    ),
    (
        "7 token_count without info",
        {"type": "token_count", "info": None, "rate_limits": RATE_LIMITS},
        TokenCountEvent,
    ),
    (
        "7 thread_settings_applied",
        {
            "type": "thread_settings_applied",
            "thread_id": "T",
            "thread_settings": {
                "model": "mock-model",
                "model_provider_id": "mock",
                "approval_policy": "never",
                "approvals_reviewer": "user",
                "permission_profile": {"type": "disabled"},
                "cwd": "/home/dev/project",
                "runtime_workspace_roots": ["/home/dev/project"],
                "reasoning_summary": "detailed",
                "collaboration_mode": {
                    "mode": "default",
                    "settings": {
                        "model": "mock-model",
                        "reasoning_effort": None,
                        "developer_instructions": None,
                    },
                },
                "disabled_plugin_ids": [],
            },
        },
        ThreadSettingsAppliedEvent,
    ),
    (
        "7 item_completed CommandExecution",
        {
            "type": "item_completed",
            "thread_id": "T",
            "turn_id": "U",
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
        ItemCompletedEvent,
    ),
    (
        "7 item_completed AgentMessage",
        {
            "type": "item_completed",
            "thread_id": "T",
            "turn_id": "U",
            "item": {
                "type": "AgentMessage",
                "id": "msg_pre_0",
                "content": [{"type": "Text", "text": "I'll run a command."}],
                "phase": "commentary",
            },
            "started_at_ms": 1796000092914,
            "completed_at_ms": 1796000092914,
        },
        ItemCompletedEvent,
    ),
]


@pytest.mark.parametrize(
    ("payload", "model"),
    [(payload, model) for _, payload, model in SPEC_EXAMPLES],
    ids=[name for name, _, _ in SPEC_EXAMPLES],
)
def test_spec_event_example_parses_into_its_model_and_round_trips(
    payload: dict[str, Any], model: type[BaseModel]
) -> None:
    assert type(parse_event_msg(json.dumps(payload))) is model
    assert _roundtrip(payload) == payload


# One example for every variant: the shape the 0.163.0 binary writes, as far as its field
# lists and the upstream sources tell (optional fields left out where they are omitted).
AGENT_REF = {"thread_id": "A", "agent_nickname": "ada"}
VARIANT_EXAMPLES: list[dict[str, Any]] = [
    {"type": "error", "message": "boom", "codex_error_info": "internal_server_error"},
    {"type": "error", "message": "boom", "codex_error_info": None},
    {"type": "warning", "message": "careful"},
    {"type": "guardian_warning", "message": "reviewer says no"},
    {"type": "realtime_conversation_started", "realtime_session_id": None, "version": "v2"},
    {"type": "realtime_conversation_realtime", "payload": {"ResponseDone": {"response_id": None}}},
    {"type": "realtime_conversation_closed"},
    {"type": "realtime_conversation_closed", "reason": "user"},
    {"type": "realtime_conversation_sdp", "sdp": "v=0"},
    {
        "type": "model_reroute",
        "from_model": "a",
        "to_model": "b",
        "reason": "high_risk_cyber_activity",
    },
    {"type": "model_verification", "verifications": ["trusted_access_for_cyber"]},
    {"type": "turn_moderation_metadata", "metadata": {"flag": True}},
    {
        "type": "safety_buffering",
        "model": "m",
        "use_cases": ["u"],
        "reasons": ["r"],
        "show_buffering_ui": True,
        "faster_model": None,
    },
    {"type": "context_compacted"},
    {
        "type": "compacted",
        "message": "summary",
        "replacement_history": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "s"}]}
        ],
    },
    {"type": "compacted", "message": ""},
    {
        "type": "token_usage_record",
        "thread_id": "T",
        "turn_id": "U",
        "session_id": "T",
        "root_turn_id": "U",
        "response_id": "resp_1",
        "usage": USAGE,
        "turn_token_usage": USAGE,
        "thread_token_usage": USAGE,
    },
    {"type": "world_state", "full": True, "state": {"model": "m", "realtime": {"active": False}}},
    {"type": "thread_rolled_back", "num_turns": 2},
    {
        "type": "task_started",
        "turn_id": "U",
        "model_context_window": None,
        "collaboration_mode_kind": "default",
    },
    {"type": "task_complete", "turn_id": "U", "last_agent_message": None},
    {"type": "agent_message", "message": "hi", "phase": None, "memory_citation": None},
    {
        "type": "user_message",
        "message": "hi",
        "local_images": [],
        "text_elements": [],
        "image_details": [],
    },
    {"type": "agent_reasoning", "text": "thinking"},
    {"type": "agent_reasoning_raw_content", "text": "raw"},
    {
        "type": "session_configured",
        "session_id": "S",
        "thread_id": "S",
        "model": "m",
        "model_provider_id": "openai",
        "approval_policy": "never",
        "approvals_reviewer": "user",
        "permission_profile": {"type": "disabled"},
        "cwd": "/w",
    },
    {"type": "environment_connected", "environment_id": "local"},
    {"type": "environment_disconnected", "environment_id": "local"},
    {
        "type": "thread_goal_updated",
        "threadId": "T",
        "turnId": "U",
        "goal": {
            "threadId": "T",
            "objective": "ship",
            "status": "active",
            "tokensUsed": 1,
            "timeUsedSeconds": 2,
            "createdAt": 3,
            "updatedAt": 4,
        },
    },
    {"type": "thread_queue_changed", "thread_id": "T"},
    {"type": "mcp_startup_update", "server": "docs", "status": {"state": "starting"}},
    {"type": "mcp_startup_update", "server": "docs", "status": {"state": "failed", "error": "x"}},
    {
        "type": "mcp_startup_complete",
        "ready": ["docs"],
        "failed": [{"server": "s", "error": "e"}],
        "cancelled": [],
    },
    {
        "type": "mcp_tool_call_begin",
        "call_id": "m1",
        "invocation": {"server": "s", "tool": "t", "arguments": None},
    },
    {
        "type": "mcp_tool_call_end",
        "call_id": "m1",
        "invocation": {"server": "s", "tool": "t", "arguments": {"q": 1}},
        "duration": {"secs": 0, "nanos": 92708},
        "result": {"Ok": {"content": [], "structuredContent": None}},
    },
    {"type": "web_search_begin", "call_id": "ws_1"},
    {
        "type": "web_search_end",
        "call_id": "ws_1",
        "query": "q",
        "action": {"type": "search", "query": "q"},
    },
    {"type": "image_generation_begin", "call_id": "ig"},
    {"type": "image_generation_end", "call_id": "ig", "status": "completed", "result": "Zm9v"},
    {"type": "exec_command_output_delta", "call_id": "c", "stream": "stderr", "chunk": ""},
    {"type": "terminal_interaction", "call_id": "c", "process_id": "1", "stdin": ""},
    {
        "type": "exec_command_end",
        "call_id": "c1",
        "turn_id": "t",
        "completed_at_ms": 5,
        "command": ["true"],
        "cwd": "/repo",
        "parsed_cmd": [],
        "source": "agent",
        "stdout": "",
        "stderr": "",
        "aggregated_output": "",
        "exit_code": 0,
        "duration": {"secs": 1, "nanos": 0},
        "formatted_output": "",
        "status": "completed",
    },
    {"type": "view_image_tool_call", "call_id": "v", "path": "/tmp/a.png"},
    {
        "type": "exec_approval_request",
        "call_id": "c1",
        "turn_id": "t",
        "started_at_ms": 9,
        "command": ["touch", "x"],
        "cwd": "/repo",
        "proposed_execpolicy_amendment": ["touch", "x"],
        "parsed_cmd": [{"type": "unknown", "cmd": "touch x"}],
    },
    {
        "type": "request_permissions",
        "call_id": "p",
        "turn_id": "t",
        "permissions": {"network": None, "file_system": None},
        "suggested_scope": "turn",
    },
    {
        "type": "request_user_input",
        "call_id": "q",
        "turn_id": "t",
        "questions": [
            {"id": "a", "header": "H", "question": "Q?", "isOther": False, "isSecret": False}
        ],
    },
    {
        "type": "dynamic_tool_call_request",
        "callId": "d1",
        "turnId": "t",
        "startedAtMs": 3,
        "tool": "lookup_weather",
        "arguments": {"city": "Paris"},
    },
    {
        "type": "dynamic_tool_call_response",
        "call_id": "d1",
        "turn_id": "t",
        "completed_at_ms": 4,
        "namespace": None,
        "tool": "lookup_weather",
        "arguments": {"city": "Paris"},
        "content_items": [{"type": "inputText", "text": "Sunny"}],
        "success": True,
        "error": None,
        "duration": {"secs": 0, "nanos": 2853521},
    },
    {
        "type": "elicitation_request",
        "turn_id": "t",
        "server_name": "s",
        "id": 7,
        "request": {"mode": "url", "message": "m", "url": "https://x", "elicitation_id": "e"},
    },
    {"type": "elicitation_abandoned", "server_name": "s", "id": "7"},
    {
        "type": "apply_patch_approval_request",
        "call_id": "p1",
        "turn_id": "t",
        "started_at_ms": 1,
        "changes": {"/r/a.txt": {"type": "update", "unified_diff": "@@", "move_path": None}},
    },
    {
        "type": "guardian_assessment",
        "id": "g1",
        "target_item_id": "c1",
        "turn_id": "t",
        "started_at_ms": 1,
        "status": "in_progress",
        "action": {"type": "command", "source": "shell", "command": "rm -rf /tmp/x", "cwd": "/tmp"},
    },
    {"type": "deprecation_notice", "summary": "old"},
    {"type": "deprecation_notice", "summary": "old", "details": "use new"},
    {
        "type": "stream_error",
        "message": "Reconnecting... 1/1",
        "codex_error_info": {"response_stream_disconnected": {"http_status_code": None}},
        "additional_details": None,
    },
    {
        "type": "patch_apply_begin",
        "call_id": "p1",
        "turn_id": "t",
        "auto_approved": True,
        "changes": {"/r/a.txt": {"type": "add", "content": "a"}},
    },
    {
        "type": "patch_apply_end",
        "call_id": "p1",
        "turn_id": "t",
        "stdout": "ok",
        "stderr": "",
        "success": True,
        "changes": {},
        "status": "completed",
    },
    {"type": "turn_diff", "unified_diff": "diff --git a/x b/x"},
    {"type": "realtime_conversation_list_voices_response", "voices": {"v1": [], "v2": []}},
    {
        "type": "plan_update",
        "explanation": None,
        "plan": [{"step": "one", "status": "in_progress"}],
    },
    {"type": "turn_aborted", "turn_id": None, "reason": "replaced"},
    {"type": "shutdown_complete"},
    {"type": "entered_review_mode", "target": {"type": "uncommittedChanges"}},
    {"type": "exited_review_mode", "review_output": None},
    {
        "type": "raw_response_item",
        "item": {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "hi"}],
        },
    },
    {"type": "raw_response_completed", "response_id": "resp_1"},
    {
        "type": "item_started",
        "thread_id": "T",
        "turn_id": "U",
        "item": {"type": "Reasoning", "id": "rs_0", "summary_text": [], "raw_content": []},
        "started_at_ms": 1,
    },
    {
        "type": "hook_started",
        "turn_id": None,
        "run": {
            "id": "h",
            "event_name": "stop",
            "handler_type": "command",
            "execution_mode": "sync",
            "scope": "turn",
            "source_path": "/h",
            "source": "user",
            "display_order": 0,
            "status": "running",
            "status_message": None,
            "started_at": 1,
            "completed_at": None,
            "duration_ms": None,
            "entries": [],
        },
    },
    {
        "type": "hook_completed",
        "turn_id": "U",
        "run": {
            "id": "h",
            "event_name": "stop",
            "handler_type": "command",
            "execution_mode": "sync",
            "scope": "turn",
            "source_path": "/h",
            "source": "user",
            "display_order": 0,
            "status": "completed",
            "status_message": None,
            "started_at": 1,
            "completed_at": 2,
            "duration_ms": 1000,
            "entries": [{"kind": "feedback", "text": "ok"}],
        },
    },
    {
        "type": "collab_agent_spawn_begin",
        "call_id": "c",
        "started_at_ms": 1,
        "sender_thread_id": "S",
        "prompt": "p",
        "model": "m",
        "reasoning_effort": "high",
    },
    {
        "type": "collab_agent_spawn_end",
        "call_id": "c",
        "completed_at_ms": 2,
        "sender_thread_id": "S",
        "new_thread_id": "N",
        "new_agent_nickname": "ada",
        "prompt": "p",
        "model": "m",
        "reasoning_effort": "high",
        "status": "pending_init",
    },
    {
        "type": "collab_agent_interaction_begin",
        "call_id": "c",
        "started_at_ms": 1,
        "sender_thread_id": "S",
        "receiver_thread_id": "R",
        "prompt": "p",
    },
    {
        "type": "collab_agent_interaction_end",
        "call_id": "c",
        "completed_at_ms": 2,
        "sender_thread_id": "S",
        "receiver_thread_id": "R",
        "prompt": "p",
        "status": {"errored": "bad"},
    },
    {
        "type": "collab_waiting_begin",
        "started_at_ms": 1,
        "sender_thread_id": "S",
        "receiver_thread_ids": ["A"],
        "receiver_agents": [AGENT_REF],
        "call_id": "w",
    },
    {
        "type": "collab_waiting_end",
        "sender_thread_id": "S",
        "call_id": "w",
        "completed_at_ms": 456,
        "agent_statuses": [AGENT_REF | {"status": "running"}],
        "statuses": {"B": {"completed": None}, "A": "running"},
    },
    {
        "type": "collab_close_begin",
        "call_id": "c",
        "started_at_ms": 1,
        "sender_thread_id": "S",
        "receiver_thread_id": "R",
    },
    {
        "type": "collab_close_end",
        "call_id": "c",
        "completed_at_ms": 2,
        "sender_thread_id": "S",
        "receiver_thread_id": "R",
        "status": "shutdown",
    },
    {
        "type": "collab_resume_begin",
        "call_id": "call-1",
        "started_at_ms": 123,
        "sender_thread_id": "S",
        "receiver_thread_id": "R",
    },
    {
        "type": "collab_resume_end",
        "call_id": "call-2",
        "completed_at_ms": 456,
        "sender_thread_id": "S",
        "receiver_thread_id": "R",
        "status": "not_found",
    },
    {
        "type": "sub_agent_activity",
        "event_id": "activity-1",
        "occurred_at_ms": 456,
        "agent_thread_id": "A",
        "agent_path": "/root/worker",
        "kind": "started",
        "model": "gpt-5.4",
        "reasoning_effort": "high",
    },
    {"type": "auth_recovery_started", "provider": "openai", "message": "refreshing"},
    {"type": "auth_recovery_completed", "provider": "openai", "message": "done"},
    {"type": "thread_name_updated", "thread_id": "T", "thread_name": "renamed"},
]


@pytest.mark.parametrize(
    "payload", VARIANT_EXAMPLES, ids=[f"{i}-{p['type']}" for i, p in enumerate(VARIANT_EXAMPLES)]
)
def test_variant_example_parses_into_a_known_model_and_round_trips(payload: dict[str, Any]) -> None:
    parsed = parse_event_msg(json.dumps(payload))
    assert not isinstance(parsed, UnknownEventMsg)
    assert _roundtrip(payload) == payload


# The variant names the 0.163.0 binary carries for EventMsg (read from the binary's strings).
BINARY_VARIANTS = [
    "error",
    "warning",
    "guardian_warning",
    "realtime_conversation_started",
    "realtime_conversation_realtime",
    "realtime_conversation_closed",
    "realtime_conversation_sdp",
    "model_reroute",
    "model_verification",
    "turn_moderation_metadata",
    "safety_buffering",
    "context_compacted",
    "thread_rolled_back",
    "task_started",
    "thread_settings_applied",
    "task_complete",
    "token_count",
    "agent_message",
    "user_message",
    "agent_reasoning",
    "agent_reasoning_raw_content",
    "agent_reasoning_section_break",
    "session_configured",
    "environment_connected",
    "environment_disconnected",
    "thread_goal_updated",
    "thread_queue_changed",
    "mcp_startup_update",
    "mcp_startup_complete",
    "mcp_tool_call_begin",
    "mcp_tool_call_end",
    "web_search_begin",
    "web_search_end",
    "image_generation_begin",
    "image_generation_end",
    "exec_command_begin",
    "exec_command_output_delta",
    "terminal_interaction",
    "exec_command_end",
    "view_image_tool_call",
    "exec_approval_request",
    "request_permissions",
    "request_user_input",
    "dynamic_tool_call_request",
    "dynamic_tool_call_response",
    "elicitation_request",
    "elicitation_abandoned",
    "apply_patch_approval_request",
    "guardian_assessment",
    "deprecation_notice",
    "stream_error",
    "patch_apply_begin",
    "patch_apply_updated",
    "patch_apply_end",
    "turn_diff",
    "realtime_conversation_list_voices_response",
    "plan_update",
    "turn_aborted",
    "shutdown_complete",
    "entered_review_mode",
    "exited_review_mode",
    "raw_response_item",
    "raw_response_completed",
    "item_started",
    "item_completed",
    "hook_started",
    "hook_completed",
    "agent_message_content_delta",
    "plan_delta",
    "reasoning_content_delta",
    "reasoning_raw_content_delta",
    "collab_agent_spawn_begin",
    "collab_agent_spawn_end",
    "collab_agent_interaction_begin",
    "collab_agent_interaction_end",
    "collab_waiting_begin",
    "collab_waiting_end",
    "collab_close_begin",
    "collab_close_end",
    "collab_resume_begin",
    "collab_resume_end",
    "sub_agent_activity",
    "auth_recovery_started",
    "auth_recovery_completed",
]


def test_every_variant_the_binary_names_is_a_known_event_type() -> None:
    known = set(EVENT_MSG_TAGS)
    assert set(BINARY_VARIANTS) <= known
    # Besides the binary's names: the two v2-interop input aliases, one older event and the
    # bridge's own records of what core writes straight to its rollout (``compacted``,
    # ``token_usage_record``, ``world_state``: rollout lines in core).
    assert known - set(BINARY_VARIANTS) == {
        "turn_started",
        "turn_complete",
        "thread_name_updated",
        "compacted",
        "token_usage_record",
        "world_state",
    }


ALL_EXAMPLES = [payload for _, payload, _ in SPEC_EXAMPLES] + VARIANT_EXAMPLES


def test_every_known_event_type_has_a_round_trip_example() -> None:
    covered = {payload["type"] for payload in ALL_EXAMPLES}
    assert covered == set(EVENT_MSG_TAGS) - {"turn_started", "turn_complete"}


@pytest.mark.parametrize(
    ("alias", "model"), [("turn_started", TaskStartedEvent), ("turn_complete", TaskCompleteEvent)]
)
def test_v2_interop_alias_parses_into_the_task_model_and_keeps_its_tag(
    alias: str, model: type[BaseModel]
) -> None:
    payload = {"type": alias, "turn_id": "U"}
    parsed = parse_event_msg(json.dumps(payload))
    assert type(parsed) is model
    assert _roundtrip(payload)["type"] == alias


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "brand_new_event"},
        {"type": "brand_new_event", "nested": {"a": None, "b": [1, 2.5, "x"]}, "flag": False},
        {"type": "agent_message_delta", "delta": "older Codex versions"},
    ],
    ids=["bare", "nested", "removed-legacy-event"],
)
def test_unknown_event_type_survives_unchanged(payload: dict[str, Any]) -> None:
    parsed = parse_event_msg(json.dumps(payload))
    assert isinstance(parsed, UnknownEventMsg)
    assert parsed.type == payload["type"]
    assert _roundtrip(payload) == payload


def test_unknown_fields_of_a_known_event_survive_unchanged() -> None:
    payload = {"type": "turn_diff", "unified_diff": "d", "added_later": {"x": None}}
    assert _roundtrip(payload) == payload


def test_fields_the_binary_omits_when_empty_are_left_out_of_a_built_event() -> None:
    event = TaskStartedEvent(turn_id="U")
    assert json.loads(dump_event_msg(event)) == {
        "type": "task_started",
        "turn_id": "U",
        "model_context_window": None,
        "collaboration_mode_kind": "default",
    }


@pytest.mark.parametrize(
    ("payload", "location"),
    [
        (
            {"type": "exec_command_output_delta", "call_id": 1, "stream": "stdout", "chunk": ""},
            ("exec_command_output_delta", "call_id"),
        ),
        ({"type": "task_started"}, ("task_started", "turn_id")),
        ({"type": "turn_started"}, ("task_started", "turn_id")),
        ({"type": "item_completed", "thread_id": "T", "turn_id": "U"}, ("item_completed", "item")),
        (
            {"type": "patch_apply_updated", "call_id": "p", "changes": {"/a": {"content": "x"}}},
            ("patch_apply_updated", "changes", "/a"),
        ),
    ],
    ids=[
        "wrong-type",
        "missing-field",
        "missing-field-via-alias",
        "missing-item",
        "file-change-without-kind",
    ],
)
def test_malformed_known_event_gives_a_validation_error_at_the_bad_field(
    payload: dict[str, Any], location: tuple[str, ...]
) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_event_msg(json.dumps(payload))
    assert location in {tuple(error["loc"])[: len(location)] for error in caught.value.errors()}


@pytest.mark.parametrize("raw", ['{"delta": "x"}', '{"type": 3}', '"task_started"', "[]", "{"])
def test_event_without_a_string_type_is_rejected_with_a_validation_error(raw: str) -> None:
    with pytest.raises(ValidationError):
        EVENT_MSG_ADAPTER.validate_json(raw)


def test_event_without_a_type_names_the_eventmsg_contract() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_event_msg('{"delta": "x"}')
    assert caught.value.title == "EventMsg"
    assert caught.value.errors()[0]["type"] == "missing_tag"


# --- the envelope ---------------------------------------------------------------------------


def test_envelope_parses_its_id_and_typed_msg_and_round_trips() -> None:
    raw = {
        "id": "turn-1",
        "msg": {
            "type": "agent_message_content_delta",
            "thread_id": "T",
            "turn_id": "u",
            "item_id": "msg_1",
            "delta": "Hel",
        },
    }
    envelope = parse_event_envelope(json.dumps(raw))
    assert envelope.id == "turn-1"
    assert isinstance(envelope.msg, AgentMessageContentDeltaEvent)
    assert envelope.msg.delta == "Hel"
    assert json.loads(dump_event_envelope(envelope)) == raw


def test_envelope_with_an_unknown_msg_type_survives_unchanged() -> None:
    raw = {"id": "s1", "msg": {"type": "not_yet_invented", "x": 1}, "trace": {"span": "a"}}
    envelope = EVENT_ENVELOPE_ADAPTER.validate_json(json.dumps(raw))
    assert isinstance(envelope.msg, UnknownEventMsg)
    assert json.loads(dump_event_envelope(envelope)) == raw


def test_envelope_error_points_into_the_msg() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_event_envelope('{"id": "x", "msg": {"type": "turn_diff"}}')
    assert caught.value.errors()[0]["loc"] == ("msg", "turn_diff", "unified_diff")


def test_envelope_built_in_python_dumps_like_the_wire() -> None:
    envelope = EventEnvelope(id="t", msg=TaskStartedEvent(turn_id="t", started_at=5))
    assert json.loads(dump_event_envelope(envelope)) == {
        "id": "t",
        "msg": {
            "type": "task_started",
            "turn_id": "t",
            "started_at": 5,
            "model_context_window": None,
            "collaboration_mode_kind": "default",
        },
    }


@pytest.mark.parametrize(
    "raw",
    [{"id": "turn-1", "msg": payload} for payload in ALL_EXAMPLES]
    + [
        {"id": "s1", "msg": {"type": "not_yet_invented", "x": [1, {"y": None}]}},
        {"id": "s1", "msg": {"type": "task_started", "turn_id": "t"}, "trace": {"span": "a"}},
    ],
    ids=lambda raw: str(raw["msg"]["type"]),
)
def test_a_trusted_envelope_is_written_and_read_as_the_adapter_does(raw: dict[str, Any]) -> None:
    """``dump_trusted_envelope`` / ``parse_trusted_envelope`` (a thread's history log) go
    through each event's own model instead of the union of them all: the same bytes, the same
    models, for every event kind, an unknown one and an envelope with a field of its own."""
    envelope = parse_event_envelope(json.dumps(raw))
    written = dump_trusted_envelope(envelope)
    assert written == dump_event_envelope(envelope)
    read = parse_trusted_envelope(written)
    assert type(read.msg) is type(envelope.msg)
    assert read == envelope
    assert dump_event_envelope(read) == written


# --- special forms ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("duration", "whole_ms"),
    [
        ({"secs": 0, "nanos": 18285}, 0),  # shell capture
        ({"secs": 0, "nanos": 2853521}, 2),  # dynamic_tool capture
        ({"secs": 0, "nanos": 92708}, 0),  # upstream MCP test: 92,708 ns -> 0
        ({"secs": 1, "nanos": 999_999_999}, 1999),
        ({"secs": 0, "nanos": 1_000_000}, 1),
    ],
)
def test_duration_whole_ms_truncates_sub_millisecond_nanos(
    duration: dict[str, int], whole_ms: int
) -> None:
    parsed = Duration.model_validate(duration)
    assert parsed.whole_ms() == whole_ms
    assert parsed.whole_ms_saturating() == whole_ms


def test_duration_beyond_i64_milliseconds_is_none_or_saturated() -> None:
    huge = Duration(secs=2**64 - 1, nanos=999_999_999)
    assert huge.whole_ms() is None
    assert huge.whole_ms_saturating() == I64_MAX
    edge = Duration(secs=I64_MAX // 1000, nanos=(I64_MAX % 1000) * 1_000_000)
    assert edge.whole_ms() == I64_MAX


def test_turn_item_and_event_durations_share_one_model_with_the_helpers() -> None:
    item = TURN_ITEM_ADAPTER.validate_python(
        {
            "type": "DynamicToolCall",
            "id": "d",
            "tool": "t",
            "arguments": None,
            "status": "completed",
            "duration": {"secs": 0, "nanos": 2853521},
        }
    )
    assert isinstance(item, DynamicToolCallItem)
    assert isinstance(item.duration, Duration)
    assert item.duration.whole_ms() == 2


def test_duration_from_millis_is_the_serde_secs_nanos_form() -> None:
    assert Duration.from_millis(1234).model_dump() == {"secs": 1, "nanos": 234_000_000}
    assert Duration.from_millis(1234).whole_ms() == 1234


def test_output_delta_chunk_stays_base64_on_the_wire_and_decodes_to_bytes() -> None:
    event = parse_event_msg(
        '{"type":"exec_command_output_delta","call_id":"call-1","stream":"stdout","chunk":"aGVsbG8="}'
    )
    assert isinstance(event, ExecCommandOutputDeltaEvent)
    assert event.chunk == "aGVsbG8="
    assert event.chunk_bytes() == b"hello"
    assert event.chunk_text() == "hello"


def test_output_delta_from_bytes_encodes_like_the_binary() -> None:
    event = ExecCommandOutputDeltaEvent.from_bytes("c", "stderr", b"\x00\xffok")
    assert json.loads(dump_event_msg(event))["chunk"] == "AP9vaw=="
    assert event.chunk_bytes() == b"\x00\xffok"


def test_multibyte_character_split_across_chunks_decodes_lossily_per_chunk() -> None:
    euro = "€".encode()  # three bytes
    first = ExecCommandOutputDeltaEvent.from_bytes("c", "stdout", b"a" + euro[:2])
    second = ExecCommandOutputDeltaEvent.from_bytes("c", "stdout", euro[2:] + b"b")
    assert first.chunk_text() == "a\ufffd"
    assert second.chunk_text() == "\ufffdb"


def test_output_delta_chunk_that_is_not_base64_raises_value_error() -> None:
    event = ExecCommandOutputDeltaEvent(call_id="c", stream="stdout", chunk="not base64!")
    with pytest.raises(ValueError, match="not base64"):
        event.chunk_bytes()


def test_agent_statuses_parse_in_their_externally_tagged_forms() -> None:
    event = parse_event_msg(
        json.dumps(
            {
                "type": "collab_waiting_end",
                "sender_thread_id": "S",
                "call_id": "w",
                "completed_at_ms": 1,
                "statuses": {
                    "A": "running",
                    "B": {"completed": None},
                    "C": {"completed": "done"},
                    "D": {"errored": "bad"},
                    "E": {"from_the_future": 1},
                },
            }
        )
    )
    assert isinstance(event, CollabWaitingEndEvent)
    statuses = event.statuses
    assert statuses["A"] == "running"
    assert statuses["B"] == AgentStatusCompleted(completed=None)
    assert statuses["C"] == AgentStatusCompleted(completed="done")
    assert statuses["D"] == AgentStatusErrored(errored="bad")
    assert statuses["E"] == {"from_the_future": 1}
    assert [agent_status_kind(statuses[k]) for k in "ABCDE"] == [
        "running",
        "completed",
        "completed",
        "errored",
        "from_the_future",
    ]
    assert [agent_status_message(statuses[k]) for k in "ABCDE"] == [None, None, "done", "bad", None]


def test_file_changes_parse_by_kind_and_keep_unknown_kinds() -> None:
    event = parse_event_msg(
        json.dumps(
            {
                "type": "patch_apply_updated",
                "call_id": "p",
                "changes": {
                    "/a": {"type": "add", "content": "x\n"},
                    "/b": {"type": "delete", "content": "y\n"},
                    "/c": {"type": "update", "unified_diff": "@@ -1 +1 @@", "move_path": "/d"},
                    "/e": {"type": "update", "unified_diff": "@@", "move_path": None},
                    "/f": {"type": "chmod", "mode": "755"},
                },
            }
        )
    )
    assert isinstance(event, PatchApplyUpdatedEvent)
    changes = event.changes
    assert changes["/a"] == FileChangeAdd(content="x\n")
    assert changes["/b"] == FileChangeDelete(content="y\n")
    assert changes["/c"] == FileChangeUpdate(unified_diff="@@ -1 +1 @@", move_path="/d")
    assert changes["/e"] == FileChangeUpdate(unified_diff="@@", move_path=None)
    assert isinstance(changes["/f"], UnknownFileChange)
    assert json.loads(dump_event_msg(event))["changes"]["/f"] == {"type": "chmod", "mode": "755"}


@pytest.mark.parametrize(
    ("result", "success"),
    [
        ({"Ok": {"content": [{"type": "text", "text": "ok"}]}}, True),
        ({"Ok": {"content": [], "isError": False}}, True),
        ({"Ok": {"content": [], "isError": True}}, False),
        ({"Err": "boom"}, False),
    ],
    ids=["ok", "ok-is-error-false", "ok-is-error-true", "err"],
)
def test_mcp_tool_call_end_success_follows_result_and_is_error(
    result: dict[str, Any], success: bool
) -> None:
    payload = {
        "type": "mcp_tool_call_end",
        "call_id": "m",
        "invocation": {"server": "s", "tool": "t", "arguments": None},
        "duration": {"secs": 0, "nanos": 1_000_000},
        "result": result,
    }
    event = parse_event_msg(json.dumps(payload))
    assert isinstance(event, McpToolCallEndEvent)
    assert event.is_success() is success
    assert _roundtrip(payload) == payload


def test_dynamic_tool_call_request_uses_camel_case_wire_names() -> None:
    event = DynamicToolCallRequestEvent(call_id="d", turn_id="t", tool="x", arguments=None)
    assert json.loads(dump_event_msg(event)) == {
        "type": "dynamic_tool_call_request",
        "callId": "d",
        "turnId": "t",
        "tool": "x",
        "arguments": None,
    }


def test_failed_task_complete_exposes_its_error() -> None:
    _, payload, _ = SPEC_EXAMPLES[11]
    event = parse_event_msg(json.dumps(payload))
    assert isinstance(event, TaskCompleteEvent)
    assert event.error is not None
    assert event.error.codex_error_info == "invalid_prompt"


def test_parse_accepts_str_and_dump_returns_bytes() -> None:
    event = parse_event_msg('{"type":"shutdown_complete"}')
    assert dump_event_msg(event) == b'{"type":"shutdown_complete"}'


# --- exported JSON Schemas --------------------------------------------------------------------


def test_core_json_schemas_cover_the_core_models() -> None:
    assert set(core_json_schemas()) == {
        "ContentItem",
        "EventEnvelope",
        "EventMsg",
        "ResponseItem",
        "RolloutLine",
        "TurnItem",
        "UserInput",
    }


def test_core_json_schemas_are_deterministic_with_sorted_keys() -> None:
    first = core_json_schemas()
    assert json.dumps(first) == json.dumps(core_json_schemas())
    assert json.dumps(first) == json.dumps(first, sort_keys=True)


def test_event_msg_schema_has_one_alternative_per_variant_and_the_fallback() -> None:
    schema = core_json_schemas()["EventMsg"]
    variant_models = {type(parse_event_msg(json.dumps(p))).__name__ for p in ALL_EXAMPLES}
    assert len(schema["oneOf"]) == len(variant_models) + 1
    assert schema["title"] == "EventMsg"


def _event_schema_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(core_json_schemas()["EventMsg"])


def test_every_event_example_validates_against_the_exported_event_msg_schema() -> None:
    validator = _event_schema_validator()
    for payload in ALL_EXAMPLES:
        assert list(validator.iter_errors(payload)) == [], payload["type"]


@pytest.mark.parametrize(
    ("payload", "valid"),
    [
        ({"type": "never_seen_before", "x": 1}, True),
        ({"type": "turn_diff"}, False),  # a known tag cannot escape into the unknown fallback
        ({"type": "exec_command_output_delta", "call_id": "c", "stream": "stdout"}, False),
        ({"delta": "no tag"}, False),
    ],
    ids=["unknown-type", "known-type-missing-field", "delta-missing-chunk", "no-type"],
)
def test_exported_event_msg_schema_accepts_unknown_types_but_not_broken_known_ones(
    payload: dict[str, Any], valid: bool
) -> None:
    assert _event_schema_validator().is_valid(payload) is valid
