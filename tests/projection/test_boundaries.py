"""User-turn boundaries, and where the three consumers of a message disagree, as Codex's do.

Upstream cases are core-projection.md §5.3 (30-35, history_tests.rs). The consumer table is the one
of issue 3: parse_turn_item, is_user_turn_boundary and the rollout user positions each answer
differently for the same item.
"""

from __future__ import annotations

from typing import Any

import pytest

from codex_app_bridge import (
    is_user_turn_boundary,
    parse_turn_item,
    user_message_positions_in_rollout,
)
from codex_app_bridge.projection import agent_path_error, parse_inter_agent_communication
from codex_app_bridge.protocol.core import (
    AgentMessageItem,
    HookPromptItem,
    InputImageContentItem,
    InputTextContentItem,
    OutputTextContentItem,
    ReasoningItem,
    ResponseItem,
    UserMessageItem,
    WebSearchItem,
)
from tests.projection._builders import IA, A, D, U, inter_agent_json, item, line, msg

# --------------------------------------------------------------------------- upstream (30-35)


def test_inter_agent_assistant_messages_are_turn_boundaries() -> None:  # 30
    assert is_user_turn_boundary(IA("continue", True))


def test_inter_agent_instruction_boundary_ignores_trigger_turn() -> None:  # 30, [derived]
    assert is_user_turn_boundary(IA("queued", False))


def test_legacy_inter_agent_assistant_messages_are_not_turn_boundaries() -> None:  # 33
    assert not is_user_turn_boundary(
        A("author: /root\nrecipient: /root/worker\nother_recipients: []\nContent: continue")
    )


def test_identifies_user_directed_turn_boundaries() -> None:  # 34
    agent_message = item(
        {"type": "agent_message", "author": "/root", "recipient": "/root/worker", "content": []}
    )
    assert is_user_turn_boundary(U("hello"))
    assert is_user_turn_boundary(agent_message)
    assert is_user_turn_boundary(IA("continue", True))


def test_excludes_context_and_non_input_items() -> None:  # 35
    assert not is_user_turn_boundary(
        U("<environment_context><cwd>/tmp</cwd></environment_context>")
    )
    assert not is_user_turn_boundary(A("done"))
    assert not is_user_turn_boundary(item({"type": "other"}))


# --------------------------------------------------------------------------- consumer disagreement


def _hook_prompt() -> ResponseItem:
    return U('<hook_prompt hook_run_id="run-1">Retry.</hook_prompt>')


# (name, item, parse_turn_item result type or None, is_user_turn_boundary, counted as user position)
_CONSUMERS: list[tuple[str, ResponseItem, type | None, bool, bool]] = [
    ("plain user message", U("hello"), UserMessageItem, True, True),
    (
        "contextual user message",
        U("<environment_context>x</environment_context>"),
        None,
        False,
        False,
    ),
    ("hook prompt message", _hook_prompt(), HookPromptItem, False, False),
    ("assistant message", A("done"), AgentMessageItem, False, False),
    ("assistant inter-agent instruction", IA("continue", True), AgentMessageItem, True, False),
    (
        "agent_message item",
        item(
            {
                "type": "agent_message",
                "author": "/root",
                "recipient": "/root/w",
                "content": [{"type": "input_text", "text": "go"}],
            }
        ),
        None,
        True,
        False,
    ),
    (
        "reasoning",
        item({"type": "reasoning", "id": "rs", "summary": []}),
        ReasoningItem,
        False,
        False,
    ),
    ("web search call", item({"type": "web_search_call", "id": "ws"}), WebSearchItem, False, False),
    (
        "image generation without id",
        item({"type": "image_generation_call", "status": "completed", "result": "Zm9v"}),
        None,
        False,
        False,
    ),
    (
        "developer message",
        D("<permissions instructions>x</permissions instructions>"),
        None,
        False,
        False,
    ),
    (
        "user message of only output_text",
        msg("user", OutputTextContentItem(text="u1")),
        UserMessageItem,
        True,
        True,
    ),
]


@pytest.mark.parametrize(
    ("name", "response_item", "turn_item_type", "boundary", "counted"),
    _CONSUMERS,
    ids=[row[0] for row in _CONSUMERS],
)
def test_consumers_disagree_exactly_where_codex_does(
    name: str,
    response_item: ResponseItem,
    turn_item_type: type | None,
    boundary: bool,
    counted: bool,
) -> None:
    projected = parse_turn_item(response_item)
    if turn_item_type is None:
        assert projected is None, name
    else:
        assert isinstance(projected, turn_item_type), name
    assert is_user_turn_boundary(response_item) is boundary, name
    assert user_message_positions_in_rollout([line(response_item)]) == ([0] if counted else []), (
        name
    )


# --------------------------------------------------------------------------- inter-agent JSON


