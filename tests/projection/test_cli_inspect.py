"""``codex-app-bridge inspect``, run as a subprocess on the real 0.163.0 rollouts.

The oracle is the real server: user positions and truncation of the ``revert_fork`` rollouts must
keep exactly the user messages that its ``thread/read`` responses show. Bad lines are reported on
stderr with their line number while the other lines are still processed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
import pytest

from codex_app_bridge.protocol.core import TURN_ITEM_ADAPTER
from tests.conftest import CAPTURES_DIR, bridge_command, bridge_env

REVERT_FORK = CAPTURES_DIR / "revert_fork"
MAIN = REVERT_FORK / "rollout.jsonl"
SEGMENT = (
    REVERT_FORK
    / "rollout-01a229f2-bbfe-7a20-9d7f-35a05b666f52_01a229f2-bca3-7bb2-ab4f-f54b91abaab4.jsonl"
)
FORK = REVERT_FORK / "rollout-01a229f2-bccb-7130-8ebf-f9767e792672.jsonl"


def _inspect(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*bridge_command(), "inspect", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        env=bridge_env(),
        check=False,
    )


def _user_texts_at(rollout: bytes, positions: list[int]) -> list[str]:
    physical = rollout.splitlines()
    texts = []
    for position in positions:
        payload = orjson.loads(physical[position])["payload"]
        texts.append("".join(part["text"] for part in payload["content"]))
    return texts


def _thread_read_user_texts(path: Path) -> list[str]:
    turns = orjson.loads(path.read_bytes())["result"]["thread"]["turns"]
    return [
        "".join(part["text"] for part in thread_item["content"])
        for turn in turns
        for thread_item in turn["items"]
        if thread_item["type"] == "userMessage"
    ]


def _before_ordinal(path: Path, end_ordinal_exclusive: int) -> bytes:
    return b"".join(
        raw + b"\n"
        for raw in path.read_bytes().splitlines()
        if orjson.loads(raw).get("ordinal", 0) < end_ordinal_exclusive
    )


def test_user_positions_of_the_main_rollout_are_its_two_user_messages() -> None:
    proc = _inspect("user-positions", str(MAIN))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    positions = orjson.loads(proc.stdout)
    assert positions == [7, 16]
    assert _user_texts_at(MAIN.read_bytes(), positions) == ["First question", "Second question"]


def test_truncate_before_second_user_keeps_what_thread_read_shows_after_revert() -> None:
    proc = _inspect("truncate", "--before-user", "1", str(MAIN))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"".join(raw + b"\n" for raw in MAIN.read_bytes().splitlines()[:16])
    positions = orjson.loads(_inspect("user-positions", stdin=proc.stdout).stdout)
    assert _user_texts_at(proc.stdout, positions) == _thread_read_user_texts(
        REVERT_FORK / "thread_read.json"
    )


def test_user_positions_of_the_fork_history_agree_with_thread_read_of_the_fork() -> None:
    # 0.163.0's history_base chain: segment -> parent ordinals < 14, fork -> segment ordinals < 17
    history = _before_ordinal(MAIN, 14) + _before_ordinal(SEGMENT, 17) + FORK.read_bytes()
    proc = _inspect("user-positions", "-", stdin=history)
    assert proc.returncode == 0, proc.stderr
    assert _user_texts_at(history, orjson.loads(proc.stdout)) == _thread_read_user_texts(
        REVERT_FORK / "thread_read-01a229f2-bccb-7130-8ebf-f9767e792672.json"
    )


def test_truncate_to_last_fork_turn_keeps_the_second_turn() -> None:
    proc = _inspect("truncate", "--last-fork-turns", "1", str(MAIN))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"".join(raw + b"\n" for raw in MAIN.read_bytes().splitlines()[16:])
    empty = _inspect("truncate", "--last-fork-turns", "0", str(MAIN))
    assert (empty.returncode, empty.stdout) == (0, b"")


def test_turn_items_of_a_rollout_match_the_items_codex_persisted() -> None:
    # a rollout is not ResponseItem JSONL: said once, status 1 (issue 22.5); its response_item
    # lines are still read, one line out each
    proc = _inspect("turn-items", str(MAIN))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count(b"\n") == 1
    assert b"this input is a rollout" in proc.stderr
    out = proc.stdout.splitlines()
    assert len(out) == sum(b'"response_item"' in line for line in MAIN.read_bytes().splitlines())
    items = [orjson.loads(raw) for raw in out if raw != b"null"]
    assert [i["type"] for i in items] == [
        "UserMessage",
        "AgentMessage",
        "UserMessage",
        "AgentMessage",
    ]
    assert items[1] == {
        "type": "AgentMessage",
        "id": "msg_plain_0",
        "content": [{"type": "Text", "text": "Answer number 1 to: First question"}],
    }
    for raw in out:
        if raw != b"null":
            TURN_ITEM_ADAPTER.validate_json(raw)  # output is a valid core TurnItem


def test_boundaries_of_response_item_lines() -> None:
    stdin = b"\n".join(
        [
            b'{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}',
            b'{"type":"message","role":"user","content":[{"type":"input_text","text":"<turn_aborted>x</turn_aborted>"}]}',
            b'{"type":"agent_message","author":"/root","recipient":"/root/w","content":[]}',
            b'{"type":"reasoning","summary":[]}',
        ]
    )
    proc = _inspect("boundaries", stdin=stdin)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"true\nfalse\ntrue\nfalse\n", b"")


def test_bad_lines_are_reported_with_their_number_and_the_rest_is_processed(tmp_path: Path) -> None:
    source = tmp_path / "items.jsonl"
    source.write_bytes(
        b'{"type":"message","role":"assistant","id":"m1","content":[{"type":"output_text","text":"a"}]}\n'
        b"this is not json\n"
        b"\n"
        b'{"type":"message","role":"user"}\n'
        b'{"type":"other"}\n'
    )
    proc = _inspect("turn-items", str(source))
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        b'{"type":"AgentMessage","id":"m1","content":[{"type":"Text","text":"a"}]}',
        b"null",
    ]
    errors = proc.stderr.decode().splitlines()
    assert errors[0].startswith("inspect turn-items: line 2: not JSON")
    assert errors[1].startswith("inspect turn-items: line 4: not a ResponseItem: message.content")
    assert len(errors) == 2


def test_bad_rollout_lines_keep_indices_and_pass_through_truncation(tmp_path: Path) -> None:
    good = MAIN.read_bytes().splitlines()
    broken = [*good[:3], b"{broken", *good[3:]]
    source = tmp_path / "rollout.jsonl"
    source.write_bytes(b"\n".join(broken) + b"\n")
    positions = _inspect("user-positions", str(source))
    assert positions.returncode == 1
    assert orjson.loads(positions.stdout) == [8, 17]
    assert positions.stderr.decode().startswith(
        "inspect user-positions: line 4: not a rollout line"
    )
    truncated = _inspect("truncate", "--before-user", "1", str(source))
    assert truncated.returncode == 1
    assert truncated.stdout.splitlines() == broken[:17]


@pytest.mark.parametrize(
    "args",
    [
        ["truncate", str(MAIN)],  # neither mode
        ["truncate", "--before-user", "1", "--last-fork-turns", "1", str(MAIN)],
        ["truncate", "--before-user", "-1", str(MAIN)],
        ["truncate", "--last-fork-turns", "x", str(MAIN)],
        ["nonsense"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    proc = _inspect(*args)
    assert proc.returncode == 2
    assert proc.stdout == b""


def test_missing_file_is_reported() -> None:
    proc = _inspect("user-positions", "/nonexistent/rollout.jsonl")
    assert proc.returncode == 2
    assert b"cannot read /nonexistent/rollout.jsonl" in proc.stderr
