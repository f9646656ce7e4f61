"""Base classes and JSON helpers shared by every model of the protocol layer.

``WireModel`` is the base of the v2 wire models generated from the upstream JSON Schema;
``CoreModel`` is the base of the hand-written Codex core models (EventMsg, ResponseItem, TurnItem,
rollout lines). Both keep unknown fields (``extra="allow"``) so that parsing and re-serializing is
lossless, accept Python names and wire aliases on input, and are written with their wire aliases.

Null versus absent is decided per field by the model (``exclude_if=is_none``, for hand-written
models usually as the ``omit_none()`` default, on the fields the real binary omits when empty);
dump helpers never pass ``exclude_none`` or ``exclude_unset``.

Validators and serializers are built on first use, not at import (``defer_build``): the protocol
has about a thousand models, most of which one process never touches, and building all of them
was most of ``import codex_app_bridge``. A model or union adapter is built once, the first time it
validates or dumps; nothing else changes. Module-level union adapters are made with
:func:`union_adapter` for the same reason.
"""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "CoreModel",
    "WireModel",
    "dump_json",
    "dump_jsonable",
    "is_none",
    "is_none_or_empty",
    "omit_none",
    "union_adapter",
]

T = TypeVar("T")


class WireModel(BaseModel):
    """Base of the app-server v2 wire models (generated; never edited by hand)."""

    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
        serialize_by_alias=True,
        defer_build=True,
        cache_strings="keys",
    )


class CoreModel(BaseModel):
    """Base of the hand-written Codex core models."""

    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
        serialize_by_alias=True,
        defer_build=True,
        cache_strings="keys",
    )


def union_adapter(union: Any, *, title: str | None = None) -> TypeAdapter[Any]:
    """The module-level ``TypeAdapter`` of a union type, built on its first use.

    ``title`` names the union in its JSON Schema. (A model class needs no adapter config: its
    own ``defer_build`` applies.)
    """
    config = ConfigDict(defer_build=True, cache_strings="keys")
    if title is not None:
        config["title"] = title
    return TypeAdapter(union, config=config)


def is_none(value: object) -> bool:
    """``exclude_if`` predicate for fields the real binary omits when they are ``None``."""
    return value is None


def omit_none() -> Any:
    """Field default for an optional value the real binary leaves out when it is ``None``."""
    return Field(default=None, exclude_if=is_none)


def is_none_or_empty(value: object) -> bool:
    """``exclude_if`` predicate for fields omitted when ``None`` or an empty collection."""
    return value is None or value == [] or value == {}


def dump_jsonable(value: Any, adapter: TypeAdapter[Any] | None = None) -> Any:
    """Plain JSON-able Python data (dicts, lists, str, ...) for a model, a union value or a list."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if adapter is None:
        return orjson.loads(orjson.dumps(value))
    return adapter.dump_python(value, mode="json", by_alias=True)


def dump_json(value: Any, adapter: TypeAdapter[Any] | None = None) -> bytes:
    """JSON bytes (orjson) for a model, a union value validated by ``adapter``, or plain data."""
    if isinstance(value, BaseModel):
        return value.__pydantic_serializer__.to_json(value, by_alias=True)
    if adapter is not None:
        return adapter.dump_json(value, by_alias=True)
    return orjson.dumps(value)
