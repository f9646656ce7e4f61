"""Both event generations (issue 4.4): one ``item/started`` and one ``item/completed`` per item.

Codex 0.163.0 core sends a tool item as first-class ``item_started``/``item_completed`` *and*
as legacy begin/end events; older producers send only the legacy ones. Whatever the mix and the
order, a client sees the item start once and complete once, the start first, and the item id is
the same on both.
"""

from __future__ import annotations

from itertools import permutations
from typing import Any

import pytest

from tests.listener.support import (
    NOW_MS,
    THREAD,
    TURN,
    Driver,
    agent_message_item,
    item_completed,
    item_started,
    methods,
    task_started,
)

ARGV = ["bash", "-lc", "ls"]
PARSED = [{"type": "unknown", "cmd": "ls"}]

LEGACY_BEGIN = {
    "type": "exec_command_begin",
    "call_id": "c1",
    "process_id": "p9",
    "turn_id": TURN,
    "command": ARGV,
    "cwd": "/repo",
    "parsed_cmd": PARSED,
    "source": "agent",
    "started_at_ms": 1000,
}
LEGACY_END = {
    "type": "exec_command_end",
    "call_id": "c1",
    "process_id": "p9",
    "turn_id": TURN,
    "completed_at_ms": 2000,
    "command": ARGV,
    "cwd": "/repo",
    "parsed_cmd": PARSED,
    "source": "agent",
    "aggregated_output": "a\n",
    "exit_code": 0,
    "duration": {"secs": 0, "nanos": 5_000_000},
    "status": "completed",
}
COMMAND_ITEM = {
    "type": "CommandExecution",
    "id": "c1",
    "process_id": "p9",
    "command": ARGV,
    "cwd": "file:///repo",
    "parsed_cmd": PARSED,
    "source": "agent",
    "status": "in_progress",
}
CORE_BEGIN = item_started(COMMAND_ITEM, at=1000)
CORE_END = item_completed(
    {
        **COMMAND_ITEM,
        "status": "completed",
        "aggregated_output": "a\n",
        "exit_code": 0,
        "duration": {"secs": 0, "nanos": 5_000_000},
    },
    at=2000,
)

EVENTS = {"Lb": LEGACY_BEGIN, "Le": LEGACY_END, "Cb": CORE_BEGIN, "Ce": CORE_END}
# every interleaving of the two generations in which each generation begins before it ends
ORDERS = sorted(
    {
        order
        for order in permutations(EVENTS)
        if order.index("Lb") < order.index("Le") and order.index("Cb") < order.index("Ce")
    }
)


def lifecycle(notifications: list[dict[str, Any]], item_id: str = "c1") -> list[str]:
    return [
        n["method"]
        for n in notifications
        if n["method"] in ("item/started", "item/completed")
        and n["params"]["item"]["id"] == item_id
    ]


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(o) for o in ORDERS])
def test_mixed_generations_in_any_order_start_and_complete_each_item_once(
    order: tuple[str, ...],
) -> None:
    driver = Driver()
    driver.feed(task_started())
    sent = driver.run(EVENTS[name] for name in order)
    assert lifecycle(sent) == ["item/started", "item/completed"]
    completed = next(n for n in sent if n["method"] == "item/completed")
    assert completed["params"]["item"]["status"] == "completed"
    assert completed["params"]["item"]["exitCode"] == 0
    assert driver.skipped == []


def test_first_class_only_producer_is_mapped_as_the_real_server_does() -> None:
    driver = Driver()
    driver.feed(task_started())
    sent = driver.run([CORE_BEGIN, CORE_END])
    assert lifecycle(sent) == ["item/started", "item/completed"]
    assert sent[0]["params"]["startedAtMs"] == 1000
    assert sent[0]["params"]["item"]["cwd"] == "/repo"
    assert sent[1]["params"]["completedAtMs"] == 2000


def test_legacy_only_producer_still_gets_its_items() -> None:
    driver = Driver()
    driver.feed(task_started())
    sent = driver.run([LEGACY_BEGIN, LEGACY_END])
    assert lifecycle(sent) == ["item/started", "item/completed"]
    assert sent[0]["params"]["item"]["status"] == "inProgress"
    assert sent[1]["params"]["item"]["aggregatedOutput"] == "a\n"


def test_a_kind_seen_first_class_drops_later_legacy_events_of_that_kind() -> None:
    driver = Driver()
    driver.feed(task_started())
    driver.run([CORE_BEGIN, CORE_END])
    driver.feed(task_started("turn-2"))
    legacy_again = {**LEGACY_BEGIN, "call_id": "c2"}
    assert driver.notifications(legacy_again, turn_id="turn-2") == []


