"""parse_turn_item: which history items become visible turn items, as Codex 0.163.0 decides.

Upstream cases are core-projection.md §5.1 (event_mapping_tests.rs); case numbers in the test
names' comments. Case 3 (token-budget *reminder* developer content) is not ported: its tag does not
exist in the 0.163.0 binary, so there is no 0.163.0 behaviour to match.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import orjson
import pytest

from codex_app_bridge import parse_turn_item, web_search_action_detail
from codex_app_bridge.projection import (
    has_non_contextual_dev_message_content,
    is_contextual_dev_message_content,
)
from codex_app_bridge.protocol.core import (
    TURN_ITEM_ADAPTER,
    WEB_SEARCH_ACTION_ADAPTER,
    AgentMessageItem,
    HookPromptFragment,
    HookPromptItem,
    ImageGenerationItem,
    InputAudioContentItem,
    InputImageContentItem,
    InputTextContentItem,
    OutputTextContentItem,
    ReasoningItem,
    TurnItem,
    UnknownContentItem,
    UserMessageItem,
    WebSearchItem,
)
from tests.projection._builders import A, D, U, item, msg

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _json(turn_item: TurnItem | None) -> Any:
    return None if turn_item is None else orjson.loads(TURN_ITEM_ADAPTER.dump_json(turn_item))


def _user_content(turn_item: TurnItem | None) -> list[dict[str, Any]]:
    assert isinstance(turn_item, UserMessageItem), turn_item
    assert UUID.match(turn_item.id)
    return _json(turn_item)["content"]


# --------------------------------------------------------------------------- developer content (1-5)


@pytest.mark.parametrize(
    "text",
    [
        "<skills_instructions>\n## Skills",  # 1
        "<token_budget>\nYou have 710 tokens left in this context window.\n</token_budget>",  # 2
        "<context_window>\nThread id: 00000000-0000-0000-0000-000000000000\n</context_window>",  # 4
        "<context_window_guidance>\nPreserve important state.\n</context_window_guidance>",  # 5
        "  <PERMISSIONS INSTRUCTIONS>\nx",  # prefix is ASCII case-insensitive after leading space
        'Approved command prefix saved:\n- ["ls"]',
        "<rollout_budget>\n1000\n</rollout_budget>",
    ],
)
def test_developer_context_prefixes_are_contextual(text: str) -> None:
    content = [InputTextContentItem(text=text)]
    assert is_contextual_dev_message_content(content)
    assert not has_non_contextual_dev_message_content(content)


@pytest.mark.parametrize(
    "text",
    [
        "Generated images are saved to /tmp",
        "x <tools>",
        "<token_budget_reminder>\n1\n</token_budget_reminder>",
    ],
)
def test_other_developer_text_is_not_contextual(text: str) -> None:
    assert not is_contextual_dev_message_content([InputTextContentItem(text=text)])


def test_developer_message_never_projects_and_mixed_bundle_has_non_contextual_text() -> None:
    bundle = [
        InputTextContentItem(text="<permissions instructions>p</permissions instructions>"),
        InputTextContentItem(text="persistent plugin instructions"),
    ]
    assert is_contextual_dev_message_content(bundle)
    assert has_non_contextual_dev_message_content(bundle)
    assert parse_turn_item(msg("developer", *bundle)) is None


# --------------------------------------------------------------------------- user messages (6-13)


def test_parses_user_message_with_text_and_two_images() -> None:  # 6
    parsed = parse_turn_item(
        msg(
            "user",
            InputTextContentItem(text="Hello world"),
            InputImageContentItem(image_url="https://example.com/one.png", detail="high"),
            InputImageContentItem(image_url="https://example.com/two.jpg", detail="high"),
        )
    )
    assert _user_content(parsed) == [
        {"type": "text", "text": "Hello world", "text_elements": []},
        {"type": "image", "image_url": "https://example.com/one.png", "detail": "high"},
        {"type": "image", "image_url": "https://example.com/two.jpg", "detail": "high"},
    ]


@pytest.mark.parametrize(
    "open_label",
    [
        '<image name=[Image #1] path="/tmp/local.png">',  # 7
        "<image name=[Image #1]>",  # 7, Family A label
        "<image>",  # 9
    ],
)
def test_skips_image_label_text_next_to_its_image(open_label: str) -> None:  # 7, 9
    parsed = parse_turn_item(
        msg(
            "user",
            InputTextContentItem(text=open_label),
            InputImageContentItem(image_url="data:image/png;base64,abc", detail="high"),
            InputTextContentItem(text="</image>"),
            InputTextContentItem(text="Please review this image."),
        )
    )
    assert _user_content(parsed) == [
        {"type": "image", "image_url": "data:image/png;base64,abc", "detail": "high"},
        {"type": "text", "text": "Please review this image.", "text_elements": []},
    ]


def test_parses_assistant_message_input_text_for_backward_compatibility() -> None:  # 8
    text = "author: /root\nrecipient: /root/worker\nother_recipients: []\nContent: continue"
    parsed = parse_turn_item(msg("assistant", InputTextContentItem(text=text)))
    assert isinstance(parsed, AgentMessageItem)
    assert _json(parsed)["content"] == [{"type": "Text", "text": text}]


@pytest.mark.parametrize(
    "texts",
    [
        [
            "# AGENTS.md instructions for test_directory\n\n<INSTRUCTIONS>\ntest_text\n</INSTRUCTIONS>"
        ],  # a, c
        ["<environment_context>test_text</environment_context>"],  # b
        ["<skill>\n<name>demo</name>\n<path>skills/demo/SKILL.md</path>\nbody\n</skill>"],  # d
        ["<user_shell_command>echo 42</user_shell_command>"],  # e
        [
            "<environment_context>ctx</environment_context>",
            "# AGENTS.md instructions for dir\n\n<INSTRUCTIONS>\nbody\n</INSTRUCTIONS>",
        ],  # f
    ],
)
def test_skips_user_instructions_and_env(texts: list[str]) -> None:  # 10
    assert parse_turn_item(msg("user", *(InputTextContentItem(text=t) for t in texts))) is None


def test_parses_hook_prompt_message_as_distinct_turn_item() -> None:  # 11
    from codex_app_bridge import build_hook_prompt_message

    message = build_hook_prompt_message(
        [
            HookPromptFragment(
                text="Retry with exactly the phrase meow meow meow.", hook_run_id="hook-run-1"
            )
        ]
    )
    assert message is not None
    assert message.role == "user"
    assert message.id is not None
    assert re.match(r"^msg_[0-9a-f-]{36}$", message.id)
    assert [c.model_dump() for c in message.content] == [
        {
            "type": "input_text",
            "text": '<hook_prompt hook_run_id="hook-run-1">Retry with exactly the phrase meow meow meow.</hook_prompt>',
        }
    ]
    parsed = parse_turn_item(message)
    assert isinstance(parsed, HookPromptItem)
    assert parsed.id == message.id
    assert _json(parsed)["fragments"] == [
        {"text": "Retry with exactly the phrase meow meow meow.", "hookRunId": "hook-run-1"}
    ]


def test_parses_hook_prompt_and_hides_other_contextual_fragments() -> None:  # 12
    parsed = parse_turn_item(
        msg(
            "user",
            InputTextContentItem(text="<environment_context>ctx</environment_context>"),
            InputTextContentItem(
                text='<hook_prompt hook_run_id="hook-run-1">Retry with care &amp; joy.</hook_prompt>'
            ),
            id="msg-1",
        )
    )
    assert _json(parsed) == {
        "type": "HookPrompt",
        "id": "msg-1",
        "fragments": [{"text": "Retry with care & joy.", "hookRunId": "hook-run-1"}],
    }


def test_internal_model_context_does_not_parse_as_visible_turn_item() -> None:  # 13
    text = (
        '<codex_internal_context source="extension">\nInternal steering.\n</codex_internal_context>'
    )
    assert parse_turn_item(msg("user", InputTextContentItem(text=text), id="msg-1")) is None


# --------------------------------------------------------------------------- assistant, reasoning (14-16)


def test_parses_agent_message() -> None:  # 14
    parsed = parse_turn_item(
        msg("assistant", OutputTextContentItem(text="Hello from Codex"), id="msg-1")
    )
    assert _json(parsed) == {
        "type": "AgentMessage",
        "id": "msg-1",
        "content": [{"type": "Text", "text": "Hello from Codex"}],
    }


def test_parses_reasoning_summary_and_raw_content() -> None:  # 15
    parsed = parse_turn_item(
        item(
            {
                "type": "reasoning",
                "id": "reasoning_1",
                "summary": [
                    {"type": "summary_text", "text": "Step 1"},
                    {"type": "summary_text", "text": "Step 2"},
                ],
                "content": [{"type": "reasoning_text", "text": "raw details"}],
                "encrypted_content": None,
            }
        )
    )
    assert parsed == ReasoningItem(
        id="reasoning_1", summary_text=["Step 1", "Step 2"], raw_content=["raw details"]
    )


def test_parses_reasoning_including_raw_content() -> None:  # 16
    parsed = parse_turn_item(
        item(
            {
                "type": "reasoning",
                "id": "reasoning_2",
                "summary": [{"type": "summary_text", "text": "Summarized step"}],
                "content": [
                    {"type": "reasoning_text", "text": "raw step"},
                    {"type": "text", "text": "final thought"},
                ],
            }
        )
    )
    assert isinstance(parsed, ReasoningItem)
    assert parsed.raw_content == ["raw step", "final thought"]


# --------------------------------------------------------------------------- web search (17-20)


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (  # 17
            {
                "type": "web_search_call",
                "id": "ws_1",
                "status": "completed",
                "action": {"type": "search", "query": "weather"},
            },
            {
                "type": "WebSearch",
                "id": "ws_1",
                "query": "weather",
                "action": {"type": "search", "query": "weather"},
            },
        ),
        (  # 18
            {
                "type": "web_search_call",
                "id": "ws_open",
                "action": {"type": "open_page", "url": "https://example.com"},
            },
            {
                "type": "WebSearch",
                "id": "ws_open",
                "query": "https://example.com",
                "action": {"type": "open_page", "url": "https://example.com"},
            },
        ),
        (  # 19
            {
                "type": "web_search_call",
                "id": "ws_find",
                "action": {
                    "type": "find_in_page",
                    "url": "https://example.com",
                    "pattern": "needle",
                },
            },
            {
                "type": "WebSearch",
                "id": "ws_find",
                "query": "'needle' in https://example.com",
                "action": {
                    "type": "find_in_page",
                    "url": "https://example.com",
                    "pattern": "needle",
                },
            },
        ),
        (  # 20
            {"type": "web_search_call", "id": "ws_partial", "status": "in_progress"},
            {"type": "WebSearch", "id": "ws_partial", "query": "", "action": {"type": "other"}},
        ),
        (  # missing id gives "", an unknown action type is read as Codex's Other
            {"type": "web_search_call", "action": {"type": "browse", "url": "u"}},
            {"type": "WebSearch", "id": "", "query": "", "action": {"type": "other"}},
        ),
    ],
)
def test_parses_web_search_calls(
    payload: dict[str, Any], expected: dict[str, Any]
) -> None:  # 17-20
    parsed = parse_turn_item(item(payload))
    assert isinstance(parsed, WebSearchItem)
    assert _json(parsed) == expected


@pytest.mark.parametrize(
    ("action", "query"),
    [
        ({"type": "search", "query": "q"}, "q"),
        ({"type": "search", "query": "", "queries": ["a", "b"]}, "a ..."),
        ({"type": "search", "queries": ["a"]}, "a"),
        ({"type": "search", "queries": ["", "b"]}, ""),
        ({"type": "search"}, ""),
        ({"type": "open_page"}, ""),
        ({"type": "find_in_page", "pattern": "p"}, "'p'"),
        ({"type": "find_in_page", "url": "u"}, "u"),
        ({"type": "find_in_page"}, ""),
        ({"type": "other"}, ""),
    ],
)
def test_web_search_action_detail(action: dict[str, Any], query: str) -> None:
    assert web_search_action_detail(WEB_SEARCH_ACTION_ADAPTER.validate_python(action)) == query


# --------------------------------------------------------------------------- spec §3 edge cases


def test_image_generation_call_projects_only_with_an_id() -> None:
    call = {
        "type": "image_generation_call",
        "status": "completed",
        "revised_prompt": "p",
        "result": "Zm9v",
    }
    assert parse_turn_item(item(call)) is None
    assert parse_turn_item(item({**call, "id": "ig_1"})) == ImageGenerationItem(
        id="ig_1", status="completed", revised_prompt="p", result="Zm9v"
    )


def test_empty_string_ids_are_kept_not_replaced() -> None:
    assert (
        _json(parse_turn_item(msg("assistant", OutputTextContentItem(text="x"), id="")))["id"] == ""
    )
    assert parse_turn_item(item({"type": "reasoning", "id": "", "summary": []})) == ReasoningItem(
        id="", summary_text=[], raw_content=[]
    )


def test_user_message_gets_a_fresh_uuid_not_its_msg_id() -> None:
    parsed = parse_turn_item(
        msg("user", InputTextContentItem(text="hi"), id="msg_01a229f2-8bf8-77e3-ae91-d7521b0d8cb1")
    )
    assert isinstance(parsed, UserMessageItem)
    assert parsed.id != "msg_01a229f2-8bf8-77e3-ae91-d7521b0d8cb1"
    assert UUID.match(parsed.id)
    assert parsed.id[14] == "7"
    assert "client_id" not in _json(parsed)


def test_assistant_message_without_id_gets_a_fresh_uuid_and_keeps_phase() -> None:
    parsed = parse_turn_item(
        item(
            {
                "type": "message",
                "role": "assistant",
                "phase": "commentary",
                "content": [{"type": "output_text", "text": "x"}],
            }
        )
    )
    assert isinstance(parsed, AgentMessageItem)
    assert UUID.match(parsed.id)
    assert parsed.phase == "commentary"


def test_output_text_in_user_message_is_dropped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        parsed = parse_turn_item(
            msg("user", OutputTextContentItem(text="echo"), InputTextContentItem(text="hi"))
        )
    assert _user_content(parsed) == [{"type": "text", "text": "hi", "text_elements": []}]
    assert "Output text in user message: echo" in caplog.text


def test_user_message_of_only_output_text_is_an_empty_user_message() -> None:
    assert _user_content(parse_turn_item(msg("user", OutputTextContentItem(text="u1")))) == []
    assert _user_content(parse_turn_item(msg("user"))) == []


def test_assistant_message_skips_media_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        parsed = parse_turn_item(
            msg(
                "assistant",
                InputImageContentItem(image_url="u"),
                InputTextContentItem(text="a"),
                OutputTextContentItem(text="b"),
            )
        )
    assert _json(parsed)["content"] == [
        {"type": "Text", "text": "a"},
        {"type": "Text", "text": "b"},
    ]
    assert "Unexpected content item in agent message" in caplog.text


@pytest.mark.parametrize("role", ["system", "developer", "User", "ASSISTANT", "tool", ""])
def test_other_roles_give_nothing(role: str) -> None:
    assert parse_turn_item(msg(role, InputTextContentItem(text="hello"))) is None


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"},
        {
            "type": "local_shell_call",
            "call_id": "c",
            "status": "completed",
            "action": {"type": "exec", "command": ["ls"]},
        },
        {"type": "custom_tool_call", "call_id": "t", "name": "apply_patch", "input": "x"},
        {"type": "custom_tool_call_output", "call_id": "t", "output": "ok"},
        {"type": "tool_search_call", "call_id": "s", "execution": "client", "arguments": {}},
        {
            "type": "tool_search_output",
            "call_id": "s",
            "status": "completed",
            "execution": "client",
            "tools": [],
        },
        {"type": "compaction", "encrypted_content": "x"},
        {"type": "ghost_snapshot", "ghost_commit": {"id": "g"}},
        {
            "type": "agent_message",
            "author": "/root",
            "recipient": "/root/w",
            "content": [{"type": "input_text", "text": "go"}],
        },
        {"type": "additional_tools", "role": "developer", "tools": []},
        {"type": "configuration_update", "reasoning": {"effort": "low"}},
        {"type": "compaction_trigger"},
        {"type": "context_compaction"},
        {"type": "other"},
        {"type": "something_new", "text": "hi"},
    ],
)
def test_every_other_variant_gives_nothing(payload: dict[str, Any]) -> None:
    assert parse_turn_item(item(payload)) is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (  # open label before a non-image is plain text
            [InputTextContentItem(text="<image>"), InputTextContentItem(text="x")],
            [
                {"type": "text", "text": "<image>", "text_elements": []},
                {"type": "text", "text": "x", "text_elements": []},
            ],
        ),
        (  # a close label at index 0 is kept (no previous item)
            [InputTextContentItem(text="</image>"), InputImageContentItem(image_url="u")],
            [
                {"type": "text", "text": "</image>", "text_elements": []},
                {"type": "image", "image_url": "u"},
            ],
        ),
        (  # labels are case-sensitive and untrimmed
            [
                InputTextContentItem(text=" <image>"),
                InputImageContentItem(image_url="u"),
                InputTextContentItem(text="</IMAGE>"),
            ],
            [
                {"type": "text", "text": " <image>", "text_elements": []},
                {"type": "image", "image_url": "u"},
                {"type": "text", "text": "</IMAGE>", "text_elements": []},
            ],
        ),
        (  # audio labels next to audio are dropped, the audio becomes an audio input
            [
                InputTextContentItem(text='<audio name=[Audio #1] path="/tmp/a.wav">'),
                InputAudioContentItem(audio_url="data:audio/wav;base64,AA"),
                InputTextContentItem(text="</audio>"),
            ],
            [{"type": "audio", "audio_url": "data:audio/wav;base64,AA"}],
        ),
        (  # an image label next to audio (and vice versa) is kept as text
            [
                InputTextContentItem(text="<image>"),
                InputAudioContentItem(audio_url="a"),
                InputTextContentItem(text="</image>"),
            ],
            [
                {"type": "text", "text": "<image>", "text_elements": []},
                {"type": "audio", "audio_url": "a"},
                {"type": "text", "text": "</image>", "text_elements": []},
            ],
        ),
        (  # labels are not paired: an unmatched close after an image is still dropped
            [
                InputImageContentItem(image_url="u", detail="low"),
                InputTextContentItem(text="</image>"),
            ],
            [{"type": "image", "image_url": "u", "detail": "low"}],
        ),
        (  # file_id image references pass through
            [InputImageContentItem(file_id="file_1")],
            [{"type": "image", "file_id": "file_1"}],
        ),
        (  # unknown content items are skipped instead of failing the message
            [UnknownContentItem(type="input_file"), InputTextContentItem(text="x")],
            [{"type": "text", "text": "x", "text_elements": []}],
        ),
    ],
)
def test_media_labels_and_content_conversion(
    content: list[Any], expected: list[dict[str, Any]]
) -> None:
    assert _user_content(parse_turn_item(msg("user", *content))) == expected


def test_one_contextual_fragment_hides_ordinary_text_next_to_it() -> None:
    assert (
        parse_turn_item(
            msg(
                "user",
                InputTextContentItem(text="look at this"),
                InputTextContentItem(text="<turn_aborted>x</turn_aborted>"),
            )
        )
        is None
    )


def test_hook_prompt_with_ordinary_text_or_image_disappears_entirely() -> None:
    hook = InputTextContentItem(text='<hook_prompt hook_run_id="r">t</hook_prompt>')
    assert parse_turn_item(msg("user", hook, InputTextContentItem(text="plain"))) is None
    assert parse_turn_item(msg("user", hook, InputImageContentItem(image_url="u"))) is None


def test_hook_prompt_without_message_id_gets_a_fresh_id() -> None:
    parsed = parse_turn_item(U('<hook_prompt hook_run_id="r">t</hook_prompt>'))
    assert isinstance(parsed, HookPromptItem)
    assert UUID.match(parsed.id)


def test_assistant_inter_agent_envelope_is_still_an_agent_message() -> None:
    text = '{"author":"/root","recipient":"/root/worker","other_recipients":[],"content":"go","trigger_turn":true}'
    parsed = parse_turn_item(A(text))
    assert isinstance(parsed, AgentMessageItem)
    assert _json(parsed)["content"] == [{"type": "Text", "text": text}]


def test_developer_and_user_builders_agree_with_roles() -> None:
    assert parse_turn_item(D("hello")) is None
    assert isinstance(parse_turn_item(U("hello")), UserMessageItem)
