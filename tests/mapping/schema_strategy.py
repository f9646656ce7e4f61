"""A hypothesis strategy for JSON instances of a pydantic-generated JSON Schema.

Enough of JSON Schema for the core adapters' schemas: ``$ref`` into ``$defs``, ``oneOf`` /
``anyOf``, ``const`` / ``enum``, objects (required and optional properties, extra properties when
``additionalProperties`` allows them), arrays, strings, integers, numbers, booleans and null, and
the empty schema (any JSON). Strings are drawn half of the time from a vocabulary of values the
mapper gives meaning to (statuses, sources, tool names, ``file:`` URIs, base64 chunks, extension
kinds), so that generated events reach the mapper's branches rather than only its fallbacks.
Integers include values past ``i64`` so durations overflow.
"""

from __future__ import annotations

from typing import Any, cast

from hypothesis import strategies as st

VOCABULARY = (
    "in_progress", "completed", "failed", "declined", "interrupted", "inProgress",
    "agent", "user_shell", "unified_exec_startup", "unified_exec_interaction",
    "spawn_agent", "send_input", "resume_agent", "wait", "close_agent", "send_message",
    "followup_task", "interrupt_agent", "list_agents",
    "pending_init", "running", "shutdown", "not_found", "errored",
    "started", "interacted", "low", "high", "async", "commentary",
    "file:///home/dev/project", "file:///C:/src", "file://server/share", "/repo", "rel/dir",
    "../x", "C:x", "a\x00b", "aGVsbG8=", "w6k=", "!!", "Extension", "image_gen.generation",
    "clock.sleep", "web.search", "Bearer abcdefghijklmnopq", "sk-abcdefghijklmnopqrstuv",
    "it's", "",
)  # fmt: skip

EXTRA_KEYS = ("kind", "payload", "started_at_ms", "completed_at_ms", "id", "durationMs", "status")

JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**65), 2**65)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
ANY_JSON = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)

Schema = dict[str, Any]


def _text() -> st.SearchStrategy[str]:
    return st.sampled_from(VOCABULARY) | st.text(max_size=12)


def _integer() -> st.SearchStrategy[int]:
    return st.sampled_from([0, 1, 999_999, 2**63 - 1, 2**64 - 1]) | st.integers(-5, 2**64)


def from_schema(schema: Schema, defs: dict[str, Schema], depth: int = 0) -> st.SearchStrategy[Any]:
    """Instances of ``schema``; ``defs`` resolves ``#/$defs/Name`` references."""
    if depth > 12:
        return st.none()
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return st.deferred(lambda: from_schema(defs[name], defs, depth + 1))
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return st.one_of([from_schema(s, defs, depth + 1) for s in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of(
            [from_schema({**schema, "type": k}, defs, depth) for k in cast("list[str]", kind)]
        )
    if kind == "object":
        return _object(schema, defs, depth)
    if kind == "array":
        items = cast("Schema", schema.get("items", {}))
        return st.lists(from_schema(items, defs, depth + 1), max_size=3)
    if kind == "string":
        return _text()
    if kind == "integer":
        return _integer()
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False) | _integer()
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return ANY_JSON


def _object(schema: Schema, defs: dict[str, Schema], depth: int) -> st.SearchStrategy[Any]:
    properties = cast("dict[str, Schema]", schema.get("properties", {}))
    # a tag (a one-value property) is always written: without it no union would accept the object
    required = set(cast("list[str]", schema.get("required", []))) | {
        name for name, sub in properties.items() if "const" in sub
    }
    fixed = {
        name: from_schema(sub, defs, depth + 1)
        for name, sub in properties.items()
        if name in required
    }
    optional = {
        name: from_schema(sub, defs, depth + 1)
        for name, sub in properties.items()
        if name not in required
    }
    base = st.fixed_dictionaries(fixed, optional=optional)
    additional = schema.get("additionalProperties", True)
    if additional is False:
        return base
    values = (
        ANY_JSON if additional is True else from_schema(cast("Schema", additional), defs, depth + 1)
    )
    # a map type (no declared properties) gets free keys; a model gets a few meaningful extras
    keys = _text() if not properties else st.sampled_from(EXTRA_KEYS)
    extras = st.dictionaries(keys, values | _text(), max_size=2)
    return st.tuples(base, extras).map(lambda pair: {**pair[1], **pair[0]})
