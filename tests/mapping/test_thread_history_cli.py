"""``codex-app-bridge history``: a rollout in, the thread's turns out, run as a real subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import CAPTURES_DIR, bridge_command, bridge_env

REVERT_FORK = CAPTURES_DIR / "revert_fork"
MAIN_THREAD = "01a229f2-bbfe-7a20-9d7f-35a05b666f52"
SEGMENT = "01a229f2-bca3-7bb2-ab4f-f54b91abaab4"
FORK_THREAD = "01a229f2-bccb-7130-8ebf-f9767e792672"


def run(
    args: list[str], *, stdin: bytes = b"", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*bridge_command(), "history", *args],
        input=stdin,
        capture_output=True,
        env=bridge_env(env),
        timeout=60,
        check=False,
    )


def read_turns(name: str) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = json.loads((REVERT_FORK / name).read_text())["result"]["thread"][
        "turns"
    ]
    return turns


def sessions_like_codex(day: Path) -> dict[str, Path]:
    """The revert_fork rollouts under the names codex gives them."""
    day.mkdir(parents=True)
    names = {
        MAIN_THREAD: (REVERT_FORK / "rollout.jsonl", f"rollout-2026-11-30T00-55-03-{MAIN_THREAD}"),
        SEGMENT: (
            REVERT_FORK / f"rollout-{MAIN_THREAD}_{SEGMENT}.jsonl",
            f"rollout-2026-11-30T00-55-03-{MAIN_THREAD}_{SEGMENT}",
        ),
        FORK_THREAD: (
            REVERT_FORK / f"rollout-{FORK_THREAD}.jsonl",
            f"rollout-2026-11-30T00-55-03-{FORK_THREAD}",
        ),
    }
    placed: dict[str, Path] = {}
    for rollout_id, (source, stem) in names.items():
        placed[rollout_id] = day / f"{stem}.jsonl"
        shutil.copyfile(source, placed[rollout_id])
    return placed


def test_fork_rollout_prints_the_turns_the_real_server_read(tmp_path: Path) -> None:
    placed = sessions_like_codex(tmp_path / "day")
    result = run([str(placed[FORK_THREAD])], env={"CODEX_HOME": str(tmp_path / "empty")})
    assert result.stderr == b""
    assert result.returncode == 0
    assert json.loads(result.stdout) == {"turns": read_turns(f"thread_read-{FORK_THREAD}.json")}


def test_thread_id_reads_the_newest_rollout_under_codex_home(tmp_path: Path) -> None:
    sessions_like_codex(tmp_path / "home" / "sessions" / "2026" / "11" / "30")
    result = run(["--thread-id", MAIN_THREAD], env={"CODEX_HOME": str(tmp_path / "home")})
    assert result.stderr == b""
    assert result.returncode == 0
    assert json.loads(result.stdout) == {"turns": read_turns("thread_read.json")}


def test_bad_lines_are_reported_with_their_numbers_and_the_rest_is_used() -> None:
    lines = (CAPTURES_DIR / "plain" / "rollout.jsonl").read_bytes().splitlines(keepends=True)
    damaged = [*lines[:2], b"not json\n", *lines[2:4], b'{"type": "event_msg"}\n', *lines[4:]]
    result = run(["-"], stdin=b"".join(damaged))
    assert result.returncode == 1
    reported = result.stderr.decode().splitlines()
    assert [line.split(":")[1].strip() for line in reported] == ["line 3", "line 6"]
    expected = json.loads((CAPTURES_DIR / "plain" / "thread_read.json").read_text())
    assert json.loads(result.stdout) == {"turns": expected["result"]["thread"]["turns"]}


def test_missing_history_base_is_reported_and_the_own_lines_are_used(tmp_path: Path) -> None:
    segment = tmp_path / f"rollout-2026-11-30T00-55-03-{MAIN_THREAD}_{SEGMENT}.jsonl"
    shutil.copyfile(REVERT_FORK / f"rollout-{MAIN_THREAD}_{SEGMENT}.jsonl", segment)
    result = run([str(segment)], env={"CODEX_HOME": str(tmp_path / "empty")})
    assert result.returncode == 1
    assert f"history base {MAIN_THREAD}: rollout not found" in result.stderr.decode()
    assert json.loads(result.stdout) == {"turns": []}


def test_summary_view_keeps_the_user_message_and_the_answer() -> None:
    result = run(
        ["--items-view", "summary", str(CAPTURES_DIR / "shell" / "rollout.jsonl")],
        env={"CODEX_HOME": "/nonexistent"},
    )
    assert result.returncode == 0
    (turn,) = json.loads(result.stdout)["turns"]
    assert turn["itemsView"] == "summary"
    assert [item["id"] for item in turn["items"]] == [
        "01a229f2-92e0-7a01-b033-5eded649f37e",
        "msg_shell_1",
    ]


def test_file_and_thread_id_together_are_a_usage_error(tmp_path: Path) -> None:
    result = run(["--thread-id", MAIN_THREAD, str(tmp_path / "x.jsonl")])
    assert result.returncode == 2
    assert b"either FILE or --thread-id" in result.stderr
    assert result.stdout == b""


def test_unreadable_file_is_a_usage_error(tmp_path: Path) -> None:
    result = run([str(tmp_path / "missing.jsonl")])
    assert result.returncode == 2
    assert b"cannot read" in result.stderr
