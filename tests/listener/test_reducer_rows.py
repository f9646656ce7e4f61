"""The reducer's one-event rows (spec event-mapping §2 "B" rows), whole notifications asserted.

Each case is one core event (as Codex serializes it) and every notification the reducer emits
for it, params included, with the audience when it is not the thread's subscribers. Payloads of
rows confirmed by 0.163.0 captures are copied from them (§7); the others follow the 0.163.0
schema field lists (noted per case).
"""

from __future__ import annotations

from typing import Any

import pytest

from codex_app_bridge.listener import REQUEST_EVENT_TYPES
from tests.listener.support import THREAD, TURN, Driver
from tests.mapping.support import schema_errors

USAGE = {
    "input_tokens": 100,
    "cached_input_tokens": 0,
    "cache_write_input_tokens": 0,
    "output_tokens": 20,
    "reasoning_output_tokens": 0,
    "total_tokens": 120,
}
USAGE_V2 = {
    "totalTokens": 120,
    "inputTokens": 100,
    "cachedInputTokens": 0,
    "cacheWriteInputTokens": 0,
    "outputTokens": 20,
    "reasoningOutputTokens": 0,
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
RATE_LIMITS_V2 = {
    "limitId": "codex",
    "limitName": None,
    "normalModelSlug": None,
    "primary": None,
    "secondary": None,
    "credits": None,
    "individualLimit": None,
    "spendControlReached": None,
    "planType": None,
    "rateLimitReachedType": None,
}
HOOK_RUN = {
    "id": "hook-1",
    "event_name": "pre_tool_use",
    "handler_type": "command",
    "execution_mode": "sync",
    "scope": "turn",
    "source_path": "/home/dev/.codex/hooks.json",
    "source": "user",
    "display_order": 0,
    "status": "running",
    "status_message": None,
    "started_at": 1796000092,
    "completed_at": None,
    "duration_ms": None,
    "entries": [],
}
HOOK_RUN_V2 = {
    "id": "hook-1",
    "eventName": "preToolUse",
    "handlerType": "command",
    "executionMode": "sync",
    "scope": "turn",
    "sourcePath": "/home/dev/.codex/hooks.json",
    "source": "user",
    "displayOrder": 0,
    "status": "running",
    "statusMessage": None,
    "startedAt": 1796000092,
    "completedAt": None,
    "durationMs": None,
    "entries": [],
}


def sub(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"method": method, "params": params}


CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = [
    (
        "token_count_with_usage_and_rate_limits",  # shell capture
        {
            "type": "token_count",
            "info": {
                "total_token_usage": USAGE,
                "last_token_usage": USAGE,
                "model_context_window": 258400,
            },
            "rate_limits": RATE_LIMITS,
        },
        [
            sub(
                "thread/tokenUsage/updated",
                {
                    "threadId": THREAD,
                    "turnId": TURN,
                    "tokenUsage": {
                        "total": USAGE_V2,
                        "last": USAGE_V2,
                        "modelContextWindow": 258400,
                    },
                },
            ),
            sub("account/rateLimits/updated", {"rateLimits": RATE_LIMITS_V2}),
        ],
    ),
    (
        "token_count_without_info_sends_only_rate_limits",  # interrupt capture
        {"type": "token_count", "info": None, "rate_limits": RATE_LIMITS},
        [sub("account/rateLimits/updated", {"rateLimits": RATE_LIMITS_V2})],
    ),
    (
        "token_count_rate_limit_windows_and_credits",  # schema: RateLimitSnapshot
        {
            "type": "token_count",
            "info": None,
            "rate_limits": {
                **RATE_LIMITS,
                "primary": {"used_percent": 42.7, "window_minutes": 300, "resets_at": 1796003600},
                "credits": {"has_credits": True, "unlimited": False, "balance": "12.50"},
                "plan_type": "plus",
                "rate_limit_reached_type": "rate_limit_reached",
            },
        },
        [
            sub(
                "account/rateLimits/updated",
                {
                    "rateLimits": {
                        **RATE_LIMITS_V2,
                        "primary": {
                            "usedPercent": 42,
                            "windowDurationMins": 300,
                            "resetsAt": 1796003600,
                        },
                        "credits": {"hasCredits": True, "unlimited": False, "balance": "12.50"},
                        "planType": "plus",
                        "rateLimitReachedType": "rate_limit_reached",
                    }
                },
            )
        ],
    ),
    (
        "token_count_empty_sends_nothing",
        {"type": "token_count", "info": None, "rate_limits": None},
        [],
    ),
    (
        "turn_diff",
        {"type": "turn_diff", "unified_diff": "diff --git a/x b/x\n+y\n"},
        [
            sub(
                "turn/diff/updated",
                {"threadId": THREAD, "turnId": TURN, "diff": "diff --git a/x b/x\n+y\n"},
            )
        ],
    ),
    (
        "plan_update_camel_cases_step_status",
        {
            "type": "plan_update",
            "explanation": "three steps",
            "plan": [
                {"step": "read", "status": "completed"},
                {"step": "edit", "status": "in_progress"},
                {"step": "test", "status": "pending"},
            ],
        },
        [
            sub(
                "turn/plan/updated",
                {
                    "threadId": THREAD,
                    "turnId": TURN,
                    "explanation": "three steps",
                    "plan": [
                        {"step": "read", "status": "completed"},
                        {"step": "edit", "status": "inProgress"},
                        {"step": "test", "status": "pending"},
                    ],
                },
            )
        ],
    ),
    (
        "warning",
        {"type": "warning", "message": "Model metadata for `mock-model` not found."},
        [
            sub(
                "warning",
                {"threadId": THREAD, "message": "Model metadata for `mock-model` not found."},
            )
        ],
    ),
    (
        "guardian_warning",
        {"type": "guardian_warning", "message": "reviewer unavailable"},
        [sub("guardianWarning", {"threadId": THREAD, "message": "reviewer unavailable"})],
    ),
    (
        "hook_started_keeps_the_payload_turn_id",
        {"type": "hook_started", "turn_id": "turn-of-hook", "run": HOOK_RUN},
        [sub("hook/started", {"threadId": THREAD, "turnId": "turn-of-hook", "run": HOOK_RUN_V2})],
    ),
    (
        "hook_completed_without_turn_id",
        {
            "type": "hook_completed",
            "turn_id": None,
            "run": {
                **HOOK_RUN,
                "event_name": "session_start",
                "source": "session_flags",
                "status": "completed",
                "completed_at": 1796000093,
                "duration_ms": 12,
                "entries": [{"kind": "feedback", "text": "ok"}],
            },
        },
        [
            sub(
                "hook/completed",
                {
                    "threadId": THREAD,
                    "turnId": None,
                    "run": {
                        **HOOK_RUN_V2,
                        "eventName": "sessionStart",
                        "source": "sessionFlags",
                        "status": "completed",
                        "completedAt": 1796000093,
                        "durationMs": 12,
                        "entries": [{"kind": "feedback", "text": "ok"}],
                    },
                },
            )
        ],
    ),
    (
        "mcp_startup_starting",
        {"type": "mcp_startup_update", "server": "docs", "status": {"state": "starting"}},
        [
            sub(
                "mcpServer/startupStatus/updated",
                {
                    "threadId": THREAD,
                    "name": "docs",
                    "status": "starting",
                    "error": None,
                    "failureReason": None,
                },
            )
        ],
    ),
    (
        "mcp_startup_failed_with_reason",
        {
            "type": "mcp_startup_update",
            "server": "docs",
            "status": {
                "state": "failed",
                "error": "token expired",
                "reason": "reauthentication_required",
            },
        },
        [
            sub(
                "mcpServer/startupStatus/updated",
                {
                    "threadId": THREAD,
                    "name": "docs",
                    "status": "failed",
                    "error": "token expired",
                    "failureReason": "reauthenticationRequired",
                },
            )
        ],
    ),
    (
        "environment_connected",
        {"type": "environment_connected", "environment_id": "remote-1"},
        [sub("thread/environment/connected", {"threadId": THREAD, "environmentId": "remote-1"})],
    ),
    (
        "environment_disconnected",
        {"type": "environment_disconnected", "environment_id": "remote-1"},
        [sub("thread/environment/disconnected", {"threadId": THREAD, "environmentId": "remote-1"})],
    ),
    (
        "auth_recovery_started",
        {"type": "auth_recovery_started", "provider": "openai", "message": "refreshing"},
        [
            sub(
                "modelProvider/authRecoveryStarted",
                {"threadId": THREAD, "turnId": TURN, "provider": "openai", "message": "refreshing"},
            )
        ],
    ),
    (
        "auth_recovery_completed",
        {"type": "auth_recovery_completed", "provider": "openai", "message": "done"},
        [
            sub(
                "modelProvider/authRecoveryCompleted",
                {"threadId": THREAD, "turnId": TURN, "provider": "openai", "message": "done"},
            )
        ],
    ),
    (
        "model_reroute",
        {
            "type": "model_reroute",
            "from_model": "gpt-5.4",
            "to_model": "gpt-5.4-mini",
            "reason": "high_risk_cyber_activity",
        },
        [
            sub(
                "model/rerouted",
                {
                    "threadId": THREAD,
                    "turnId": TURN,
                    "fromModel": "gpt-5.4",
                    "toModel": "gpt-5.4-mini",
                    "reason": "highRiskCyberActivity",
                },
            )
        ],
    ),
    (
        "model_verification",
        {"type": "model_verification", "verifications": ["trusted_access_for_cyber"]},
        [
            sub(
                "model/verification",
                {"threadId": THREAD, "turnId": TURN, "verifications": ["trustedAccessForCyber"]},
            )
        ],
    ),
    (
        "turn_moderation_metadata_passes_metadata_through",
        {"type": "turn_moderation_metadata", "metadata": {"flagged": False, "scores": [0.1]}},
        [
            sub(
                "turn/moderationMetadata",
                {
                    "threadId": THREAD,
                    "turnId": TURN,
                    "metadata": {"flagged": False, "scores": [0.1]},
                },
            )
        ],
    ),
    (
        "safety_buffering",
        {
            "type": "safety_buffering",
            "model": "gpt-5.4",
            "use_cases": ["cyber"],
            "reasons": ["policy"],
            "show_buffering_ui": True,
            "faster_model": None,
        },
        [
            sub(
                "model/safetyBuffering/updated",
                {
                    "threadId": THREAD,
                    "turnId": TURN,
                    "model": "gpt-5.4",
                    "useCases": ["cyber"],
                    "reasons": ["policy"],
                    "showBufferingUi": True,
                    "fasterModel": None,
                },
            )
        ],
    ),
    (
        "deprecation_notice_without_details",
        {"type": "deprecation_notice", "summary": "`foo` is deprecated"},
        [sub("deprecationNotice", {"summary": "`foo` is deprecated", "details": None})],
    ),
    (
        "thread_goal_updated_goes_to_every_connection",
        {
            "type": "thread_goal_updated",
            "threadId": THREAD,
            "turnId": TURN,
            "goal": {
                "threadId": THREAD,
                "objective": "ship it",
                "status": "active",
                "tokensUsed": 10,
                "timeUsedSeconds": 3,
                "createdAt": 1796000000,
                "updatedAt": 1796000090,
            },
        },
        [
            {
                "method": "thread/goal/updated",
                "params": {
                    "threadId": THREAD,
                    "turnId": TURN,
                    "goal": {
                        "threadId": THREAD,
                        "objective": "ship it",
                        "status": "active",
                        "tokenBudget": None,
                        "tokensUsed": 10,
                        "timeUsedSeconds": 3,
                        "createdAt": 1796000000,
                        "updatedAt": 1796000090,
                    },
                },
                "audience": "broadcast",
            }
        ],
    ),
    (
        "stream_error_is_a_retrying_error",  # error_fatal / stream_retry captures
        {
            "type": "stream_error",
            "message": "Reconnecting... 1/1",
            "codex_error_info": {"response_stream_disconnected": {"http_status_code": None}},
            "additional_details": "stream disconnected before completion",
        },
        [
            sub(
                "error",
                {
                    "error": {
                        "message": "Reconnecting... 1/1",
                        "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": None}},
                        "additionalDetails": "stream disconnected before completion",
                        "misalignment": None,
                    },
                    "willRetry": True,
                    "threadId": THREAD,
                    "turnId": TURN,
                },
            )
        ],
    ),
    (
        "raw_response_item_goes_to_raw_subscribers_unchanged",
        {
            "type": "raw_response_item",
            "item": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "hi"}],
                "future_field": 1,
            },
        },
        [
            {
                "method": "rawResponseItem/completed",
                "params": {
                    "threadId": THREAD,
                    "turnId": TURN,
                    "item": {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "hi"}],
                        "future_field": 1,
                    },
                },
                "audience": "raw",
            }
        ],
    ),
    (
        "raw_response_completed",
        {"type": "raw_response_completed", "response_id": "resp_1", "token_usage": USAGE},
        [
            {
                "method": "rawResponse/completed",
                "params": {
                    "threadId": THREAD,
                    "turnId": TURN,
                    "responseId": "resp_1",
                    "usage": USAGE_V2,
                    "usageMetadata": None,
                },
                "audience": "raw",
            }
        ],
    ),
    (
        "realtime_started",
        {"type": "realtime_conversation_started", "realtime_session_id": "rt-1", "version": "v2"},
        [
            sub(
                "thread/realtime/started",
                {"threadId": THREAD, "realtimeSessionId": "rt-1", "version": "v2"},
            )
        ],
    ),
    (
        "realtime_sdp",
        {"type": "realtime_conversation_sdp", "sdp": "v=0"},
        [sub("thread/realtime/sdp", {"threadId": THREAD, "sdp": "v=0"})],
    ),
    (
        "realtime_closed",
        {"type": "realtime_conversation_closed", "reason": "done"},
        [sub("thread/realtime/closed", {"threadId": THREAD, "reason": "done"})],
    ),
    (
        "realtime_output_transcript_delta",
        {
            "type": "realtime_conversation_realtime",
            "payload": {"OutputTranscriptDelta": {"delta": "he"}},
        },
        [
            sub(
                "thread/realtime/transcript/delta",
                {"threadId": THREAD, "role": "assistant", "delta": "he"},
            )
        ],
    ),
    (
        "realtime_input_transcript_done_snake_case_kind",
        {
            "type": "realtime_conversation_realtime",
            "payload": {"input_transcript_done": {"text": "hi"}},
        },
        [
            sub(
                "thread/realtime/transcript/done",
                {"threadId": THREAD, "role": "user", "text": "hi"},
            )
        ],
    ),
    (
        "realtime_speech_started_becomes_an_added_item",
        {
            "type": "realtime_conversation_realtime",
            "payload": {"InputAudioSpeechStarted": {"item_id": "it-1"}},
        },
        [
            sub(
                "thread/realtime/itemAdded",
                {
                    "threadId": THREAD,
                    "item": {"type": "input_audio_buffer.speech_started", "item_id": "it-1"},
                },
            )
        ],
    ),
    (
        "realtime_error",
        {"type": "realtime_conversation_realtime", "payload": {"Error": "socket closed"}},
        [sub("thread/realtime/error", {"threadId": THREAD, "message": "socket closed"})],
    ),
    (
        "realtime_session_updated_is_ignored",
        {"type": "realtime_conversation_realtime", "payload": {"SessionUpdated": {"session": {}}}},
        [],
    ),
]

