"""The persistence policy equals what the real 0.163.0 binary wrote in every capture."""

from __future__ import annotations

from pathlib import Path

import orjson

from codex_app_bridge.storage import PERSISTED_EVENT_TYPES

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"


def _event_types_in(path: Path) -> set[str]:
    types: set[str] = set()
    for raw in path.read_bytes().splitlines():
        line = orjson.loads(raw)
        if line["type"] == "event_msg":
            types.add(line["payload"]["type"])
    return types


def test_every_event_type_in_a_real_rollout_is_in_the_policy() -> None:
    seen: set[str] = set()
    for rollout in CAPTURES.glob("*/rollout*.jsonl"):
        seen |= _event_types_in(rollout)
    assert seen <= PERSISTED_EVENT_TYPES, seen - PERSISTED_EVENT_TYPES
    assert {"task_started", "task_complete", "turn_aborted", "item_completed"} <= seen


def test_events_seen_live_but_absent_from_rollouts_are_not_persisted() -> None:
    for event_type in ("error", "warning", "item_started", "user_message", "agent_message"):
        assert event_type not in PERSISTED_EVENT_TYPES
