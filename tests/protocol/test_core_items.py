"""Core item models: ResponseItem, ContentItem, UserInput and TurnItem parse and serialize as Codex.

The real 0.163.0 rollouts are the main oracle: every ``response_item`` payload and every turn item of
``item_started`` / ``item_completed`` must parse and re-serialize to the same JSON. The upstream serde
tests of ``core-projection.md`` §5.5 (48-54) and the §1.2 / §1.3 examples pin the rest; where 0.163.0
writes something different from the older source those tests come from, the test says so.
"""

from __future__ import annotations

from typing import Annotated, Any, get_args, get_origin

import orjson
import pytest
from pydantic import Discriminator, Tag, ValidationError

from codex_app_bridge.protocol.core import (
    CONTENT_ITEM_ADAPTER,
    RESPONSE_ITEM_ADAPTER,
    TURN_ITEM_ADAPTER,
    USER_INPUT_ADAPTER,
    AgentMessageItem,
    CompactionResponseItem,
    DynamicToolCallItem,
    FunctionCallOutputResponseItem,
    FunctionCallResponseItem,
    HookPromptFragment,
    ImageGenerationCallResponseItem,
    InputImageContentItem,
    InputTextContentItem,
    MessageResponseItem,
    OtherResponseItem,
    ReasoningResponseItem,
    TextAgentMessageContent,
    TextUserInput,
    ToolSearchCallResponseItem,
    UnknownContentItem,
    UnknownResponseItem,
    UnknownTurnItem,
    UnknownUserInput,
    UnknownWebSearchAction,
    UserMessageItem,
    WebSearchCallResponseItem,
    _event_msg,
    _response_item,
    _rollout,
    _turn_item,
    _user_input,
)
from tests.conftest import CAPTURES_DIR


def _capture_lines() -> list[tuple[str, dict[str, Any]]]:
    lines: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(CAPTURES_DIR.glob("*/rollout*.jsonl")):
        for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
            lines.append((f"{path.parent.name}/{path.name}:{number}", orjson.loads(raw)))
    return lines


_LINES = _capture_lines()
_RESPONSE_ITEMS = [
    (where, line["payload"]) for where, line in _LINES if line["type"] == "response_item"
]
_TURN_ITEMS = [
    (where, line["payload"]["item"])
    for where, line in _LINES
    if line["type"] == "event_msg" and line["payload"]["type"] in {"item_started", "item_completed"}
]


def _roundtrip_response_item(payload: Any) -> Any:
    item = RESPONSE_ITEM_ADAPTER.validate_python(payload)
    return orjson.loads(RESPONSE_ITEM_ADAPTER.dump_json(item))


def _roundtrip_turn_item(payload: Any) -> Any:
    item = TURN_ITEM_ADAPTER.validate_python(payload)
    return orjson.loads(TURN_ITEM_ADAPTER.dump_json(item))


def test_the_captures_hold_response_items_and_turn_items() -> None:
    assert len(_RESPONSE_ITEMS) >= 40
    assert len(_TURN_ITEMS) >= 20


@pytest.mark.parametrize(("where", "payload"), _RESPONSE_ITEMS, ids=[w for w, _ in _RESPONSE_ITEMS])
def test_every_captured_response_item_reserializes_unchanged(where: str, payload: Any) -> None:
    assert _roundtrip_response_item(payload) == payload, where


@pytest.mark.parametrize(("where", "payload"), _TURN_ITEMS, ids=[w for w, _ in _TURN_ITEMS])
def test_every_captured_turn_item_reserializes_unchanged(where: str, payload: Any) -> None:
    assert _roundtrip_turn_item(payload) == payload, where


def test_captured_items_reserialize_with_codex_key_order() -> None:
    # Field declaration order follows 0.163.0's serde order, so the bytes match, not just the JSON.
    for where, payload in _RESPONSE_ITEMS:
        original = orjson.dumps(payload)
        item = RESPONSE_ITEM_ADAPTER.validate_json(original)
        assert RESPONSE_ITEM_ADAPTER.dump_json(item) == original, where
    for where, payload in _TURN_ITEMS:
        original = orjson.dumps(payload)
        assert TURN_ITEM_ADAPTER.dump_json(TURN_ITEM_ADAPTER.validate_json(original)) == original, (
            where
        )