# core events the live 0.163.0 v2 path handles without telling the client anything
SILENT: list[dict[str, Any]] = [
    {"type": "agent_message", "message": "hello"},
    {"type": "user_message", "message": "hi"},
    {"type": "agent_reasoning", "text": "thinking"},
    {"type": "agent_reasoning_raw_content", "text": "raw"},
    {"type": "context_compacted"},
    {"type": "thread_rolled_back", "num_turns": 1},
    {"type": "web_search_begin", "call_id": "ws_1"},
    {"type": "image_generation_begin", "call_id": "ig_1"},
    {"type": "view_image_tool_call", "call_id": "v1", "path": "/tmp/a.png"},
    {"type": "thread_queue_changed"},
    {"type": "mcp_startup_complete", "ready": ["docs"], "failed": []},
    {"type": "elicitation_abandoned"},
    {"type": "thread_name_updated", "thread_id": THREAD, "thread_name": "x"},
    {"type": "entered_review_mode", "target": {"type": "uncommittedChanges"}},
    {"type": "exited_review_mode", "review_output": None},
]

# core events that ask the client something: raised as server requests, never reduced
ASKING: list[dict[str, Any]] = [
    {"type": "exec_approval_request", "call_id": "c1", "command": ["ls"], "cwd": "/"},
    {"type": "apply_patch_approval_request", "call_id": "c1", "changes": {}},
    {"type": "request_permissions", "call_id": "c1", "permissions": {}},
    {"type": "request_user_input", "call_id": "c1", "questions": []},
    {
        "type": "elicitation_request",
        "server_name": "srv",
        "id": 7,
        "request": {"mode": "form", "message": "Name?", "requested_schema": {}},
    },
    {
        "type": "dynamic_tool_call_request",
        "callId": "c1",
        "turnId": TURN,
        "tool": "lookup",
        "arguments": {},
    },
]


