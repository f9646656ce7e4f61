"""Turn lifecycle and thread status through the reducer: what is sent, in which order.

Orders and shapes are the real 0.163.0 server's (runtime spec §3.1-§3.3, event-mapping §7):
``thread/status/changed`` precedes ``turn/started`` and ``turn/completed``; an ``error``
marks ``systemError`` before the ``error`` notification; the status is only sent on a real
change.
"""

from __future__ import annotations

from typing import Any

from codex_app_bridge.listener import ReadState, ReduceContext, read_state_of_history, reduce
from codex_app_bridge.listener._reducer import revert_read_state
from tests.listener.support import (
    THREAD,
    TURN,
    Driver,
    agent_message_item,
    envelope,
    item_completed,
    methods,
    settings_event,
    task_complete,
    task_started,
    turn_aborted,
)

ACTIVE = {
    "method": "thread/status/changed",
    "params": {"threadId": THREAD, "status": {"type": "active", "activeFlags": []}},
    "audience": "broadcast",
}
IDLE = {
    "method": "thread/status/changed",
    "params": {"threadId": THREAD, "status": {"type": "idle"}},
    "audience": "broadcast",
}
# the first turn that ends completed or failed becomes the first unread one
READ_STATE = {
    "method": "thread/readState/changed",
    "params": {
        "threadId": THREAD,
        "readState": {
            "firstUnread": {"type": "turn", "turnId": TURN},
            "revision": ReadState().after_turn(THREAD, TURN).revision,
        },
    },
}
SYSTEM_ERROR = {
    "method": "thread/status/changed",
    "params": {"threadId": THREAD, "status": {"type": "systemError"}},
    "audience": "broadcast",
}


def turn(status: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": TURN,
        "rootTurnId": TURN,
        "items": [],
        "itemsView": "notLoaded",
        "status": status,
        "error": None,
        "startedAt": 1796000092,
        "completedAt": 1796000093,
        "durationMs": 154,
    }
    base.update(fields)
    return base


def agent_thread_item(item_id: str, text: str, phase: str | None = None) -> dict[str, Any]:
    return {
        "type": "agentMessage",
        "id": item_id,
        "text": text,
        "phase": phase,
        "memoryCitation": None,
        "delivery": None,
        "questions": None,
    }


def test_task_started_sends_active_status_then_turn_started() -> None:
    assert Driver().notifications(task_started()) == [
        ACTIVE,
        {
            "method": "turn/started",
            "params": {
                "threadId": THREAD,
                "turn": turn("inProgress", completedAt=None, durationMs=None),
            },
        },
    ]


def test_successful_turn_ends_with_idle_then_completed_with_the_last_final_message() -> None:
    driver = Driver()
    driver.feed(task_started())
    driver.feed(
        item_completed(agent_message_item("msg_pre_0", "I'll run a command.", "commentary"))
    )
    driver.feed(item_completed(agent_message_item("msg_shell_1", "The command printed hello.")))
    assert driver.notifications(task_complete(last_agent_message="The command printed hello.")) == [
        READ_STATE,
        IDLE,
        {
            "method": "turn/completed",
            "params": {
                "threadId": THREAD,
                "turn": turn(
                    "completed",
                    items=[agent_thread_item("msg_shell_1", "The command printed hello.")],
                    itemsView="summary",
                ),
            },
        },
    ]
    assert driver.state.active_turn_id is None


def test_summary_skips_commentary_partial_and_blank_messages_and_keeps_the_last_final() -> None:
    driver = Driver()
    driver.feed(task_started())
    driver.feed(item_completed(agent_message_item("a", "first", "final_answer")))
    driver.feed(item_completed(agent_message_item("b", "second")))
    driver.feed(item_completed(agent_message_item("c", "thinking aloud", "commentary")))
    driver.feed(item_completed(agent_message_item("d", "half", "partial_answer")))
    driver.feed(item_completed(agent_message_item("e", "   \n")))
    completed = driver.notifications(task_complete())[-1]
    assert completed["params"]["turn"]["items"] == [agent_thread_item("b", "second")]
    assert completed["params"]["turn"]["itemsView"] == "summary"


def test_turn_without_a_final_message_has_no_summary() -> None:
    driver = Driver()
    driver.feed(task_started())
    driver.feed(item_completed(agent_message_item("c", "only commentary", "commentary")))
    completed = driver.notifications(task_complete())[-1]
    assert completed["params"]["turn"] == turn("completed")