def test_captured_items_parse_into_their_typed_variants() -> None:
    kinds = {type(RESPONSE_ITEM_ADAPTER.validate_python(p)).__name__ for _, p in _RESPONSE_ITEMS}
    assert "UnknownResponseItem" not in kinds
    assert {"MessageResponseItem", "ReasoningResponseItem", "FunctionCallResponseItem"} <= kinds
    turn_kinds = {type(TURN_ITEM_ADAPTER.validate_python(p)).__name__ for _, p in _TURN_ITEMS}
    assert "UnknownTurnItem" not in turn_kinds
    assert {"UserMessageItem", "AgentMessageItem", "CommandExecutionItem"} <= turn_kinds


# --------------------------------------------------------------------------- upstream serde tests


def test_response_item_parses_image_generation_call() -> None:  # upstream 48
    item = RESPONSE_ITEM_ADAPTER.validate_json(
        b'{"id":"ig_123","type":"image_generation_call","status":"completed",'
        b'"revised_prompt":"A small blue square","result":"Zm9v"}'
    )
    assert item == ImageGenerationCallResponseItem(
        id="ig_123", status="completed", revised_prompt="A small blue square", result="Zm9v"
    )


def test_response_item_parses_image_generation_call_without_revised_prompt() -> None:  # 49
    item = RESPONSE_ITEM_ADAPTER.validate_python(
        {"id": "ig_123", "type": "image_generation_call", "status": "completed", "result": "Zm9v"}
    )
    assert isinstance(item, ImageGenerationCallResponseItem)
    assert item.revised_prompt is None
    assert "revised_prompt" not in _roundtrip_response_item(item.model_dump())


def test_compaction_summary_is_an_input_alias_of_compaction() -> None:  # 50
    item = RESPONSE_ITEM_ADAPTER.validate_python(
        {"type": "compaction_summary", "encrypted_content": "abc"}
    )
    assert item == CompactionResponseItem(encrypted_content="abc")
    assert orjson.loads(RESPONSE_ITEM_ADAPTER.dump_json(item)) == {
        "type": "compaction",
        "encrypted_content": "abc",
    }


@pytest.mark.parametrize(
    "payload",
    [
        {
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "search", "query": "weather"},
        },
        {
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "open_page", "url": "https://example.com"},
        },
        {
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "find_in_page", "url": "https://example.com", "pattern": "needle"},
        },
        {
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "search", "queries": ["a", "b"]},
        },
        {"type": "web_search_call", "status": "completed", "action": {"type": "other"}},
    ],
)
def test_web_search_call_actions_roundtrip(payload: dict[str, Any]) -> None:  # 51
    assert _roundtrip_response_item(payload) == payload


def test_partial_web_search_call_keeps_its_id_as_0_163_writes_it() -> None:  # 51, partial item
    # The upstream test is from the family that never wrote ids; 0.163.0 writes them back.
    item = RESPONSE_ITEM_ADAPTER.validate_python(
        {"type": "web_search_call", "status": "in_progress", "id": "ws_partial"}
    )
    assert item == WebSearchCallResponseItem(id="ws_partial", status="in_progress", action=None)
    assert orjson.loads(RESPONSE_ITEM_ADAPTER.dump_json(item)) == {
        "type": "web_search_call",
        "id": "ws_partial",
        "status": "in_progress",
    }


def test_unknown_web_search_action_is_kept_losslessly() -> None:
    payload = {"type": "web_search_call", "action": {"type": "browse", "url": "u", "depth": 2}}
    item = RESPONSE_ITEM_ADAPTER.validate_python(payload)
    assert isinstance(item, WebSearchCallResponseItem)
    assert isinstance(item.action, UnknownWebSearchAction)
    assert _roundtrip_response_item(payload) == payload


