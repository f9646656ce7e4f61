"""The normaliser, the comparator and the script derivation of the conformance suite: pure, no
binary needed. Each test can fail: a normaliser that hides too much or too little, a comparator
that miscounts, a derivation that drops or reorders events."""

from __future__ import annotations

from typing import Any

from codex_app_bridge.conformance._compare import (
    Difference,
    Normaliser,
    canonical_order,
    compare,
    delta_checks,
    diff_paths,
    merge_deltas,
    normalise_stream,
    thread_read_units,
)
from codex_app_bridge.conformance._script import script_from_run, started_turn_item

T1 = "01a232da-27e5-7ba2-a377-f660a26a7bdb"
T2 = "01a232da-3508-7590-9d9a-074129fbc50f"
U1 = "01a232da-2801-7370-b818-bfa7347e1cbb"
U2 = "01a232da-4215-7ee0-9437-1fb4fb51cd96"


def delta(item: str, text: str, turn: str = U1) -> dict[str, Any]:
    return {
        "method": "item/agentMessage/delta",
        "params": {"threadId": T1, "turnId": turn, "itemId": item, "delta": text},
    }


def test_ids_are_numbered_per_kind_so_an_extra_uuid_does_not_shift_the_rest() -> None:
    n = Normaliser({})
    first = n.value({"threadId": T1, "turnId": U1, "revision": T2})
    second = n.value({"thread": {"id": T1}, "turn": {"id": U2}, "note": f"see {U1}"})
    assert first == {"threadId": "<thread:1>", "turnId": "<turn:1>", "revision": "<uuid>"}
    assert second == {
        "thread": {"id": "<thread:1>"},
        "turn": {"id": "<turn:2>"},
        "note": "see <turn:1>",
    }


def test_an_id_quoted_before_its_own_key_is_still_recognised() -> None:
    n = Normaliser({})
    cursor = '{"requestedThreadId":"' + T1 + '","rolloutOrdinal":3}'
    value = n.value({"itemsBackwardsCursor": cursor, "thread": {"id": T1}, "revision": T2})
    assert value == {
        "itemsBackwardsCursor": '{"requestedThreadId":"<thread:1>","rolloutOrdinal":3}',
        "thread": {"id": "<thread:1>"},
        "revision": "<uuid>",
    }


def test_an_objects_own_id_is_numbered_before_the_ids_it_refers_to() -> None:
    real = Normaliser({}).value({"thread": {"id": T1, "forkedFromId": T2}})
    ours = Normaliser({}).value({"thread": {"forkedFromId": T2, "id": T1}})
    assert real == ours == {"thread": {"id": "<thread:1>", "forkedFromId": "<thread:2>"}}


def test_a_key_that_is_an_id_is_renamed_as_the_id() -> None:
    n = Normaliser({})
    value = n.value({"data": [{"thread": {"id": T1}}], "readStates": {T1: {"r": 1}, T2: {}}})
    assert value["readStates"] == {"<thread:1>": {"r": 1}, "<uuid>": {}}


def test_items_in_a_list_get_item_numbers_and_times_are_masked_unless_null() -> None:
    n = Normaliser({})
    value = n.value(
        {
            "items": [{"id": U1, "startedAtMs": 5}],
            "completedAt": None,
            "durationMs": 7,
            "userAgent": "x/1",
        }
    )
    assert value == {
        "items": [{"id": "<item:1>", "startedAtMs": "<time>"}],
        "completedAt": None,
        "durationMs": "<time>",
        "userAgent": "<user-agent>",
    }


def test_paths_are_replaced_longest_first() -> None:
    n = Normaliser({"/s/real": "<scratch>", "/s/real/work": "<cwd>"})
    assert n.value({"cwd": "/s/real/work/a.txt", "home": "/s/real/x"}) == {
        "cwd": "<cwd>/a.txt",
        "home": "<scratch>/x",
    }


def test_the_time_in_a_rollout_path_is_masked_but_the_thread_id_is_kept() -> None:
    n = Normaliser({"/s/home": "<home>"})
    path = f"/s/home/sessions/2026/12/01/rollout-2026-12-01T20-58-56-{T1}.jsonl"
    other = f"/s/home/sessions/2026/12/02/rollout-2026-12-02T00-00-01-{T2}.jsonl"
    assert n.value({"path": path, "other": other}) == {
        "path": "<home>/sessions/<date>/rollout-<time>-<uuid>.jsonl",
        "other": "<home>/sessions/<date>/rollout-<time>-<uuid>.jsonl",
    }
    assert n.value({"threadId": T1, "path": path})["path"].endswith("-<thread:1>.jsonl")


