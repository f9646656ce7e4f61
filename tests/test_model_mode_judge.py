"""The model-mode judge (``conformance/_model_mode.py``) on hand-made runs: what it masks in a
request's ``input`` (instruction prose, generated ids) and what it keeps (the conversation),
that one normaliser numbers a thread the same in the stream and in the requests, across a
restart, and that a changed, missing or extra request is found. The reference data in
``tests/data/model_mode`` is well formed and covers every scenario; a raced scenario's other
outcome differs from its usual one only where the race decides."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from codex_app_bridge.conformance import _model_mode as model_mode
from codex_app_bridge.conformance.__main__ import main as conformance_main
from codex_app_bridge.conformance._model_mode import (
    MODEL_SCENARIOS,
    RACED,
    RunRecord,
    Segment,
    ServerRun,
    command_ends_after_their_item,
    compare_runs,
    compare_with_reference,
    goal_updates_last_in_turn,
    load_reference,
    mask_input,
    recheck_real,
    record_run,
    save_record,
    scenario_named,
    unexplained,
    without_time_charges,
)

REFERENCE = Path(__file__).resolve().parent / "data" / "model_mode"
OBSERVED = Path(__file__).resolve().parent / "data" / "model_mode_observed"
THREAD = "019a0000-0000-7000-8000-000000000001"
TURN = "019a0000-0000-7000-8000-0000000000aa"


def developer(*texts: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "developer",
        "id": "msg_019a0000-1111-7000-8000-000000000001",
        "content": [{"type": "input_text", "text": t} for t in texts],
    }


def user(text: str, item_id: str = "msg_019a0000-2222-7000-8000-000000000002") -> dict[str, Any]:
    return {
        "type": "message",
        "role": "user",
        "id": item_id,
        "content": [{"type": "input_text", "text": text}],
    }


def test_instruction_prose_and_context_fragments_become_their_kind() -> None:
    items = [
        developer("You are a coding agent. Be nice."),
        developer("<permissions instructions>\nsandbox...</permissions instructions>"),
        user("<environment_context>\n  <cwd>/x</cwd>\n</environment_context>"),
        user("# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>..."),
        user("<turn_aborted>\nThe user interrupted.\n</turn_aborted>"),
        user("<b>bold</b> is what I typed"),
        user("Say hello."),
    ]
    masked = mask_input(items)
    texts = [m["content"][0]["text"] for m in masked]  # type: ignore[index]
    assert texts == [
        "<prose>",
        "<permissions instructions>…",
        "<environment_context>…",
        "<prose>",
        "<turn_aborted>…",
        "<b>bold</b> is what I typed",
        "Say hello.",
    ]
    assert {m["id"] for m in masked} == {"msg_<uuid>"}  # type: ignore[index]


def test_model_output_and_tool_outputs_are_kept_whole_but_their_generated_ids() -> None:
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "frobnicate",
        "arguments": "{}",
    }
    output = {
        "type": "function_call_output",
        "id": "fco_019a0000-3333-7000-8000-000000000003",
        "call_id": "call_1",
        "output": "unsupported call: frobnicate",
    }
    reply = {
        "type": "message",
        "role": "assistant",
        "id": "msg_plain_0",
        "content": [{"type": "output_text", "text": "Hi", "annotations": []}],
    }
    assert mask_input([call, output, reply]) == [
        call,
        {**output, "id": "fco_<uuid>"},
        reply,
    ]


def test_a_command_outputs_chunk_id_wall_time_and_session_id_are_masked_not_its_output() -> None:
    text = (
        "Chunk ID: 5718e9\nWall time: 0.0831 seconds\nProcess running with session ID 22216\n"
        "Original token count: 5\nOutput:\nWall time: 3 seconds\nChunk ID: x\n"
    )
    patch = "Wall time: 0.0000 seconds\nOutput:\nExit code: 0\nWall time: 0.2 seconds\nOutput:\n"
    items = [
        {"type": "function_call_output", "call_id": "c1", "output": text},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": patch},
    ]
    masked = cast(list[dict[str, Any]], mask_input(items))
    assert masked[0]["output"] == (
        "Chunk ID: <chunk>\nWall time: <seconds> seconds\nProcess running with session ID "
        "<session>\nOriginal token count: 5\nOutput:\n"
        # the command's own output is compared whole, even a line that looks like a header
        "Wall time: 3 seconds\nChunk ID: x\n"
    )
    poll = {"type": "function_call", "name": "write_stdin", "call_id": "c3"}
    masked_poll = mask_input([{**poll, "arguments": '{"session_id": 23761, "chars": ""}'}])
    assert masked_poll == [{**poll, "arguments": '{"session_id": <session>, "chars": ""}'}]
    prose = "Wall time: 1 seconds, more or less\nOutput:\n"
    assert mask_input([{**items[0], "output": prose}]) == [{**items[0], "output": prose}]
    assert masked[1]["output"] == (
        "Wall time: <seconds> seconds\nOutput:\nExit code: 0\nWall time: <seconds> seconds\n"
        "Output:\n"
    )


def _run(requests: list[dict[str, Any]], second_process: bool = False) -> ServerRun:
    started = {"method": "thread/started", "params": {"thread": {"id": THREAD}}}
    turn = {"method": "turn/started", "params": {"threadId": THREAD, "turn": {"id": TURN}}}
    segments = [Segment([started, turn], [])]
    if second_process:
        segments.append(Segment([turn], []))
    return ServerRun(segments, [THREAD], {}, {}, requests)


def _request(*items: dict[str, Any]) -> dict[str, Any]:
    return {
        "method": "POST",
        "path": "/v1/responses",
        "headers": {"x-codex-window-id": f"{THREAD}:0"},
        "body": {"model": "m", "input": list(items), "prompt_cache_key": THREAD},
    }


def test_one_normaliser_numbers_the_thread_in_the_stream_the_requests_and_after_a_restart(
    tmp_path: Path,
) -> None:
    spec = scenario_named("plain")
    record = record_run(spec, _run([_request(user("hi"))], True), tmp_path, "http://x")
    assert record.stream[0]["params"]["thread"]["id"] == "<thread:1>"
    assert {"restart": 1} in record.stream
    assert record.stream[-1]["params"]["threadId"] == "<thread:1>"
    assert record.fields[0]["prompt_cache_key"] == "<thread:1>"
    assert record.fields[0]["window"] == "<thread:1>:0"


def test_a_changed_missing_or_extra_request_is_a_difference(tmp_path: Path) -> None:
    spec = scenario_named("plain")
    base = record_run(spec, _run([_request(user("hi"))]), tmp_path, "http://x")
    same = record_run(spec, _run([_request(user("hi"))]), tmp_path, "http://x")
    result = compare_runs(spec, base, same)
    assert result.requests_equal
    assert unexplained(spec, result) == []

    other = record_run(spec, _run([_request(user("ho"))]), tmp_path, "http://x")
    changed = compare_runs(spec, base, other)
    assert not changed.requests_equal
    assert [d.kind for d in changed.inputs.differences] == ["changed"]
    assert any("input[0]" in line for line in changed.inputs.differences[0].details)

    two = record_run(spec, _run([_request(user("hi")), _request(user("hi"))]), tmp_path, "http://x")
    extra = compare_runs(spec, base, two)
    assert extra.request_counts == (1, 2)
    assert [d.kind for d in extra.inputs.differences] == ["extra"]
    missing = compare_runs(spec, two, base)
    assert [d.kind for d in missing.inputs.differences] == ["missing"]


def test_a_volatile_label_is_explained_only_when_changed(tmp_path: Path) -> None:
    spec = scenario_named("interrupt")
    delta = {"method": "item/agentMessage/delta", "params": {"delta": "a"}}
    real = RunRecord("interrupt", [delta], [], [], [])
    bridge = RunRecord("interrupt", [{**delta, "params": {"delta": "ab"}}], [], [], [])
    assert unexplained(spec, compare_runs(spec, real, bridge)) == []
    assert unexplained(spec, compare_runs(spec, real, RunRecord("interrupt", [], [], [], [])))


def test_every_scenario_has_a_reference_recorded_from_the_real_binary() -> None:
    names = {p.stem for p in REFERENCE.glob("*.json")}
    assert names == {s.name for s in MODEL_SCENARIOS}
    for spec in MODEL_SCENARIOS:
        data = json.loads((REFERENCE / f"{spec.name}.json").read_text(encoding="utf-8"))
        record = RunRecord.from_json(data)
        assert record.error is None, spec.name
        assert record.stream, spec.name
        assert len(record.inputs) == len(record.fields)
        # no instruction prose of the real binary is stored
        assert "You are a coding agent" not in json.dumps(data)


def test_every_raced_scenario_has_its_other_outcome_recorded_and_only_those() -> None:
    names = {p.stem for p in (REFERENCE / RACED).glob("*.json")}
    assert names == {s.name for s in MODEL_SCENARIOS if s.raced}


def test_the_other_outcome_of_a_goal_charged_mid_turn_is_the_call_finishing_first() -> None:
    """The race of ``goal_budget_mid_turn`` (the get_goal call against the response's usage)
    decides the mid-turn charge and what follows from it, nothing else: one
    ``thread/goal/updated`` fewer, no hidden budget message in the follow-up request, and the
    follow-up's text (the mock answers a tool output last with another text)."""
    spec = scenario_named("goal_budget_mid_turn")
    usual = load_reference(REFERENCE, spec.name)
    raced = load_reference(REFERENCE / RACED, spec.name)
    found = {(d.kind, d.label) for d in unexplained(spec, compare_runs(spec, usual, raced))}
    text = {
        ("changed", "item/agentMessage/delta"),
        ("changed", "item/completed (agentMessage)"),
        ("changed", "turn/completed"),
        ("changed", "thread/read item (agentMessage)"),
    }
    assert found == {("missing", "thread/goal/updated"), ("changed", "request 1"), *text}


def cut(name: str) -> RunRecord:
    """The reference of ``name`` without its last stream unit: an outcome no placement explains."""
    usual = load_reference(REFERENCE, name)
    return RunRecord.from_json({**usual.to_json(), "stream": usual.stream[:-1]})


def play_the_binary(
    monkeypatch: pytest.MonkeyPatch, runs: dict[str, list[RunRecord]]
) -> list[list[str]]:
    """The real binary's runs played from ``runs`` (each scenario's outcomes, in the order its
    runs come); the names of each run asked for are appended to the list returned."""
    asked: list[list[str]] = []

    def played(names: Sequence[str], scratch: Path, *, record: Path, **_: object) -> list[object]:
        asked.append(list(names))
        for name in names:
            save_record(record, runs[name].pop(0))
        return []

    monkeypatch.setattr(model_mode, "run_model_suite_sync", played)
    return asked


def test_the_recheck_command_says_run_by_run_what_differed_and_where(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = {
        "plain": [load_reference(REFERENCE, "plain")] * 2,
        "compact": [cut("compact"), load_reference(REFERENCE, "compact")],
    }
    play_the_binary(monkeypatch, runs)
    argv = ["--model-mode", "--recheck", "2", "--reference", str(REFERENCE)]
    assert conformance_main([*argv, "--scenario", "plain", "--scenario", "compact"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if line.startswith(("run ", "after "))] == [
        "run 1: compact: [('missing', 'check deltas == completed text')]",
        "after 1 of 2: {'compact': 1}",
        "after 2 of 2: {'compact': 1}",
    ]
    assert "    -check deltas == completed text" in out
    # nothing differed: exit 0
    play_the_binary(monkeypatch, {"plain": [load_reference(REFERENCE, "plain")]})
    assert conformance_main([*argv[:2], "1", *argv[3:], "--scenario", "plain"]) == 0
    assert capsys.readouterr().out.splitlines() == ["after 1 of 1: no differences"]


def test_a_recheck_runs_a_differing_scenario_once_more_and_judges_the_second_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``recheck_real`` with the binary's runs played from records: a scenario equal at once is
    run once; one that differed once and then not is judged by its second run and returned as
    raced, with where it differed; one that differs twice stays a difference."""

    runs = {
        "plain": [load_reference(REFERENCE, "plain")],
        "interrupt": [cut("interrupt"), load_reference(REFERENCE, "interrupt")],
        "compact": [cut("compact"), cut("compact")],
    }
    asked = play_the_binary(monkeypatch, runs)
    results, raced = recheck_real(list(runs), REFERENCE, tmp_path)
    assert asked == [["plain", "interrupt", "compact"], ["interrupt", "compact"]]
    assert list(raced) == ["interrupt"]
    assert raced["interrupt"].where
    assert unexplained(scenario_named("interrupt"), raced["interrupt"])
    assert unexplained(scenario_named("interrupt"), results["interrupt"]) == []
    assert unexplained(scenario_named("plain"), results["plain"]) == []
    assert unexplained(scenario_named("compact"), results["compact"])


def test_a_raced_scenario_matches_either_outcome_and_no_third() -> None:
    spec = scenario_named("goal_budget_mid_turn")
    usual = load_reference(REFERENCE, spec.name)
    raced = load_reference(REFERENCE / RACED, spec.name)
    assert unexplained(spec, compare_with_reference(spec, REFERENCE, usual)) == []
    assert unexplained(spec, compare_with_reference(spec, REFERENCE, raced)) == []
    third = RunRecord.from_json({**usual.to_json(), "stream": usual.stream[:-1]})
    assert unexplained(spec, compare_with_reference(spec, REFERENCE, third))
    # a scenario with one outcome is compared with it alone
    plain = scenario_named("plain")
    assert not plain.raced
    other = RunRecord.from_json({**raced.to_json(), "scenario": "plain"})
    assert unexplained(plain, compare_with_reference(plain, REFERENCE, other))


def test_a_goal_update_that_overtook_its_turns_events_is_placed_after_them() -> None:
    def note(method: str, **params: Any) -> dict[str, Any]:
        return {"method": method, "params": {"threadId": "<thread:1>", **params}}

    def goal(used: int, turn: str | None = "<turn:1>") -> dict[str, Any]:
        return note("thread/goal/updated", turnId=turn, goal={"tokensUsed": used})

    def delta(text: str) -> dict[str, Any]:
        return note("item/agentMessage/delta", turnId="<turn:1>", itemId="<item:1>", delta=text)

    started = note("item/started", turnId="<turn:1>")
    usage = note("thread/tokenUsage/updated", turnId="<turn:1>")
    limits: dict[str, Any] = {"method": "account/rateLimits/updated", "params": {}}
    completed = note("item/completed", turnId="<turn:1>")
    read_state = note("thread/readState/changed")
    usual = [goal(120), usage, limits, started, delta("ab"), completed, usage, limits, goal(240)]
    # 0.163.0 beside CPU burners: the turn-end charge between two deltas of the closing message
    raced = [goal(120), usage, limits, started, delta("a"), goal(240), delta("b"), completed]
    raced += [usage, limits]
    placed = goal_updates_last_in_turn([*usual, read_state])
    assert goal_updates_last_in_turn([*raced, read_state]) == placed
    assert placed[-3:] == [goal(120), goal(240), read_state]
    # not over another turn's events, the turn's end, or an update of no turn
    other = note("item/started", turnId="<turn:2>")
    assert goal_updates_last_in_turn([goal(1), other]) == [goal(1), other]
    assert goal_updates_last_in_turn([goal(1, None), usage]) == [goal(1, None), usage]


def test_a_command_end_the_follow_up_request_overtook_is_placed_after_its_item() -> None:
    """A run of the real binary (pinned to one CPU beside three burners) whose command end came
    after the follow-up request's token usage and rate limits: a difference against its
    reference until the re-check places command ends, then none."""
    spec = scenario_named("shell_session")
    late = load_reference(OBSERVED, "shell_session_late_end")
    found = {
        (d.kind, d.label)
        for d in unexplained(spec, compare_runs(spec, load_reference(REFERENCE, spec.name), late))
    }
    end = "item/completed (commandExecution)"
    assert found == {("missing", end), ("extra", end)}
    # and where: after the follow-up request's usage and rate limits instead of before them
    where = compare_runs(spec, load_reference(REFERENCE, spec.name), late).where
    assert [line for line in where if line[:1] in "+-" and line[:3] not in ("---", "+++")] == [
        f"-{end}",
        f"+{end}",
    ]
    assert where[where.index(f"+{end}") - 1] == " account/rateLimits/updated"
    assert unexplained(spec, compare_with_reference(spec, REFERENCE, late)) == []


def test_a_command_end_moves_back_only_to_its_own_item() -> None:
    def note(method: str, **params: Any) -> dict[str, Any]:
        return {
            "method": method,
            "params": {"threadId": "<thread:1>", "turnId": "<turn:1>", **params},
        }

    def item(
        method: str, item_id: str, kind: str = "commandExecution", **fields: Any
    ) -> dict[str, Any]:
        return note(method, item={"id": item_id, "type": kind, **fields})

    def delta(item_id: str, text: str) -> dict[str, Any]:
        return note("item/agentMessage/delta", itemId=item_id, delta=text)

    ran = {"source": "unifiedExecStartup", "status": "completed"}
    started = item("item/started", "<item:1>", source="agent")
    output = note("item/commandExecution/outputDelta", itemId="<item:1>", delta="x")
    end = item("item/completed", "<item:1>", **ran)
    usage = note("thread/tokenUsage/updated")
    limits: dict[str, Any] = {"method": "account/rateLimits/updated", "params": {}}
    message = item("item/started", "<item:2>", "agentMessage")
    usual = [started, output, end, usage, limits, message, delta("<item:2>", "ab")]
    # the exit watcher late: after the follow-up's usage, even inside the next message
    late = [started, output, usage, limits, message, delta("<item:2>", "a"), end]
    late.append(delta("<item:2>", "b"))
    assert command_ends_after_their_item(late) == usual
    assert command_ends_after_their_item(usual) == usual
    # a declined command's end is the tool's own (not the watcher's): left where it came
    declined = item("item/completed", "<item:1>", source="agent", status="declined")
    assert command_ends_after_their_item([started, usage, declined]) == [started, usage, declined]
    # an end with no notification of its item before it (or only before a restart) stays
    assert command_ends_after_their_item([usage, end]) == [usage, end]
    restarted = [started, {"restart": 1}, usage, end]
    assert command_ends_after_their_item(restarted) == restarted


def test_a_goal_charged_time_alone_on_a_slow_run_equals_its_reference() -> None:
    """A run of the real binary (one CPU, three burners) whose failing turn took a whole second:
    one more ``thread/goal/updated`` (the goal unchanged but for its masked seconds), which
    the comparison leaves out on both sides."""
    spec = scenario_named("goal_failed_turn")
    slow = load_reference(OBSERVED, "goal_failed_turn_time_charge")
    usual = load_reference(REFERENCE, spec.name)

    def updates(record: RunRecord) -> int:
        return sum(u.get("method") == "thread/goal/updated" for u in record.stream)

    assert updates(slow) == updates(usual) + 1
    assert unexplained(spec, compare_with_reference(spec, REFERENCE, slow)) == []


def test_only_a_turns_update_that_changes_nothing_but_time_is_left_out() -> None:
    def goal(turn: str | None, used: int, thread: str = "<thread:1>") -> dict[str, Any]:
        goal = {"tokensUsed": used, "timeUsedSeconds": "<time>", "status": "active"}
        return {
            "method": "thread/goal/updated",
            "params": {"threadId": thread, "turnId": turn, "goal": goal},
        }

    usage = {"method": "thread/tokenUsage/updated", "params": {"threadId": "<thread:1>"}}
    assert without_time_charges(
        [goal(None, 0), goal("<turn:1>", 120), usage, goal("<turn:2>", 120)]
    ) == [
        goal(None, 0),
        goal("<turn:1>", 120),
        usage,
    ]
    # kept: a change, an announcement (no turn), another thread's, the first after a restart
    kept = [goal("<turn:1>", 120), goal(None, 120), goal("<turn:1>", 120, "<thread:2>")]
    kept += [{"restart": 1}, goal("<turn:1>", 120), goal("<turn:1>", 240)]
    assert without_time_charges(kept) == kept


def test_the_other_outcome_of_an_interrupt_lacks_only_the_rate_limits_of_the_abort() -> None:
    spec = scenario_named("interrupt")
    usual = load_reference(REFERENCE, spec.name)
    raced = load_reference(REFERENCE / RACED, spec.name)
    found = [(d.kind, d.label) for d in unexplained(spec, compare_runs(spec, usual, raced))]
    assert found == [("missing", "account/rateLimits/updated")]
