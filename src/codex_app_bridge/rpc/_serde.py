"""Serde-style error messages for params that fail validation, as the real server words them.

The real server decodes params with serde (through serde's buffered ``Content``, because the
request enum is internally tagged by ``method``) and reports the first error it meets. This module
rebuilds that message from a pydantic ``ValidationError`` of a params model, the raw params and
the model's types:

* which error: serde walks an object's members in input order (the real server keeps JSON key
  order) and only then reports missing fields, so the error met first along the input wins, and
  a missing member of a nested object is met when that object is;
* the wording: ``missing field `x` ``, ``invalid type: <unexpected>, expected <expected>``,
  ``invalid value: integer `-1`, expected u32``, ``unknown variant `x`, expected one of `a`, `b` ``,
  ``data did not match any variant of untagged enum Name``; ``<unexpected>`` names the input
  (``null``, ``boolean `true` ``, ``integer `5` ``, ``floating point `1.5` ``, ``string "x"``,
  ``sequence``, ``map``) and ``<expected>`` the Rust type (``a string``, ``a boolean``, ``u32``,
  ``f64``, ``a sequence``, ``a map``, ``struct Name``, ``internally tagged enum Name``,
  ``string or map`` for a plain enum).

Rust integer names come from the field: a JSON-schema ``format`` in ``json_schema_extra``
(``uint32`` -> ``u32``) wins; otherwise a ``ge=0`` bound means ``u32`` (the usual Rust type of the
count/limit params) and no bound ``i64``. Known approximations, all at the edges: floats written in
a form serde keeps as an arbitrary-precision number, integers beyond 64 bits, and positional
(array) params, which follow our model's field order rather than the Rust declaration order.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args, get_origin

import annotated_types
import typing_extensions
from pydantic import BaseModel, RootModel
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from codex_app_bridge.rpc._words import (
    format_float,
    one_of,
    rust_debug_str,
    unexpected,
    unknown_variant,
)

__all__ = [
    "expecting",
    "format_float",
    "one_of",
    "rust_debug_str",
    "serde_message",
    "unexpected",
    "unknown_variant",
]

_FORMAT_TO_RUST = {
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "uint": "usize",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "int": "isize",
}

# --------------------------------------------------------------------------------------------
# What the model expects at a location
# --------------------------------------------------------------------------------------------

_Kind = Literal[
    "any", "none", "str", "bool", "int", "float", "seq", "map", "struct", "enum", "tagged",
    "untagged",
]  # fmt: skip


@dataclass
class _Shape:
    kind: _Kind
    name: str | None = None
    int_name: str = "i64"
    item: Any = None  # element type of a sequence, value type of a map
    model: type[BaseModel] | None = None
    variants: tuple[str, ...] = ()
    tags: dict[str, _Shape] = field(default_factory=dict[str, "_Shape"])


def _int_name(meta: Sequence[object]) -> str:
    lower: float | None = None
    upper: float | None = None
    for item in meta:
        if isinstance(item, FieldInfo):
            extra = item.json_schema_extra
            if isinstance(extra, dict):
                schema_extra = cast("dict[str, object]", extra)
                rust = _FORMAT_TO_RUST.get(str(schema_extra.get("format")))
                if rust is not None:
                    return rust
            nested = _int_name(item.metadata)
            if nested != "i64":
                return nested
        elif isinstance(item, annotated_types.Ge):
            lower = float(item.ge)  # pyright: ignore[reportArgumentType]
        elif isinstance(item, annotated_types.Gt):
            lower = float(item.gt) + 1  # pyright: ignore[reportArgumentType]
        elif isinstance(item, annotated_types.Le):
            upper = float(item.le)  # pyright: ignore[reportArgumentType]
        elif isinstance(item, annotated_types.Lt):
            upper = float(item.lt) - 1  # pyright: ignore[reportArgumentType]
    if lower is not None and lower >= 0:
        if upper is not None:
            for bits in (8, 16, 32):
                if upper <= 2**bits - 1:
                    return f"u{bits}"
            return "u64"
        return "u32"
    return "i64"


def _discriminator(meta: Sequence[object]) -> str | None:
    for item in meta:
        if isinstance(item, FieldInfo) and isinstance(item.discriminator, str):
            return item.discriminator
    return None


def _is_alias(tp: object) -> bool:
    return isinstance(tp, typing_extensions.TypeAliasType)


def _field_by_wire_name(model: type[BaseModel], wire: str) -> FieldInfo | None:
    for name, info in model.model_fields.items():
        if info.alias == wire or (info.alias is None and name == wire):
            return info
    return model.model_fields.get(wire)


def _tag_of(model: type[BaseModel], discriminator: str) -> list[str]:
    info = _field_by_wire_name(model, discriminator)
    if info is None:
        return []
    shape = _shape(info.annotation, [info])
    return list(shape.variants) if shape.kind == "enum" else []


def _shape(tp: Any, meta: Sequence[object] = ()) -> _Shape:
    """Normalise an annotation (aliases, Annotated, Optional, RootModel) into a ``_Shape``."""
    collected = list(meta)
    name: str | None = None
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            args = get_args(tp)
            tp = args[0]
            collected.extend(args[1:])
        elif _is_alias(tp):
            name = name or tp.__name__
            tp = tp.__value__
        elif isinstance(tp, type) and issubclass(tp, RootModel):
            name = name or tp.__name__
            root = tp.model_fields["root"]
            tp = root.annotation
            collected.append(root)
        elif origin in (typing.Union, types.UnionType):
            members = [arg for arg in get_args(tp) if arg is not type(None) and arg is not None]
            if len(members) == 1:
                tp = members[0]
                continue
            return _union_shape(members, name, collected)
        else:
            break
    if tp is None or tp is type(None):
        return _Shape("none")
    if origin is Literal:
        return _Shape("enum", name, variants=tuple(str(arg) for arg in get_args(tp)))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = tuple(str(member.value) for member in tp)  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType, reportUnknownArgumentType]
        return _Shape("enum", name or tp.__name__, variants=values)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return _Shape("struct", tp.__name__, model=tp)
    container = cast(Any, origin if origin is not None else tp)
    args = get_args(tp)
    if isinstance(container, type):
        if issubclass(container, str):
            return _Shape("str", name)
        if issubclass(container, bool):
            return _Shape("bool", name)
        if issubclass(container, int):
            return _Shape("int", name, int_name=_int_name(collected))
        if issubclass(container, float):
            return _Shape("float", name)
        if issubclass(container, Mapping):
            return _Shape("map", name, item=args[1] if len(args) == 2 else Any)
        if issubclass(container, Sequence | AbstractSet) and not issubclass(container, bytes):
            return _Shape("seq", name, item=args[0] if args else Any)
    return _Shape("any", name)


def _union_shape(members: list[Any], name: str | None, meta: list[object]) -> _Shape:
    discriminator = _discriminator(meta)
    if discriminator is None:
        return _Shape("untagged", name)
    tags: dict[str, _Shape] = {}
    for member in members:
        shape = _shape(member)
        models = [shape] if shape.kind == "struct" else []
        for candidate in models:
            assert candidate.model is not None
            for tag in _tag_of(candidate.model, discriminator):
                tags.setdefault(tag, candidate)
        if shape.kind in ("tagged", "untagged"):
            for tag in _member_tags(member, discriminator):
                tags.setdefault(tag, shape)
    return _Shape("tagged", name, variants=tuple(tags), tags=tags)


def _member_tags(member: Any, discriminator: str) -> list[str]:
    # A member that is itself a union of models sharing one tag (``ImageUserInput``).
    tp = member
    while _is_alias(tp) or get_origin(tp) is typing.Annotated:
        tp = tp.__value__ if _is_alias(tp) else get_args(tp)[0]
    found: list[str] = []
    for arg in get_args(tp):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            found.extend(tag for tag in _tag_of(arg, discriminator) if tag not in found)
    return found


def expecting(shape: _Shape) -> str:
    """Serde's ``expected …`` for a shape."""
    match shape.kind:
        case "str":
            return "a string"
        case "bool":
            return "a boolean"
        case "int":
            return shape.int_name
        case "float":
            return "f64"
        case "seq":
            return "a sequence"
        case "map":
            return "a map"
        case "struct":
            return f"struct {shape.name}"
        case "enum":
            return "string or map"
        case "tagged":
            return f"internally tagged enum {shape.name or 'enum'}"
        case "untagged":
            return f"untagged enum {shape.name or 'enum'}"
        case "none":
            return "unit"
        case "any":
            return "any value"