@pytest.mark.parametrize(
    "text",
    [
        inter_agent_json("go"),
        inter_agent_json("go", False),
        '{"author":"/root","recipient":"/root/a/b_1","content":"","trigger_turn":false}',  # other_recipients defaults
        inter_agent_json("go", extra_field={"nested": [1]}),  # unknown keys ignored
        inter_agent_json("go", id="x", encrypted_content=None),
        " \n" + inter_agent_json("go") + "\t",  # JSON whitespace around
        '{"author":"/morpheus","recipient":"/root","content":"c","trigger_turn":true}',
    ],
)
def test_assistant_message_with_inter_agent_json_is_an_instruction(text: str) -> None:
    for content_item in (OutputTextContentItem(text=text), InputTextContentItem(text=text)):
        assert parse_inter_agent_communication([content_item]) is not None
        assert is_user_turn_boundary(msg("assistant", content_item))


@pytest.mark.parametrize(
    "text",
    [
        '{"author":"/root","recipient":"/root/worker","content":"go"}',  # trigger_turn missing
        '{"author":"/root","recipient":"/root/worker","trigger_turn":true}',  # content missing
        '{"author":"/root","recipient":"/root/worker","content":"go","trigger_turn":"yes"}',
        '{"author":"/root","recipient":"/root/worker","content":7,"trigger_turn":true}',
        '{"author":"/root","recipient":"/root/worker","other_recipients":null,"content":"go","trigger_turn":true}',
        '{"author":"/root","recipient":"/root/worker","other_recipients":["bad"],"content":"go","trigger_turn":true}',
        '{"author":"/root","recipient":"/root/Worker","content":"go","trigger_turn":true}',
        '{"author":"root","recipient":"/root/worker","content":"go","trigger_turn":true}',
        '{"author":"/root","recipient":"/root/worker","content":"go","trigger_turn":true,"content":"x"}',  # duplicate
        '{"author":"/root","recipient":"/root/worker","content":"go","trigger_turn":true,"id":5}',
        '{"author":"/root","recipient":"/root/worker","content":"\\ud800","trigger_turn":true}',  # lone surrogate
        '{"author":"/root","recipient":"/root/worker","content":"go","trigger_turn":true} trailing',
        '{"author":"/root","recipient":"/root/worker","content":NaN,"trigger_turn":true}',
        '["/root","/root/worker",[],"go",true]',
        "not json at all",
        "",
    ],
)
def test_malformed_inter_agent_json_is_not_an_instruction(text: str) -> None:
    assert parse_inter_agent_communication([OutputTextContentItem(text=text)]) is None
    assert not is_user_turn_boundary(A(text))


def test_inter_agent_instruction_needs_exactly_one_text_item() -> None:
    text = inter_agent_json("go")
    assert not is_user_turn_boundary(
        msg("assistant", OutputTextContentItem(text=text), OutputTextContentItem(text="x"))
    )
    assert not is_user_turn_boundary(msg("assistant"))
    assert not is_user_turn_boundary(msg("assistant", InputImageContentItem(image_url=text)))
    assert not is_user_turn_boundary(msg("developer", InputTextContentItem(text=text)))


def test_parsed_instruction_carries_its_fields() -> None:
    communication = parse_inter_agent_communication(
        [OutputTextContentItem(text=inter_agent_json("go", False))]
    )
    assert communication is not None
    assert (
        communication.author,
        communication.recipient,
        communication.content,
        communication.trigger_turn,
    ) == (
        "/root",
        "/root/worker",
        "go",
        False,
    )


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("/root", None),
        ("/root/worker", None),
        ("/root/a/b/c_9", None),
        ("/morpheus", None),
        ("", "absolute agent paths must start with `/root` or be `/morpheus`"),
        ("root", "absolute agent paths must start with `/root` or be `/morpheus`"),
        ("/", "absolute agent paths must start with `/root` or be `/morpheus`"),
        ("/rooted", "absolute agent paths must start with `/root` or be `/morpheus`"),
        ("/morpheus/x", "absolute agent paths must start with `/root` or be `/morpheus`"),
        ("/root/", "absolute agent path must not end with `/`"),
        ("/root//x", "agent_name must not be empty"),
        ("/root/root", "agent_name `root` is reserved"),
        ("/root/..", "agent_name `..` is reserved"),
        ("/root/Worker", "agent_name must use only lowercase letters, digits, and underscores"),
        ("/root/wörker", "agent_name must use only lowercase letters, digits, and underscores"),
        ("/root/a-b", "agent_name must use only lowercase letters, digits, and underscores"),
    ],
)
def test_agent_path_validation_matches_0_163(path: str, error: str | None) -> None:
    assert agent_path_error(path) == error


def test_user_message_with_any_contextual_item_is_not_a_boundary() -> None:
    mixed: Any = msg(
        "user",
        InputTextContentItem(text="real question"),
        InputTextContentItem(text="<user_shell_command>ls</user_shell_command>"),
    )
    assert not is_user_turn_boundary(mixed)
    assert is_user_turn_boundary(msg("user", InputImageContentItem(image_url="u")))
