"""Assembling a thread's history from 0.163.0 rollout segments (``history_base``): which lines of
each base are kept, how rollouts are named, and what happens when the chain is broken."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from codex_app_bridge.mapping.thread_history import (
    HistoryBase,
    HistoryBaseError,
    history_base_of,
    history_chain,
    iter_rollout_history,
    resolve_rollout_history,
    rollout_id_from_filename,
)
from codex_app_bridge.protocol import core

A = "01a229f2-bbfe-7a20-9d7f-35a05b666f52"
B = "01a229f2-bca3-7bb2-ab4f-f54b91abaab4"


@pytest.mark.parametrize(
    ("name", "rollout_id"),
    [
        (f"rollout-2026-11-30T00-55-03-{A}.jsonl", A),
        (f"rollout-2026-11-30T00-55-03-{A}_{B}.jsonl", B),
        (f"rollout-{A}.jsonl", A),
        ("rollout.jsonl", None),
        (f"session-{A}.jsonl", None),
        (f"rollout-2026-11-30T00-55-03-{A}.json", None),
    ],
)
def test_rollout_file_names_name_their_thread_or_segment(name: str, rollout_id: str | None) -> None:
    assert rollout_id_from_filename(name) == rollout_id


def meta(history_base: Any = None, ordinal: int | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": A,
        "timestamp": "t",
        "cwd": "/",
        "originator": "o",
        "cli_version": "0.163.0",
    }
    if history_base is not None:
        payload["history_base"] = history_base
    entry: dict[str, Any] = {"timestamp": "t", "type": "session_meta", "payload": payload}
    if ordinal is not None:
        entry["ordinal"] = ordinal
    return entry


def token_count(ordinal: int | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "timestamp": f"line {ordinal}",
        "type": "event_msg",
        "payload": {"type": "token_count", "info": None, "rate_limits": None},
    }
    if ordinal is not None:
        entry["ordinal"] = ordinal
    return entry


def parse(entries: list[dict[str, Any]]) -> list[core.RolloutLine]:
    return [core.ROLLOUT_LINE_ADAPTER.validate_python(entry) for entry in entries]


def stamps(lines: list[core.RolloutLine]) -> list[str | None]:
    return [line.timestamp for line in lines]


def base(rollout_id: str, end: int) -> dict[str, Any]:
    return {"thread_id": rollout_id, "end_ordinal_exclusive": end, "end_byte_offset": 0}


def test_segment_continues_the_base_lines_below_its_ordinal() -> None:
    first = parse([meta(ordinal=0), *(token_count(n) for n in range(1, 5))])
    segment = parse([meta(base(A, 3), ordinal=3), token_count(4)])
    history = resolve_rollout_history(segment, {A: first}.get)
    assert stamps(history) == ["t", "line 1", "line 2", "t", "line 4"]


def test_chains_of_segments_resolve_recursively() -> None:
    first = parse([meta(ordinal=0), token_count(1), token_count(2)])
    revert = parse([meta(base(A, 2), ordinal=2), token_count(3)])
    fork = parse([meta(base(B, 4), ordinal=4), token_count(5)])
    history = resolve_rollout_history(fork, {A: first, B: revert}.get)
    assert stamps(history) == ["t", "line 1", "t", "line 3", "t", "line 5"]


def test_base_lines_without_ordinals_are_placed_by_position() -> None:
    first = parse([meta(), token_count(None), token_count(None)])
    segment = parse([meta(base(A, 2))])
    assert len(resolve_rollout_history(segment, {A: first}.get)) == 3


def test_rollout_without_a_base_is_its_own_history() -> None:
    lines = parse([meta(ordinal=0), token_count(1)])
    assert resolve_rollout_history(lines, lambda _rollout_id: None) == lines
    assert history_base_of(lines) is None


@pytest.mark.parametrize(
    "malformed",
    [
        {"thread_id": A},
        {"thread_id": 7, "end_ordinal_exclusive": 3},
        {"thread_id": A, "end_ordinal_exclusive": True},
        "not an object",
    ],
)
def test_malformed_history_base_is_no_base(malformed: Any) -> None:
    assert history_base_of(parse([meta(malformed)])) is None


def test_history_base_is_read_from_the_session_meta() -> None:
    assert history_base_of(parse([meta(base(B, 17))])) == HistoryBase(B, 17)


def test_missing_base_names_the_rollout_it_needs() -> None:
    segment = parse([meta(base(B, 2))])
    with pytest.raises(HistoryBaseError, match="rollout not found") as raised:
        resolve_rollout_history(segment, lambda _rollout_id: None)
    assert raised.value.rollout_id == B


def test_a_chain_that_loops_is_refused() -> None:
    looping = {A: parse([meta(base(B, 1))]), B: parse([meta(base(A, 1))])}
    with pytest.raises(HistoryBaseError, match="loops"):
        resolve_rollout_history(looping[A], looping.get)


def test_streamed_history_follows_the_chain_from_first_lines_and_reads_each_base_once() -> None:
    first = parse([meta(ordinal=0), token_count(1), token_count(2)])
    revert = parse([meta(base(A, 2), ordinal=2), token_count(3)])
    fork = parse([meta(base(B, 4), ordinal=4), token_count(5)])
    rollouts = {A: first, B: revert}
    chain = history_chain(history_base_of(fork), lambda rid: history_base_of(rollouts[rid]))
    assert chain == [HistoryBase(B, 4), HistoryBase(A, 2)]
    reads: list[str] = []

    def read(rollout_id: str) -> Iterator[core.RolloutLine]:
        reads.append(rollout_id)
        yield from rollouts[rollout_id]

    streamed = iter_rollout_history(chain, iter(fork), read)
    assert reads == []  # nothing is read before the history is consumed
    head = next(streamed)
    assert reads == [A]  # the deepest base comes first, the others when they are due
    history = [head, *streamed]
    assert reads == [A, B]
    assert history == resolve_rollout_history(fork, rollouts.get)
    assert stamps(history) == ["t", "line 1", "t", "line 3", "t", "line 5"]


def test_the_chain_reports_a_missing_base_a_loop_and_a_chain_too_deep() -> None:
    def missing(rollout_id: str) -> HistoryBase | None:
        raise HistoryBaseError(rollout_id, "rollout not found")

    with pytest.raises(HistoryBaseError, match="rollout not found"):
        history_chain(HistoryBase(B, 1), missing)
    loop = {A: HistoryBase(B, 1), B: HistoryBase(A, 1)}
    with pytest.raises(HistoryBaseError, match="loops"):
        history_chain(HistoryBase(A, 1), loop.get)
    with pytest.raises(HistoryBaseError, match="more than 64 history bases"):
        history_chain(HistoryBase("r0", 1), lambda rid: HistoryBase(f"r{int(rid[1:]) + 1}", 1))
