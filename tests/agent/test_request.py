"""The request as 0.163.0 sends it, built from values (no server, no HTTP)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from codex_app_bridge.agent._events import core_error_info
from codex_app_bridge.agent._request import (
    RequestMeta,
    reasoning_param,
    request_body,
    request_headers,
    request_input,
    turn_metadata,
)
from codex_app_bridge.agent._tools import model_family, tool_specs, web_search_mode
from tests.agent._harness import capture_requests

REAL_TOOLS = Path(__file__).parent.parent / "data" / "model_tools" / "real_0.163.0.json"
"""The ``tools`` 0.163.0 sent the mock, descriptions left out (they are the project's own
wording), per model and sandbox: gpt-5.5 under workspace-write, the fallback ``mock-model``
under workspace-write and danger-full-access."""

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


def _without_descriptions(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _without_descriptions(v)
            for k, v in value.items()  # pyright: ignore[reportUnknownVariableType]
            if k != "description"
        }
    if isinstance(value, list):
        return [_without_descriptions(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


@pytest.mark.parametrize(
    "case",
    ["gpt-5.5 workspace-write", "mock-model workspace-write", "mock-model danger-full-access"],
)
def test_each_model_gets_the_binarys_tools_for_its_metadata_and_sandbox(case: str) -> None:
    real = json.loads(REAL_TOOLS.read_text(encoding="utf-8"))[case]
    model, sandbox = case.split()
    ours = tool_specs(family=model_family(model), web_search=web_search_mode(None, sandbox))
    assert _without_descriptions(ours) == real


def test_gpt_5_5_gets_the_freeform_apply_patch_and_the_fallback_model_none() -> None:
    freeform = tool_specs(family=model_family("gpt-5.5"))
    (patch,) = [t for t in freeform if t.get("name") == "apply_patch"]
    assert patch["type"] == "custom"
    assert patch["format"]["syntax"] == "lark"
    assert not [t for t in tool_specs(family=model_family("mock-model")) if "apply_patch" in str(t)]


def test_the_web_search_mode_is_the_configured_one_else_live_only_with_full_access() -> None:
    assert web_search_mode(None, "danger-full-access") == "live"
    assert web_search_mode(None, "workspace-write") == "cached"
    assert web_search_mode("live", "read-only") == "live"
    assert web_search_mode("cached", "danger-full-access") == "cached"
    assert [t["type"] for t in tool_specs(web_search="disabled")][-1] != "web_search"


def test_a_reasoning_effort_follows_the_model_in_the_turn_metadata() -> None:
    with_effort = dataclasses.replace(META, model="gpt-5.5", reasoning_effort="medium")
    fields = json.loads(turn_metadata(with_effort))
    assert list(fields)[-2:] == ["model", "reasoning_effort"]
    assert fields["reasoning_effort"] == "medium"
    assert "reasoning_effort" not in json.loads(turn_metadata(META))


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
