"""TurnItem -> ThreadItem, one row per 0.163.0 variant and per conversion rule: a core item as JSON
in, the whole thread item out, valid inside an ``item/completed`` against the vendored schema.
(The variants the captures hold are also checked against the real server in test_captures.)"""

from __future__ import annotations

from typing import Any

import pytest

from codex_app_bridge.mapping import item_event_to_server_notification, thread_item_from_turn_item
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import dump_dict
from tests.mapping.support import schema_errors

Json = dict[str, Any]
AGENT = "01a229f2-0000-7000-8000-00000000000a"
SENDER = "01a229f2-0000-7000-8000-000000000001"

ROWS: list[tuple[str, Json, Json]] = [
    (
        "user message: every input kind in its wire form",
        {
            "type": "UserMessage",
            "id": "u1",
            "client_id": "c-9",
            "content": [
                {
                    "type": "text",
                    "text": "see @a",
                    "text_elements": [{"byte_range": {"start": 4, "end": 6}, "placeholder": "@a"}],
                },
                {"type": "image", "image_url": "data:image/png;base64,AA==", "detail": "low"},
                {"type": "image", "file_id": "file-1"},
                {"type": "local_image", "path": "/tmp/a.png"},
                {"type": "audio", "audio_url": "https://x/a.wav"},
                {"type": "local_audio", "path": "/tmp/a.wav"},
                {"type": "skill", "name": "lint", "path": "/skills/lint"},
                {"type": "mention", "name": "App", "path": "app://x"},
                {"type": "hologram", "beam": 1},
            ],
        },
        {
            "type": "userMessage",
            "id": "u1",
            "clientId": "c-9",
            "content": [
                {
                    "type": "text",
                    "text": "see @a",
                    "text_elements": [{"byteRange": {"start": 4, "end": 6}, "placeholder": "@a"}],
                },
                {"type": "image", "url": "data:image/png;base64,AA==", "detail": "low"},
                {"type": "image", "fileId": "file-1", "detail": None},
                {"type": "localImage", "path": "/tmp/a.png", "detail": None},
                {"type": "audio", "url": "https://x/a.wav"},
                {"type": "localAudio", "path": "/tmp/a.wav"},
                {"type": "skill", "name": "lint", "path": "/skills/lint"},
                {"type": "mention", "name": "App", "path": "app://x"},
            ],
        },
    ),
    (
        "hook prompt",
        {
            "type": "HookPrompt",
            "id": "h1",
            "fragments": [{"text": "be brief", "hookRunId": "run-1"}],
        },
        {
            "type": "hookPrompt",
            "id": "h1",
            "fragments": [{"text": "be brief", "hookRunId": "run-1"}],
        },
    ),
    (
        "agent message: texts joined, citation, delivery",
        {
            "type": "AgentMessage",
            "id": "m1",
            "content": [
                {"type": "Text", "text": "Hel"},
                {"type": "Sparkle"},
                {"type": "Text", "text": "lo"},
            ],
            "phase": "final_answer",
            "memory_citation": {
                "entries": [{"path": "MEMORY.md", "lineStart": 1, "lineEnd": 3, "note": "n"}],
                "rolloutIds": ["r-1"],
            },
            "delivery": "async",
        },
        {
            "type": "agentMessage",
            "id": "m1",
            "text": "Hello",
            "phase": "final_answer",
            "memoryCitation": {
                "entries": [{"path": "MEMORY.md", "lineStart": 1, "lineEnd": 3, "note": "n"}],
                "threadIds": ["r-1"],
            },
            "delivery": "async",
            "questions": None,
        },
    ),
    (
        "plan",
        {"type": "Plan", "id": "p1", "text": "1. do it"},
        {"type": "plan", "id": "p1", "text": "1. do it"},
    ),
    (
        "function call output: text and content items",
        {
            "type": "FunctionCallOutput",
            "id": "f1",
            "name": "shell",
            "namespace": "tools",
            "output": [
                {"type": "input_text", "text": "ok"},
                {"type": "input_image", "image_url": "data:,", "detail": "high"},
                {"type": "input_image", "file_id": "file-2"},
                {"type": "input_audio", "audio_url": "https://x/b.wav"},
                {"type": "encrypted_content", "encrypted_content": "gAAA"},
                {"type": "input_smell"},
            ],
        },
        {
            "type": "functionCallOutput",
            "id": "f1",
            "name": "shell",
            "namespace": "tools",
            "output": [
                {"type": "input_text", "text": "ok"},
                {"type": "input_image", "image_url": "data:,", "detail": "high"},
                {"type": "input_image", "file_id": "file-2"},
                {"type": "input_audio", "audio_url": "https://x/b.wav"},
                {"type": "encrypted_content", "encrypted_content": "gAAA"},
            ],
        },
    ),
    (
        "function call output: plain text",
        {"type": "FunctionCallOutput", "id": "f2", "name": "shell", "output": "exit 0"},
        {
            "type": "functionCallOutput",
            "id": "f2",
            "name": "shell",
            "namespace": None,
            "output": "exit 0",
        },
    ),
    (
        "file change: in progress while core has no status, moves shown in the diff",
        {
            "type": "FileChange",
            "id": "fc1",
            "changes": {
                "/r/b.py": {"type": "update", "unified_diff": "@@\n-x\n+y\n", "move_path": None},
                "/r/a.py": {"type": "update", "unified_diff": "@@\n", "move_path": "/r/c.py"},
                "/r/z.bin": {"type": "chmod", "mode": 755},
            },
            "auto_approved": True,
            "stdout": "dropped",
            "stderr": "dropped",
        },
        {
            "type": "fileChange",
            "id": "fc1",
            "changes": [
                {
                    "path": "/r/a.py",
                    "kind": {"type": "update", "move_path": "/r/c.py"},
                    "diff": "@@\n\n\nMoved to: /r/c.py",
                },
                {
                    "path": "/r/b.py",
                    "kind": {"type": "update", "move_path": None},
                    "diff": "@@\n-x\n+y\n",
                },
            ],
            "status": "inProgress",
        },
    ),
    (
        "mcp tool call: app context from the connector, overflowing duration is null",
        {
            "type": "McpToolCall",
            "id": "mcp1",
            "server": "calendar",
            "tool": "list",
            "arguments": None,
            "connectorId": "conn-1",
            "mcpAppResourceUri": "ui://cal",
            "linkId": "link-1",
            "appName": "Calendar",
            "actionName": "List",
            "pluginId": "plug",
            "readOnlyHint": True,
            "mcpAppUi": {"resourceUri": "ui://cal", "preferredModelDisplayMode": "inline"},
            "status": "completed",
            "result": {"content": [{"type": "text", "text": "3"}], "structuredContent": {"n": 3}},
            "duration": {"secs": 2**63, "nanos": 0},
        },
        {
            "type": "mcpToolCall",
            "id": "mcp1",
            "server": "calendar",
            "tool": "list",
            "status": "completed",
            "arguments": None,
            "appContext": {
                "connectorId": "conn-1",
                "linkId": "link-1",
                "resourceUri": "ui://cal",
                "appName": "Calendar",
                "actionName": "List",
            },
            "mcpAppResourceUri": "ui://cal",
            "mcpAppUi": {"resourceUri": "ui://cal", "preferredModelDisplayMode": "inline"},
            "pluginId": "plug",
            "readOnlyHint": True,
            "result": {
                "content": [{"type": "text", "text": "3"}],
                "structuredContent": {"n": 3},
                "_meta": None,
            },
            "error": None,
            "durationMs": None,
        },
    ),
    (
        "mcp tool call: failed, an unreadable app ui is null",
        {
            "type": "McpToolCall",
            "id": "mcp2",
            "server": "s",
            "tool": "t",
            "arguments": {"a": [1, 2]},
            "mcpAppUi": {"resourceUri": "ui://x", "preferredModelDisplayMode": "hologram"},
            "status": "failed",
            "error": {"message": "denied"},
            "duration": {"secs": 1, "nanos": 1},
        },
        {
            "type": "mcpToolCall",
            "id": "mcp2",
            "server": "s",
            "tool": "t",
            "status": "failed",
            "arguments": {"a": [1, 2]},
            "appContext": None,
            "mcpAppUi": None,
            "pluginId": None,
            "readOnlyHint": None,
            "result": None,
            "error": {"message": "denied"},
            "durationMs": 1000,
        },
    ),
    (
        "dynamic tool call in progress: no content, success or duration yet",
        {
            "type": "DynamicToolCall",
            "id": "d1",
            "tool": "t",
            "arguments": {},
            "status": "in_progress",
        },
        {
            "type": "dynamicToolCall",
            "id": "d1",
            "namespace": None,
            "tool": "t",
            "arguments": {},
            "status": "inProgress",
            "contentItems": None,
            "success": None,
            "durationMs": None,
        },
    ),
    (
        "collab agent tool call: tool and states in wire spelling, receiver agents dropped",
        {
            "type": "CollabAgentToolCall",
            "id": "col1",
            "tool": "send_message",
            "status": "interrupted",
            "sender_thread_id": SENDER,
            "receiver_thread_ids": [AGENT],
            "receiver_agents": [{"thread_id": AGENT, "agent_nickname": "bob"}],
            "prompt": "hi",
            "model": "gpt-5.4",
            "reasoning_effort": "low",
            "agents_states": {AGENT: {"completed": "bye"}},
        },
        {
            "type": "collabAgentToolCall",
            "id": "col1",
            "tool": "sendMessage",
            "status": "interrupted",
            "senderThreadId": SENDER,
            "receiverThreadIds": [AGENT],
            "prompt": "hi",
            "model": "gpt-5.4",
            "reasoningEffort": "low",
            "agentsStates": {AGENT: {"status": "completed", "message": "bye"}},
        },
    ),
    (
        "sub-agent activity",
        {
            "type": "SubAgentActivity",
            "id": "sa1",
            "kind": "completed",
            "agent_thread_id": AGENT,
            "agent_path": "/root/w",
        },
        {
            "type": "subAgentActivity",
            "id": "sa1",
            "kind": "completed",
            "agentThreadId": AGENT,
            "agentPath": "/root/w",
            "model": None,
            "reasoningEffort": None,
        },
    ),
    (
        "web search: a search action gains a null queries",
        {
            "type": "WebSearch",
            "id": "ws_1",
            "query": "codex app-server protocol",
            "action": {"type": "search", "query": "codex app-server protocol"},
        },
        {
            "type": "webSearch",
            "id": "ws_1",
            "query": "codex app-server protocol",
            "action": {"type": "search", "query": "codex app-server protocol", "queries": None},
            "results": None,
        },
    ),
    (
        "web search: open page, results kept",
        {
            "type": "WebSearch",
            "id": "ws_2",
            "query": "https://example.com",
            "action": {"type": "open_page", "url": "https://example.com"},
            "results": [{"title": "A"}],
        },
        {
            "type": "webSearch",
            "id": "ws_2",
            "query": "https://example.com",
            "action": {"type": "openPage", "url": "https://example.com"},
            "results": [{"title": "A"}],
        },
    ),
    (
        "web search: find in page",
        {
            "type": "WebSearch",
            "id": "ws_3",
            "query": "q",
            "action": {"type": "find_in_page", "pattern": "p"},
        },
        {
            "type": "webSearch",
            "id": "ws_3",
            "query": "q",
            "action": {"type": "findInPage", "url": None, "pattern": "p"},
            "results": None,
        },
    ),
    (
        "web search: an action this version does not know is other",
        {"type": "WebSearch", "id": "ws_4", "query": "q", "action": {"type": "scroll", "by": 3}},
        {
            "type": "webSearch",
            "id": "ws_4",
            "query": "q",
            "action": {"type": "other"},
            "results": None,
        },
    ),
    (
        "image view: the path of a file URI in native form",
        {"type": "ImageView", "id": "iv1", "path": "file:///C:/img/a%20b.png"},
        {"type": "imageView", "id": "iv1", "path": "C:\\img\\a b.png"},
    ),
    (
        "image view: a plain path unchanged",
        {"type": "ImageView", "id": "iv2", "path": "/tmp/a.png"},
        {"type": "imageView", "id": "iv2", "path": "/tmp/a.png"},
    ),
    (
        "image generation: saved path omitted when absent, transparency written as null",
        {
            "type": "ImageGeneration",
            "id": "ig1",
            "status": "completed",
            "revised_prompt": "a fox",
            "result": "cG5n",
        },
        {
            "type": "imageGeneration",
            "id": "ig1",
            "status": "completed",
            "revisedPrompt": "a fox",
            "result": "cG5n",
            "failure": None,
            "transparentBackground": None,
        },
    ),
    (
        "image generation: failure and saved path",
        {
            "type": "ImageGeneration",
            "id": "ig2",
            "status": "failed",
            "result": "",
            "saved_path": "/home/dev/.codex/ig2.png",
            "failure": {"type": "usageLimitExceeded", "limitId": "img", "resetsAt": 1800000000},
            "transparent_background": False,
        },
        {
            "type": "imageGeneration",
            "id": "ig2",
            "status": "failed",
            "revisedPrompt": None,
            "result": "",
            "savedPath": "/home/dev/.codex/ig2.png",
            "failure": {"type": "usageLimitExceeded", "limitId": "img", "resetsAt": 1800000000},
            "transparentBackground": False,
        },
    ),
    (
        "sleep",
        {"type": "Sleep", "id": "s1", "duration_ms": 20000},
        {"type": "sleep", "id": "s1", "durationMs": 20000},
    ),
    (
        "entered review mode shows the user-facing hint",
        {
            "type": "EnteredReviewMode",
            "id": "rv1",
            "target": {"type": "uncommittedChanges"},
            "user_facing_hint": "current changes",
        },
        {"type": "enteredReviewMode", "id": "rv1", "review": "current changes"},
    ),
    (
        "exited review mode renders the review",
        {
            "type": "ExitedReviewMode",
            "id": "rv2",
            "review_output": {
                "findings": [
                    {
                        "title": "[P1] Guard the index",
                        "body": "It can run past the end.\r\nCheck len first.\n",
                        "confidence_score": 0.9,
                        "priority": 1,
                        "code_location": {
                            "absolute_file_path": "/r/a.rs",
                            "line_range": {"start": 3, "end": 5},
                        },
                    },
                    {
                        "title": "[P3] Typo",
                        "body": "recieve",
                        "confidence_score": 0.5,
                        "priority": 3,
                        "code_location": {
                            "absolute_file_path": "/r/b.rs",
                            "line_range": {"start": 9, "end": 9},
                        },
                    },
                ],
                "overall_correctness": "patch is incorrect",
                "overall_explanation": "  One real bug.\n",
                "overall_confidence_score": 0.8,
            },
        },
        {
            "type": "exitedReviewMode",
            "id": "rv2",
            "review": "One real bug.\n\nFull review comments:\n\n"
            "- [P1] Guard the index — /r/a.rs:3-5\n  It can run past the end.\n  Check len first.\n\n"
            "- [P3] Typo — /r/b.rs:9-9\n  recieve",
        },
    ),
    (
        "exited review mode without output falls back",
        {"type": "ExitedReviewMode", "id": "rv3", "review_output": None},
        {
            "type": "exitedReviewMode",
            "id": "rv3",
            "review": "Reviewer failed to output a response.",
        },
    ),
    (
        "context compaction",
        {"type": "ContextCompaction", "id": "cc1"},
        {"type": "contextCompaction", "id": "cc1"},
    ),
    (
        "extension item: clock.sleep",
        {"type": "Extension", "kind": "clock.sleep", "id": "s2", "durationMs": 1500},
        {"type": "sleep", "id": "s2", "durationMs": 1500},
    ),
    (
        "extension item: image_gen.generation",
        {
            "type": "Extension",
            "kind": "image_gen.generation",
            "id": "g1",
            "status": "generating",
            "revisedPrompt": "A fox",
            "result": "",
        },
        {
            "type": "imageGeneration",
            "id": "g1",
            "status": "generating",
            "revisedPrompt": "A fox",
            "result": "",
            "failure": None,
            "transparentBackground": None,
        },
    ),
    (
        "extension item: web.search",
        {
            "type": "Extension",
            "kind": "web.search",
            "id": "w1",
            "query": "https://example.com/a",
            "action": {"type": "openPage", "url": "https://example.com/a"},
            "results": [{"title": "A"}],
        },
        {
            "type": "webSearch",
            "id": "w1",
            "query": "https://example.com/a",
            "action": {"type": "openPage", "url": "https://example.com/a"},
            "results": [{"title": "A"}],
        },
    ),
    (
        "extension item: an older build's payload envelope",
        {
            "type": "Extension",
            "id": "g2",
            "kind": "image_gen.image_generation",
            "payload": {
                "status": "completed",
                "revised_prompt": "A blue square",
                "result": "cG5n",
                "saved_path": None,
            },
        },
        {
            "type": "imageGeneration",
            "id": "g2",
            "status": "completed",
            "revisedPrompt": "A blue square",
            "result": "cG5n",
            "failure": None,
            "transparentBackground": None,
        },
    ),
]