def test_array_output_payload_parses_into_content_items() -> None:  # 52
    payload = {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [
            {"type": "input_text", "text": "note"},
            {"type": "input_image", "image_url": "data:image/png;base64,XYZ"},
        ],
    }
    item = RESPONSE_ITEM_ADAPTER.validate_python(payload)
    assert isinstance(item, FunctionCallOutputResponseItem)
    assert item.output == [
        InputTextContentItem(text="note"),
        InputImageContentItem(image_url="data:image/png;base64,XYZ", detail=None),
    ]
    assert _roundtrip_response_item(payload) == payload  # no "detail" key appears


@pytest.mark.parametrize("text", ["ok", "bad"])
def test_text_output_payload_serializes_as_a_plain_string(text: str) -> None:  # 52
    item = FunctionCallOutputResponseItem(call_id="c1", output=text)
    assert orjson.loads(RESPONSE_ITEM_ADAPTER.dump_json(item)) == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": text,
    }


@pytest.mark.parametrize("output", [1, {"text": "x"}, None, True])
def test_output_payload_that_is_neither_string_nor_array_is_rejected(output: Any) -> None:
    with pytest.raises(ValidationError):
        RESPONSE_ITEM_ADAPTER.validate_python(
            {"type": "function_call_output", "call_id": "c1", "output": output}
        )


def test_function_call_deserializes_optional_namespace() -> None:  # 53
    payload = {
        "type": "function_call",
        "name": "mcp__codex_apps__gmail_get_recent_emails",
        "namespace": "mcp__codex_apps__gmail",
        "arguments": '{"top_k":5}',
        "call_id": "call-1",
    }
    item = RESPONSE_ITEM_ADAPTER.validate_python(payload)
    assert isinstance(item, FunctionCallResponseItem)
    assert item.id is None
    assert item.namespace == "mcp__codex_apps__gmail"
    assert _roundtrip_response_item(payload) == payload


def test_tool_search_call_roundtrips() -> None:  # 54
    payload = {
        "type": "tool_search_call",
        "call_id": "search-1",
        "execution": "client",
        "arguments": {"query": "calendar create", "limit": 1},
    }
    item = RESPONSE_ITEM_ADAPTER.validate_python(payload)
    assert isinstance(item, ToolSearchCallResponseItem)
    assert (item.id, item.status) == (None, None)
    assert _roundtrip_response_item(payload) == payload


# --------------------------------------------------------------------------- §1.2 / §1.3 shapes

