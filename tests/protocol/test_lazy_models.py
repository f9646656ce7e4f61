"""The generated wire models are created on first access (``protocol._lazy``), with what they
refer to, and are then the same classes an eager module would define."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from pydantic import TypeAdapter

from codex_app_bridge.protocol import v2
from codex_app_bridge.protocol.v2 import _generated


@pytest.fixture
def fresh() -> Iterator[ModuleType]:
    """A new copy of the generated module, in which nothing is defined yet."""
    name = "codex_app_bridge.protocol.v2._generated_copy"
    spec = importlib.util.spec_from_file_location(name, _generated.__file__)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[name]


def _defined(module: ModuleType) -> set[str]:
    return {name for name in module.__all__ if name in vars(module)}


def test_a_fresh_module_defines_nothing_until_a_name_is_read(fresh: ModuleType) -> None:
    assert _defined(fresh) == set()
    assert fresh.TextUserInput.__name__ == "TextUserInput"
    assert "TextUserInput" in _defined(fresh)
    assert len(_defined(fresh)) < 10


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("ThreadStartResponse", None),
        ("ServerNotification", {"method": "thread/closed", "params": {"threadId": "t"}}),
        ("ThreadItem", {"type": "agentMessage", "id": "m", "text": "hi"}),
        ("UserInput", {"type": "text", "text": "hi"}),
        ("InitializeParams", {"clientInfo": {"name": "c", "version": "1"}}),
    ],
)
def test_a_name_read_first_brings_everything_its_model_needs(
    fresh: ModuleType, name: str, data: dict[str, Any] | None
) -> None:
    value = getattr(fresh, name)
    adapter: TypeAdapter[Any] = TypeAdapter(value)  # builds the whole schema: no dangling refs
    assert adapter.core_schema
    if data is not None:
        assert adapter.dump_python(adapter.validate_python(data), by_alias=True, mode="json")
    assert len(_defined(fresh)) < len(fresh.__all__)


def test_classes_keep_their_module_and_plain_qualified_name() -> None:
    model = v2.ThreadStartResponse
    assert model.__module__ == "codex_app_bridge.protocol.v2._generated"
    assert model.__qualname__ == "ThreadStartResponse"
    assert v2.ThreadStartResponse is _generated.ThreadStartResponse


def test_every_exported_name_resolves_and_stays_the_same_object() -> None:
    for name in _generated.__all__:
        assert getattr(v2, name) is getattr(_generated, name), name
    assert set(_generated.__all__) <= set(dir(v2))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchModel"):
        _ = _generated.NoSuchModel
    with pytest.raises(AttributeError, match="NoSuchModel"):
        _ = v2.NoSuchModel
    with pytest.raises(ImportError):
        from codex_app_bridge.protocol.v2 import NoSuchModel  # noqa: F401