@pytest.mark.parametrize(("msg", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_event_gives_exactly_these_notifications(
    msg: dict[str, Any], expected: list[dict[str, Any]]
) -> None:
    driver = Driver()
    assert driver.notifications(msg) == expected
    assert driver.skipped == []


@pytest.mark.parametrize(
    ("msg", "expected"),
    [c[1:] for c in CASES if c[0].split("_")[0] not in ("raw",)],
    ids=[c[0] for c in CASES if c[0].split("_")[0] not in ("raw",)],
)
def test_each_row_validates_against_the_vendored_notification_schema(
    msg: dict[str, Any], expected: list[dict[str, Any]]
) -> None:
    for notification in Driver().notifications(msg):
        notification.pop("audience", None)
        assert schema_errors(notification) == []


@pytest.mark.parametrize("msg", SILENT, ids=[m["type"] for m in SILENT])
def test_events_the_live_server_ignores_give_nothing_and_are_not_skips(msg: dict[str, Any]) -> None:
    driver = Driver()
    assert driver.notifications(msg) == []
    assert driver.skipped == []


def test_the_asking_events_are_exactly_the_request_event_types() -> None:
    assert {msg["type"] for msg in ASKING} == REQUEST_EVENT_TYPES


@pytest.mark.parametrize("msg", ASKING, ids=[m["type"] for m in ASKING])
def test_every_event_that_asks_the_client_is_left_to_the_requests_and_skipped(
    msg: dict[str, Any],
) -> None:
    driver = Driver()
    assert driver.notifications(msg) == []
    assert driver.skipped == [f"{msg['type']}: server requests are not handled here"]