def test_consecutive_deltas_of_one_item_merge_but_other_items_do_not() -> None:
    merged = merge_deltas([delta("a", "Hel"), delta("a", "lo"), delta("b", "!"), delta("a", "?")])
    assert [(m["params"]["itemId"], m["params"]["delta"]) for m in merged] == [
        ("a", "Hello"),
        ("b", "!"),
        ("a", "?"),
    ]


def test_responses_are_named_by_their_request_and_server_requests_are_marked() -> None:
    sent = [{"id": 0, "method": "initialize"}, {"id": 1, "method": "thread/start"}]
    received: list[dict[str, Any]] = [
        {"id": 0, "result": {"userAgent": "a"}},
        {"id": 1, "error": {"code": -1}},
        {"id": 9, "method": "item/tool/call", "params": {}},
        {"method": "warning", "params": {}, "emittedAtMs": 1},
    ]
    assert normalise_stream(received, sent, {}) == [
        {"response": "initialize", "result": {"userAgent": "<user-agent>"}},
        {"response": "thread/start", "error": {"code": -1}},
        {"request": "item/tool/call", "params": {}},
        {"method": "warning", "params": {}},
    ]


def test_compare_counts_the_longer_side_and_names_each_difference() -> None:
    a = [{"method": "x", "params": 1}, {"method": "y", "params": 1}, {"method": "z"}]
    b = [
        {"method": "x", "params": 1},
        {"method": "y", "params": 2},
        {"method": "w"},
        {"method": "v"},
    ]
    result = compare(a, b)
    assert (result.compared, result.equal) == (4, 1)
    assert result.percent == 25.0
    assert result.differences == [
        Difference("changed", "y", ("params: real 1 != bridge 2",)),
        Difference("missing", "z"),
        Difference("extra", "w"),
        Difference("extra", "v"),
    ]


def test_identical_streams_match_fully() -> None:
    a = [{"method": "x", "params": {"k": [1, 2]}}]
    result = compare(a, [{"method": "x", "params": {"k": [1, 2]}}])
    assert (result.compared, result.equal, result.differences) == (1, 1, [])


def test_diff_paths_reports_absent_keys_and_list_lengths() -> None:
    assert diff_paths({"a": 1, "b": [1]}, {"b": [1, 2], "c": None}) == [
        "a: only in real (1)",
        "b: 1 elements in real, 2 in bridge",
        "c: only in bridge (null)",
    ]


def test_delta_check_compares_the_joined_deltas_with_the_completed_text() -> None:
    completed = {
        "method": "item/completed",
        "params": {"item": {"type": "agentMessage", "id": "a", "text": "Hello"}},
    }
    ok = delta_checks([delta("a", "Hel"), delta("a", "lo"), completed])
    bad = delta_checks([delta("a", "Help"), completed])
    assert ok == [{"check": "deltas == completed text", "item": "a", "equal": True}]
    assert bad[0]["equal"] is False


def test_thread_read_units_split_thread_turns_and_items() -> None:
    answer = {
        "id": 3,
        "result": {
            "thread": {
                "id": T1,
                "turns": [
                    {"id": U1, "items": [{"type": "userMessage", "id": U2}], "status": "completed"}
                ],
            }
        },
    }
    units = thread_read_units(answer, {})
    assert units == [
        {"read": "thread", "thread": {"id": "<thread:1>"}, "rest": {}},
        {"read": "turn", "turn": 0, "header": {"id": "<turn:1>", "status": "completed"}},
        {"read": "item", "turn": 0, "item": {"type": "userMessage", "id": "<item:1>"}},
    ]


def test_started_items_are_put_back_in_their_starting_state() -> None:
    command = {
        "type": "CommandExecution",
        "id": "c",
        "status": "completed",
        "aggregated_output": "hi\n",
        "exit_code": 0,
        "duration": {"secs": 0},
    }
    assert started_turn_item(command) == {
        "type": "CommandExecution",
        "id": "c",
        "status": "in_progress",
    }
    message = {"type": "AgentMessage", "id": "m", "content": [{"type": "Text", "text": "x"}]}
    assert started_turn_item(message)["content"] == []
    assert message["content"] != []  # the rollout's item is not modified