def test_first_class_messages_do_not_silence_legacy_only_tools() -> None:
    # older producers: first-class agent messages, legacy-only command events
    driver = Driver()
    driver.feed(task_started())
    driver.feed(item_started(agent_message_item("m1", "")))
    driver.feed(item_completed(agent_message_item("m1", "hello")))
    sent = driver.run([LEGACY_BEGIN, LEGACY_END])
    assert lifecycle(sent) == ["item/started", "item/completed"]


def test_a_second_core_start_of_a_command_is_suppressed_as_codex_does() -> None:
    driver = Driver()
    driver.feed(task_started())
    assert methods(driver.run([CORE_BEGIN, CORE_BEGIN])) == ["item/started"]


def test_a_restarted_message_item_is_started_again_like_the_real_server() -> None:
    # turn/steer restarts the model request: core re-sends item_started for the in-flight message
    driver = Driver()
    driver.feed(task_started())
    start = item_started(agent_message_item("msg_1", ""))
    assert methods(driver.run([start, start])) == ["item/started", "item/started"]


def test_legacy_duplicates_within_a_turn_are_dropped_and_a_new_turn_starts_fresh() -> None:
    driver = Driver()
    driver.feed(task_started())
    assert lifecycle(driver.run([LEGACY_BEGIN, LEGACY_BEGIN, LEGACY_END, LEGACY_END])) == [
        "item/started",
        "item/completed",
    ]
    driver.feed(task_started("turn-2"))
    assert lifecycle(driver.run([LEGACY_BEGIN, LEGACY_END], turn_id="turn-2")) == [
        "item/started",
        "item/completed",
    ]


def test_deltas_between_the_generations_are_passed_through() -> None:
    driver = Driver()
    driver.feed(task_started())
    delta = {
        "type": "exec_command_output_delta",
        "call_id": "c1",
        "stream": "stdout",
        "chunk": "aGVsbG8=",
    }
    sent = driver.run([CORE_BEGIN, LEGACY_BEGIN, delta, CORE_END, LEGACY_END])
    assert methods(sent) == [
        "item/started",
        "item/commandExecution/outputDelta",
        "item/completed",
    ]
    assert sent[1]["params"] == {
        "threadId": THREAD,
        "turnId": TURN,
        "itemId": "c1",
        "delta": "hello",
    }


SENDER = "01a229f2-0000-7000-8000-00000000000b"
AGENT = "01a229f2-0000-7000-8000-00000000000c"

# one legacy event of each family, and a first-class item of the kind that supersedes it
LEGACY_FAMILIES: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    (
        "patch_apply_begin",
        {
            "type": "patch_apply_begin",
            "call_id": "p1",
            "turn_id": TURN,
            "auto_approved": True,
            "changes": {"/r/a.txt": {"type": "add", "content": "a\n"}},
        },
        "item/started",
        {
            "type": "FileChange",
            "id": "p0",
            "changes": {"/r/b.txt": {"type": "add", "content": "b\n"}},
            "status": "completed",
        },
    ),
    (
        "mcp_tool_call_begin",
        {
            "type": "mcp_tool_call_begin",
            "call_id": "mcp-1",
            "invocation": {"server": "docs", "tool": "search", "arguments": None},
        },
        "item/started",
        {
            "type": "McpToolCall",
            "id": "mcp-0",
            "server": "docs",
            "tool": "search",
            "arguments": None,
            "status": "completed",
        },
    ),
    (
        "collab_agent_spawn_begin",
        {
            "type": "collab_agent_spawn_begin",
            "call_id": "spawn-1",
            "started_at_ms": 100,
            "sender_thread_id": SENDER,
            "prompt": "review",
            "model": "gpt-5.4",
            "reasoning_effort": "high",
        },
        "item/started",
        {
            "type": "CollabAgentToolCall",
            "id": "spawn-0",
            "tool": "spawn_agent",
            "status": "completed",
            "sender_thread_id": SENDER,
            "receiver_thread_ids": [AGENT],
            "agents_states": {},
        },
    ),
    (
        "sub_agent_activity",
        {
            "type": "sub_agent_activity",
            "event_id": "activity-1",
            "occurred_at_ms": 456,
            "agent_thread_id": AGENT,
            "agent_path": "/root/worker",
            "kind": "started",
        },
        "item/completed",
        {
            "type": "SubAgentActivity",
            "id": "activity-0",
            "kind": "started",
            "agent_thread_id": AGENT,
            "agent_path": "/root/worker",
        },
    ),
    (
        "dynamic_tool_call_response",
        {
            "type": "dynamic_tool_call_response",
            "call_id": "dyn-1",
            "turn_id": TURN,
            "completed_at_ms": 9000,
            "tool": "lookup",
            "arguments": {},
            "content_items": [{"type": "inputText", "text": "ok"}],
            "success": True,
            "duration": {"secs": 0, "nanos": 0},
        },
        "item/completed",
        {
            "type": "DynamicToolCall",
            "id": "dyn-0",
            "tool": "lookup",
            "arguments": {},
            "status": "completed",
            "success": True,
        },
    ),
]


