"""The model-visible history a rollout rebuilds equals what the real 0.163.0 binary sent its
model: every request of every capture (``model_inputs.jsonl``: each request's ``input`` without
its first item, the base instructions) is the history of the thread's rollout as it stood when
the request left (the real server writes each item before it asks the model again)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codex_app_bridge.projection import (
    SUMMARY_PREFIX,
    compacted_history,
    is_model_visible,
    is_summary_message,
    model_history,
    model_history_json,
    model_history_of_events,
    user_message_texts,
)
from codex_app_bridge.protocol.core import (
    RESPONSE_ITEM_ADAPTER,
    CompactedEvent,
    CompactedItem,
    CompactedLine,
    EventEnvelope,
    EventMsgLine,
    InputTextContentItem,
    MessageResponseItem,
    RawResponseItemEvent,
    ResponseItem,
    ResponseItemLine,
    RolloutLine,
    ThreadRolledBackEvent,
    iter_rollout_jsonl,
)
from codex_app_bridge.storage import CodexHome, ThreadCatalog
from tests.conftest import CAPTURES_DIR
from tests.storage._homes import home_from_capture

CAPTURES_WITH_REQUESTS = sorted(
    path.parent.name for path in CAPTURES_DIR.glob("*/model_inputs.jsonl")
)
MAIN = "01a229f2-bbfe-7a20-9d7f-35a05b666f52"
FORK = "01a229f2-bccb-7130-8ebf-f9767e792672"


def _requests(capture: str) -> list[dict[str, Any]]:
    text = (CAPTURES_DIR / capture / "model_inputs.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


def _as_sent(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a custom provider is sent of history items: no metadata passthrough."""
    return [
        {k: v for k, v in item.items() if k != "internal_chat_message_metadata_passthrough"}
        for item in items
    ]


def _thread_lines(capture: str, home: Path) -> dict[str, list[RolloutLine]]:
    home_from_capture(capture, home)
    catalog = ThreadCatalog(CodexHome(home))
    return {thread.thread_id: catalog.history(thread) for thread in catalog.threads()}


