"""``codex-app-bridge check FILE``: a scenario, script or rollout judged line by line without
serving it, in the words serving it would use; exit 0 (ok), 1 (a problem), 2 (unreadable)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codex_app_bridge.cli import main
from codex_app_bridge.sources import ScenarioError, parse_scenario

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "tests" / "data" / "captures"


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    status = main(["check", *args])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def test_the_example_scenario_is_ok(capsys: pytest.CaptureFixture[str]) -> None:
    example = ROOT / "examples" / "three_turns.scenario.jsonl"
    status, out, err = _check(capsys, str(example))
    assert (status, err) == (0, "")
    assert out == [f"{example} (scenario, 6 rules): ok"]


def test_every_problem_of_a_scenario_is_one_line_with_its_number_as_serve_words_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "bad.scenario.jsonl"
    text = (
        "# a comment, then three bad rules and a good one\n"
        '{"match": "hi", "reply": 3}\n'
        '{"match": "x", "bogus": 1, "reply": "ok"}\n'
        "not json\n"
        '{"default": true, "reply": "fine"}\n'
    )
    scenario.write_text(text)
    status, out, _ = _check(capsys, str(scenario))
    assert status == 1
    with pytest.raises(ScenarioError) as raised:
        parse_scenario(text.encode(), name=str(scenario))
    assert [n for n, _ in raised.value.problems] == [2, 3, 4]
    assert out[:-1] == [f"{scenario}: line {n}: {m}" for n, m in raised.value.problems]
    assert out[1].startswith(f"{scenario}: line 3: unknown key 'bogus'")
    assert out[-1] == f"{scenario} (scenario): 3 problems"


_LINES = [
    '{"id":"t1","msg":{"type":"task_started","turn_id":"t1"}}',
    '{"id":"t1","msg":{"type":"agent_message","message":"hello"}}',
    '{"id":"t1","msg":{"type":"nope"}}',
    '{"id":"t1","msg":{"type":"task_complete","turn_id":"t1"}}',
]


def test_a_script_whose_events_show_nothing_gets_a_note_per_line_and_passes_unless_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "legacy.jsonl"
    script.write_text("\n".join(_LINES) + "\n")
    status, out, _ = _check(capsys, str(script))
    assert status == 0
    # the words a replay of the file warns with (tests/cli/test_newcomer.py)
    assert out == [
        f"note: {script}: line 2: 'agent_message' is a legacy event that 0.163.0 clients never "
        "see: write item_started / item_completed (item type AgentMessage) instead",
        f"note: {script}: line 3: unknown event type 'nope': clients see nothing of it",
        f"{script} (script, 1 turn): ok, 2 notes",
    ]
    assert _check(capsys, "--strict", str(script))[0] == 1


def test_every_bad_line_of_a_script_is_reported_not_only_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "bad.jsonl"
    item = '{"type":"AgentMessage","id":"m","content":[]}'
    script.write_text(
        f"{_LINES[0]}\n"
        f'{{"id":"t1","msg":{{"type":"item_started","item":{item}}}}}\n'
        "[1, 2]\n"
        "\n"
        f"{_LINES[3]}\n"
        '{"id":"t2","msg":{"type":"task_started","turn_id":"t2"}}\n'
        '{"id":"t2","msg":{"type":"task_complete","turn_id":"t2"}}\n'
    )
    status, out, _ = _check(capsys, str(script))
    assert status == 1
    assert out[0].startswith(f"{script}: line 2: invalid 'item_started' event: thread_id: Field")
    assert "started_at_ms: Field required" in out[0]
    assert out[1] == f"{script}: line 3: expected an object {{id, msg}}"
    assert out[-1] == f"{script} (script, 2 turns): 2 problems"


def test_a_recorded_rollout_is_ok_and_a_broken_payload_is_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rollout = CAPTURES / "shell" / "rollout.jsonl"
    status, out, _ = _check(capsys, str(rollout))
    assert (status, out) == (0, [f"{rollout} (rollout, 1 turn): ok"])
    broken = tmp_path / "rollout.jsonl"
    shutil.copy(rollout, broken)
    with broken.open("a") as stream:
        stream.write(json.dumps({"type": "event_msg", "payload": {"type": "task_complete"}}))
        stream.write('\n{"type": "event_msg"}\n')
    count = len(rollout.read_text().splitlines())
    status, out, _ = _check(capsys, str(broken))
    assert status == 1
    assert out[0].startswith(
        f"{broken}: line {count + 1}: invalid event_msg payload: task_complete.turn_id"
    )
    assert out[1] == f"{broken}: line {count + 2}: expected a rollout line {{type, payload}}"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("", "the file is empty: expected a scenario rule"),
        ("\n# only a comment\n", "the file is empty: expected a scenario rule"),
        ('{"hello": "world"}\n', "line 1: expected a scenario rule"),
        ("hello\n", "line 1: not JSON"),
    ],
)
def test_a_file_of_no_known_kind_is_one_problem(
    content: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "what.jsonl"
    path.write_text(content)
    status, out, _ = _check(capsys, str(path))
    assert status == 1
    assert out[0].startswith(f"{path}: {said}")
    assert out[1] == f"{path}: 1 problem"


def test_an_unreadable_file_is_status_2_and_the_others_are_still_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = ROOT / "examples" / "three_turns.scenario.jsonl"
    status, out, err = _check(capsys, str(tmp_path / "missing.jsonl"), str(example))
    assert status == 2
    assert err == f"check: cannot read {tmp_path / 'missing.jsonl'}: No such file or directory\n"
    assert out == [f"{example} (scenario, 6 rules): ok"]
