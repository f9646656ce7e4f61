"""Contextual fragments and hook prompts: the injected text Codex 0.163.0 hides.

Upstream cases are core-projection.md §5.2 (21-29); the rest pins the matching rules of §3.3 and
§3.6 (byte-wise ASCII case folding, Rust whitespace, the 0.163.0 marker set) and the places where
this port settles a gap of the spec (the module docstring of ``projection._contextual`` says how).
"""

from __future__ import annotations

import pytest

from codex_app_bridge.projection import (
    build_hook_prompt_message,
    is_contextual_user_fragment,
    is_standard_contextual_user_text,
    parse_hook_prompt_fragment,
    parse_hook_prompt_message,
    serialize_hook_prompt_fragment,
)
from codex_app_bridge.protocol.core import (
    HookPromptFragment,
    InputImageContentItem,
    InputTextContentItem,
    OutputTextContentItem,
)


def _contextual(text: str) -> bool:
    return is_contextual_user_fragment(InputTextContentItem(text=text))


@pytest.mark.parametrize(
    "text",
    [
        "<environment_context>\n<cwd>/tmp</cwd>\n</environment_context>",  # 21
        "<goal_context>\nlegacy hidden goal prompt\n</goal_context>",  # 23
        "# AGENTS.md instructions for /tmp\n\n<INSTRUCTIONS>\nbody\n</INSTRUCTIONS>",  # 24
        "<SUBAGENT_NOTIFICATION>{}</subagent_notification>",  # 25
        # the 0.163.0 AGENTS.md START has no " for " (binary literal)
        "# AGENTS.md instructions\n\n<INSTRUCTIONS>\nbody\n</INSTRUCTIONS>",
        "<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>",
        "<agent_message_board_notification>x</agent_message_board_notification>",
        "<recommended_plugins>x</recommended_plugins>",
        "<skill></skill>",  # markers may abut
        "\u3000\t<Environment_Context>x</ENVIRONMENT_CONTEXT>\u2028 ",  # unicode trim, ASCII folding
        "<external_ci_status>green</external_ci_status>",
        "  <external_a>b</external_a>\n",
        '<codex_internal_context source="user_goal">\nShip it.\n</codex_internal_context>',
        '<codex_internal_context source="goal">\nx\n\n</codex_internal_context>',
        "Warning: The maximum number of unified exec processes you can keep open is 16.",
        "Warning: apply_patch was requested via exec_command. Use the apply_patch tool instead of exec_command.",
        "  Warning: Your account was flagged for potentially high-risk cyber activity.",
    ],
)
def test_registered_fragments_are_contextual(text: str) -> None:
    assert _contextual(text)
    assert is_standard_contextual_user_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "hello",  # 26
        "<extension_context>\n<example>data</example>\n</extension_context>",  # 22: not in 0.163.0
        "<user_instructions>x</user_instructions>",  # pre-Family-A only
        "<project_context>\nbody\n</project_context>",
        "<environment_context>no end",
        "prefix <environment_context>x</environment_context>",
        "<skill>",  # shorter than START+END
        "\x1c<skill>x</skill>",  # U+001C is whitespace for Python, not for Rust
        "<environment_contéxt>x</environment_context>",  # non-ASCII never folds
        "<external_a>b</external_b>",  # close tag must name the same key
        "<external_a>b",
        "<EXTERNAL_a>b</EXTERNAL_a>",  # additional context is case-sensitive
        '<codex_internal_context source="Goal">\nbody\n</codex_internal_context>',  # bad source
        '<codex_internal_context source="">x</codex_internal_context>',
        '<codex_internal_context source="9x">x</codex_internal_context>',
        "<codex_internal_context>x</codex_internal_context>",
        '<CODEX_INTERNAL_CONTEXT source="goal">x</CODEX_INTERNAL_CONTEXT>',
        "<GOAL_CONTEXT>x</GOAL_CONTEXT>",  # legacy goal context is case-sensitive in 0.163.0
        "warning: The maximum number of unified exec processes you can keep open is",
        "Warning: apply_patch was requested via exec_command.",
    ],
)
def test_other_text_is_not_contextual(text: str) -> None:
    assert not _contextual(text)


def test_only_input_text_can_be_contextual() -> None:
    assert not is_contextual_user_fragment(
        OutputTextContentItem(text="<environment_context>x</environment_context>")
    )
    assert not is_contextual_user_fragment(
        InputImageContentItem(image_url="<environment_context>x</environment_context>")
    )


# --------------------------------------------------------------------------- hook prompts


def test_hook_prompt_fragment_is_contextual_and_roundtrips_escaping() -> None:  # 27
    message = build_hook_prompt_message(
        [HookPromptFragment(text='Retry with "waves" & <tides>', hook_run_id="hook-run-1")]
    )
    assert message is not None
    assert len(message.content) == 1
    (only,) = message.content
    assert isinstance(only, InputTextContentItem)
    assert is_contextual_user_fragment(only)
    assert "&quot;waves&quot; & <tides>" not in only.text
    assert parse_hook_prompt_message(message.content) == [
        HookPromptFragment(text='Retry with "waves" & <tides>', hook_run_id="hook-run-1")
    ]


