"""``realtime_conversation_realtime`` payloads -> ``thread/realtime/*`` notifications.

Role: the one bespoke row whose output depends on the inner payload kind. Core serializes its
``RealtimeEvent`` enum in serde's default externally tagged form, ``{"InputTranscriptDelta":
{"delta": "..."}}``; the variant name is accepted in PascalCase or snake_case. Kinds the real
server ignores (session updates, response created/done, item done, no-op requests) give nothing,
and so does a kind this bridge does not know (the caller counts it as skipped).

No 0.163.0 capture exercises realtime conversations: the rules follow the upstream router.
Boundary: pure; returns ``(method, params JSON)`` pairs for the reducer to wrap.
"""

from __future__ import annotations

from pydantic import JsonValue

from codex_app_bridge.listener._convert import camel

__all__ = ["IGNORED_REALTIME_KINDS", "realtime_notification"]

IGNORED_REALTIME_KINDS: frozenset[str] = frozenset(
    {
        "session_updated",
        "response_created",
        "response_done",
        "conversation_item_done",
        "noop_requested",
    }
)
"""Realtime payload kinds the real server deliberately drops."""


def _snake(name: str) -> str:
    out: list[str] = []
    for index, char in enumerate(name):
        if char.isupper() and index:
            out.append("_")
        out.append(char.lower())
    return "".join(out)


def _field(inner: JsonValue, key: str) -> JsonValue:
    return inner.get(key) if isinstance(inner, dict) else None


def _camel_keys(value: JsonValue) -> JsonValue:
    """The keys of a JSON object camelCased (one level; values untouched)."""
    if isinstance(value, dict):
        return {camel(key): item for key, item in value.items()}
    return value


def realtime_notification(
    payload: JsonValue, thread_id: str
) -> tuple[str, dict[str, JsonValue]] | None:
    """The notification one realtime payload becomes, ``None`` for the kinds that give none.

    Raises ``ValueError`` for a payload that is not a one-key object or whose kind is unknown.
    """
    if not isinstance(payload, dict) or len(payload) != 1:
        raise ValueError("realtime payload is not a one-key tagged object")
    raw_kind, inner = next(iter(payload.items()))
    kind = _snake(raw_kind)
    if kind in IGNORED_REALTIME_KINDS:
        return None
    base: dict[str, JsonValue] = {"threadId": thread_id}
    if kind in ("input_transcript_delta", "output_transcript_delta"):
        role = "user" if kind.startswith("input") else "assistant"
        return "thread/realtime/transcript/delta", {
            **base,
            "role": role,
            "delta": _field(inner, "delta"),
        }
    if kind in ("input_transcript_done", "output_transcript_done"):
        role = "user" if kind.startswith("input") else "assistant"
        return "thread/realtime/transcript/done", {
            **base,
            "role": role,
            "text": _field(inner, "text"),
        }
    if kind == "input_audio_speech_started":
        item: JsonValue = {
            "type": "input_audio_buffer.speech_started",
            "item_id": _field(inner, "item_id"),
        }
        return "thread/realtime/itemAdded", {**base, "item": item}
    if kind == "response_cancelled":
        item = {"type": "response.cancelled", "response_id": _field(inner, "response_id")}
        return "thread/realtime/itemAdded", {**base, "item": item}
    if kind == "conversation_item_added":
        return "thread/realtime/itemAdded", {**base, "item": inner}
    if kind == "handoff_requested":
        item = {
            "type": "handoff_request",
            "handoff_id": _field(inner, "handoff_id"),
            "item_id": _field(inner, "item_id"),
            "input_transcript": _field(inner, "input_transcript"),
            "active_transcript": _field(inner, "active_transcript"),
        }
        return "thread/realtime/itemAdded", {**base, "item": item}
    if kind == "audio_out":
        return "thread/realtime/outputAudio/delta", {**base, "audio": _camel_keys(inner)}
    if kind == "error":
        message = inner if isinstance(inner, str) else _field(inner, "message")
        return "thread/realtime/error", {**base, "message": message}
    if kind == "history_item_started":
        return "thread/realtime/item/started", {**base, "item": inner}
    if kind == "history_item_completed":
        return "thread/realtime/item/completed", {**base, "item": inner}
    if kind == "history_transcript_delta":
        return "thread/realtime/item/transcript/delta", {
            **base,
            "itemId": _field(inner, "item_id"),
            "delta": _field(inner, "delta"),
        }
    raise ValueError(f"unknown realtime payload kind {raw_kind!r}")