@pytest.mark.parametrize(
    ("core_item", "expected"), [(c, e) for _, c, e in ROWS], ids=[n for n, _, _ in ROWS]
)
def test_turn_item_becomes_the_whole_thread_item(core_item: Json, expected: Json) -> None:
    item = core.TURN_ITEM_ADAPTER.validate_python(core_item)
    thread_item = thread_item_from_turn_item(item)
    assert thread_item is not None
    assert dump_dict(thread_item) == expected
    # and it travels: inside an item/completed it is valid against the vendored schema
    event = core.ItemCompletedEvent(thread_id="T", turn_id="U", item=item, completed_at_ms=1)
    notification = item_event_to_server_notification(event, "T", "U")
    assert notification is not None
    assert schema_errors(dump_dict(notification)) == []


# Items the 0.163.0 wire cannot show: the real server cannot read them, so nothing is sent.
UNSHOWABLE: list[tuple[str, Json]] = [
    ("a turn item type from a later Codex", {"type": "Telepathy", "id": "t1", "thought": "hm"}),
    ("an extension of an unknown kind", {"type": "Extension", "kind": "clock.alarm", "id": "a1"}),
    (
        "an extension whose fields do not fit",
        {"type": "Extension", "kind": "clock.sleep", "id": "s3"},
    ),
    (
        "a command source the wire does not know",
        {
            "type": "CommandExecution",
            "id": "c1",
            "command": ["ls"],
            "cwd": "file:///r",
            "parsed_cmd": [],
            "source": "remote_shell",
            "status": "completed",
        },
    ),
    (
        "a collab tool the wire does not know",
        {
            "type": "CollabAgentToolCall",
            "id": "col2",
            "tool": "teleport_agent",
            "status": "completed",
            "sender_thread_id": SENDER,
        },
    ),
    (
        "a collab status the wire does not know",
        {
            "type": "CollabAgentToolCall",
            "id": "col3",
            "tool": "wait",
            "status": "paused",
            "sender_thread_id": SENDER,
        },
    ),
    (
        "a sub-agent activity kind the wire does not know",
        {
            "type": "SubAgentActivity",
            "id": "sa2",
            "kind": "dreamt",
            "agent_thread_id": AGENT,
            "agent_path": "/a",
        },
    ),
    (
        "a text element with a negative byte range",
        {
            "type": "UserMessage",
            "id": "u2",
            "content": [
                {
                    "type": "text",
                    "text": "x",
                    "text_elements": [{"byte_range": {"start": -1, "end": 1}}],
                }
            ],
        },
    ),
    ("a negative sleep", {"type": "Sleep", "id": "s4", "duration_ms": -1}),
]


@pytest.mark.parametrize("core_item", [c for _, c in UNSHOWABLE], ids=[n for n, _ in UNSHOWABLE])
def test_turn_item_the_wire_cannot_show_gives_nothing(core_item: Json) -> None:
    item = core.TURN_ITEM_ADAPTER.validate_python(core_item)
    assert thread_item_from_turn_item(item) is None
    started = core.ItemStartedEvent(thread_id="T", turn_id="U", item=item, started_at_ms=1)
    assert item_event_to_server_notification(started, "T", "U") is None