def test_hook_prompt_roundtrips_multiple_fragments() -> None:  # 28
    original = [
        HookPromptFragment(text="Retry with care & joy.", hook_run_id="hook-run-1"),
        HookPromptFragment(text="Then summarize cleanly.", hook_run_id="hook-run-2"),
    ]
    message = build_hook_prompt_message(original)
    assert message is not None
    assert message.id is not None
    assert message.id.startswith("msg_")
    assert parse_hook_prompt_message(message.content) == original


def test_hook_prompt_parses_legacy_single_hook_run_id() -> None:  # 29
    assert parse_hook_prompt_fragment(
        '<hook_prompt hook_run_id="hook-run-1">Retry with tests.</hook_prompt>'
    ) == (HookPromptFragment(text="Retry with tests.", hook_run_id="hook-run-1"))


def test_building_drops_fragments_with_blank_run_ids() -> None:
    assert build_hook_prompt_message([HookPromptFragment(text="t", hook_run_id=" \t")]) is None
    assert build_hook_prompt_message([]) is None
    message = build_hook_prompt_message(
        [
            HookPromptFragment(text="a", hook_run_id=""),
            HookPromptFragment(text="b", hook_run_id="r"),
        ]
    )
    assert message is not None
    assert [c.model_dump()["text"] for c in message.content] == [
        '<hook_prompt hook_run_id="r">b</hook_prompt>'
    ]


def test_serializer_escapes_text_and_attribute() -> None:
    assert serialize_hook_prompt_fragment('a"<b>&', 'r"&<') == (
        '<hook_prompt hook_run_id="r&quot;&amp;&lt;">a"&lt;b&gt;&amp;</hook_prompt>'
    )
    assert serialize_hook_prompt_fragment("t", "  ") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '<hook_prompt hook_run_id="r">Retry with care &amp; joy.</hook_prompt>',
            ("Retry with care & joy.", "r"),
        ),
        (
            '  \n<hook_prompt hook_run_id="r">x</hook_prompt>\n',
            ("x", "r"),
        ),  # surrounding whitespace trimmed
        ('<foo hook_run_id="r">y</foo>', ("y", "r")),  # root name is not checked
        (
            '<hook_prompt other="1" hook_run_id="r">y</hook_prompt>',
            ("y", "r"),
        ),  # unknown attributes ignored
        ('<hook_prompt hook_run_id=" r ">y</hook_prompt>', ("y", " r ")),  # run id kept untrimmed
        (
            '<hook_prompt hook_run_id="r"> spaced </hook_prompt>',
            (" spaced ", "r"),
        ),  # text kept as written
        ('<hook_prompt hook_run_id="r"><![CDATA[<raw>]]></hook_prompt>', ("<raw>", "r")),
        ('<hook_prompt hook_run_id="r">&#65;&#x42;</hook_prompt>', ("AB", "r")),
        ('<?xml version="1.0"?><hook_prompt hook_run_id="r">x</hook_prompt>', ("x", "r")),
        (
            '<hook_prompt hook_run_id="r">x</hook_prompt><second/>',
            ("x", "r"),
        ),  # only the first root is read
    ],
)
def test_hook_prompt_fragments_parse(text: str, expected: tuple[str, str]) -> None:
    assert parse_hook_prompt_fragment(text) == HookPromptFragment(
        text=expected[0], hook_run_id=expected[1]
    )


@pytest.mark.parametrize(
    "text",
    [
        "<hook_prompt>no run id</hook_prompt>",
        '<hook_prompt hook_run_id="">x</hook_prompt>',
        '<hook_prompt hook_run_id="  ">x</hook_prompt>',
        '<hook_prompt hook_run_id="r"></hook_prompt>',  # empty element (settled: fails)
        '<hook_prompt hook_run_id="r"/>',
        '<hook_prompt hook_run_id="r">  </hook_prompt>',
        '<hook_prompt hook_run_id="r">a<b/>c</hook_prompt>',  # child elements (settled: fails)
        '<hook_prompt hook_run_id="r">unclosed',
        '<hook_prompt hook_run_id="r">&undefined;</hook_prompt>',
        '<!DOCTYPE d [<!ENTITY e "boom">]><hook_prompt hook_run_id="r">&e;</hook_prompt>',
        'text <hook_prompt hook_run_id="r">x</hook_prompt>',
        "hook_run_id",
    ],
)
def test_non_fragments_do_not_parse(text: str) -> None:
    assert parse_hook_prompt_fragment(text) is None


def test_strict_hook_prompt_message_parse_needs_every_item_to_be_a_fragment() -> None:
    fragment = InputTextContentItem(text='<hook_prompt hook_run_id="r">x</hook_prompt>')
    assert (
        parse_hook_prompt_message(
            [fragment, InputTextContentItem(text="<environment_context>c</environment_context>")]
        )
        is None
    )
    assert parse_hook_prompt_message([]) is None
    assert parse_hook_prompt_message([fragment]) == [HookPromptFragment(text="x", hook_run_id="r")]