def _child(shape: _Shape, step: str | int) -> _Shape:
    if shape.kind == "struct" and isinstance(step, str):
        assert shape.model is not None
        info = _field_by_wire_name(shape.model, step)
        return _Shape("any") if info is None else _shape(info.annotation, [info])
    if shape.kind in ("seq", "map"):
        return _shape(shape.item)
    return _Shape("any")


@dataclass
class _Located:
    shape: _Shape
    order: tuple[int, ...]
    untagged: _Shape | None


def _locate(root: _Shape, raw: object, loc: tuple[str | int, ...]) -> _Located:
    shape = root
    current: object = raw
    order: list[int] = []
    for step in loc:
        if shape.kind == "untagged":
            return _Located(shape, tuple(order), shape)
        if shape.kind == "tagged":
            # pydantic puts the tag of the chosen variant in the location; the input has no step.
            tagged = shape.tags.get(str(step))
            if tagged is None:
                break
            shape = tagged
            continue
        if isinstance(current, dict) and isinstance(step, str):
            members: dict[str, object] = current  # pyright: ignore[reportUnknownVariableType]
            keys = list(members)
            # Serde meets a member where it appears and a missing member after all present ones.
            order.append(keys.index(step) if step in members else len(keys))
            current = members.get(step)
        elif isinstance(current, list) and isinstance(step, int):
            order.append(step)
            items: list[object] = current  # pyright: ignore[reportUnknownVariableType]
            current = items[step] if step < len(items) else None
        else:
            order.append(0)
            current = None
        shape = _child(shape, step)
    return _Located(shape, tuple(order), shape if shape.kind == "untagged" else None)


