"""``thread/list``'s params read without the wire models (``_handlers_lists.ThreadListParamsSpec``):
what the plain path reads is what ``ThreadListParams`` validates to, every value set it checks is
the generated model's, and whatever it does not take is refused or read by the model, with the
model's words."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from codex_app_bridge.protocol import v2
from codex_app_bridge.protocol.jsonrpc import ABSENT
from codex_app_bridge.rpc import ModelParams, RpcError
from codex_app_bridge.rpc.methods import RawParamsValue
from codex_app_bridge.server._handlers_lists import (
    SORT_DIRECTIONS,
    THREAD_SORT_KEYS,
    THREAD_SOURCE_KINDS,
    ThreadListParamsSpec,
    ThreadListQuery,
)

FIELD_COUNT = 16


def _literal_values(alias: Any) -> frozenset[str]:
    return frozenset(get_args(alias.__value__))


def test_the_value_sets_are_the_generated_models() -> None:
    assert _literal_values(v2.SortDirection) == SORT_DIRECTIONS
    assert _literal_values(v2.ThreadSortKey) == THREAD_SORT_KEYS
    assert _literal_values(v2.ThreadSourceKind) == THREAD_SOURCE_KINDS


def test_the_query_has_the_models_fields() -> None:
    assert set(ThreadListQuery._fields) == set(v2.ThreadListParams.model_fields)


PLAIN: list[dict[str, Any]] = [
    {},
    {"limit": 25, "cursor": None},
    {"limit": 0, "cursor": "2026-01-01T00:00:00.000Z|id"},
    {"sortKey": "updated_at", "sortDirection": "asc"},
    {"sortKey": None, "sortDirection": None, "sourceKinds": None},
    {"cwd": "/work"},
    {"cwd": ["/a", "/b"]},
    {"modelProviders": [], "sourceKinds": ["cli", "subAgent", "unknown"]},
    {
        "archived": True,
        "searchTerm": "q",
        "sectionId": "s",
        "useStateDbOnly": False,
        "excludedThreadIds": ["a"],
        "originators": ["o"],
    },
]


def _by_model(raw: RawParamsValue) -> ThreadListQuery:
    params = ModelParams(v2.ThreadListParams, field_count=FIELD_COUNT).decode(raw)
    return ThreadListQuery(
        **{name: getattr(params, name) for name in v2.ThreadListParams.model_fields}
    )


@pytest.mark.parametrize("raw", PLAIN)
def test_plain_params_are_read_as_the_model_validates_them(raw: dict[str, Any]) -> None:
    spec = ThreadListParamsSpec(FIELD_COUNT)
    assert spec.decode(raw) == _by_model(raw)
    assert spec._model is None  # pyright: ignore[reportPrivateUsage]  # read without it


OTHERS: list[RawParamsValue] = [
    ABSENT,
    None,
    [],
    [True],
    "x",
    {"limit": "1"},
    {"limit": -1},
    {"limit": 2**40},
    {"limit": 1.0},
    {"archived": 1},
    {"sortKey": "bogus"},
    {"sortDirection": "down"},
    {"sourceKinds": ["cli", "nope"]},
    {"cwd": ["/a", 1]},
    {"modelProviders": "openai"},
    {"somethingElse": 1},
]


@pytest.mark.parametrize("raw", OTHERS)
def test_anything_else_is_refused_or_read_by_the_model_in_its_words(raw: RawParamsValue) -> None:
    try:
        expected: ThreadListQuery | tuple[int, str] = _by_model(raw)
    except RpcError as exc:
        expected = (exc.code, exc.message)
    try:
        got: ThreadListQuery | tuple[int, str] = ThreadListParamsSpec(FIELD_COUNT).decode(raw)
    except RpcError as exc:
        got = (exc.code, exc.message)
    assert got == expected
