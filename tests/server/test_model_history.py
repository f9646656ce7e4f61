"""A thread's model history is stored and given back: the response items a source records
become the rollout's ``response_item`` lines (a compaction a ``compacted`` line), and the
session a thread opens later (resumed after a restart, forked, reverted, reloaded after an idle
unload) starts from the history core would rebuild (``SessionConfig.prior_items``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from codex_app_bridge.protocol.core import (
    RESPONSE_ITEM_ADAPTER,
    CompactedEvent,
    EventMsg,
    ResponseItem,
    TaskCompleteEvent,
    TaskStartedEvent,
    TextUserInput,
)
from codex_app_bridge.protocol.core import (
    RawResponseItemEvent as Raw,
)
from codex_app_bridge.sources import (
    CoreSession,
    SessionConfig,
    SourceDefaults,
    TurnPlayer,
    TurnRequest,
)
from tests.e2e._harness import Message, methods, open_bridge

pytestmark = pytest.mark.anyio


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def assistant(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": f"re: {text}"}],
    }


def _item(data: dict[str, Any]) -> ResponseItem:
    return RESPONSE_ITEM_ADAPTER.validate_python(data)


class RecordingSource:
    """Records what each session was opened with; each turn records the user's text and an
    answer as response items; the text ``compact`` records a compaction instead."""

    def __init__(self) -> None:
        self.opened: list[SessionConfig] = []

    @property
    def defaults(self) -> SourceDefaults:
        return SourceDefaults(model="fake", model_provider="test")

    def open_session(self, config: SessionConfig) -> CoreSession:
        self.opened.append(config)
        return TurnPlayer(self, config)

    async def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        text = "".join(i.text for i in request.input if isinstance(i, TextUserInput))
        yield TaskStartedEvent(turn_id=request.turn_id)
        if text == "compact":
            replacement = [_item(user("the summary"))]
            yield CompactedEvent(message="the summary", replacement_history=replacement)
        else:
            yield Raw(item=_item(user(text)))
            yield Raw(item=_item(assistant(text)))
        yield TaskCompleteEvent(turn_id=request.turn_id, last_agent_message=text)


def _rollout_lines(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line]


async def test_recorded_items_are_rollout_lines_and_a_restarted_server_continues_from_them(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    first = RecordingSource()
    async with open_bridge("memory", source=first, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        _, messages = await client.run_turn(thread_id, "one")
        await client.run_turn(thread_id, "two")
        read = await client.result("thread/read", {"threadId": thread_id, "includeTurns": True})
    # recorded items reach no client that did not ask for raw events, and show no items
    assert "rawResponseItem/completed" not in methods(messages)
    assert [len(turn["items"]) for turn in read["thread"]["turns"]] == [0, 0]
    assert [config.prior_items for config in first.opened] == [[]]
    assert first.opened[0].history_initialization == "new"
    lines = _rollout_lines(read["thread"]["path"])
    kinds = [(line["type"], line["payload"].get("type")) for line in lines]
    assert kinds == [
        ("session_meta", None),
        ("event_msg", "task_started"),
        ("turn_context", None),
        ("response_item", "message"),
        ("response_item", "message"),
        ("event_msg", "task_complete"),
        ("event_msg", "task_started"),
        ("turn_context", None),
        ("response_item", "message"),
        ("response_item", "message"),
        ("event_msg", "task_complete"),
    ]
    assert [line["ordinal"] for line in lines] == list(range(len(lines)))
    assert [line["payload"] for line in lines if line["type"] == "response_item"] == [
        user("one"),
        assistant("one"),
        user("two"),
        assistant("two"),
    ]

    second = RecordingSource()
    async with open_bridge("memory", source=second, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        resumed = await client.result("thread/resume", {"threadId": thread_id})
        assert resumed["thread"]["turns"] == read["thread"]["turns"]
        await client.run_turn(thread_id, "three")
        history = [user("one"), assistant("one"), user("two"), assistant("two")]
        assert [list(c.prior_items) for c in second.opened] == [history]

        fork = await client.result("thread/fork", {"threadId": thread_id})
        fork_id = fork["thread"]["id"]
        await client.run_turn(fork_id, "four")
        continued = [*history, user("three"), assistant("three")]
        assert list(second.opened[-1].prior_items) == continued
        assert second.opened[-1].history_initialization == "warm_fork"
        assert second.opened[0].history_initialization == "cold_resume"
        fork_lines = _rollout_lines(fork["thread"]["path"])
        assert [line["payload"] for line in fork_lines if line["type"] == "response_item"] == [
            *continued,
            user("four"),
            assistant("four"),
        ]

        turns = read["thread"]["turns"]
        await client.result(
            "thread/revert", {"threadId": thread_id, "beforeTurnId": turns[1]["id"]}
        )
        await client.run_turn(thread_id, "five")
        assert list(second.opened[-1].prior_items) == [user("one"), assistant("one")]
        assert second.opened[-1].history_initialization == "cold_resume"


async def test_a_compaction_is_a_compacted_line_and_replaces_the_history_after_it(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    async with open_bridge("memory", source=RecordingSource(), codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        await client.run_turn(thread_id, "one")
        await client.run_turn(thread_id, "compact")
        await client.run_turn(thread_id, "two")
        read = await client.result("thread/read", {"threadId": thread_id})
    compacted = [
        line for line in _rollout_lines(read["thread"]["path"]) if line["type"] == "compacted"
    ]
    assert [line["payload"] for line in compacted] == [
        {
            "message": "the summary",
            "replacement_history": [user("the summary")],
            "compaction_response_id": None,
            "latest_token_usage_record": None,
        }
    ]
    source = RecordingSource()
    async with open_bridge("memory", source=source, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        await client.result("thread/resume", {"threadId": thread_id})
        await client.run_turn(thread_id, "three")
    assert list(source.opened[0].prior_items) == [
        user("the summary"),
        user("two"),
        assistant("two"),
    ]


def _closed(message: Message) -> bool:
    return message.get("method") == "thread/closed"


async def test_a_thread_reloaded_after_an_idle_unload_continues_from_its_history() -> None:
    source = RecordingSource()
    async with open_bridge("memory", source=source, idle_unload=0.05) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread()
        await client.run_turn(thread_id, "one")
        await client.result("thread/unsubscribe", {"threadId": thread_id})
        await client.until(_closed)
        await client.result("thread/resume", {"threadId": thread_id})
        await client.run_turn(thread_id, "two")
    assert [list(c.prior_items) for c in source.opened] == [[], [user("one"), assistant("one")]]