# (input, what Codex 0.163.0 writes back)
_MINIMAL_EXAMPLES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
    ),
    (
        # 0.163.0 writes a None ``content`` as null (captured reasoning lines show it)
        {"type": "reasoning", "summary": [], "encrypted_content": None},
        {"type": "reasoning", "summary": [], "content": None, "encrypted_content": None},
    ),
    (
        {
            "type": "local_shell_call",
            "call_id": "c1",
            "status": "completed",
            "action": {
                "type": "exec",
                "command": ["ls"],
                "timeout_ms": None,
                "working_directory": None,
                "env": None,
                "user": None,
            },
        },
        {
            "type": "local_shell_call",
            "call_id": "c1",
            "status": "completed",
            "action": {
                "type": "exec",
                "command": ["ls"],
                "timeout_ms": None,
                "working_directory": None,
                "env": None,
                "user": None,
            },
        },
    ),
    (
        {
            "type": "local_shell_call",
            "status": "in_progress",
            "action": {"type": "exec", "command": ["ls"]},
        },
        {
            "type": "local_shell_call",
            "call_id": None,
            "status": "in_progress",
            "action": {
                "type": "exec",
                "command": ["ls"],
                "timeout_ms": None,
                "working_directory": None,
                "env": None,
                "user": None,
            },
        },
    ),
    (
        {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"},
        {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"},
    ),
    (
        {"type": "tool_search_call", "execution": "client", "arguments": {"query": "x"}},
        {
            "type": "tool_search_call",
            "call_id": None,
            "execution": "client",
            "arguments": {"query": "x"},
        },
    ),
    (
        {"type": "custom_tool_call", "call_id": "t1", "name": "apply_patch", "input": "..."},
        {"type": "custom_tool_call", "call_id": "t1", "name": "apply_patch", "input": "..."},
    ),
    (
        {"type": "custom_tool_call_output", "call_id": "t1", "output": "ok"},
        {"type": "custom_tool_call_output", "call_id": "t1", "output": "ok"},
    ),
    (
        {
            "type": "tool_search_output",
            "call_id": "s1",
            "status": "completed",
            "execution": "client",
            "tools": [],
        },
        {
            "type": "tool_search_output",
            "call_id": "s1",
            "status": "completed",
            "execution": "client",
            "tools": [],
        },
    ),
    (
        {
            "type": "ghost_snapshot",
            "ghost_commit": {
                "id": "g1",
                "parent": None,
                "preexisting_untracked_files": [],
                "preexisting_untracked_dirs": [],
            },
        },
        {
            "type": "ghost_snapshot",
            "ghost_commit": {
                "id": "g1",
                "parent": None,
                "preexisting_untracked_files": [],
                "preexisting_untracked_dirs": [],
            },
        },
    ),
    (
        {
            "type": "agent_message",
            "author": "/root",
            "recipient": "/root/worker",
            "content": [{"type": "input_text", "text": "continue"}],
        },
        {
            "type": "agent_message",
            "author": "/root",
            "recipient": "/root/worker",
            "content": [{"type": "input_text", "text": "continue"}],
        },
    ),
    (
        {"type": "additional_tools", "role": "developer", "tools": [{"name": "x"}]},
        {"type": "additional_tools", "role": "developer", "tools": [{"name": "x"}]},
    ),
    (
        {"type": "configuration_update", "reasoning": {"effort": "high"}},
        {"type": "configuration_update", "reasoning": {"effort": "high"}},
    ),
    ({"type": "compaction_trigger"}, {"type": "compaction_trigger"}),
    ({"type": "context_compaction", "id": "cmp_1"}, {"type": "context_compaction", "id": "cmp_1"}),
    ({"type": "other"}, {"type": "other"}),
    (
        # Family A message with ``end_turn`` and no id is accepted and kept as it came
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "a"}],
            "end_turn": True,
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "a"}],
            "end_turn": True,
        },
    ),
    (
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "content": [],
            "phase": "final_answer",
        },
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "content": [],
            "phase": "final_answer",
        },
    ),
]


@pytest.mark.parametrize(("payload", "written"), _MINIMAL_EXAMPLES)
def test_response_item_variants_serialize_as_codex_writes_them(
    payload: dict[str, Any], written: dict[str, Any]
) -> None:
    assert _roundtrip_response_item(payload) == written


@pytest.mark.parametrize(
    ("content", "written"),
    [
        (None, {"content": None}),
        ([], {}),
        ([{"type": "text", "text": "only text"}], {}),
        (
            [{"type": "reasoning_text", "text": "raw"}, {"type": "text", "text": "t"}],
            {"content": [{"type": "reasoning_text", "text": "raw"}, {"type": "text", "text": "t"}]},
        ),
    ],
)
def test_reasoning_content_is_written_only_with_a_reasoning_text_entry(
    content: Any, written: dict[str, Any]
) -> None:
    item = ReasoningResponseItem.model_validate({"summary": [], "content": content})
    dumped = orjson.loads(RESPONSE_ITEM_ADAPTER.dump_json(item))
    assert {k: v for k, v in dumped.items() if k == "content"} == written


def test_unknown_response_item_type_is_kept_and_written_back_unchanged() -> None:
    payload = {"type": "future_item", "id": "x1", "nested": {"a": [1, 2, {"b": None}]}}
    item = RESPONSE_ITEM_ADAPTER.validate_python(payload)
    assert isinstance(item, UnknownResponseItem)
    assert _roundtrip_response_item(payload) == payload


