"""Property tests: no input crashes the projections or the ``inspect`` CLI, and the projections
keep their invariants (prefix/suffix results, one consistent notion of "user message").

Inputs mix ordinary text with every marker, label and envelope the projections look for, in
random case, with random (also non-ASCII) whitespace around them.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_app_bridge import (
    drop_last_n_user_turns,
    fork_turn_positions_in_rollout,
    is_user_turn_boundary,
    parse_turn_item,
    truncate_rollout_before_nth_user_message_from_start,
    truncate_rollout_to_last_n_fork_turns,
    user_message_positions_in_rollout,
)
from codex_app_bridge.cli import main
from codex_app_bridge.projection import projects_to_user_message
from codex_app_bridge.protocol.core import (
    RESPONSE_ITEM_ADAPTER,
    ROLLOUT_LINE_ADAPTER,
    TURN_ITEM_ADAPTER,
    MessageResponseItem,
    ResponseItem,
    RolloutLine,
    UserMessageItem,
)
from tests.projection._builders import TS, inter_agent_json

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_MARKERS = [
    "<environment_context>",
    "</environment_context>",
    "# AGENTS.md instructions",
    "</INSTRUCTIONS>",
    "<skill>",
    "</skill>",
    "<turn_aborted>",
    "</turn_aborted>",
    "<external_k>",
    "</external_k>",
    '<codex_internal_context source="goal">',
    "</codex_internal_context>",
    "<goal_context>",
    "</goal_context>",
    '<hook_prompt hook_run_id="r">',
    "</hook_prompt>",
    "<image>",
    "</image>",
    "<image name=[Image #1]>",
    "<audio>",
    "</audio>",
    "Warning: apply_patch was requested via ",
    "Use the apply_patch tool instead of exec_command.",
    "<permissions instructions>",
    "&amp;",
    "<!DOCTYPE x>",
]
_SPACE = st.sampled_from(["", " ", "\n", "\t", "\u3000", "\x1c", "\u2028"])


def _case(text: str, flips: list[bool]) -> str:
    return "".join(
        ch.upper() if flip else ch
        for ch, flip in zip(text, flips + [False] * len(text), strict=False)
    )


_marker = st.builds(_case, st.sampled_from(_MARKERS), st.lists(st.booleans(), max_size=8))
_text = st.one_of(
    st.text(max_size=30),
    st.builds(
        lambda a, b, c, d, e: a + b + c + d + e,
        _SPACE,
        _marker,
        st.text(max_size=10),
        _marker,
        _SPACE,
    ),
    st.builds(inter_agent_json, st.text(max_size=10), st.booleans()),
    st.sampled_from(
        [
            '{"author":"/root"}',
            "{",
            "[]",
            '{"author":"/root","recipient":"/root/x","content":"c","trigger_turn":true}',
        ]
    ),
)
_content_item = st.one_of(
    st.builds(lambda t: {"type": "input_text", "text": t}, _text),
    st.builds(lambda t: {"type": "output_text", "text": t}, _text),
    st.builds(
        lambda u, d: {"type": "input_image", "image_url": u, **({"detail": d} if d else {})},
        st.text(max_size=5),
        st.sampled_from([None, "high", "low"]),
    ),
    st.just({"type": "input_audio", "audio_url": "data:audio/wav;base64,AA"}),
    st.just({"type": "input_file", "file_id": "f"}),
)
_message = st.builds(
    lambda role, content, msg_id, phase: {
        "type": "message",
        "role": role,
        "content": content,
        **({"id": msg_id} if msg_id is not None else {}),
        **({"phase": phase} if phase else {}),
    },
    st.sampled_from(["user", "assistant", "developer", "system", "User"]),
    st.lists(_content_item, max_size=4),
    st.one_of(st.none(), st.text(max_size=5)),
    st.sampled_from([None, "commentary", "final_answer"]),
)
_other_item = st.sampled_from(
    [
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "s"}],
            "content": [{"type": "text", "text": "t"}],
        },
        {"type": "reasoning", "id": "rs", "summary": [], "content": None},
        {"type": "web_search_call"},
        {"type": "web_search_call", "id": "w", "action": {"type": "search", "queries": ["a", "b"]}},
        {"type": "web_search_call", "action": {"type": "mystery"}},
        {"type": "image_generation_call", "status": "s", "result": "r"},
        {"type": "image_generation_call", "id": "i", "status": "s", "result": "r"},
        {"type": "agent_message", "author": "a", "recipient": "b", "content": []},
        {"type": "function_call", "name": "n", "arguments": "{}", "call_id": "c"},
        {"type": "other"},
        {"type": "brand_new", "x": 1},
    ]
)
_response_item_json = st.one_of(_message, _message, _other_item)
_response_item = _response_item_json.map(RESPONSE_ITEM_ADAPTER.validate_python)


def _rollout_line(entry: Any) -> RolloutLine:
    if isinstance(entry, int):
        return ROLLOUT_LINE_ADAPTER.validate_python(
            {
                "timestamp": TS,
                "type": "event_msg",
                "payload": {"type": "thread_rolled_back", "num_turns": entry},
            }
        )
    if isinstance(entry, bool):
        return ROLLOUT_LINE_ADAPTER.validate_python(
            {
                "timestamp": TS,
                "type": "inter_agent_communication_metadata",
                "payload": {"trigger_turn": entry},
            }
        )
    return ROLLOUT_LINE_ADAPTER.validate_python(
        {"timestamp": TS, "type": "response_item", "payload": entry}
    )


_rollout = st.lists(
    st.one_of(_response_item_json, _response_item_json, st.integers(0, 3), st.booleans()),
    max_size=12,
).map(lambda entries: [_rollout_line(e) for e in entries])


@_SETTINGS
@given(_response_item)
def test_parse_turn_item_never_crashes_and_yields_valid_turn_items(
    response_item: ResponseItem,
) -> None:
    turn_item = parse_turn_item(response_item)
    if turn_item is not None:
        dumped = TURN_ITEM_ADAPTER.dump_json(turn_item)
        assert orjson.loads(
            TURN_ITEM_ADAPTER.dump_json(TURN_ITEM_ADAPTER.validate_json(dumped))
        ) == orjson.loads(dumped)


@_SETTINGS
@given(_response_item)
def test_user_message_predicates_agree(response_item: ResponseItem) -> None:
    projects = isinstance(parse_turn_item(response_item), UserMessageItem)
    assert projects_to_user_message(response_item) == projects
    if isinstance(response_item, MessageResponseItem) and response_item.role == "user":
        assert is_user_turn_boundary(response_item) == projects


@_SETTINGS
@given(_rollout, st.one_of(st.none(), st.integers(0, 5)), st.integers(0, 5))
def test_rollout_projections_return_prefixes_and_suffixes(
    rollout: list[RolloutLine], before: int | None, last: int
) -> None:
    users = user_message_positions_in_rollout(rollout)
    forks = fork_turn_positions_in_rollout(rollout)
    for positions in (users, forks):
        assert positions == sorted(set(positions))
        assert all(0 <= p < len(rollout) for p in positions)
    assert set(users) <= set(forks)  # every effective user message also starts a fork turn
    head = truncate_rollout_before_nth_user_message_from_start(rollout, before)
    assert head == rollout[: len(head)]
    tail = truncate_rollout_to_last_n_fork_turns(rollout, last)
    assert tail == rollout[len(rollout) - len(tail) :]
    if last and forks:
        assert tail[0] is rollout[forks[max(len(forks) - last, 0)]]


@_SETTINGS
@given(st.lists(_response_item, max_size=10), st.integers(0, 6))
def test_drop_last_n_user_turns_keeps_a_prefix_and_the_pre_turn_history(
    items: list[ResponseItem], num_turns: int
) -> None:
    kept, _cleared = drop_last_n_user_turns(items, num_turns)
    assert kept == items[: len(kept)]
    boundaries = [i for i, entry in enumerate(items) if is_user_turn_boundary(entry)]
    if boundaries:
        assert len(kept) >= boundaries[0]
    if num_turns == 0 or not boundaries:
        assert kept == items


def _run_cli(args: list[str], data: bytes) -> tuple[int, bytes]:
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as handle:
        handle.write(data)
        path = handle.name
    stdout = io.BytesIO()
    fake_stdout = io.TextIOWrapper(stdout, encoding="utf-8")
    try:
        with contextlib.redirect_stdout(fake_stdout), contextlib.redirect_stderr(io.StringIO()):
            code = main([*args, path])
            fake_stdout.flush()
    finally:
        os.unlink(path)
    return code, stdout.getvalue()


_line_bytes = st.one_of(
    st.binary(max_size=40),
    _response_item_json.map(orjson.dumps),
    st.builds(
        lambda p: orjson.dumps({"timestamp": TS, "type": "response_item", "payload": p}),
        _response_item_json,
    ),
    st.just(
        b'{"type":"event_msg","timestamp":"t","payload":{"type":"thread_rolled_back","num_turns":-1}}'
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_line_bytes, max_size=8).map(lambda ls: b"\n".join(ls) + b"\n"),
    st.sampled_from(
        [
            ["inspect", "turn-items"],
            ["inspect", "boundaries"],
            ["inspect", "user-positions"],
            ["inspect", "truncate", "--before-user", "1"],
            ["inspect", "truncate", "--last-fork-turns", "2"],
        ]
    ),
)
def test_no_input_crashes_the_inspect_cli(data: bytes, args: list[str]) -> None:
    assert sys.stdout is not None
    code, out = _run_cli(args, data)
    assert code in (0, 1)
    if args[1] in {"turn-items", "boundaries"} and code == 0:
        assert len(out.splitlines()) == len([raw for raw in data.splitlines() if raw.strip()])
    if args[1] == "user-positions":
        assert isinstance(orjson.loads(out), list)
