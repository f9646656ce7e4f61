"""The oracle: every thread of the real 0.163.0 captures, rebuilt from its rollout, gives exactly the
turns the real server returned for ``thread/read {includeTurns: true}``, and the summary of each
turn is exactly the turn ``turn/completed`` carried.

The revert/fork capture is read through its segments: the reverted thread's current rollout is a
segment based on the first file, and the fork is based on that segment."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from codex_app_bridge.mapping.thread_history import (
    HistoryBaseError,
    build_turns,
    resolve_rollout_history,
    rollout_id_from_filename,
    turn_summary,
)
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import dump_dict
from tests.conftest import CAPTURE_NAMES, CAPTURES_DIR


@cache
def capture_rollouts(capture: str) -> dict[str, list[core.RolloutLine]]:
    """The parsed rollout files of a capture by rollout id (``rollout.jsonl`` is the thread's
    first file, named by its session id)."""
    rollouts: dict[str, list[core.RolloutLine]] = {}
    for path in sorted((CAPTURES_DIR / capture).glob("rollout*.jsonl")):
        lines = list(core.iter_rollout_jsonl(path.read_bytes()))
        rollout_id = rollout_id_from_filename(path.name)
        if rollout_id is None:
            meta = next(line for line in lines if isinstance(line, core.SessionMetaLine))
            rollout_id = meta.payload.thread_id
        rollouts[rollout_id] = lines
    return rollouts


def thread_history(capture: str, rollout_path: str) -> list[core.RolloutLine]:
    """The full history of the rollout at ``rollout_path`` (as the server named it)."""
    rollouts = capture_rollouts(capture)
    rollout_id = rollout_id_from_filename(Path(rollout_path).name)
    assert rollout_id is not None
    return resolve_rollout_history(rollouts[rollout_id], rollouts.get)


@dataclass(frozen=True)
class ThreadRead:
    capture: str
    file: str
    thread: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.capture}/{self.file}"


def thread_reads() -> list[ThreadRead]:
    reads: list[ThreadRead] = []
    for capture in CAPTURE_NAMES:
        for path in sorted((CAPTURES_DIR / capture).glob("thread_read*.json")):
            thread = json.loads(path.read_text(encoding="utf-8"))["result"]["thread"]
            reads.append(ThreadRead(capture, path.name, thread))
    return reads


READS = thread_reads()


def test_every_capture_has_a_thread_read_to_check() -> None:
    assert len(READS) == len(CAPTURE_NAMES) + 1  # the fork in revert_fork has its own
    assert all(read.thread["turns"] for read in READS)


@pytest.mark.parametrize("read", READS, ids=lambda read: read.label)
def test_rollout_rebuilds_exactly_the_turns_the_real_server_read(read: ThreadRead) -> None:
    history = thread_history(read.capture, read.thread["path"])
    turns = build_turns(history, interrupt_stale=True)
    assert [dump_dict(turn) for turn in turns] == read.thread["turns"]


def turn_completed_notifications() -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for capture in CAPTURE_NAMES:
        path = CAPTURES_DIR / capture / "notifications.jsonl"
        for raw in path.read_text(encoding="utf-8").splitlines():
            message = json.loads(raw)
            if message.get("method") == "turn/completed":
                found.append((capture, message["params"]))
    return found


COMPLETED = turn_completed_notifications()


@pytest.mark.parametrize(
    ("capture", "params"), COMPLETED, ids=[f"{c}:{p['turn']['id']}" for c, p in COMPLETED]
)
def test_turn_summary_is_the_turn_that_turn_completed_carried(
    capture: str, params: dict[str, Any]
) -> None:
    # the turn as it stood when it completed: in whichever rollout of the thread holds it (the
    # second turn of revert_fork was reverted afterwards and lives only in the first file)
    rollouts = capture_rollouts(capture)
    turns = [
        turn
        for lines in rollouts.values()
        for turn in build_turns(resolve_rollout_history(lines, rollouts.get))
        if turn.id == params["turn"]["id"]
    ]
    assert turns
    turn = turns[0]
    assert dump_dict(turn_summary(turn)) == params["turn"]


def test_reverted_thread_first_file_still_holds_both_turns() -> None:
    rollouts = capture_rollouts("revert_fork")
    thread_id = "01a229f2-bbfe-7a20-9d7f-35a05b666f52"
    turns = build_turns(rollouts[thread_id])
    assert [turn.id for turn in turns] == [
        "01a229f2-bc19-7631-a4d1-51a5d92a5b75",
        "01a229f2-bc72-7c41-bb40-698c44d3bf09",
    ]


def test_segment_without_its_base_cannot_be_resolved() -> None:
    rollouts = capture_rollouts("revert_fork")
    segment = rollouts["01a229f2-bca3-7bb2-ab4f-f54b91abaab4"]
    with pytest.raises(HistoryBaseError) as raised:
        resolve_rollout_history(segment, lambda _rollout_id: None)
    assert raised.value.rollout_id == "01a229f2-bbfe-7a20-9d7f-35a05b666f52"