def test_error_marks_system_error_before_the_error_and_fails_the_turn() -> None:
    driver = Driver()
    driver.feed(task_started())
    error = {
        "type": "error",
        "message": "mock: the prompt was rejected",
        "codex_error_info": "invalid_prompt",
    }
    turn_error = {
        "message": "mock: the prompt was rejected",
        "codexErrorInfo": "other",
        "additionalDetails": None,
        "misalignment": None,
    }
    assert driver.notifications(error) == [
        SYSTEM_ERROR,
        {
            "method": "error",
            "params": {"error": turn_error, "willRetry": False, "threadId": THREAD, "turnId": TURN},
        },
    ]
    failed = task_complete(
        error={"message": "mock: the prompt was rejected", "codex_error_info": "invalid_prompt"},
        duration_ms=64,
    )
    # the watch is already systemError: no status change before turn/completed
    assert driver.notifications(failed) == [
        READ_STATE,
        {
            "method": "turn/completed",
            "params": {"threadId": THREAD, "turn": turn("failed", error=turn_error, durationMs=64)},
        },
    ]


def test_the_recorded_error_wins_over_the_payload_error() -> None:
    driver = Driver()
    driver.feed(task_started())
    driver.feed(
        {"type": "error", "message": "recorded", "codex_error_info": "internal_server_error"}
    )
    driver.feed(item_completed(agent_message_item("m", "partial answer before the failure")))
    completed = driver.notifications(
        task_complete(error={"message": "payload", "codex_error_info": "other"})
    )[-1]
    assert completed["params"]["turn"]["error"]["message"] == "recorded"
    assert completed["params"]["turn"]["error"]["codexErrorInfo"] == "internalServerError"
    assert completed["params"]["turn"]["items"] == []
    assert completed["params"]["turn"]["itemsView"] == "notLoaded"


def test_payload_error_alone_fails_the_turn_as_a_rollout_replay_needs() -> None:
    driver = Driver()
    driver.feed(task_started())
    notifications = driver.notifications(
        task_complete(error={"message": "boom", "codex_error_info": "internal_server_error"})
    )
    assert notifications[:2] == [READ_STATE, SYSTEM_ERROR]
    assert notifications[2]["params"]["turn"]["status"] == "failed"
    assert notifications[2]["params"]["turn"]["error"] == {
        "message": "boom",
        "codexErrorInfo": "internalServerError",
        "additionalDetails": None,
        "misalignment": None,
    }


def test_interrupted_turn_has_no_items_and_no_error() -> None:
    driver = Driver()
    driver.feed(task_started())
    driver.feed(item_completed(agent_message_item("m", "done before the interrupt")))
    assert driver.notifications(turn_aborted()) == [
        IDLE,
        {
            "method": "turn/completed",
            "params": {"threadId": THREAD, "turn": turn("interrupted", durationMs=548)},
        },
    ]


def test_stream_error_neither_changes_status_nor_fails_the_turn() -> None:
    driver = Driver()
    driver.feed(task_started())
    retry = driver.notifications(
        {"type": "stream_error", "message": "Reconnecting... 1/1", "codex_error_info": None}
    )
    assert methods(retry) == ["error"]
    assert retry[0]["params"]["willRetry"] is True
    assert methods(driver.notifications(task_complete())) == [
        "thread/readState/changed",
        "thread/status/changed",
        "turn/completed",
    ]
    assert driver.state.watch.key() == "idle"


def test_status_is_only_sent_on_a_real_change() -> None:
    driver = Driver()
    driver.feed(task_started())
    # a second start while running: a new turn, but still active
    assert methods(driver.notifications(task_started("turn-2"))) == ["turn/started"]
    first = driver.notifications({"type": "error", "message": "a"})
    second = driver.notifications({"type": "error", "message": "b"})
    assert methods(first) == ["thread/status/changed", "error"]
    assert methods(second) == ["error"]
    # the next turn clears the system error
    assert driver.notifications(task_started("turn-3"))[0] == ACTIVE


def test_errors_that_do_not_fail_the_turn_reach_no_client() -> None:
    for info in ("thread_rollback_failed", {"active_turn_not_steerable": {"turn_kind": "review"}}):
        driver = Driver()
        driver.feed(task_started())
        # like Codex, every error event marks the thread before the kind is looked at
        assert driver.notifications(
            {"type": "error", "message": "x", "codex_error_info": info}
        ) == [SYSTEM_ERROR]
        assert driver.state.turn.last_error is None


def test_error_info_objects_and_unknown_kinds_map_onto_the_v2_enum() -> None:
    driver = Driver()
    cases: list[tuple[Any, Any]] = [
        ("usage_limit_exceeded", "usageLimitExceeded"),
        ("invalid_prompt", "other"),
        (
            {"http_connection_failed": {"http_status_code": 502}},
            {"httpConnectionFailed": {"httpStatusCode": 502}},
        ),
        ({"something_new": {}}, "other"),
        (None, None),
    ]
    for core_info, wire_info in cases:
        error = driver.notifications(
            {"type": "stream_error", "message": "m", "codex_error_info": core_info}
        )
        assert error[0]["params"]["error"]["codexErrorInfo"] == wire_info


