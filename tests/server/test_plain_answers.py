"""Answers built as plain data on the stored-thread paths equal what the models would write.

``thread/list`` answers stored threads without the ``Thread`` model, ``thread/turns/list`` its
turns without the ``Turn`` model and ``ModelParams`` fills simple params without validating (a
first request of a process skips building those validators): each must be exactly what the
model path writes, and anything the plain path cannot decide goes to the validator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from codex_app_bridge.listener import ReadState
from codex_app_bridge.protocol import v2
from codex_app_bridge.protocol._base import dump_jsonable
from codex_app_bridge.rpc import ModelParams, RpcError
from codex_app_bridge.server._handlers_pages import turn_json
from codex_app_bridge.server._shared import SharedThread, shared_thread_object
from codex_app_bridge.server._stored_list import stored_thread_json, stored_thread_model
from codex_app_bridge.server._threads import ThreadSettings
from codex_app_bridge.sources import SourceDefaults
from codex_app_bridge.storage import StoredThread


def _json(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value, default=dump_jsonable))


@pytest.mark.parametrize(
    ("provider", "model", "source", "name", "effort", "git"),
    [
        ("mock", "mock-model", "vscode", None, None, None),
        (None, None, {"subagent": "review"}, "named", "high", None),
        ("mock", None, "cli", None, None, {"sha": "abc", "branch": None, "originUrl": "u"}),
    ],
)
def test_a_listed_stored_thread_is_the_thread_model_written(
    provider: str | None,
    model: str | None,
    source: object,
    name: str | None,
    effort: str | None,
    git: dict[str, str | None] | None,
) -> None:
    meta: dict[str, Any] = {"id": "t", "cwd": "/w", "originator": "o", "cli_version": "0.1.0"}
    if provider is not None:
        meta["model_provider"] = provider
    meta["source"] = source
    stored = StoredThread(
        thread_id="01a2cccc-0000-7000-8000-000000000001",
        path=Path("/h/sessions/rollout.jsonl"),
        files=(Path("/h/sessions/rollout.jsonl"),),
        archived=False,
        meta_fields=meta,
        created_at="2026-01-02T03:04:05.000Z",
        updated_at="2026-01-02T03:05:05.000Z",
        preview="hello",
        model=model,
        reasoning_effort=effort,
        name=name,
        git_info=git,
    )
    defaults = SourceDefaults(model="m", model_provider="p")
    asked: list[SourceDefaults] = []

    def ask() -> SourceDefaults:
        asked.append(defaults)
        return defaults

    expected = dump_jsonable(stored_thread_model(stored, defaults))
    plain = _json(stored_thread_json(stored, ask))
    assert plain == expected
    assert expected["gitInfo"] == git
    # the defaults (the turn source, built for them) are asked for only when a value is missing
    assert len(asked) == (1 if provider is None or model is None else 0)
    assert list(plain) == list(expected)


def test_a_shared_thread_is_a_thread_that_is_not_loaded_with_no_path() -> None:
    settings = ThreadSettings(cwd="/w", model="m", model_provider="p", reasoning_effort="low")
    found = SharedThread(
        thread_id="01a2cccc-0000-7000-8000-000000000002",
        settings=settings,
        originator="o",
        name="n",
        preview="hi",
        created_at=10,
        updated_at=20,
    )
    thread = dump_jsonable(shared_thread_object(found))
    assert (thread["path"], thread["status"], thread["source"]) == (
        None,
        {"type": "notLoaded"},
        "vscode",
    )
    assert (thread["model"], thread["modelProvider"], thread["reasoningEffort"]) == (
        "m",
        "p",
        "low",
    )
    assert (thread["createdAt"], thread["updatedAt"], thread["recencyAt"]) == (10, 20, 20)


@pytest.mark.parametrize("state", [ReadState(), ReadState("turn-1", "rev")])
def test_a_read_state_as_json_is_its_model_written(state: ReadState) -> None:
    assert state.wire_json("t") == dump_jsonable(state.wire("t"))


def test_a_turn_as_json_is_its_model_written() -> None:
    turn = v2.Turn.model_validate(
        {
            "id": "turn-1",
            "items": [
                {"type": "agentMessage", "id": "a", "text": "hi", "phase": None},
            ],
            "itemsView": "summary",
            "status": "failed",
            "error": {"message": "boom", "codexErrorInfo": None, "additionalDetails": None},
            "startedAt": 1,
            "completedAt": 2,
            "durationMs": 1000,
        }
    )
    expected = dump_jsonable(turn)
    plain = _json(turn_json(turn))
    assert plain == expected
    assert list(plain) == list(expected)


@pytest.mark.parametrize(
    ("model", "params"),
    [
        (v2.ThreadListParams, {}),
        (v2.ThreadListParams, {"limit": 100, "cursor": "c", "archived": None}),
        (v2.ThreadListParams, {"searchTerm": "x", "useStateDbOnly": True}),
        (v2.ThreadTurnsListParams, {"threadId": "t", "limit": 0}),
        (v2.ThreadResumeParams, {"threadId": "t", "cwd": "/w", "excludeTurns": False}),
        (v2.ThreadReadParams, {"threadId": "t", "includeTurns": True}),
    ],
)
def test_simple_params_are_what_validation_makes_of_them(
    model: type[v2.ThreadListParams], params: dict[str, Any]
) -> None:
    spec = ModelParams(model)
    plain = spec._plain(params)  # pyright: ignore[reportPrivateUsage]
    assert plain is not None
    validated = model.model_validate_json(orjson.dumps(params), strict=True)
    assert plain == validated
    assert plain.model_fields_set == validated.model_fields_set
    assert spec.decode(params) == validated


@pytest.mark.parametrize(
    ("model", "params"),
    [
        (v2.ThreadListParams, {"limit": -1}),
        (v2.ThreadListParams, {"limit": True}),
        (v2.ThreadListParams, {"limit": 1.0}),
        (v2.ThreadListParams, {"cursor": 1}),
        (v2.ThreadListParams, {"sortKey": "created_at"}),
        (v2.ThreadListParams, {"unknownField": 1}),
        (v2.ThreadTurnsListParams, {}),
        (v2.ThreadTurnsListParams, {"threadId": None}),
    ],
)
def test_params_the_plain_path_cannot_decide_go_to_the_validator(
    model: type[v2.ThreadListParams], params: dict[str, Any]
) -> None:
    spec = ModelParams(model)
    assert spec._plain(params) is None  # pyright: ignore[reportPrivateUsage]
    try:
        validated = model.model_validate_json(orjson.dumps(params), strict=True)
    except ValueError:
        with pytest.raises(RpcError):
            spec.decode(params)
    else:
        assert spec.decode(params) == validated
