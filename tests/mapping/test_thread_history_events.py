"""The builder fed live core events (the listener's running-turn snapshot), and inputs that are odd
but valid: nothing crashes, unknown things are ignored, items the wire cannot show are counted.

Live events are not filtered the way a legacy rollout replay is, so tool begin/end pairs, ``error``
events and item lifecycle events reach the legacy builder (Codex's ``ThreadHistoryBuilder``
rules; no capture holds such a live legacy stream)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from codex_app_bridge.mapping import (
    build_command_execution_begin_item,
    build_command_execution_end_item,
)
from codex_app_bridge.mapping.thread_history import (
    HistoryMode,
    ThreadHistoryBuilder,
    build_turns,
    merge_active_turn,
    turn_summary,
)
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import Turn, dump_dict

THREAD = "01a229f2-0000-7000-8000-000000000900"


def event(payload: dict[str, Any]) -> core.EventMsg:
    return core.EVENT_MSG_ADAPTER.validate_python(payload)


def started(turn: str) -> core.EventMsg:
    return event({"type": "task_started", "turn_id": turn, "started_at": 10})


def complete(turn: str) -> core.EventMsg:
    return event({"type": "task_complete", "turn_id": turn, "completed_at": 11})


def user_message(text: str) -> core.EventMsg:
    return event({"type": "user_message", "message": text})


def item_completed(turn: str, item: dict[str, Any]) -> core.EventMsg:
    return event({"type": "item_completed", "thread_id": THREAD, "turn_id": turn, "item": item})


def exec_begin(call_id: str, turn: str) -> dict[str, Any]:
    return {
        "type": "exec_command_begin",
        "call_id": call_id,
        "turn_id": turn,
        "command": ["bash", "-lc", "ls"],
        "cwd": "/repo",
        "parsed_cmd": [],
    }


def exec_end(call_id: str, turn: str, status: str = "completed") -> dict[str, Any]:
    return {
        **exec_begin(call_id, turn),
        "type": "exec_command_end",
        "aggregated_output": "a\n",
        "exit_code": 0,
        "duration": {"secs": 0, "nanos": 5_000_000},
        "status": status,
    }


def feed(mode: HistoryMode, events: list[core.EventMsg]) -> ThreadHistoryBuilder:
    builder = ThreadHistoryBuilder(mode)
    for msg in events:
        builder.handle_event(msg)
    return builder


def shape(turns: list[Turn]) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """``(turn id, status, [(item type, item id)])`` per turn."""
    return [(t.id, t.status, [(i.type, i.id) for i in t.items]) for t in turns]


# ------------------------------------------------------------------------- legacy, live


def test_late_command_completion_lands_in_the_turn_that_started_it() -> None:
    builder = feed(
        "legacy",
        [
            started("t1"),
            user_message("run it"),
            event(exec_begin("c1", "t1")),
            complete("t1"),
            started("t2"),
            user_message("next"),
            event(exec_end("c1", "t1")),
        ],
    )
    first, second = builder.turns()
    assert shape([first, second]) == [
        ("t1", "completed", [("userMessage", "item-1"), ("commandExecution", "c1")]),
        ("t2", "inProgress", [("userMessage", "item-2")]),
    ]
    end = core.EVENT_MSG_ADAPTER.validate_python(exec_end("c1", "t1"))
    assert isinstance(end, core.ExecCommandEndEvent)
    assert first.items[1] == build_command_execution_end_item(end)


def test_command_begin_shows_an_in_progress_item_in_the_running_turn() -> None:
    builder = feed("legacy", [started("t1"), event(exec_begin("c1", "t1"))])
    begin = core.EVENT_MSG_ADAPTER.validate_python(exec_begin("c1", "t1"))
    assert isinstance(begin, core.ExecCommandBeginEvent)
    active = builder.active_turn()
    assert active is not None
    assert active.items == [build_command_execution_begin_item(begin)]
    assert builder.active_turn_id == "t1"


def test_tool_item_for_an_unknown_turn_is_dropped() -> None:
    builder = feed("legacy", [started("t1"), event(exec_begin("c1", "elsewhere"))])
    assert shape(builder.turns()) == [("t1", "inProgress", [])]


@pytest.mark.parametrize(
    ("info", "fails"),
    [
        (None, True),
        ("other", True),
        ({"response_stream_disconnected": {"http_status_code": 502}}, True),
        ("thread_rollback_failed", False),
        ({"active_turn_not_steerable": {"turn_kind": "review"}}, False),
    ],
)
def test_live_error_fails_the_running_turn_unless_it_does_not_affect_turns(
    info: Any, fails: bool
) -> None:
    builder = feed(
        "legacy",
        [started("t1"), event({"type": "error", "message": "boom", "codex_error_info": info})],
    )
    (turn,) = builder.turns()
    assert turn.status == ("failed" if fails else "inProgress")
    if fails:
        assert turn.error is not None
        assert (turn.error.message, turn.error.additional_details) == ("boom", None)
    else:
        assert turn.error is None


def test_error_classification_is_written_in_its_wire_spelling() -> None:
    info = {"response_stream_disconnected": {"http_status_code": 502}}
    builder = feed(
        "legacy",
        [started("t1"), event({"type": "error", "message": "cut", "codex_error_info": info})],
    )
    (turn,) = builder.turns()
    assert dump_dict(turn)["error"] == {
        "message": "cut",
        "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": 502}},
        "additionalDetails": None,
        "misalignment": None,
    }


def test_command_turn_item_replaces_the_begin_item_in_place() -> None:
    command_item = {
        "type": "CommandExecution",
        "id": "c1",
        "command": ["bash", "-lc", "ls"],
        "cwd": "file:///repo",
        "parsed_cmd": [],
        "source": "agent",
        "status": "completed",
        "aggregated_output": "",
        "exit_code": 0,
        "duration": {"secs": 1, "nanos": 0},
    }
    builder = feed(
        "legacy",
        [
            started("t1"),
            event(exec_begin("c1", "t1")),
            user_message("steer"),
            item_completed("t1", command_item),
            item_completed(
                "t1",
                {"type": "AgentMessage", "id": "m1", "content": [{"type": "Text", "text": "x"}]},
            ),
        ],
    )
    (turn,) = builder.turns()
    assert shape([turn]) == [
        ("t1", "inProgress", [("commandExecution", "c1"), ("userMessage", "item-1")])
    ]
    assert dump_dict(turn.items[0])["status"] == "completed"


@pytest.mark.parametrize(
    ("events", "items"),
    [
        pytest.param(
            [
                {"type": "web_search_begin", "call_id": "w1"},
                {
                    "type": "web_search_end",
                    "call_id": "w1",
                    "query": "q",
                    "action": {"type": "search", "query": "q"},
                },
            ],
            [{"type": "webSearch", "id": "w1", "query": "q",
              "action": {"type": "search", "query": "q", "queries": None}, "results": None}],
            id="web search begin then end",
        ),
        pytest.param(
            [{"type": "web_search_begin", "call_id": "w1"}],
            [{"type": "webSearch", "id": "w1", "query": "", "action": None, "results": None}],
            id="web search still running",
        ),
        pytest.param(
            [{"type": "image_generation_begin", "call_id": "g1"}],
            [{"type": "imageGeneration", "id": "g1", "status": "", "revisedPrompt": None,
              "result": "", "failure": None, "transparentBackground": None}],
            id="image generation still running",
        ),
        pytest.param(
            [{"type": "view_image_tool_call", "call_id": "v1", "path": "/repo/a.png"}],
            [{"type": "imageView", "id": "v1", "path": "/repo/a.png"}],
            id="image view",
        ),
        pytest.param(
            [
                {"type": "apply_patch_approval_request", "call_id": "p1", "turn_id": "t1",
                 "changes": {"/r/a": {"type": "add", "content": "x"}}},
                {"type": "patch_apply_begin", "call_id": "p1", "turn_id": "",
                 "auto_approved": False, "changes": {"/r/a": {"type": "add", "content": "x"}}},
                {"type": "patch_apply_end", "call_id": "p1", "turn_id": "t1", "stdout": "",
                 "stderr": "", "success": False, "status": "declined",
                 "changes": {"/r/a": {"type": "add", "content": "x"}}},
            ],
            [{"type": "fileChange", "id": "p1", "status": "declined",
              "changes": [{"path": "/r/a", "kind": {"type": "add"}, "diff": "x"}]}],
            id="patch approval, begin and end are one item",
        ),
        pytest.param(
            [
                {"type": "dynamic_tool_call_request", "callId": "d1", "turnId": "t1",
                 "tool": "lookup", "arguments": {"k": 1}},
                {"type": "dynamic_tool_call_response", "call_id": "d1", "turn_id": "t1",
                 "tool": "lookup", "arguments": {"k": 1},
                 "content_items": [{"type": "inputText", "text": "v"}], "success": True,
                 "duration": {"secs": 0, "nanos": 2_000_000}},
            ],
            [{"type": "dynamicToolCall", "id": "d1", "namespace": None, "tool": "lookup",
              "arguments": {"k": 1}, "status": "completed",
              "contentItems": [{"type": "inputText", "text": "v"}], "success": True,
              "durationMs": 2}],
            id="dynamic tool request then response",
        ),
        pytest.param(
            [
                {"type": "collab_agent_spawn_begin", "call_id": "s1", "sender_thread_id": "A",
                 "prompt": "p", "model": "m", "reasoning_effort": "low"},
                {"type": "collab_agent_spawn_end", "call_id": "s1", "sender_thread_id": "A",
                 "new_thread_id": None, "prompt": "p", "model": "m", "reasoning_effort": "low",
                 "status": "running"},
            ],
            [{"type": "collabAgentToolCall", "id": "s1", "tool": "spawnAgent",
              "status": "failed", "senderThreadId": "A", "receiverThreadIds": list[str](),
              "prompt": "p", "model": "m", "reasoningEffort": "low",
              "agentsStates": dict[str, Any]()}],
            id="collab spawn without a new thread failed",
        ),
        pytest.param(
            [
                {"type": "collab_waiting_begin", "call_id": "w", "sender_thread_id": "A",
                 "receiver_thread_ids": ["C", "B"]},
                {"type": "collab_waiting_end", "call_id": "w", "sender_thread_id": "A",
                 "statuses": {"C": {"completed": "done"}, "B": "running"}},
            ],
            [{"type": "collabAgentToolCall", "id": "w", "tool": "wait", "status": "completed",
              "senderThreadId": "A", "receiverThreadIds": ["B", "C"], "prompt": None,
              "model": None, "reasoningEffort": None,
              "agentsStates": {"C": {"status": "completed", "message": "done"},
                               "B": {"status": "running", "message": None}}}],
            id="collab wait ends with sorted receivers",
        ),
    ],
)  # fmt: skip
def test_live_tool_events_become_one_item_each(
    events: list[dict[str, Any]], items: list[dict[str, Any]]
) -> None:
    builder = feed("legacy", [started("t1"), *map(event, events)])
    (turn,) = builder.turns()
    assert [dump_dict(item) for item in turn.items] == items


def test_event_only_builder_names_implicit_turns_with_uuid7s() -> None:
    builder = feed("legacy", [user_message("a"), user_message("b")])
    ids = [turn.id for turn in builder.turns()]
    assert len(set(ids)) == 2
    for turn_id in ids:
        assert re.fullmatch(
            r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", turn_id
        )


def test_envelopes_are_handled_as_their_events() -> None:
    builder = ThreadHistoryBuilder("legacy")
    builder.handle_envelope(core.EventEnvelope(id="t1", msg=started("t1")))
    builder.handle_envelope(core.EventEnvelope(id="t1", msg=user_message("hi")))
    assert shape(builder.turns()) == [("t1", "inProgress", [("userMessage", "item-1")])]
    assert shape(build_turns([core.EventEnvelope(id="t1", msg=started("t1"))])) == [
        ("t1", "inProgress", [])
    ]


def test_reset_forgets_the_history_but_keeps_the_requested_mode() -> None:
    builder = feed("paginated", [started("t1")])
    builder.reset()
    assert builder.turns() == []
    assert builder.history_mode == "paginated"


# ------------------------------------------------------------------------- paginated, live


def test_paginated_snapshot_of_a_running_turn_shows_completed_items_only() -> None:
    agent = {"type": "AgentMessage", "id": "m1", "content": [{"type": "Text", "text": "hi"}]}
    builder = feed(
        "paginated",
        [
            started("t1"),
            complete("t1"),
            started("t2"),
            event({"type": "item_started", "thread_id": THREAD, "turn_id": "t2", "item": agent,
                   "started_at_ms": 1}),
            item_completed(
                "t2", {"type": "UserMessage", "id": "u1", "content": [{"type": "text", "text": "x"}]}
            ),
        ],
    )  # fmt: skip
    assert builder.active_turn_id == "t2"
    active = builder.active_turn()
    assert active is not None
    assert shape([active]) == [("t2", "inProgress", [("userMessage", "u1")])]
    assert [t.status for t in builder.turns(interrupt_stale=True)] == ["completed", "interrupted"]


def test_paginated_builder_has_no_active_turn_once_every_turn_ended() -> None:
    builder = feed("paginated", [started("t1"), complete("t1")])
    assert builder.active_turn_id is None
    assert builder.active_turn() is None


# ------------------------------------------------------------------------- odd inputs


def test_unknown_events_and_lines_change_nothing() -> None:
    for mode in ("legacy", "paginated"):
        builder = ThreadHistoryBuilder(mode)
        builder.handle_event(started("t1"))
        before = builder.turns()
        builder.handle_event(event({"type": "brand_new_event", "x": 1}))
        builder.handle_rollout_line(
            core.ROLLOUT_LINE_ADAPTER.validate_python(
                {"timestamp": "t", "type": "brand_new_line", "payload": {}}
            )
        )
        builder.handle_rollout_line(
            core.ROLLOUT_LINE_ADAPTER.validate_python(
                {"timestamp": "t", "type": "realtime_item", "payload": {"x": 1}}
            )
        )
        assert builder.turns() == before, mode


@pytest.mark.parametrize(
    "item",
    [
        {"type": "Hologram", "id": "h1"},
        {
            "type": "CommandExecution",
            "id": "c9",
            "command": ["ls"],
            "cwd": "file:///r",
            "parsed_cmd": [],
            "source": "alien_shell",
            "status": "completed",
            "aggregated_output": "",
        },
    ],
    ids=["unknown item type", "command source the wire cannot spell"],
)
def test_items_the_wire_cannot_show_are_skipped_and_counted(item: dict[str, Any]) -> None:
    user = {"type": "UserMessage", "id": "u1", "content": [{"type": "text", "text": "x"}]}
    builder = feed(
        "paginated", [started("t1"), item_completed("t1", item), item_completed("t1", user)]
    )
    assert shape(builder.turns()) == [("t1", "inProgress", [("userMessage", "u1")])]
    assert builder.skipped_items == 1


def test_legacy_event_with_a_value_the_wire_cannot_spell_is_skipped() -> None:
    builder = feed(
        "legacy",
        [started("t1"), event(exec_begin("c1", "t1")), event(exec_end("c1", "t1", "exploded"))],
    )
    (turn,) = builder.turns()
    assert dump_dict(turn.items[0])["status"] == "inProgress"
    assert builder.skipped_items == 1


@pytest.mark.parametrize(("count", "kept"), [(-3, ["t1", "t2"]), (0, ["t1", "t2"]), (1, ["t1"])])
def test_rollback_drops_only_a_positive_number_of_turns(count: int, kept: list[str]) -> None:
    builder = feed(
        "legacy",
        [
            started("t1"),
            complete("t1"),
            started("t2"),
            event({"type": "thread_rolled_back", "num_turns": count}),
        ],
    )
    assert [turn.id for turn in builder.turns()] == kept


def test_completion_of_an_unseen_turn_creates_it_only_in_a_paginated_thread() -> None:
    events = [complete("t1"), event({"type": "turn_aborted", "reason": "interrupted"})]
    assert feed("legacy", events).turns() == []
    assert shape(feed("paginated", events).turns()) == [("t1", "completed", [])]


def test_first_input_decides_the_history_mode() -> None:
    paginated_meta = core.ROLLOUT_LINE_ADAPTER.validate_python(
        {
            "timestamp": "t",
            "type": "session_meta",
            "payload": {
                "id": THREAD,
                "timestamp": "t",
                "cwd": "/",
                "originator": "o",
                "cli_version": "0.163.0",
                "history_mode": "paginated",
            },
        }
    )
    from_meta = ThreadHistoryBuilder()
    assert from_meta.history_mode is None
    from_meta.handle_rollout_line(paginated_meta)
    assert from_meta.history_mode == "paginated"
    from_event = feed("legacy", [])
    from_event_auto = ThreadHistoryBuilder()
    from_event_auto.handle_event(started("t1"))
    assert (from_event.history_mode, from_event_auto.history_mode) == ("legacy", "legacy")
    forced = ThreadHistoryBuilder("legacy")
    forced.handle_rollout_line(paginated_meta)
    assert forced.history_mode == "legacy"


def test_turn_summary_of_a_turn_without_a_final_answer_is_empty() -> None:
    commentary = {
        "type": "AgentMessage",
        "id": "m1",
        "phase": "commentary",
        "content": [{"type": "Text", "text": "working"}],
    }
    builder = feed("paginated", [started("t1"), item_completed("t1", commentary), complete("t1")])
    (turn,) = builder.turns()
    summary = turn_summary(turn)
    assert (summary.items, summary.items_view, summary.status) == ([], "summary", "completed")


def test_running_turn_snapshot_replaces_its_persisted_copy_and_goes_last() -> None:
    persisted = feed("paginated", [started("t1"), complete("t1"), started("t2")]).turns()
    live = feed(
        "paginated",
        [
            started("t2"),
            item_completed(
                "t2",
                {"type": "UserMessage", "id": "u9", "content": [{"type": "text", "text": "live"}]},
            ),
        ],
    )
    active = live.active_turn()
    merged = merge_active_turn(persisted, active)
    assert shape(merged) == [("t1", "completed", []), ("t2", "inProgress", [("userMessage", "u9")])]
    assert merge_active_turn(persisted, None) == persisted


def test_legacy_item_entries_follow_the_turns_without_timestamps() -> None:
    builder = feed("legacy", [started("t1"), user_message("a"), complete("t1"), user_message("b")])
    entries = [dump_dict(entry) for entry in builder.item_entries()]
    assert [
        (e["turnId"], e["item"]["id"], e["startedAtMs"], e["completedAtMs"]) for e in entries
    ] == [
        ("t1", "item-1", None, None),
        (builder.turns()[1].id, "item-2", None, None),
    ]
    assert [dump_dict(e)["item"]["id"] for e in builder.item_entries("t1")] == ["item-1"]
