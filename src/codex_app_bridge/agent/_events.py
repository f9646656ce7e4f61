"""Core events built without re-validation, and the shapes recorded items take.

Role: the per-event hot path of a model turn builds events whose fields it already knows are
right (ids it minted, strings the SSE decoder produced): :func:`trusted` makes a model instance
from its field values without pydantic validation (defaults filled in once per class).
:func:`passthrough` is the ``internal_chat_message_metadata_passthrough`` core puts on the items
it records (kept in history and the rollout, never sent to a custom provider).
:func:`core_error_info` turns ``ModelError``'s v2 ``codexErrorInfo`` into core's snake_case.

Boundary: values only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

from pydantic import BaseModel

__all__ = ["core_error_info", "dicts", "passthrough", "trusted"]

M = TypeVar("M", bound=BaseModel)

_new: Final = object.__new__
_set: Final = object.__setattr__
_MAKERS: dict[type[Any], Callable[[dict[str, Any]], Any]] = {}


def _maker(cls: type[M]) -> Callable[[dict[str, Any]], M]:
    defaults: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if info.is_required():
            continue
        defaults[name] = info.get_default(call_default_factory=True)
    fields = frozenset(cls.model_fields)

    def make(values: dict[str, Any]) -> M:
        obj = _new(cls)
        state = dict(defaults)
        state.update(values)
        _set(obj, "__dict__", state)
        _set(obj, "__pydantic_fields_set__", fields)
        _set(obj, "__pydantic_extra__", {})
        _set(obj, "__pydantic_private__", None)
        return obj

    return make


def trusted(cls: type[M], **values: Any) -> M:
    """An instance of ``cls`` from trusted field values (no validation; defaults filled in).
    Every required field must be given, with a value of its declared type."""
    make = _MAKERS.get(cls)
    if make is None:
        make = _MAKERS[cls] = _maker(cls)
    return make(values)


def passthrough(
    turn_id: str, *, kinds: list[str] | None = None, created: bool = False
) -> dict[str, Any]:
    """The metadata core attaches to a recorded item (``content_item_kinds`` for messages,
    ``create_time`` for what the session itself made)."""
    meta: dict[str, Any] = {"turn_id": turn_id}
    if created:
        meta["create_time"] = time.time()
    if kinds is not None:
        meta["content_item_kinds"] = kinds
    return meta


def _snake(name: str) -> str:
    out: list[str] = []
    for char in name:
        if char.isupper():
            out.append("_")
            out.append(char.lower())
        else:
            out.append(char)
    return "".join(out)


def dicts(value: object) -> list[dict[str, Any]]:
    """The JSON objects of a JSON array (anything else: none)."""
    if not isinstance(value, list):
        return []
    return [cast("dict[str, Any]", v) for v in cast("list[object]", value) if isinstance(v, dict)]


def core_error_info(info: str | dict[str, Any]) -> str | dict[str, Any]:
    """A v2 ``codexErrorInfo`` (``internalServerError``, ``{httpConnectionFailed:
    {httpStatusCode}}``) in core's spelling (the mapper turns it back)."""
    if isinstance(info, str):
        return _snake(info)
    out: dict[str, Any] = {}
    for key, value in info.items():
        if isinstance(value, dict):
            inner = cast("dict[str, Any]", value)
            out[_snake(key)] = {_snake(k): v for k, v in inner.items()}
        else:
            out[_snake(key)] = value
    return out
