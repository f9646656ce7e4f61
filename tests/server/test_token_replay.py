"""Token-usage replay rules (``server._token_replay``): the last usage, attributed to the turn that
was running when it was counted, with Codex's fallbacks."""

from __future__ import annotations

from typing import Any

import orjson

from codex_app_bridge.mapping.thread_history import build_turns
from codex_app_bridge.protocol.core import EventEnvelope, parse_event_envelope
from codex_app_bridge.protocol.v2 import Turn, dump_dict
from codex_app_bridge.server._token_replay import replayed_token_usage

THREAD = "01a2cccc-0000-7000-8000-000000000001"


def usage(total: int) -> dict[str, Any]:
    return {
        "input_tokens": total - 5,
        "cached_input_tokens": 0,
        "output_tokens": 5,
        "reasoning_output_tokens": 0,
        "total_tokens": total,
    }


def envelope(turn: str, msg: dict[str, Any]) -> EventEnvelope:
    return parse_event_envelope(orjson.dumps({"id": turn, "msg": msg}))


def started(turn: str) -> EventEnvelope:
    return envelope(turn, {"type": "task_started", "turn_id": turn})


def complete(turn: str) -> EventEnvelope:
    return envelope(turn, {"type": "task_complete", "turn_id": turn, "last_agent_message": None})


def count(turn: str, total: int | None, last: int = 15) -> EventEnvelope:
    info = (
        None
        if total is None
        else {
            "total_token_usage": usage(total),
            "last_token_usage": usage(last),
            "model_context_window": 1000,
        }
    )
    return envelope(turn, {"type": "token_count", "info": info, "rate_limits": None})


def turns_of(events: list[EventEnvelope]) -> list[Turn]:
    return build_turns(events, history_mode="paginated", interrupt_stale=True)


def test_the_last_usage_goes_to_the_turn_that_was_running_when_it_was_counted() -> None:
    events = [started("t1"), count("t1", 15), complete("t1")]
    events += [started("t2"), count("t2", 30), complete("t2"), count("", None)]
    replay = replayed_token_usage(THREAD, events, turns_of(events))
    assert replay is not None
    assert dump_dict(replay) == {
        "threadId": THREAD,
        "turnId": "t2",
        "tokenUsage": {
            "total": {
                "totalTokens": 30,
                "inputTokens": 25,
                "cachedInputTokens": 0,
                "cacheWriteInputTokens": 0,
                "outputTokens": 5,
                "reasoningOutputTokens": 0,
            },
            "last": {
                "totalTokens": 15,
                "inputTokens": 10,
                "cachedInputTokens": 0,
                "cacheWriteInputTokens": 0,
                "outputTokens": 5,
                "reasoningOutputTokens": 0,
            },
            "modelContextWindow": 1000,
        },
    }


def test_a_count_without_usage_leaves_the_earlier_one() -> None:
    events = [started("t1"), count("t1", 15), complete("t1"), started("t2"), count("t2", None)]
    replay = replayed_token_usage(THREAD, events, turns_of(events))
    assert replay is not None
    assert (replay.turn_id, replay.token_usage.total.total_tokens) == ("t1", 15)


def test_no_usage_counted_means_no_replay() -> None:
    events = [started("t1"), count("t1", None), complete("t1")]
    assert replayed_token_usage(THREAD, events, turns_of(events)) is None
    assert replayed_token_usage(THREAD, [], []) is None


def test_a_turn_missing_from_the_turns_falls_back_to_its_position_then_the_last_ended() -> None:
    events = [started("t1"), complete("t1"), started("t2"), count("t2", 30), complete("t2")]
    renamed = [turn.model_copy(update={"id": f"r{i}"}) for i, turn in enumerate(turns_of(events))]
    replay = replayed_token_usage(THREAD, events, renamed)
    assert replay is not None
    assert replay.turn_id == "r1"  # the same position
    outside = [count("", 30), started("t1"), complete("t1"), started("t2")]
    turns = turns_of(outside)  # t1 completed, t2 interrupted
    replay = replayed_token_usage(THREAD, outside, turns)
    assert replay is not None
    assert replay.turn_id == "t1"  # counted outside any turn: the last ended turn
    replay = replayed_token_usage(THREAD, [count("", 30)], [])
    assert replay is not None
    assert replay.turn_id == ""