def test_script_takes_rollout_payloads_and_rebuilds_deltas_in_stream_order() -> None:
    message = {"type": "AgentMessage", "id": "m", "content": [{"type": "Text", "text": "Hi"}]}
    started = {"type": "task_started", "turn_id": U1}
    completed = {
        "type": "item_completed",
        "thread_id": T1,
        "turn_id": U1,
        "item": message,
        "completed_at_ms": 9,
    }
    usage = {"type": "token_count", "info": {"total_token_usage": {}}, "rate_limits": None}
    done = {"type": "task_complete", "turn_id": U1}
    rollout = [{"type": "event_msg", "payload": p} for p in (started, completed, usage, done)]
    item = {"type": "agentMessage", "id": "m", "text": ""}
    received: list[dict[str, Any]] = [
        {"method": "thread/status/changed", "params": {"threadId": T1}},
        {"method": "turn/started", "params": {"threadId": T1, "turn": {"id": U1}}},
        {
            "method": "item/started",
            "params": {"threadId": T1, "turnId": U1, "item": item, "startedAtMs": 4},
        },
        delta("m", "H"),
        delta("m", "i"),
        {"method": "item/completed", "params": {"threadId": T1, "turnId": U1, "item": item}},
        {"method": "thread/tokenUsage/updated", "params": {"threadId": T1, "turnId": U1}},
        {"method": "account/rateLimits/updated", "params": {}},
        {"method": "turn/completed", "params": {"threadId": T1, "turn": {"id": U1}}},
    ]
    derived = script_from_run(received, [rollout])
    msgs = [e["msg"] for e in derived.envelopes]
    assert {e["id"] for e in derived.envelopes} == {U1}
    assert [m["type"] for m in msgs] == [
        "task_started",
        "item_started",
        "agent_message_content_delta",
        "agent_message_content_delta",
        "item_completed",
        "token_count",
        "task_complete",
    ]
    assert msgs[1]["item"]["content"] == []
    assert msgs[1]["started_at_ms"] == 4
    assert msgs[4] is completed
    assert msgs[5] is usage
    assert "".join(m.get("delta", "") for m in msgs) == "Hi"
    assert derived.notes == []


def test_script_notes_what_it_cannot_derive() -> None:
    received = [{"method": "item/somethingNew", "params": {"threadId": T1, "turnId": U1}}]
    assert script_from_run(received, []).notes == ["item/somethingNew: no core event known (1x)"]


def test_report_table_totals_scenarios_and_clients() -> None:
    from codex_app_bridge.conformance.__main__ import format_table
    from codex_app_bridge.conformance._compare import Comparison
    from codex_app_bridge.conformance._matrix import ClientResult
    from codex_app_bridge.conformance._suite import ScenarioResult

    scenario = ScenarioResult("plain", "d", Comparison(10, 9), Comparison(4, 2), Comparison(3, 3))
    client = ClientResult("official", Comparison(5, 5), Comparison(8, 4))
    rows = format_table([scenario], [client]).splitlines()
    plain = next(r for r in rows if r.startswith("plain")).split()
    assert plain[:4] == ["plain", "17", "14", "82.4%"]
    official = next(r for r in rows if r.startswith("official")).split()
    assert official[:4] == ["official", "13", "9", "69.2%"]
    assert rows[-1].split() == ["TOTAL", "30", "23", "76.7%"]


def test_a_comparison_is_stored_as_counts_and_differences() -> None:
    found = compare([{"label": "a", "x": 1}], [{"label": "a", "x": 2}])
    assert found.to_json() == {
        "compared": 1,
        "equal": 0,
        "differences": [
            {"kind": d.kind, "label": d.label, "details": list(d.details)}
            for d in found.differences
        ],
    }
    assert [d["kind"] for d in found.to_json()["differences"]] == ["changed"]


def test_a_thread_warning_racing_the_thread_start_answer_is_put_first_either_way() -> None:
    answer: dict[str, Any] = {"response": "thread/start", "result": {}}
    started: dict[str, Any] = {"method": "thread/started", "params": {}}
    warning: dict[str, Any] = {"method": "warning", "params": {"message": "m"}}
    turn: dict[str, Any] = {"method": "turn/started", "params": {}}
    after = canonical_order([answer, started, warning, turn])
    before = canonical_order([warning, answer, started, turn])
    assert after == before == [warning, answer, started, turn]
    assert canonical_order(after) == after
    # only the racing kinds move
    assert canonical_order([answer, started, turn]) == [answer, started, turn]


def test_a_turn_start_answer_after_its_turns_first_notifications_is_put_before_them() -> None:
    answer: dict[str, Any] = {"response": "turn/start", "result": {}}
    status: dict[str, Any] = {"method": "thread/status/changed", "params": {"status": {}}}
    started: dict[str, Any] = {"method": "turn/started", "params": {}}
    item: dict[str, Any] = {"method": "item/started", "params": {}}
    warning: dict[str, Any] = {"method": "warning", "params": {"message": "m"}}
    usual = [warning, answer, status, started, item]
    assert canonical_order([warning, status, started, answer, item]) == usual  # seen: 0.163.0
    assert canonical_order([warning, status, answer, started, item]) == usual
    assert canonical_order(usual) == usual
    # another answer, or the answer after an item of the turn, keeps its place
    other: dict[str, Any] = {"response": "thread/start", "result": {}}
    assert canonical_order([status, started, other]) == [status, started, other]
    assert canonical_order([started, item, answer]) == [started, item, answer]