def test_literal_other_item_is_codex_other() -> None:
    assert isinstance(RESPONSE_ITEM_ADAPTER.validate_python({"type": "other"}), OtherResponseItem)


def test_unknown_fields_of_known_variants_are_kept() -> None:
    payload = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "hi", "future": 1}],
        "future_field": {"k": "v"},
    }
    assert _roundtrip_response_item(payload) == payload


@pytest.mark.parametrize(
    "payload",
    [
        {"role": "user", "content": []},  # no type
        {"type": 7},  # non-string tag
        ["message"],  # not an object
        {"type": "message", "content": []},  # known variant missing a required field
        {
            "type": "message",
            "role": "user",
            "content": [{"text": "x"}],
        },  # content item without type
        {"type": "message", "role": "user", "content": [], "phase": "later"},  # unknown phase
    ],
)
def test_malformed_response_items_are_rejected(payload: Any) -> None:
    with pytest.raises(ValidationError):
        RESPONSE_ITEM_ADAPTER.validate_python(payload)


@pytest.mark.parametrize(
    ("payload", "written"),
    [
        ({"type": "input_text", "text": "Hello world"}, None),
        (
            {"type": "input_image", "image_url": "https://example.com/one.png", "detail": "high"},
            None,
        ),
        ({"type": "input_image", "image_url": "data:image/png;base64,XYZ"}, None),
        ({"type": "input_image", "file_id": "file_1"}, None),
        ({"type": "output_text", "text": "Hello from Codex"}, None),
        ({"type": "output_text", "text": "a", "annotations": []}, None),
        ({"type": "input_audio", "audio_url": "data:audio/wav;base64,AA"}, None),
        ({"type": "input_file", "file_url": "f"}, None),
    ],
)
def test_content_items_roundtrip(payload: dict[str, Any], written: Any) -> None:
    item = CONTENT_ITEM_ADAPTER.validate_python(payload)
    assert orjson.loads(CONTENT_ITEM_ADAPTER.dump_json(item)) == (written or payload)


def test_unknown_content_item_type_is_kept() -> None:
    assert isinstance(
        CONTENT_ITEM_ADAPTER.validate_python({"type": "input_file", "file_url": "f"}),
        UnknownContentItem,
    )