def _ctx_names(text: object) -> list[str]:
    # pydantic writes alternatives as "'a', 'b' or 'c'"; used only when the type gave no names.
    names: list[str] = []
    for part in str(text).replace(" or ", ", ").split(", "):
        part = part.strip()
        if len(part) >= 2 and part[0] == part[-1] and part[0] in "'\"":
            names.append(part[1:-1])
    return names


def _message(error: ErrorDetails, located: _Located) -> str:
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx") or {}
    shape = located.shape
    loc = error["loc"]
    if kind == "missing":
        return f"missing field `{loc[-1]}`" if loc else "missing field"
    if located.untagged is not None:
        name = located.untagged.name or "enum"
        return f"data did not match any variant of untagged enum {name}"
    if kind == "union_tag_not_found":
        return f"missing field `{str(ctx.get('discriminator', 'type')).strip(chr(39))}`"
    if kind == "union_tag_invalid":
        names = list(shape.variants) or _ctx_names(ctx.get("expected_tags"))
        return unknown_variant(str(ctx.get("tag")), names)
    if kind in ("enum", "literal_error"):
        if isinstance(value, str):
            names = list(shape.variants) or _ctx_names(ctx.get("expected"))
            return unknown_variant(value, names)
        return f"invalid type: {unexpected(value)}, expected string or map"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        return f"invalid value: {unexpected(value)}, expected {expecting(shape)}"
    if kind.endswith(("_type", "_parsing")) or kind == "int_from_float":
        return f"invalid type: {unexpected(value)}, expected {expecting(shape)}"
    return f"invalid value: {unexpected(value)}, expected {expecting(shape)} ({error['msg']})"


def serde_message(errors: Sequence[ErrorDetails], model: type[BaseModel], raw: object) -> str:
    """The serde message (without ``Invalid request: ``) for the first of ``errors`` serde meets.

    ``errors`` are a params model's ``ValidationError.errors()`` for the raw params ``raw``.
    """
    root = _shape(model)
    if not errors:
        return "invalid value"
    located = [(_locate(root, raw, tuple(error["loc"])), error) for error in errors]
    first_located, first_error = min(located, key=lambda pair: pair[0].order)
    return _message(first_error, first_located)
