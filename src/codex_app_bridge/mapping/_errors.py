"""Core errors in their v2 spelling: ``codexErrorInfo``, ``TurnError`` and which errors fail a turn.

One rule for every path that shows a core error: the live notifications and the turns rebuilt
from history (``thread/read``, ``thread/resume``) convert a core ``CodexErrorInfo`` the same way,
as the 0.163.0 binary does for both:

* a unit variant is camelCased (``internal_server_error`` -> ``internalServerError``); a one-key
  object gets a camelCased key and camelCased inner keys
  (``{"response_stream_disconnected": {"http_status_code": null}}`` ->
  ``{"responseStreamDisconnected": {"httpStatusCode": null}}``);
* a variant the 0.163.0 v2 enum does not have becomes ``"other"`` (probed: ``invalid_prompt``, an
  unknown string and an unknown object all show as ``"other"`` in a live ``turn/completed`` and
  in ``thread/resume``). The v2 variants are read from the generated ``CodexErrorInfo``.

Boundary: pure functions from core values to v2 values; no I/O, no state.
"""

from __future__ import annotations

from typing import Literal, get_args, get_origin

from pydantic import JsonValue

from codex_app_bridge.protocol._base import WireModel
from codex_app_bridge.protocol.core import CodexErrorInfo
from codex_app_bridge.protocol.v2 import CodexErrorInfo as V2CodexErrorInfo
from codex_app_bridge.protocol.v2 import TurnError

__all__ = [
    "camel",
    "camel_keys",
    "codex_error_info",
    "error_affects_turn_status",
    "is_rollback_failure",
    "turn_error",
]


def camel(name: str) -> str:
    """``snake_case`` -> ``camelCase``; a name without underscores is returned unchanged."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_keys(value: JsonValue) -> JsonValue:
    """Recursively camelCase the keys of JSON objects (values untouched)."""
    if isinstance(value, dict):
        return {camel(key): camel_keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [camel_keys(item) for item in value]
    return value


def _v2_variants() -> tuple[frozenset[str], frozenset[str]]:
    """The unit variants and the object variants' keys of the generated v2 ``CodexErrorInfo``."""
    units: set[str] = set()
    objects: set[str] = set()
    for member in get_args(V2CodexErrorInfo.__value__):
        if get_origin(member) is Literal:
            units.update(str(value) for value in get_args(member))
        elif isinstance(member, type) and issubclass(member, WireModel):
            (field,) = member.model_fields.values()
            if field.alias is not None:
                objects.add(field.alias)
    return frozenset(units), frozenset(objects)


_V2_UNITS, _V2_OBJECTS = _v2_variants()

_NON_TERMINAL_ERRORS: frozenset[str] = frozenset({"thread_rollback_failed", "threadRollbackFailed"})
_NON_TERMINAL_OBJECTS: frozenset[str] = frozenset(
    {"active_turn_not_steerable", "activeTurnNotSteerable"}
)


def codex_error_info(info: CodexErrorInfo | None) -> JsonValue:
    """The v2 ``codexErrorInfo`` of a core error info (see the module docstring)."""
    if info is None:
        return None
    if isinstance(info, str):
        name = camel(info)
        return name if name in _V2_UNITS else "other"
    if len(info) == 1:
        key, inner = next(iter(info.items()))
        name = camel(key)
        if name in _V2_OBJECTS:
            return {name: camel_keys(inner)}
        if name in _V2_UNITS:
            return name
    return "other"


def error_affects_turn_status(info: CodexErrorInfo | None) -> bool:
    """Whether an ``error`` event fails the turn: every classification but a failed rollback and
    a refused steer (``thread_rollback_failed``, ``active_turn_not_steerable``)."""
    if info is None:
        return True
    if isinstance(info, str):
        return info not in _NON_TERMINAL_ERRORS
    return not any(key in _NON_TERMINAL_OBJECTS for key in info)


def is_rollback_failure(info: CodexErrorInfo | None) -> bool:
    """The error answers a pending rollback request instead of reaching the client."""
    return isinstance(info, str) and info in _NON_TERMINAL_ERRORS


def turn_error(
    message: str,
    info: CodexErrorInfo | None,
    *,
    additional_details: str | None = None,
    misalignment: JsonValue = None,
) -> TurnError:
    """``TurnError {message, codexErrorInfo, additionalDetails, misalignment}``."""
    return TurnError.model_validate(
        {
            "message": message,
            "codexErrorInfo": codex_error_info(info),
            "additionalDetails": additional_details,
            "misalignment": camel_keys(misalignment) if misalignment is not None else None,
        }
    )
