"""Streaming deltas straight to wire bytes: the live path's rows for the events that are most of
a stream (``agent_message_content_delta``, reasoning and plan deltas, summary part breaks,
command output).

Role: one table, ``DELTA_ROWS`` (core event class -> ``DeltaRow``), that the listener consults
before the reducer. Each row writes the whole notification line
``{"method":…,"params":{…},"emittedAtMs":…}`` from a byte template, byte for byte what the model
path writes (``item_event_to_server_notification`` -> v2 model -> ``OutboundNotification``):
the same keys in the same (schema) order, the same string escaping (orjson and pydantic-core
agree on JSON strings; a test compares both on every row). No v2 model is built per delta.

These events leave the reducer state untouched, so skipping the reducer for them changes
nothing but the cost. A row answers ``None`` where the model path shows nothing (a command
output chunk that is not base64).

Boundary: pure; no clock (``emitted_at_ms`` is an argument).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson

from codex_app_bridge._gc import forget_on_release
from codex_app_bridge.protocol import core

__all__ = ["DELTA_ROWS", "DeltaRow"]

_dumps = orjson.dumps


@dataclass(frozen=True, slots=True)
class DeltaRow:
    """How one delta event becomes its notification line."""

    method: str
    encode: Callable[[Any, str, str, int], bytes | None]
    """``(event, thread_id, turn_id, emitted_at_ms) -> notification bytes | None``."""


def _head(method: str) -> bytes:
    return b'{"method":' + _dumps(method) + b',"params":{'


def _tail(emitted_at_ms: int) -> bytes:
    at, tail = _memo.tail
    if at == emitted_at_ms:
        return tail
    tail = b'},"emittedAtMs":' + str(emitted_at_ms).encode() + b"}"
    _memo.tail = (emitted_at_ms, tail)
    return tail


# Single-entry memos of the parts that repeat from one delta to the next (the clock's
# millisecond; the item, thread and turn ids): a stream's deltas share them, so most rows encode
# one string. Each memo is one ``(key, bytes)`` tuple, replaced whole (safe to read from any
# thread; no state beyond the last answer). The idle release empties them (``forget``): the last
# answer of a load would otherwise stay, its ids, tuples and bytes keeping the allocator's arenas
# that load filled resident (``_gc.forget_on_release``).
class _Memo:
    tail: tuple[int | None, bytes] = (None, b"")
    ids: tuple[tuple[str, str, str] | None, bytes] = (None, b"")

    def forget(self) -> None:
        self.tail = _Memo.tail
        self.ids = _Memo.ids


_memo = _Memo()
forget_on_release(_memo.forget)


_AGENT = _head("item/agentMessage/delta")
_PLAN = _head("item/plan/delta")
_SUMMARY = _head("item/reasoning/summaryTextDelta")
_TEXT = _head("item/reasoning/textDelta")
_PART = _head("item/reasoning/summaryPartAdded")
_OUTPUT = _head("item/commandExecution/outputDelta")


def _ids(item_id: str, thread_id: str, turn_id: str) -> bytes:
    key = (item_id, thread_id, turn_id)
    last, ids = _memo.ids
    if last == key:
        return ids
    ids = (
        b'"itemId":'
        + _dumps(item_id)
        + b',"threadId":'
        + _dumps(thread_id)
        + b',"turnId":'
        + _dumps(turn_id)
    )
    _memo.ids = (key, ids)
    return ids


def _delta_of_item(head: bytes) -> Callable[[Any, str, str, int], bytes]:
    """The row of a ``{delta, itemId, threadId, turnId}`` notification (agent message, plan)."""

    def encode(
        msg: core.AgentMessageContentDeltaEvent | core.PlanDeltaEvent,
        thread_id: str,
        turn_id: str,
        at: int,
    ) -> bytes:
        return (
            head
            + b'"delta":'
            + _dumps(msg.delta)
            + b","
            + _ids(msg.item_id, thread_id, turn_id)
            + _tail(at)
        )

    return encode


def _summary_text(
    msg: core.ReasoningContentDeltaEvent, thread_id: str, turn_id: str, at: int
) -> bytes:
    return (
        _SUMMARY
        + b'"delta":'
        + _dumps(msg.delta)
        + b',"itemId":'
        + _dumps(msg.item_id)
        + b',"summaryIndex":'
        + _dumps(msg.summary_index)
        + b',"threadId":'
        + _dumps(thread_id)
        + b',"turnId":'
        + _dumps(turn_id)
        + _tail(at)
    )


def _raw_text(
    msg: core.ReasoningRawContentDeltaEvent, thread_id: str, turn_id: str, at: int
) -> bytes:
    return (
        _TEXT
        + b'"contentIndex":'
        + _dumps(msg.content_index)
        + b',"delta":'
        + _dumps(msg.delta)
        + b","
        + _ids(msg.item_id, thread_id, turn_id)
        + _tail(at)
    )


def _summary_part(
    msg: core.AgentReasoningSectionBreakEvent, thread_id: str, turn_id: str, at: int
) -> bytes:
    return (
        _PART
        + b'"itemId":'
        + _dumps(msg.item_id)
        + b',"summaryIndex":'
        + _dumps(msg.summary_index)
        + b',"threadId":'
        + _dumps(thread_id)
        + b',"turnId":'
        + _dumps(turn_id)
        + _tail(at)
    )


def _command_output(
    msg: core.ExecCommandOutputDeltaEvent, thread_id: str, turn_id: str, at: int
) -> bytes | None:
    try:
        text = msg.chunk_text()
    except ValueError:
        return None
    return (
        _OUTPUT + b'"delta":' + _dumps(text) + b"," + _ids(msg.call_id, thread_id, turn_id)
    ) + _tail(at)


DELTA_ROWS: Final[dict[type[Any], DeltaRow]] = {
    core.AgentMessageContentDeltaEvent: DeltaRow("item/agentMessage/delta", _delta_of_item(_AGENT)),
    core.PlanDeltaEvent: DeltaRow("item/plan/delta", _delta_of_item(_PLAN)),
    core.ReasoningContentDeltaEvent: DeltaRow("item/reasoning/summaryTextDelta", _summary_text),
    core.ReasoningRawContentDeltaEvent: DeltaRow("item/reasoning/textDelta", _raw_text),
    core.AgentReasoningSectionBreakEvent: DeltaRow(
        "item/reasoning/summaryPartAdded", _summary_part
    ),
    core.ExecCommandOutputDeltaEvent: DeltaRow(
        "item/commandExecution/outputDelta", _command_output
    ),
}
"""Core delta event class -> its wire row (see the module docstring)."""