def test_turn_completed_uses_the_envelope_id_and_the_started_time_of_the_turn() -> None:
    driver = Driver()
    driver.feed(task_started(started_at=1_796_000_000))
    completed = driver.notifications(task_complete(), turn_id="envelope-turn")[-1]
    assert completed["params"]["turn"]["id"] == "envelope-turn"
    assert completed["params"]["turn"]["startedAt"] == 1_796_000_000


def test_shutdown_unloads_the_thread() -> None:
    driver = Driver()
    assert driver.notifications({"type": "shutdown_complete"}) == [
        {
            "method": "thread/status/changed",
            "params": {"threadId": THREAD, "status": {"type": "notLoaded"}},
            "audience": "broadcast",
        }
    ]


def test_thread_settings_are_sent_only_when_they_change() -> None:
    driver = Driver()
    assert driver.notifications(settings_event()) == []  # the baseline (thread/start told it)
    assert driver.notifications(settings_event()) == []
    assert driver.notifications(settings_event(model="gpt-5.4", reasoning_effort="high")) == [
        {
            "method": "thread/settings/updated",
            "params": {
                "threadId": THREAD,
                "threadSettings": {
                    "activePermissionProfile": None,
                    "approvalPolicy": "never",
                    "approvalsReviewer": "user",
                    "collaborationMode": {
                        "mode": "default",
                        "settings": {
                            "developer_instructions": None,
                            "model": "mock-model",
                            "reasoning_effort": None,
                        },
                    },
                    "cwd": "/home/dev/project",
                    "disabledPluginIds": [],
                    "effort": "high",
                    "model": "gpt-5.4",
                    "modelProvider": "mock",
                    "personality": None,
                    "sandboxPolicy": {"type": "dangerFullAccess"},
                    "serviceTier": None,
                    "summary": "detailed",
                },
            },
        }
    ]