def _user(text: str, item_id: str | None = None) -> ResponseItem:
    return RESPONSE_ITEM_ADAPTER.validate_python(
        {
            "type": "message",
            "id": item_id,
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
    )


def _assistant(text: str) -> ResponseItem:
    return RESPONSE_ITEM_ADAPTER.validate_python(
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
    )


def _line(item: ResponseItem) -> RolloutLine:
    return ResponseItemLine(timestamp="2026-11-30T00:00:00.000Z", payload=item)


def _histories_as_written(capture: str, home: Path) -> dict[str, list[list[dict[str, Any]]]]:
    """Per thread, its history after each line it was written with: through its resolved
    rollout (history bases applied), and through each of its files as they were written (a
    reverted turn is in the first file only)."""
    out: dict[str, list[list[dict[str, Any]]]] = {}
    sequences = list(_thread_lines(capture, home).items())
    for path in sorted((CAPTURES_DIR / capture).glob("rollout*.jsonl")):
        lines = list(iter_rollout_jsonl(path.read_bytes()))
        thread_id = json.loads(path.read_bytes().split(b"\n", 1)[0])["payload"]["id"]
        sequences.append((thread_id, lines))
    for thread_id, lines in sequences:
        out.setdefault(thread_id, []).extend(
            _as_sent(model_history_json(model_history(lines[:end])))
            for end in range(len(lines) + 1)
        )
    return out


@pytest.mark.parametrize("capture", CAPTURES_WITH_REQUESTS)
def test_every_request_the_real_binary_sent_is_its_rollouts_history_at_that_point(
    capture: str, tmp_path: Path
) -> None:
    histories = _histories_as_written(capture, tmp_path)
    requests = _requests(capture)
    assert requests
    for number, request in enumerate(requests):
        assert request["input"] in histories[request["thread_id"]], f"request {number}"


def test_a_reverted_thread_and_its_fork_continue_from_the_turns_kept(tmp_path: Path) -> None:
    threads = _thread_lines("revert_fork", tmp_path)
    fork_request = _requests("revert_fork")[2]
    assert fork_request["thread_id"] == FORK
    kept = _as_sent(model_history_json(model_history(threads[MAIN])))
    # the reverted second turn is gone: the fork's request is the main thread's history now
    # plus the fork's own user message
    assert fork_request["input"][:-1] == kept
    assert [item["role"] for item in kept] == ["developer", "user", "user", "assistant"]
    fork = model_history_json(model_history(threads[FORK]))
    assert _as_sent(fork[: len(kept) + 1]) == fork_request["input"]
    assert fork[-1]["role"] == "assistant"


def test_the_history_keeps_items_as_recorded_passthrough_included(tmp_path: Path) -> None:
    rollout = (CAPTURES_DIR / "reasoning" / "rollout.jsonl").read_bytes()
    lines = list(iter_rollout_jsonl(rollout))
    recorded = [
        json.loads(raw)["payload"]
        for raw in rollout.splitlines()
        if json.loads(raw)["type"] == "response_item"
    ]
    assert model_history_json(model_history(lines)) == recorded
    assert [item["type"] for item in recorded] == [
        "message",
        "message",
        "message",
        "reasoning",
        "message",
    ]


def test_a_compaction_with_a_replacement_history_replaces_everything_before_it() -> None:
    replacement = [_user("first"), _user(f"{SUMMARY_PREFIX}\nsummary")]
    compacted = CompactedLine(
        timestamp="2026-11-30T00:00:00.000Z",
        payload=CompactedItem(message="summary", replacement_history=replacement),
    )
    lines = [_line(_user("first")), _line(_assistant("a")), compacted, _line(_user("next"))]
    assert model_history(lines) == [*replacement, _user("next")]


def test_a_compaction_without_one_keeps_the_real_user_messages_then_the_summary() -> None:
    compacted = CompactedLine(
        timestamp="2026-11-30T00:00:00.000Z", payload=CompactedItem(message="the summary")
    )
    context = _user("<environment_context>\n  <cwd>/x</cwd>\n</environment_context>")
    lines = [
        _line(context),
        _line(_user("one", "msg_1")),
        _line(_assistant("a")),
        _line(_user("two", "msg_2")),
        compacted,
    ]
    assert model_history(lines) == [_user("one"), _user("two"), _user("the summary")]


def test_compacted_history_keeps_the_newest_messages_that_fit_and_cuts_the_oldest_kept() -> None:
    old, middle, new = "o" * 400, "m" * 400, "n" * 40  # 100, 100 and 10 tokens
    history = compacted_history([], [old, middle, new], "S", max_tokens=150)
    texts = [
        part.text
        for item in history
        if isinstance(item, MessageResponseItem)
        for part in item.content
        if isinstance(part, InputTextContentItem)
    ]
    assert texts[1:] == [middle, new, "S"]
    # the oldest one kept gets what is left of the budget (40 tokens), its middle cut out
    assert texts[0].startswith("o" * 80)
    assert texts[0].endswith("o" * 80)
    assert "tokens truncated" in texts[0]
    assert len(texts[0]) < len(old)
    assert compacted_history([], [], "")[-1] == _user("(no summary available)")


def test_earlier_summaries_are_not_kept_as_user_messages() -> None:
    summary = f"{SUMMARY_PREFIX}\nwhat happened"
    assert is_summary_message(summary)
    assert user_message_texts([_user(summary), _user("real")]) == ["real"]


def test_a_rollback_drops_the_last_turns_and_their_context_updates() -> None:
    rolled_back = EventMsgLine(
        timestamp="2026-11-30T00:00:00.000Z", payload=ThreadRolledBackEvent(num_turns=1)
    )
    context = _user("<environment_context>\n  <cwd>/y</cwd>\n</environment_context>")
    lines = [
        _line(_user("one")),
        _line(_assistant("a")),
        _line(context),
        _line(_user("two")),
        _line(_assistant("b")),
        rolled_back,
    ]
    assert model_history(lines) == [_user("one"), _assistant("a")]


@pytest.mark.parametrize(
    ("item", "visible"),
    [
        ({"type": "message", "role": "system", "content": []}, False),
        ({"type": "message", "role": "developer", "content": []}, True),
        ({"type": "compaction_trigger"}, False),
        ({"type": "other"}, False),
        ({"type": "something_newer", "x": 1}, False),
        ({"type": "compaction", "encrypted_content": "e"}, True),
        ({"type": "function_call_output", "call_id": "c", "output": "o"}, True),
    ],
)
def test_what_the_model_is_shown(item: dict[str, Any], visible: bool) -> None:
    assert is_model_visible(RESPONSE_ITEM_ADAPTER.validate_python(item)) is visible


def test_a_live_event_log_folds_like_its_rollout() -> None:
    replacement = [_user("kept")]
    events = [
        EventEnvelope(id="t1", msg=RawResponseItemEvent(item=_user("one"))),
        EventEnvelope(id="t1", msg=RawResponseItemEvent(item=_assistant("a"))),
        EventEnvelope(id="t2", msg=CompactedEvent(message="s", replacement_history=replacement)),
        EventEnvelope(id="t2", msg=RawResponseItemEvent(item=_user("two"))),
        EventEnvelope(id="t2", msg=RawResponseItemEvent(item=_user("three"))),
        EventEnvelope(id="t3", msg=ThreadRolledBackEvent(num_turns=1)),
    ]
    assert model_history_of_events(events) == [_user("kept"), _user("two")]
