"""Rollout user positions, fork positions, rollback/fork truncation and in-memory rollback.

Upstream cases: core-projection.md §5.4 (36-47, thread_rollout_truncation_tests.rs) and §5.3 (32,
history_tests.rs), plus the four ``drop_last_n_user_turns_*`` cases of history_tests.rs the spec
left unread. The real 0.163.0 captures are the last oracle: projecting each captured history item
must give the turn item Codex persisted for it, and positions must agree with ``thread/read``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from codex_app_bridge import (
    drop_last_n_user_turns,
    fork_turn_positions_in_rollout,
    parse_turn_item,
    truncate_rollout_before_nth_user_message_from_start,
    truncate_rollout_to_last_n_fork_turns,
    user_message_positions_in_rollout,
)
from codex_app_bridge.projection import (
    last_n_fork_turns_start,
    nth_user_message_cut,
    projects_to_user_message,
)
from codex_app_bridge.protocol.core import (
    TURN_ITEM_ADAPTER,
    EventMsgLine,
    InputTextContentItem,
    ItemCompletedEvent,
    MessageResponseItem,
    ResponseItem,
    ResponseItemLine,
    RolloutLine,
    UnknownRolloutLine,
    UserMessageItem,
    parse_rollout_line,
)
from tests.conftest import CAPTURES_DIR
from tests.projection._builders import IA, IAC, IACM, RB, A, D, U, Uo, item, line, lines, msg

# --------------------------------------------------------------------------- user positions (36-39)


def test_truncates_rollout_from_start_before_nth_user_only() -> None:  # 36
    rollout = lines(
        Uo("u1"),
        A("a1"),
        A("a2"),
        Uo("u2"),
        A("a3"),
        item({"type": "reasoning", "id": "r1", "summary": [{"type": "summary_text", "text": "s"}]}),
        item({"type": "function_call", "call_id": "c1", "name": "tool", "arguments": "{}"}),
        A("a4"),
    )
    assert user_message_positions_in_rollout(rollout) == [0, 3]
    assert truncate_rollout_before_nth_user_message_from_start(rollout, 1) == rollout[:3]
    assert truncate_rollout_before_nth_user_message_from_start(rollout, 2) == rollout


def test_truncation_max_keeps_full_rollout() -> None:  # 37
    rollout = lines(Uo("u1"), A("a1"), Uo("u2"))
    assert truncate_rollout_before_nth_user_message_from_start(rollout, None) == rollout


def test_truncates_rollout_from_start_applies_thread_rollback_markers() -> None:  # 38
    rollout = lines(
        Uo("u1"), A("a1"), Uo("u2"), A("a2"), RB(1), Uo("u3"), A("a3"), Uo("u4"), A("a4")
    )
    assert user_message_positions_in_rollout(rollout) == [0, 5, 7]
    assert truncate_rollout_before_nth_user_message_from_start(rollout, 2) == rollout[:7]


def test_ignores_session_prefix_messages_when_truncating_rollout_from_start() -> None:  # 39
    rollout = lines(
        msg(
            "developer",
            InputTextContentItem(text="<skills_instructions>\n## Skills\n</skills_instructions>"),
            InputTextContentItem(text="<permissions instructions>\nx\n</permissions instructions>"),
        ),
        U("<environment_context>\n  <cwd>/home/dev/project</cwd>\n</environment_context>"),
        Uo("feature request"),
        A("ack"),
        Uo("second question"),
        A("answer"),
    )
    assert truncate_rollout_before_nth_user_message_from_start(rollout, 1) == rollout[:4]


@pytest.mark.parametrize(
    ("n", "kept"),
    [(0, 1), (1, 3), (2, 5), (3, 5), (99, 5), (None, 5)],
)
def test_truncation_edge_counts(n: int | None, kept: int) -> None:
    rollout = lines(D("<permissions instructions>p"), U("u1"), A("a1"), U("u2"), A("a2"))
    assert truncate_rollout_before_nth_user_message_from_start(rollout, n) == rollout[:kept]


def test_rollback_pops_saturate_and_zero_is_a_no_op() -> None:
    assert user_message_positions_in_rollout(lines(U("u1"), U("u2"), RB(0), U("u3"))) == [0, 1, 3]
    assert user_message_positions_in_rollout(lines(U("u1"), RB(5), U("u2"))) == [2]
    assert user_message_positions_in_rollout(lines(RB(1))) == []


def test_user_positions_count_neither_hook_prompts_nor_inter_agent_items() -> None:
    rollout = lines(
        U('<hook_prompt hook_run_id="r">x</hook_prompt>'),
        IA("go", True),
        item({"type": "agent_message", "author": "/root", "recipient": "/root/w", "content": []}),
        IAC("go", True),
        U("real"),
    )
    assert user_message_positions_in_rollout(rollout) == [4]


def test_unparsed_line_placeholders_never_count() -> None:
    placeholder = UnknownRolloutLine(type="<unparsed>")
    rollout: list[RolloutLine] = [placeholder, line(U("u1")), placeholder, line(U("u2"))]
    assert user_message_positions_in_rollout(rollout) == [1, 3]
    assert fork_turn_positions_in_rollout(rollout) == [1, 3]


# --------------------------------------------------------------------------- fork positions (40-47)


def test_truncates_rollout_to_last_n_fork_turns_counts_trigger_turn_messages() -> None:  # 40
    rollout = lines(
        Uo("u1"),
        A("a1"),
        IA("queued message", False),
        A("a2"),
        IA("triggered task", True),
        A("a3"),
        Uo("u2"),
        A("a4"),
    )
    assert truncate_rollout_to_last_n_fork_turns(rollout, 2) == rollout[4:]


def test_fork_turn_positions_use_inter_agent_delivery_metadata() -> None:  # 41
    rollout = lines(
        Uo("user task"),
        IAC("queued during user turn", False),
        A("first answer"),
        IAC("follow-up task", True),
        A("second answer"),
        Uo("next user task"),
    )
    assert fork_turn_positions_in_rollout(rollout) == [0, 3, 5]


def test_truncates_rollout_to_last_n_fork_turns_drops_startup_prefix_even_when_under_limit() -> (
    None
):  # 42
    rollout = lines(D("startup developer context"), Uo("current task"), A("answer"))
    assert truncate_rollout_to_last_n_fork_turns(rollout, 2) == rollout[1:]


def test_truncates_rollout_to_last_n_fork_turns_applies_thread_rollback_markers() -> None:  # 43
    rollout = lines(
        Uo("u1"), A("a1"), IA("triggered task", True), A("a2"), RB(1), Uo("u2"), A("a3")
    )
    assert fork_turn_positions_in_rollout(rollout) == [0, 5]
    assert truncate_rollout_to_last_n_fork_turns(rollout, 2) == rollout


def test_fork_turn_positions_ignore_zero_turn_rollback_markers() -> None:  # 44
    assert fork_turn_positions_in_rollout(
        lines(Uo("u1"), IA("triggered task", True), RB(0), Uo("u2"))
    ) == [0, 1, 3]


def test_truncates_rollout_to_last_n_fork_turns_discards_trigger_boundaries_in_rolled_back_suffix() -> (
    None
):  # 45
    rollout = lines(
        Uo("u1"), Uo("u2"), IA("triggered task", True), A("a1"), RB(1), Uo("u3"), A("a2")
    )
    assert fork_turn_positions_in_rollout(rollout) == [0, 1, 5]
    assert truncate_rollout_to_last_n_fork_turns(rollout, 2) == rollout[1:]


def test_truncates_rollout_to_last_n_fork_turns_discards_rolled_back_assistant_instruction_turns() -> (
    None
):  # 46
    rollout = lines(
        Uo("u1"),
        A("a1"),
        IA("triggered task 1", True),
        A("a2"),
        RB(1),
        IA("triggered task 2", True),
        A("a3"),
    )
    assert truncate_rollout_to_last_n_fork_turns(rollout, 1) == rollout[5:]


def test_truncates_rollout_to_last_n_fork_turns_keeps_full_rollout_when_n_is_large() -> None:  # 47
    rollout = lines(Uo("u1"), A("a1"), IA("triggered task", True), A("a2"))
    assert truncate_rollout_to_last_n_fork_turns(rollout, 10) == rollout


def test_fork_truncation_to_zero_turns_or_without_fork_turns_is_empty() -> None:
    rollout = lines(Uo("u1"), A("a1"))
    assert truncate_rollout_to_last_n_fork_turns(rollout, 0) == []
    assert truncate_rollout_to_last_n_fork_turns(lines(D("startup"), A("a")), 3) == []


def test_metadata_delivery_and_its_agent_message_count_as_one_instruction_turn() -> None:
    agent_message = item(
        {"type": "agent_message", "author": "/root", "recipient": "/root/w", "content": []}
    )
    rollout = lines(Uo("u1"), IACM(True), agent_message, A("a"), RB(1))
    # the metadata line is the (only) instruction turn of the delivery; rolling it back drops it
    assert fork_turn_positions_in_rollout(rollout) == [0]
    assert fork_turn_positions_in_rollout(lines(Uo("u1"), IACM(True), agent_message)) == [0, 1]
    assert fork_turn_positions_in_rollout(lines(Uo("u1"), IACM(False), agent_message)) == [0]


def test_rollback_of_more_turns_than_exist_drops_from_the_first_turn() -> None:
    rollout = lines(D("startup"), Uo("u1"), IA("t", True), RB(9), Uo("u2"))
    assert fork_turn_positions_in_rollout(rollout) == [4]


@pytest.mark.parametrize(
    "call",
    [
        lambda r: truncate_rollout_before_nth_user_message_from_start(r, -1),
        lambda r: truncate_rollout_to_last_n_fork_turns(r, -1),
        lambda r: drop_last_n_user_turns([], -1),
    ],
)
def test_negative_counts_are_rejected(call: Any) -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        call(lines(U("u")))


# --------------------------------------------------------------------------- in-memory rollback


def test_drop_last_n_user_turns_treats_inter_agent_assistant_messages_as_instruction_turns() -> (
    None
):  # 32
    first_turn, first_reply = U("first"), A("done")
    result = drop_last_n_user_turns([first_turn, first_reply, IA("continue"), A("worker reply")], 1)
    assert result.items == [first_turn, first_reply]
    assert result.reference_context_cleared is False


def test_drop_last_n_user_turns_preserves_prefix() -> None:
    items = [A("session prefix item"), U("u1"), A("a1"), U("u2"), A("a2")]
    assert drop_last_n_user_turns(items, 1).items == items[:3]
    assert drop_last_n_user_turns(items, 99).items == items[:1]


def test_drop_last_n_user_turns_ignores_session_prefix_user_messages() -> None:
    prefix = [
        U("<environment_context>ctx</environment_context>"),
        U(
            "# AGENTS.md instructions for test_directory\n\n<INSTRUCTIONS>\ntest_text\n</INSTRUCTIONS>"
        ),
        U("<skill>\n<name>demo</name>\n<path>skills/demo/SKILL.md</path>\nbody\n</skill>"),
        U("<user_shell_command>echo 42</user_shell_command>"),
        U('<subagent_notification>{"agent_id":"a","status":"completed"}</subagent_notification>'),
    ]
    turns = [U("turn 1 user"), A("turn 1 assistant"), U("turn 2 user"), A("turn 2 assistant")]
    items = prefix + turns
    assert drop_last_n_user_turns(items, 1).items == prefix + turns[:2]
    assert drop_last_n_user_turns(items, 2).items == prefix
    assert drop_last_n_user_turns(items, 3).items == prefix


def test_drop_last_n_user_turns_trims_context_updates_above_rolled_back_turn() -> None:
    items = [
        A("session prefix item"),
        U("turn 1 user"),
        A("turn 1 assistant"),
        D("Generated images are saved to /tmp as /tmp/image-1.png by default."),
        D("<collaboration_mode>ROLLED_BACK_DEV_INSTRUCTIONS</collaboration_mode>"),
        U("<environment_context><cwd>PRETURN_CONTEXT_DIFF_CWD</cwd></environment_context>"),
        U("turn 2 user"),
        A("turn 2 assistant"),
    ]
    result = drop_last_n_user_turns(items, 1)
    assert result.items == items[:4]
    assert result.reference_context_cleared is False


def test_drop_last_n_user_turns_clears_reference_context_for_mixed_developer_context_bundles() -> (
    None
):
    items: list[ResponseItem] = [
        U("turn 1 user"),
        A("turn 1 assistant"),
        msg(
            "developer",
            InputTextContentItem(
                text="<permissions instructions>contextual permissions</permissions instructions>"
            ),
            InputTextContentItem(text="persistent plugin instructions"),
        ),
        U("<environment_context><cwd>PRETURN_CONTEXT_DIFF_CWD</cwd></environment_context>"),
        U("turn 2 user"),
        A("turn 2 assistant"),
    ]
    result = drop_last_n_user_turns(items, 1)
    assert result.items == items[:2]
    assert result.reference_context_cleared is True


def test_drop_last_n_user_turns_zero_or_without_turns_changes_nothing() -> None:
    items = [D("<permissions instructions>x"), A("a")]
    assert drop_last_n_user_turns(items, 3) == (items, False)
    assert drop_last_n_user_turns([U("u"), A("a")], 0) == ([U("u"), A("a")], False)


def test_drop_last_n_user_turns_counts_agent_message_items() -> None:
    agent_message = item(
        {"type": "agent_message", "author": "/root", "recipient": "/root/w", "content": []}
    )
    items = [U("u1"), A("a1"), agent_message, A("a2")]
    assert drop_last_n_user_turns(items, 1).items == items[:2]


# --------------------------------------------------------------------------- real 0.163.0 captures


def _read(path: Path) -> list[RolloutLine]:
    return [parse_rollout_line(raw) for raw in path.read_bytes().splitlines() if raw.strip()]


def _without_user_message_ids(turn_item_json: dict[str, Any]) -> dict[str, Any]:
    if turn_item_json["type"] == "UserMessage":
        return {**turn_item_json, "id": "<fresh>"}
    return turn_item_json


_CAPTURED_ROLLOUTS = sorted(CAPTURES_DIR.glob("*/rollout*.jsonl"))
_PROJECTED_KINDS = {
    "UserMessage",
    "HookPrompt",
    "AgentMessage",
    "Reasoning",
    "WebSearch",
    "ImageGeneration",
}


@pytest.mark.parametrize(
    "path", _CAPTURED_ROLLOUTS, ids=[f"{p.parent.name}/{p.name}" for p in _CAPTURED_ROLLOUTS]
)
def test_projecting_captured_history_gives_the_turn_items_codex_persisted(path: Path) -> None:
    rollout = _read(path)
    projected = [
        orjson.loads(TURN_ITEM_ADAPTER.dump_json(turn_item))
        for entry in rollout
        if isinstance(entry, ResponseItemLine)
        and (turn_item := parse_turn_item(entry.payload)) is not None
    ]
    persisted = [
        orjson.loads(TURN_ITEM_ADAPTER.dump_json(entry.payload.item))
        for entry in rollout
        if isinstance(entry, EventMsgLine) and isinstance(entry.payload, ItemCompletedEvent)
    ]
    persisted = [p for p in persisted if p["type"] in _PROJECTED_KINDS]
    assert [_without_user_message_ids(p) for p in projected] == [
        _without_user_message_ids(p) for p in persisted
    ]


def _user_texts(rollout: list[RolloutLine], positions: list[int]) -> list[str]:
    texts: list[str] = []
    for position in positions:
        entry = rollout[position]
        assert isinstance(entry, ResponseItemLine)
        assert isinstance(entry.payload, MessageResponseItem)
        texts.append("".join(c.model_dump()["text"] for c in entry.payload.content))
    return texts


def _thread_read_user_texts(path: Path) -> list[str]:
    turns = orjson.loads(path.read_bytes())["result"]["thread"]["turns"]
    return [
        "".join(c["text"] for c in thread_item["content"])
        for turn in turns
        for thread_item in turn["items"]
        if thread_item["type"] == "userMessage"
    ]


def _history_prefix(rollout: list[RolloutLine], end_ordinal_exclusive: int) -> list[RolloutLine]:
    return [
        entry for entry in rollout if (getattr(entry, "ordinal", None) or 0) < end_ordinal_exclusive
    ]


def test_revert_keeps_the_user_messages_thread_read_shows() -> None:
    folder = CAPTURES_DIR / "revert_fork"
    main = _read(folder / "rollout.jsonl")
    positions = user_message_positions_in_rollout(main)
    assert _user_texts(main, positions) == ["First question", "Second question"]
    # the driver reverted before turn 2, i.e. before the second (index 1) user message
    kept = truncate_rollout_before_nth_user_message_from_start(main, 1)
    assert _user_texts(kept, user_message_positions_in_rollout(kept)) == _thread_read_user_texts(
        folder / "thread_read.json"
    )


def test_fork_history_user_positions_agree_with_thread_read_of_the_fork() -> None:
    folder = CAPTURES_DIR / "revert_fork"
    parent = _read(folder / "rollout.jsonl")
    segment = _read(
        folder
        / "rollout-01a229f2-bbfe-7a20-9d7f-35a05b666f52_01a229f2-bca3-7bb2-ab4f-f54b91abaab4.jsonl"
    )
    fork = _read(folder / "rollout-01a229f2-bccb-7130-8ebf-f9767e792672.jsonl")
    # history_base chain written by 0.163.0: segment -> parent ordinals < 14; fork -> segment < 17
    effective = _history_prefix(parent, 14) + _history_prefix(segment, 17) + fork
    positions = user_message_positions_in_rollout(effective)
    assert _user_texts(effective, positions) == _thread_read_user_texts(
        folder / "thread_read-01a229f2-bccb-7130-8ebf-f9767e792672.json"
    )
    assert fork_turn_positions_in_rollout(effective) == positions


def test_user_message_predicate_agrees_with_parse_turn_item_on_captures() -> None:
    for path in _CAPTURED_ROLLOUTS:
        for entry in _read(path):
            if isinstance(entry, ResponseItemLine):
                assert projects_to_user_message(entry.payload) == isinstance(
                    parse_turn_item(entry.payload), UserMessageItem
                )


# --------------------------------------------------------------------------- streamed input


STREAM_CASES = [
    lines(
        Uo("u1"),
        IACM(True),
        item({"type": "agent_message", "author": "/root", "recipient": "/root/w", "content": []}),
        A("a"),
        RB(1),
    ),
    lines(Uo("u1"), A("a1"), IA("triggered task", True), A("a2"), Uo("u2"), RB(1), Uo("u3")),
    lines(D("startup"), Uo("u1"), IA("t", True), RB(9), Uo("u2")),
    lines(D("startup"), A("a")),
]


@pytest.mark.parametrize("rollout", STREAM_CASES)
def test_positions_and_cuts_of_a_generator_equal_those_of_the_list(
    rollout: list[RolloutLine],
) -> None:
    assert user_message_positions_in_rollout(iter(rollout)) == user_message_positions_in_rollout(
        rollout
    )
    assert fork_turn_positions_in_rollout(iter(rollout)) == fork_turn_positions_in_rollout(rollout)
    for n in (None, 0, 1, 2, 9):
        assert nth_user_message_cut(iter(rollout), n) == nth_user_message_cut(rollout, n)
    for n in (0, 1, 2, 9):
        assert last_n_fork_turns_start(iter(rollout), n) == last_n_fork_turns_start(rollout, n)