@pytest.mark.parametrize(
    "payload",
    [{"type": "input_image"}, {"type": "input_image", "detail": "huge", "image_url": "u"}],
)
def test_input_image_needs_a_reference_and_a_known_detail(payload: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        CONTENT_ITEM_ADAPTER.validate_python(payload)


# --------------------------------------------------------------------------- UserInput


@pytest.mark.parametrize(
    ("payload", "written"),
    [
        ({"type": "text", "text": "Hello world", "text_elements": []}, None),
        ({"type": "text", "text": "Hello"}, {"type": "text", "text": "Hello", "text_elements": []}),
        (
            {
                "type": "text",
                "text": "@a b",
                "text_elements": [{"byte_range": {"start": 0, "end": 2}}],
            },
            None,
        ),
        (
            {
                "type": "text",
                "text": "@a",
                "text_elements": [{"byte_range": {"start": 0, "end": 2}, "placeholder": "@a"}],
            },
            None,
        ),
        ({"type": "image", "image_url": "https://example.com/one.png"}, None),
        ({"type": "image", "image_url": "https://example.com/one.png", "detail": "high"}, None),
        ({"type": "local_image", "path": "/tmp/a.png"}, None),
        ({"type": "audio", "audio_url": "https://example.com/a.mp3"}, None),
        ({"type": "local_audio", "path": "/tmp/a.wav"}, None),
        ({"type": "skill", "name": "demo", "path": "skills/demo/SKILL.md"}, None),
        ({"type": "mention", "name": "gmail", "path": "app://gmail"}, None),
        ({"type": "video", "video_url": "v"}, None),
    ],
)
def test_user_inputs_serialize_as_codex_writes_them(payload: dict[str, Any], written: Any) -> None:
    item = USER_INPUT_ADAPTER.validate_python(payload)
    assert orjson.loads(USER_INPUT_ADAPTER.dump_json(item)) == (written or payload)


def test_unknown_user_input_type_is_kept() -> None:
    assert isinstance(USER_INPUT_ADAPTER.validate_python({"type": "video"}), UnknownUserInput)


# --------------------------------------------------------------------------- TurnItem


_TURN_ITEM_EXAMPLES: list[dict[str, Any]] = [
    {
        "type": "UserMessage",
        "id": "7c1e",
        "content": [
            {"type": "text", "text": "Hello world", "text_elements": []},
            {"type": "image", "image_url": "https://example.com/one.png"},
        ],
    },
    {"type": "UserMessage", "id": "u1", "client_id": "c-1", "content": []},
    {
        "type": "HookPrompt",
        "id": "msg-1",
        "fragments": [{"text": "Retry with care & joy.", "hookRunId": "hook-run-1"}],
    },
    {
        "type": "AgentMessage",
        "id": "msg-1",
        "content": [{"type": "Text", "text": "Hello from Codex"}],
    },
    {
        "type": "AgentMessage",
        "id": "m",
        "content": [{"type": "Text", "text": "x"}],
        "phase": "commentary",
    },
    {
        "type": "Reasoning",
        "id": "reasoning_1",
        "summary_text": ["Step 1", "Step 2"],
        "raw_content": ["raw details"],
    },
    {
        "type": "WebSearch",
        "id": "ws_find",
        "query": "'needle' in https://example.com",
        "action": {"type": "find_in_page", "url": "https://example.com", "pattern": "needle"},
    },
    {
        "type": "ImageGeneration",
        "id": "ig_123",
        "status": "completed",
        "revised_prompt": "A small blue square",
        "result": "Zm9v",
    },
    {"type": "Plan", "id": "p1", "text": "- step"},
    {"type": "ContextCompaction", "id": "c1"},
    {"type": "ImageView", "id": "iv", "path": "file:///tmp/a.png"},
    {"type": "Sleep", "id": "s", "duration_ms": 5},
    {"type": "FunctionCallOutput", "id": "f", "name": "tool", "output": "ok"},
    {
        "type": "DynamicToolCall",
        "id": "call_dyn_1",
        "tool": "lookup_weather",
        "arguments": {"city": "Paris"},
        "status": "in_progress",
    },
    {
        "type": "McpToolCall",
        "id": "m1",
        "server": "s",
        "tool": "t",
        "arguments": None,
        "status": "inProgress",
    },
    {
        "type": "FileChange",
        "id": "p",
        "changes": {"/r/a": {"type": "update", "unified_diff": "@@", "move_path": None}},
    },
    {
        "type": "CollabAgentToolCall",
        "id": "c",
        "tool": "spawn_agent",
        "status": "completed",
        "sender_thread_id": "t1",
        "receiver_thread_ids": ["t2"],
        "receiver_agents": [],
        "agents_states": {"t2": {"completed": None}},
    },
    {
        "type": "SubAgentActivity",
        "id": "a",
        "kind": "started",
        "agent_thread_id": "t",
        "agent_path": "/root/w",
    },
    {
        "type": "EnteredReviewMode",
        "id": "r",
        "target": {"type": "uncommittedChanges"},
        "user_facing_hint": "h",
    },
    {"type": "ExitedReviewMode", "id": "r", "review_output": None},
    {"type": "Extension", "kind": "clock.sleep", "id": "sleep-1", "durationMs": 1000},
]


@pytest.mark.parametrize(
    "payload", _TURN_ITEM_EXAMPLES, ids=[p["type"] for p in _TURN_ITEM_EXAMPLES]
)
def test_turn_items_roundtrip(payload: dict[str, Any]) -> None:
    assert _roundtrip_turn_item(payload) == payload


def test_turn_items_built_in_code_omit_the_optional_fields_codex_omits() -> None:
    user = UserMessageItem(id="u", content=[TextUserInput(text="hi")])
    agent = AgentMessageItem(id="a", content=[TextAgentMessageContent(text="hi")])
    tool = DynamicToolCallItem(id="d", tool="t", arguments={}, status="in_progress")
    assert orjson.loads(TURN_ITEM_ADAPTER.dump_json(user)) == {
        "type": "UserMessage",
        "id": "u",
        "content": [{"type": "text", "text": "hi", "text_elements": []}],
    }
    assert orjson.loads(TURN_ITEM_ADAPTER.dump_json(agent)) == {
        "type": "AgentMessage",
        "id": "a",
        "content": [{"type": "Text", "text": "hi"}],
    }
    assert orjson.loads(TURN_ITEM_ADAPTER.dump_json(tool)) == {
        "type": "DynamicToolCall",
        "id": "d",
        "tool": "t",
        "arguments": {},
        "status": "in_progress",
    }


def test_unknown_turn_item_type_is_kept() -> None:
    assert isinstance(TURN_ITEM_ADAPTER.validate_python({"type": "Extension"}), UnknownTurnItem)


def test_turn_item_tags_are_pascal_case() -> None:
    with pytest.raises(ValidationError):
        TURN_ITEM_ADAPTER.validate_python({"type": "UserMessage", "content": []})  # missing id
    assert isinstance(
        TURN_ITEM_ADAPTER.validate_python({"type": "user_message", "id": "x"}), UnknownTurnItem
    )


def test_aliased_fields_take_python_names_and_write_wire_names() -> None:
    fragment = HookPromptFragment(text="t", hook_run_id="r")
    assert fragment.model_dump() == {"text": "t", "hookRunId": "r"}
    assert HookPromptFragment.model_validate({"text": "t", "hookRunId": "r"}) == fragment
    item = MessageResponseItem(role="user", content=[InputTextContentItem(text="x")])
    assert RESPONSE_ITEM_ADAPTER.validate_python(item.model_dump()) == item


def _core_unions() -> list[tuple[str, Any]]:
    """Every module-level core union whose discriminator keeps unknown tags."""
    found: dict[str, Any] = {}
    for module in (_response_item, _turn_item, _user_input, _event_msg, _rollout):
        for name, value in vars(module).items():
            if get_origin(value) is Annotated and any(
                isinstance(meta, Discriminator) for meta in value.__metadata__
            ):
                found[name] = value
    return sorted(found.items())


_CORE_UNIONS = _core_unions()


def test_every_core_union_keeps_unknown_tags() -> None:
    assert [name for name, _ in _CORE_UNIONS] == [
        "AgentMessageContent",
        "AgentMessageInputContent",
        "ContentItem",
        "DynamicToolCallOutputContentItem",
        "EventMsg",
        "FileChange",
        "FunctionCallOutputContentItem",
        "LocalShellAction",
        "ParsedCommand",
        "ReasoningItemContent",
        "ReasoningItemReasoningSummary",
        "ResponseItem",
        "RolloutLine",
        "TurnItem",
        "UserInput",
        "WebSearchAction",
    ]


@pytest.mark.parametrize(("name", "union"), _CORE_UNIONS, ids=[n for n, _ in _CORE_UNIONS])
def test_every_member_of_a_core_union_is_reached_by_its_own_tags(name: str, union: Any) -> None:
    variants, discriminator = get_args(union)[0], union.__metadata__[-1]
    discriminate = discriminator.discriminator
    for member in get_args(variants):
        model, tag = get_args(member)
        assert isinstance(tag, Tag)
        if tag.tag == "<unknown>":
            continue
        for literal in get_args(model.model_fields["type"].annotation):
            assert discriminate({"type": literal}) == tag.tag, (name, literal)
    assert discriminate({"type": "zz_not_a_codex_tag"}) == "<unknown>"
    assert discriminate({"type": 3}) is None
    assert discriminate({}) is None
