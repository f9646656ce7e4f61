"""Builders for projection tests, named after the spec's conventions (core-projection.md §5).

``U(t)`` user message with ``input_text``; ``Uo(t)`` user message with ``output_text`` (what the
upstream truncation helpers build); ``A(t)`` assistant ``output_text``; ``D(t)`` developer
``input_text``; ``IA(t, trig)`` assistant inter-agent instruction; ``RB(k)`` rollback event line;
``IAC(t, trig)`` inter-agent communication rollout line; ``IACM(trig)`` its metadata line;
``line(item)`` wraps a ResponseItem into a rollout ``response_item`` line.
"""

from __future__ import annotations

from typing import Any

import orjson

from codex_app_bridge.protocol.core import (
    RESPONSE_ITEM_ADAPTER,
    ROLLOUT_LINE_ADAPTER,
    ContentItem,
    InputTextContentItem,
    MessageResponseItem,
    OutputTextContentItem,
    ResponseItem,
    RolloutLine,
)

TS = "2025-01-01T00:00:00.000Z"


def msg(role: str, *content: ContentItem, id: str | None = None) -> MessageResponseItem:
    return MessageResponseItem(id=id, role=role, content=list(content))


def U(text: str) -> MessageResponseItem:
    return msg("user", InputTextContentItem(text=text))


def Uo(text: str) -> MessageResponseItem:
    return msg("user", OutputTextContentItem(text=text))


def A(text: str) -> MessageResponseItem:
    return msg("assistant", OutputTextContentItem(text=text))


def D(text: str) -> MessageResponseItem:
    return msg("developer", InputTextContentItem(text=text))


def inter_agent_json(content: str, trigger_turn: bool = True, **extra: Any) -> str:
    payload: dict[str, Any] = {
        "author": "/root",
        "recipient": "/root/worker",
        "other_recipients": [],
        "content": content,
        "trigger_turn": trigger_turn,
        **extra,
    }
    return orjson.dumps(payload).decode()


def IA(text: str, trigger_turn: bool = True) -> MessageResponseItem:
    return A(inter_agent_json(text, trigger_turn))


def item(data: dict[str, Any]) -> ResponseItem:
    return RESPONSE_ITEM_ADAPTER.validate_python(data)


def line(response_item: ResponseItem) -> RolloutLine:
    return ROLLOUT_LINE_ADAPTER.validate_python(
        {"timestamp": TS, "type": "response_item", "payload": response_item.model_dump()}
    )


def lines(*entries: ResponseItem | RolloutLine) -> list[RolloutLine]:
    # Rollout lines carry a payload; ResponseItems never do.
    return [entry if hasattr(entry, "payload") else line(entry) for entry in entries]  # type: ignore[arg-type]


def RB(num_turns: int) -> RolloutLine:
    return ROLLOUT_LINE_ADAPTER.validate_python(
        {
            "timestamp": TS,
            "type": "event_msg",
            "payload": {"type": "thread_rolled_back", "num_turns": num_turns},
        }
    )


def IAC(text: str, trigger_turn: bool) -> RolloutLine:
    return ROLLOUT_LINE_ADAPTER.validate_python(
        {
            "timestamp": TS,
            "type": "inter_agent_communication",
            "payload": orjson.loads(inter_agent_json(text, trigger_turn)),
        }
    )


def IACM(trigger_turn: bool) -> RolloutLine:
    return ROLLOUT_LINE_ADAPTER.validate_python(
        {
            "timestamp": TS,
            "type": "inter_agent_communication_metadata",
            "payload": {"trigger_turn": trigger_turn},
        }
    )