def test_token_usage_is_reported_and_not_kept_in_the_state() -> None:
    # a resume replays usage from the history log: the state keeping the last one would hold
    # three models per idle loaded thread for nothing
    driver = Driver()
    before = driver.state
    usage = {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    reported = driver.notifications(
        {
            "type": "token_count",
            "info": {
                "total_token_usage": usage,
                "last_token_usage": usage,
                "model_context_window": None,
            },
            "rate_limits": None,
        }
    )
    assert [n["method"] for n in reported] == ["thread/tokenUsage/updated"]
    assert reported[0]["params"]["tokenUsage"]["total"]["totalTokens"] == 3
    assert driver.state == before


TURN_2 = "01a229f2-0000-7000-8000-0000000000bb"


def test_read_state_the_first_finished_turn_stays_unread_and_each_finish_is_a_revision() -> None:
    driver = Driver()
    assert driver.state.read_state.wire(THREAD).revision == f"initial:{THREAD}"
    driver.feed(task_started())
    assert driver.notifications(turn_aborted())[0] == IDLE  # interrupted: no activity
    assert driver.state.read_state == ReadState()
    driver.feed(task_started(TURN_2), TURN_2)
    first = driver.notifications(task_complete(TURN_2), TURN_2)[0]
    assert first["params"]["readState"]["firstUnread"] == {"type": "turn", "turnId": TURN_2}
    driver.feed(task_started())
    second = driver.notifications(task_complete())[0]
    assert second["method"] == "thread/readState/changed"
    assert second["params"]["readState"]["firstUnread"] == {"type": "turn", "turnId": TURN_2}
    assert second["params"]["readState"]["revision"] != first["params"]["readState"]["revision"]


def test_a_revert_forgets_a_dropped_unread_turn_and_keeps_a_kept_one() -> None:
    driver = Driver()
    driver.feed(task_started())
    driver.feed(task_complete())
    ctx = ReduceContext(thread_id=THREAD, now_ms=0)
    kept = revert_read_state(driver.state, {TURN}, ctx)
    assert kept.emissions == ()
    assert kept.state is driver.state
    dropped = revert_read_state(driver.state, set(), ctx)
    assert [e.method for e in dropped.emissions] == ["thread/readState/changed"]
    state = dropped.emissions[0].params_dict()["readState"]
    assert state["firstUnread"] is None
    assert state["revision"] not in (f"initial:{THREAD}", driver.state.read_state.revision)


def test_the_read_state_of_a_history_is_the_one_its_live_reduction_reached() -> None:
    driver = Driver()
    events = [
        envelope(task_started()),
        envelope(turn_aborted()),
        envelope(task_started(TURN_2), TURN_2),
        envelope(task_complete(TURN_2), TURN_2),
    ]
    for e in events:
        driver.state = reduce(driver.state, e, driver.ctx).state
    assert read_state_of_history(THREAD, events) == driver.state.read_state
    assert driver.state.read_state.first_unread == TURN_2


TURN_3 = "01a229f2-0000-7000-8000-0000000000cc"


def test_a_turn_without_a_final_message_is_no_unread_activity() -> None:
    # a standalone compaction (thread/compact/start) ends with no agent message: 0.163.0 sends
    # no thread/readState/changed for it (model-mode scenario compact)
    driver = Driver()
    driver.feed(task_started())
    ended = driver.notifications(task_complete(last_agent_message=None))
    assert methods(ended) == ["thread/status/changed", "turn/completed"]
    assert driver.state.read_state == ReadState()
    # nor does a blank one, or one that asks not to be noticed
    for text in ("  ", "ok <decision>DONT_NOTIFY</decision>"):
        driver.feed(task_started())
        driver.feed(item_completed(agent_message_item("m", text)))
        ended = driver.notifications(task_complete(last_agent_message=text))
        assert "thread/readState/changed" not in methods(ended)
    # a failed turn is, message or not
    driver.feed(task_started(TURN_2), TURN_2)
    error = {"message": "boom", "codex_error_info": "other"}
    failed = driver.notifications(task_complete(TURN_2, None, error=error), TURN_2)
    assert failed[0]["params"]["readState"]["firstUnread"] == {"type": "turn", "turnId": TURN_2}


def test_a_stored_goal_run_counts_only_the_turn_that_ended_it() -> None:
    # a goal set on a fresh thread: goal turn 1 (the goal stays active: turn 2 follows at once)
    # is no activity live; the history holds no goal status, so the goal turn that follows
    # it directly is what tells (turn_attribution.turn_trigger: goal, as 0.163.0 writes it)
    driver = Driver()
    live = [
        envelope(task_started(TURN, trigger="goal")),
        envelope(
            {
                "type": "thread_goal_updated",
                "threadId": THREAD,
                "turnId": TURN,
                "goal": {
                    "threadId": THREAD,
                    "objective": "o",
                    "status": "active",
                    "tokensUsed": 1,
                    "timeUsedSeconds": 0,
                    "createdAt": 1,
                    "updatedAt": 1,
                },
            }
        ),
        envelope(task_complete()),
        envelope(task_started(TURN_2, trigger="goal"), TURN_2),
        envelope(task_complete(TURN_2), TURN_2),
        envelope(task_started(TURN_3), TURN_3),
        envelope(task_complete(TURN_3, None), TURN_3),  # a compaction: no activity
    ]
    for e in live:
        driver.state = reduce(driver.state, e, driver.ctx).state
    assert driver.state.read_state.first_unread == TURN_2
    stored = [e for e in live if e.msg.type != "thread_goal_updated"]  # not persisted
    assert read_state_of_history(THREAD, stored) == driver.state.read_state
    # the last goal turn of a history counts even with nothing after it
    assert read_state_of_history(THREAD, stored[:4]).first_unread == TURN_2
    # a user turn a goal set (turnless update, persisted) follows stays activity
    user_first = [envelope(task_started()), envelope(task_complete())]
    goal_set = envelope(live[1].msg.model_copy(update={"turn_id": None}))
    history = [*user_first, goal_set, *stored[2:4]]
    assert read_state_of_history(THREAD, history).first_unread == TURN


def test_a_revision_is_the_uuid5_of_the_thread_and_the_turn_without_hashlib() -> None:
    """Revisions are ``uuid.uuid5`` (a restarted server reports the ones the one before it
    did); they are made by CPython's own SHA-1, so that listing stored threads does not import
    ``hashlib`` (OpenSSL's set-up, ``_read_state._uuid5``)."""
    import subprocess
    import sys
    import uuid

    from codex_app_bridge.listener import _read_state
    from tests.conftest import bridge_env

    for turn in (TURN, TURN_2, "é-∂"):
        expected = uuid.uuid5(_read_state._REVISIONS, f"{THREAD}/turn:{turn}")  # pyright: ignore[reportPrivateUsage]
        assert ReadState().after_turn(THREAD, turn).revision == str(expected)
    probe = (
        "import sys\n"
        "from codex_app_bridge.listener import ReadState\n"
        f"ReadState().after_turn({THREAD!r}, {TURN!r})\n"
        "print('hashlib' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], env=bridge_env(), capture_output=True, timeout=60, check=True
    )
    assert result.stdout.split() == [b"False"]
