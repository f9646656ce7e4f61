"""The request as 0.163.0 sends it, built from values (no server, no HTTP)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import orjson

from codex_app_bridge.agent._events import core_error_info
from codex_app_bridge.agent._request import (
    RequestMeta,
    reasoning_param,
    request_body,
    request_headers,
    request_input,
    turn_metadata,
)
from codex_app_bridge.agent._tools import tool_specs
from tests.agent._harness import capture_requests

META = RequestMeta(
    thread_id="t1",
    turn_id="u1",
    installation_id="i1",
    context_window_id="c1",
    model="mock-model",
    sandbox_mode="danger-full-access",
    turn_started_at_ms=5,
    originator="client",
    user_agent="client/0.163.0",
)


def test_turn_metadata_has_the_binary_keys_in_its_order() -> None:
    (real,) = capture_requests("plain")
    ours = json.loads(turn_metadata(META))
    assert list(ours) == list(json.loads(real["headers"]["x-codex-turn-metadata"]))
    assert ours["window_id"] == "t1:0"
    assert ours["sandbox"] == "none"
    read_only = dataclasses.replace(META, sandbox_mode="read-only")
    assert json.loads(turn_metadata(read_only))["sandbox"] == "seccomp"


def test_headers_echo_the_turn_state_only_when_given() -> None:
    metadata = turn_metadata(META)
    plain = request_headers(META, metadata)
    assert "x-codex-turn-state" not in plain
    assert request_headers(META, metadata, "s1")["x-codex-turn-state"] == "s1"
    (real,) = capture_requests("plain")
    assert list(plain) == [k for k in real["headers"] if k not in ("host", "content-length")]


def test_the_passthrough_metadata_goes_only_to_a_provider_named_openai() -> None:
    item: dict[str, Any] = {
        "type": "message",
        "role": "user",
        "content": [],
        "internal_chat_message_metadata_passthrough": {"turn_id": "u1"},
    }
    base: dict[str, Any] = {"type": "message", "role": "developer", "content": []}
    assert request_input(base, [item]) == [base, {"type": "message", "role": "user", "content": []}]
    assert request_input(base, [item], openai=True) == [base, item]


def test_reasoning_carries_effort_and_summary_unless_none() -> None:
    assert reasoning_param(None, "detailed") == {"summary": "detailed"}
    assert reasoning_param("high", "none") == {"effort": "high"}
    assert reasoning_param(None, None) is None


def test_the_body_keys_and_fixed_values_are_the_binary_ones() -> None:
    (real,) = capture_requests("plain")
    metadata = turn_metadata(META)
    body = orjson.loads(
        request_body(
            META,
            metadata,
            input=[],
            tools=tool_specs(),
            parallel_tool_calls=True,
            reasoning={"summary": "detailed"},
        )
    )
    assert list(body) == list(real["body"])
    for key in ("stream", "tool_choice", "parallel_tool_calls", "reasoning", "store", "include"):
        assert body[key] == real["body"][key]
    assert [t.get("name") for t in body["tools"]] == [t.get("name") for t in real["body"]["tools"]]


def test_dynamic_tools_come_before_web_search() -> None:
    specs = tool_specs([{"name": "lookup", "description": "d", "inputSchema": {"type": "object"}}])
    assert [s.get("name") for s in specs[-2:]] == ["lookup", None]
    assert specs[-2] == {
        "type": "function",
        "name": "lookup",
        "description": "d",
        "strict": False,
        "parameters": {"type": "object"},
    }


def test_error_info_is_spelled_as_core_spells_it() -> None:
    assert core_error_info("internalServerError") == "internal_server_error"
    assert core_error_info({"httpConnectionFailed": {"httpStatusCode": 502}}) == {
        "http_connection_failed": {"http_status_code": 502}
    }


def test_a_compaction_request_names_its_compaction_instead_of_the_model() -> None:
    from codex_app_bridge.agent._session import MANUAL_COMPACTION

    meta = dataclasses.replace(META, request_kind="compaction", compaction=MANUAL_COMPACTION)
    fields = json.loads(turn_metadata(meta))
    assert "model" not in fields
    assert list(fields)[-2:] == ["analytics_enabled", "compaction"]  # 0.163.0's order (probed)
    assert fields["compaction"] == {
        "trigger": "manual",
        "reason": "user_requested",
        "implementation": "responses",
        "phase": "standalone_turn",
        "strategy": "memento",
    }
    assert list(json.loads(turn_metadata(META)))[-1] == "model"
