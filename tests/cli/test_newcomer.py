"""What a newcomer meets first: the demo answers the server's requests, a script turn that shows
nothing says why, a bad script line or Ctrl-C gives one line on stderr, not a traceback."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from codex_app_bridge.cli import main
from tests.conftest import bridge_command, bridge_env

TIMEOUT = 60
HANG = 300
"""Seconds before a subprocess is taken for hung: its start-up, run and exit together (a loaded
2-core CI machine took over a minute for all three)."""


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("accept", "I ran `ls -la` (approved); it printed: ran: ls -la"),
        ("decline", "You declined `ls -la`; I did not run it."),
    ],
)
def test_demo_answers_an_approval_request_and_the_turn_completes(
    answer: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--pace", "0", "--answer", answer, "approve: ls -la"]) == 0
    out = capsys.readouterr().out
    assert "<<< request  item/commandExecution/requestApproval" in out
    assert f'>>> answer  {{"decision":"{answer}"}}' in out
    assert said in out
    assert "  . turn/completed" in out


@pytest.mark.parametrize(
    "prompt",
    ["patch: notes.txt", "permissions: net", "ask: your name?", "elicit: who", "tool: weather {}"],
)
def test_demo_answers_every_kind_of_server_request(
    prompt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--json", "--pace", "0", prompt]) == 0
    records = [json.loads(line) for line in io.StringIO(capsys.readouterr().out)]
    requests = [r["msg"] for r in records if r["dir"] == "s2c" and "id" in r["msg"]]
    requests = [m for m in requests if "method" in m]
    assert len(requests) == 1
    answers = [r["msg"] for r in records if r["dir"] == "c2s" and "method" not in r["msg"]]
    assert [a["id"] for a in answers] == [requests[0]["id"]]
    assert "result" in answers[0]
    completed = [r for r in records if r["msg"].get("method") == "turn/completed"]
    assert [c["msg"]["params"]["turn"]["status"] for c in completed] == ["completed"]


def test_demo_json_is_jsonl_to_the_last_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--json", "--pace", "0", "hi"]) == 0
    out = capsys.readouterr().out
    assert out.endswith("}\n")
    for line in out.splitlines():
        json.loads(line)


def _replay(script: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*bridge_command(), "replay", "--no-timestamps", *args, str(script)],
        capture_output=True,
        timeout=TIMEOUT,
        env=bridge_env(),
        check=False,
    )


def _notifications(stdout: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_a_script_turn_of_legacy_events_only_says_why_it_shows_nothing(tmp_path: Path) -> None:
    script = tmp_path / "legacy.jsonl"
    script.write_text(
        '{"id":"t1","msg":{"type":"task_started","turn_id":"t1"}}\n'
        '{"id":"t1","msg":{"type":"agent_message","message":"hello"}}\n'
        '{"id":"t1","msg":{"type":"agent_message","message":"again"}}\n'
        '{"id":"t1","msg":{"type":"nope"}}\n'
        '{"id":"t1","msg":{"type":"task_complete","turn_id":"t1"}}\n'
    )
    proc = _replay(script)
    assert proc.returncode == 0, proc.stderr
    warnings = [n["params"] for n in _notifications(proc.stdout) if n["method"] == "warning"]
    assert [w["message"] for w in warnings] == [  # type: ignore[index]
        f"{script}: line 2: 'agent_message' is a legacy event that 0.163.0 clients never see: "
        "write item_started / item_completed (item type AgentMessage) instead",
        f"{script}: line 4: unknown event type 'nope': clients see nothing of it",
    ]
    assert b"line 2: 'agent_message' is a legacy event" in proc.stderr


def test_legacy_events_beside_their_items_are_what_core_sends_and_say_nothing(
    tmp_path: Path,
) -> None:
    item = {"type": "AgentMessage", "id": "m1", "content": [{"type": "Text", "text": "hi"}]}
    ids = {"thread_id": "th", "turn_id": "t1"}
    lines = [
        {"type": "task_started", "turn_id": "t1"},
        {"type": "item_started", **ids, "item": item, "started_at_ms": 1},
        {"type": "agent_message", "message": "hi"},
        {"type": "item_completed", **ids, "item": item, "started_at_ms": 1, "completed_at_ms": 2},
        {"type": "task_complete", "turn_id": "t1"},
    ]
    script = tmp_path / "core.jsonl"
    script.write_text("".join(json.dumps({"id": "t1", "msg": m}) + "\n" for m in lines))
    proc = _replay(script)
    assert proc.returncode == 0, proc.stderr
    kinds = [n["method"] for n in _notifications(proc.stdout)]
    assert "warning" not in kinds
    assert "item/completed" in kinds
    assert proc.stderr == b""


def test_a_bad_script_line_is_one_line_on_stderr_naming_every_missing_field(
    tmp_path: Path,
) -> None:
    script = tmp_path / "bad.jsonl"
    script.write_text(
        '{"id":"t1","msg":{"type":"task_started","turn_id":"t1"}}\n'
        '{"id":"t1","msg":{"type":"item_started","item":{"type":"AgentMessage","id":"m",'
        '"content":[]}}}\n'
        '{"id":"t1","msg":{"type":"task_complete","turn_id":"t1"}}\n'
    )
    proc = _replay(script)
    assert proc.returncode == 1
    assert b"Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    for field in (b"thread_id: Field required", b"started_at_ms: Field required"):
        assert field in proc.stderr


@pytest.mark.parametrize("at", [b'"thread/started"', b'"turn/started"'])
def test_ctrl_c_during_a_paced_replay_is_one_line_and_status_130(tmp_path: Path, at: bytes) -> None:
    script = tmp_path / "slow.jsonl"
    script.write_text(
        '{"t":0,"id":"t1","msg":{"type":"task_started","turn_id":"t1"}}\n'
        '{"t":100,"id":"t1","msg":{"type":"task_complete","turn_id":"t1"}}\n'
    )
    proc = subprocess.Popen(
        [*bridge_command(), "replay", "--pace", "recorded:0.01", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**bridge_env(), "PYTHONFAULTHANDLER": "1"},
    )
    assert proc.stdout is not None
    # a hang ends the reads below with EOF, its threads' stacks on stderr (faulthandler, SIGABRT)
    guard = threading.Timer(HANG, proc.send_signal, (signal.SIGABRT,))
    guard.start()
    try:
        for line in proc.stdout:
            if at in line:  # while starting the turn, or waiting out the recorded gap
                proc.send_signal(signal.SIGINT)
                break
        _, stderr = proc.communicate(timeout=HANG)
    finally:
        guard.cancel()
        proc.kill()
    assert proc.returncode == 130, stderr.decode(errors="replace")
    assert stderr == b"codex-app-bridge: interrupted\n"