@pytest.mark.parametrize(
    ("legacy", "method", "core_item"),
    [f[1:] for f in LEGACY_FAMILIES],
    ids=[f[0] for f in LEGACY_FAMILIES],
)
def test_each_legacy_family_is_mapped_until_its_kind_arrives_first_class(
    legacy: dict[str, Any], method: str, core_item: dict[str, Any]
) -> None:
    fresh = Driver()
    fresh.feed(task_started())
    assert methods(fresh.notifications(legacy)) == [method]

    upgraded = Driver()
    upgraded.feed(task_started())
    assert methods(upgraded.notifications(item_completed(core_item))) == ["item/completed"]
    assert upgraded.notifications(legacy) == []


def guardian(status: str, **fields: Any) -> dict[str, Any]:
    return {
        "type": "guardian_assessment",
        "id": "review-1",
        "target_item_id": "c1",
        "turn_id": "",
        "started_at_ms": 1500,
        "status": status,
        "action": {"type": "command", "source": "shell", "command": "rm -rf build", "cwd": "/repo"},
        **fields,
    }


def guardian_command_item(status: str) -> dict[str, Any]:
    return {
        "type": "commandExecution",
        "id": "c1",
        "command": "rm -rf build",
        "cwd": "/repo",
        "commandActions": [{"type": "unknown", "command": "rm -rf build"}],
        "processId": None,
        "source": "agent",
        "status": status,
        "aggregatedOutput": None,
        "exitCode": None,
        "durationMs": None,
        "pluginId": None,
        "scriptPath": None,
    }


def test_guardian_review_starts_the_command_item_and_the_core_start_is_suppressed() -> None:
    driver = Driver()
    driver.feed(task_started())
    sent = driver.notifications(guardian("in_progress"))
    assert sent == [
        {
            "method": "item/started",
            "params": {
                "item": guardian_command_item("inProgress"),
                "threadId": THREAD,
                "turnId": TURN,
                "startedAtMs": NOW_MS,
            },
        },
        {
            "method": "item/autoApprovalReview/started",
            "params": {
                "threadId": THREAD,
                "turnId": TURN,
                "reviewId": "review-1",
                "startedAtMs": 1500,
                "targetItemId": "c1",
                "review": {
                    "status": "inProgress",
                    "riskLevel": None,
                    "userAuthorization": None,
                    "rationale": None,
                },
                "action": {
                    "type": "command",
                    "source": "shell",
                    "command": "rm -rf build",
                    "cwd": "/repo",
                },
            },
        },
    ]
    approved = driver.notifications(guardian("approved", completed_at_ms=1600, risk_level="low"))
    assert methods(approved) == ["item/autoApprovalReview/completed"]
    assert approved[0]["params"]["completedAtMs"] == 1600
    assert approved[0]["params"]["decisionSource"] == "agent"
    # core then runs the command: its own start is dropped, its completion goes through
    assert lifecycle(driver.run([CORE_BEGIN, CORE_END])) == ["item/completed"]


@pytest.mark.parametrize(
    ("status", "item_status"),
    [("denied", "declined"), ("aborted", "declined"), ("timed_out", "failed")],
)
def test_guardian_refusal_completes_the_synthetic_item(status: str, item_status: str) -> None:
    driver = Driver()
    driver.feed(task_started())
    driver.feed(guardian("in_progress"))
    sent = driver.notifications(guardian(status))
    assert methods(sent) == ["item/autoApprovalReview/completed", "item/completed"]
    assert sent[0]["params"]["completedAtMs"] == 1500  # no completed_at_ms: the start time
    assert sent[1]["params"] == {
        "item": guardian_command_item(item_status),
        "threadId": THREAD,
        "turnId": TURN,
        "completedAtMs": NOW_MS,
    }
    # a second refusal finds nothing left to complete
    assert methods(driver.notifications(guardian(status))) == ["item/autoApprovalReview/completed"]


def test_guardian_review_of_a_patch_has_no_synthetic_item() -> None:
    driver = Driver()
    driver.feed(task_started())
    patch = guardian(
        "in_progress", action={"type": "apply_patch", "cwd": "/repo", "files": ["/repo/a"]}
    )
    sent = driver.notifications(patch)
    assert methods(sent) == ["item/autoApprovalReview/started"]
    assert sent[0]["params"]["action"] == {
        "type": "applyPatch",
        "cwd": "/repo",
        "files": ["/repo/a"],
    }
