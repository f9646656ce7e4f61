"""Whether a ``response.completed`` is one Codex accepts, and if not, the text it reports.

Role: Codex reads ``response.completed``'s ``response`` as ``{id: string, usage?: {input_tokens,
input_tokens_details?: {cached_tokens}, output_tokens, output_tokens_details?:
{reasoning_tokens}, total_tokens}}`` (integers, extra fields ignored); any other shape makes the
stream fail with ``failed to parse ResponseCompleted: <serde message>``, retried like a cut. This
module checks that shape once per response and words the problem as serde does (numbers are
``number``; a non-integer number is ``invalid number``). Boundary: a JSON value in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, cast

__all__ = ["completed_problem"]

_I64_MIN: Final = -(2**63)
_I64_MAX: Final = 2**63 - 1

# struct name -> (field, kind) in declaration order; kind: "i64", "str" or a struct name
_STRUCTS: Final[Mapping[str, tuple[tuple[str, str, bool], ...]]] = {
    "ResponseCompleted": (("id", "str", True), ("usage", "ResponseCompletedUsage", False)),
    "ResponseCompletedUsage": (
        ("input_tokens", "i64", True),
        ("input_tokens_details", "ResponseCompletedInputTokensDetails", False),
        ("output_tokens", "i64", True),
        ("output_tokens_details", "ResponseCompletedOutputTokensDetails", False),
        ("total_tokens", "i64", True),
    ),
    "ResponseCompletedInputTokensDetails": (("cached_tokens", "i64", True),),
    "ResponseCompletedOutputTokensDetails": (("reasoning_tokens", "i64", True),),
}


def _unexpected(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'string "{escaped}"'
    if isinstance(value, list):
        return "sequence"
    return "map"


def _check(value: object, kind: str) -> str | None:
    if kind == "str":
        return (
            None
            if isinstance(value, str)
            else f"invalid type: {_unexpected(value)}, expected a string"
        )
    if kind == "i64":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"invalid type: {_unexpected(value)}, expected i64"
        if isinstance(value, float) or not _I64_MIN <= value <= _I64_MAX:
            return "invalid number"
        return None
    if not isinstance(value, dict):
        return f"invalid type: {_unexpected(value)}, expected struct {kind}"
    fields = cast("dict[str, object]", value)
    spec = {name: (field_kind, required) for name, field_kind, required in _STRUCTS[kind]}
    for name, field_value in fields.items():
        if name not in spec:
            continue
        field_kind, required = spec[name]
        if field_value is None and not required:
            continue
        if problem := _check(field_value, field_kind):
            return problem
    for name, _, required in _STRUCTS[kind]:
        if required and name not in fields:
            return f"missing field `{name}`"
    return None


def completed_problem(response: object) -> str | None:
    """``None`` if Codex accepts this ``response.completed`` ``response``, else the stream
    error's detail (``failed to parse ResponseCompleted: ...``)."""
    problem = _check(response, "ResponseCompleted")
    return None if problem is None else f"failed to parse ResponseCompleted: {problem}"