def test_a_turn_start_answer_after_an_item_of_its_own_turn_is_put_before_them() -> None:
    # 0.163.0, auto_compact beside a loaded suite: the turn's contextCompaction item starts at
    # once (no model request before it) and overtook the answer with the status and turn/started
    answer: dict[str, Any] = {"response": "turn/start", "result": {"turn": {"id": "<turn:2>"}}}
    status: dict[str, Any] = {"method": "thread/status/changed", "params": {"status": {}}}
    started: dict[str, Any] = {"method": "turn/started", "params": {"turn": {"id": "<turn:2>"}}}
    item: dict[str, Any] = {"method": "item/started", "params": {"turnId": "<turn:2>"}}
    limits: dict[str, Any] = {"method": "account/rateLimits/updated", "params": {}}
    usual = [answer, status, started, item, limits]
    assert canonical_order([status, started, item, answer, limits]) == usual
    assert canonical_order(usual) == usual
    # an item of another turn, and what names no turn, keep the answer after them
    other: dict[str, Any] = {"method": "item/started", "params": {"turnId": "<turn:1>"}}
    assert canonical_order([other, answer]) == [other, answer]
    assert canonical_order([limits, answer]) == [limits, answer]


def test_the_status_after_a_declined_approval_is_put_after_the_item_it_completed() -> None:
    resolved: dict[str, Any] = {"method": "serverRequest/resolved", "params": {"requestId": 0}}
    status: dict[str, Any] = {"method": "thread/status/changed", "params": {"status": {}}}
    completed: dict[str, Any] = {"method": "item/completed", "params": {"item": {}}}
    usage: dict[str, Any] = {"method": "thread/tokenUsage/updated", "params": {}}
    raced = canonical_order([resolved, status, completed, usage])
    usual = canonical_order([resolved, completed, status, usage])
    assert raced == usual == [resolved, completed, status, usage]
    assert canonical_order(raced) == raced
    # a status change anywhere else keeps its place
    assert canonical_order([status, completed, usage]) == [status, completed, usage]
    assert canonical_order([resolved, status, usage]) == [resolved, status, usage]


def _fork_and_its_tail() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A ``thread/fork`` answer, then the usage replay and ``thread/started`` of the new thread."""
    fork: dict[str, Any] = {"response": "thread/fork", "result": {"thread": {"id": "<thread:2>"}}}
    usage: dict[str, Any] = {
        "method": "thread/tokenUsage/updated",
        "params": {"threadId": "<thread:2>"},
    }
    started: dict[str, Any] = {
        "method": "thread/started",
        "params": {"thread": {"id": "<thread:2>"}},
    }
    return fork, usage, started


def test_a_forks_usage_replay_and_thread_started_are_put_back_after_its_answer() -> None:
    fork, usage, started = _fork_and_its_tail()
    warning: dict[str, Any] = {"method": "warning", "params": {"threadId": "<thread:2>"}}
    answer: dict[str, Any] = {"response": "turn/start", "result": {"turn": {"id": "<turn:3>"}}}
    status: dict[str, Any] = {
        "method": "thread/status/changed",
        "params": {"threadId": "<thread:2>"},
    }
    turn: dict[str, Any] = {"method": "turn/started", "params": {"threadId": "<thread:2>"}}
    usual = canonical_order([fork, usage, started, warning, answer, status, turn])
    assert usual == [fork, usage, warning, started, answer, status, turn]
    assert canonical_order(usual) == usual
    # 0.163.0 beside CPU burners: the tail after the next turn's start, or after its warning
    assert canonical_order([fork, warning, answer, status, turn, usage, started]) == usual
    assert canonical_order([fork, warning, usage, started, answer, status, turn]) == usual
    # a fork with no usage to replay: thread/started alone
    alone = canonical_order([fork, started, warning, answer])
    assert canonical_order([fork, warning, answer, started]) == alone


def test_a_forks_tail_keeps_its_place_behind_what_the_next_turn_does_not_send() -> None:
    fork, usage, started = _fork_and_its_tail()
    parent: dict[str, Any] = {
        "method": "thread/status/changed",
        "params": {"threadId": "<thread:1>"},
    }
    read: dict[str, Any] = {"response": "thread/read", "result": {}}
    for other in (parent, read):
        assert canonical_order([fork, other, usage, started]) == [fork, other, usage, started]
    # another thread's thread/started is not this fork's
    stranger: dict[str, Any] = {
        "method": "thread/started",
        "params": {"thread": {"id": "<thread:3>"}},
    }
    assert canonical_order([fork, stranger, usage]) == [fork, stranger, usage]
