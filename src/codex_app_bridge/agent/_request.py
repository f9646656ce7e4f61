"""One sampling request as Codex 0.163.0 sends it: headers and JSON body.

Role: pure functions from a turn's settings and the thread's history to the bytes and headers
of ``POST {base_url}/responses`` (spec/model-turn.md §2, ``captures/*/model_requests.jsonl``):

* :func:`turn_metadata` - the ``x-codex-turn-metadata`` JSON (keys in the binary's order);
* :func:`request_headers` - Codex's own headers (the provider's and ``Authorization`` are the
  endpoint's, ``config.ProviderInfo.auth_headers``);
* :func:`request_body` - ``model, stream, input, tools, tool_choice, parallel_tool_calls,
  reasoning, store, include, prompt_cache_key, client_metadata`` (+ ``text``, ``service_tier``);
  a compaction request's metadata carries ``compaction`` where a turn's carries ``model``;
* :func:`request_input` - the base-instructions message + history, with the fields a custom
  provider is not sent (``internal_chat_message_metadata_passthrough``) left out.

Another kind of model call (a compaction) reuses these with its own ``request_kind``, input and
tools, then :func:`codex_app_bridge.agent._sampling.sample` to stream it.

Boundary: values in, bytes and dicts out; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

__all__ = [
    "PASSTHROUGH",
    "RequestMeta",
    "reasoning_param",
    "request_body",
    "request_headers",
    "request_input",
    "turn_metadata",
]

PASSTHROUGH: Final = "internal_chat_message_metadata_passthrough"
BETA_FEATURES: Final = "remote_compaction_v2"


@dataclass(frozen=True, slots=True)
class RequestMeta:
    """Who is asking: the ids and settings ``x-codex-turn-metadata`` and ``client_metadata``
    carry."""

    thread_id: str
    turn_id: str
    installation_id: str
    context_window_id: str
    model: str
    sandbox_mode: str
    turn_started_at_ms: int
    originator: str
    user_agent: str
    window_number: int = 0
    request_kind: str = "turn"
    history_initialization: str = "new"
    forked_from_thread_id: str | None = None
    forked_from_ordinal_exclusive: int | None = None
    compaction: Mapping[str, str] | None = None
    """A compaction request's ``compaction`` metadata (``trigger``, ``reason``,
    ``implementation``, ``phase``, ``strategy``); such a request names no ``model``."""
    turn_trigger: str | None = None
    """What started the turn when not the user (``goal``: a goal-continuation turn)."""
    reasoning_effort: str | None = None
    """The effort asked for (configured, or the catalog model's default)."""

    @property
    def window_id(self) -> str:
        return f"{self.thread_id}:{self.window_number}"


def turn_metadata(meta: RequestMeta) -> str:
    """The ``x-codex-turn-metadata`` value (compact JSON, the binary's key order)."""
    fields: dict[str, Any] = {
        "installation_id": meta.installation_id,
        "session_id": meta.thread_id,
        "thread_id": meta.thread_id,
        "agent_name": "/root",
        "turn_id": meta.turn_id,
        "window_id": meta.window_id,
        "window_number": meta.window_number,
        "context_window_id": meta.context_window_id,
        "request_kind": meta.request_kind,
        "history_initialization": meta.history_initialization,
    }
    if meta.forked_from_thread_id is not None:
        fields["forked_from_thread_id"] = meta.forked_from_thread_id
        fields["forked_from_ordinal_exclusive"] = meta.forked_from_ordinal_exclusive
    fields["root_turn_id"] = meta.turn_id
    if meta.turn_trigger is not None:
        fields["turn_trigger"] = meta.turn_trigger
    fields.update(
        {
            "sandbox": "none" if meta.sandbox_mode == "danger-full-access" else "seccomp",
            "sandbox_mode": meta.sandbox_mode,
            "auto_review_enabled": False,
            "node_repl_auto_review_required": False,
            "node_repl_disabled": False,
            "turn_started_at_unix_ms": meta.turn_started_at_ms,
            "analytics_enabled": False,
        }
    )
    if meta.compaction is not None:
        fields["compaction"] = dict(meta.compaction)
    else:
        fields["model"] = meta.model
        if meta.reasoning_effort is not None:
            fields["reasoning_effort"] = meta.reasoning_effort
    return orjson.dumps(fields).decode()


def request_headers(
    meta: RequestMeta, metadata: str, turn_state: str | None = None
) -> dict[str, str]:
    """Codex's headers of one request, in its order (``turn_state``: the
    ``x-codex-turn-state`` an earlier answer of the same turn carried)."""
    headers = {
        "x-codex-beta-features": BETA_FEATURES,
        "x-codex-window-id": meta.window_id,
        "x-codex-turn-metadata": metadata,
    }
    if turn_state is not None:
        headers["x-codex-turn-state"] = turn_state
    headers.update(
        {
            "x-client-request-id": meta.thread_id,
            "session-id": meta.thread_id,
            "thread-id": meta.thread_id,
            "accept": "text/event-stream",
            "content-type": "application/json",
            "originator": meta.originator,
            "user-agent": meta.user_agent,
        }
    )
    return headers


def request_input(
    base_message: Mapping[str, Any], history: Sequence[Mapping[str, Any]], *, openai: bool = False
) -> list[Mapping[str, Any]]:
    """``input``: the base-instructions message, then the history as recorded (the
    passthrough metadata only for a provider named ``OpenAI``)."""
    items: list[Mapping[str, Any]] = [base_message]
    if openai:
        items.extend(history)
        return items
    for item in history:
        if PASSTHROUGH in item:
            item = {k: v for k, v in item.items() if k != PASSTHROUGH}
        items.append(item)
    return items


def reasoning_param(effort: str | None, summary: str | None) -> dict[str, Any] | None:
    """``reasoning``: ``effort`` when set, ``summary`` unless ``none``."""
    reasoning: dict[str, Any] = {}
    if effort:
        reasoning["effort"] = effort
    if summary and summary != "none":
        reasoning["summary"] = summary
    return reasoning or None


def request_body(
    meta: RequestMeta,
    metadata: str,
    *,
    input: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    parallel_tool_calls: bool,
    reasoning: Mapping[str, Any] | None,
    text: Mapping[str, Any] | None = None,
    service_tier: str | None = None,
) -> bytes:
    """The JSON body (bytes) of one request."""
    body: dict[str, Any] = {
        "model": meta.model,
        "stream": True,
        "input": input,
        "tools": tools,
        "tool_choice": "auto",
        "parallel_tool_calls": parallel_tool_calls,
    }
    if reasoning is not None:
        body["reasoning"] = reasoning
    body["store"] = False
    body["include"] = ["reasoning.encrypted_content"] if reasoning is not None else []
    if service_tier is not None:
        body["service_tier"] = service_tier
    body["prompt_cache_key"] = meta.thread_id
    if text is not None:
        body["text"] = text
    body["client_metadata"] = {
        "thread_id": meta.thread_id,
        "x-codex-window-id": meta.window_id,
        "root_turn_id": meta.turn_id,
        "x-codex-turn-metadata": metadata,
        "turn_id": meta.turn_id,
        "x-codex-installation-id": meta.installation_id,
        "session_id": meta.thread_id,
    }
    return orjson.dumps(body)
