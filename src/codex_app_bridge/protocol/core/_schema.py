"""JSON Schemas of the hand-written core models: the input contract the bridge accepts.

Role: ``core_json_schemas()`` feeds ``protocol-schemas/generate.py``, which writes one file per
model under ``protocol-schemas/core/`` and fails CI when they drift from the models. Boundary:
schema generation only.

Two adjustments to what pydantic generates:

* Every union with a lossless ``Unknown*`` fallback is a ``oneOf``; without help the fallback
  (``{"type": <any string>}``) would match known variants too, so no valid input could match
  exactly one branch. The fallback's tag is therefore restricted to the tags its siblings do
  not claim (``"not": {"enum": [...]}``), which is what the discriminator does at runtime.
* The output is deterministic: the keys of every object are sorted, so exports diff cleanly.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import ConfigDict, TypeAdapter

from codex_app_bridge.protocol.core._envelope import EventEnvelope
from codex_app_bridge.protocol.core._event_msg import EventMsg
from codex_app_bridge.protocol.core._response_item import ContentItem, ResponseItem
from codex_app_bridge.protocol.core._rollout import RolloutLine
from codex_app_bridge.protocol.core._turn_item import TurnItem
from codex_app_bridge.protocol.core._user_input import UserInput

__all__ = ["core_json_schemas"]

_TAG_FIELD = "type"


def _sorted(value: Any) -> Any:
    """A copy of a JSON value with the keys of every object in sorted order."""
    if isinstance(value, dict):
        mapping = cast("dict[str, Any]", value)
        return {key: _sorted(mapping[key]) for key in sorted(mapping)}
    if isinstance(value, list):
        return [_sorted(item) for item in cast("list[Any]", value)]
    return value


def _walk(value: Any) -> list[dict[str, Any]]:
    """Every JSON object inside ``value`` (itself included), depth first."""
    found: list[dict[str, Any]] = []
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            mapping = cast("dict[str, Any]", node)
            found.append(mapping)
            stack.extend(mapping.values())
        elif isinstance(node, list):
            stack.extend(cast("list[Any]", node))
    return found


def _tags_of(definition: dict[str, Any]) -> list[str] | None:
    """The tag values a variant definition accepts (``const`` or ``enum`` of its tag field)."""
    tag = definition.get("properties", {}).get(_TAG_FIELD)
    if not isinstance(tag, dict):
        return None
    tag_schema = cast("dict[str, Any]", tag)
    if "const" in tag_schema:
        return [str(tag_schema["const"])]
    if "enum" in tag_schema:
        return [str(value) for value in cast("list[Any]", tag_schema["enum"])]
    return None


def _close_unknown_branches(schema: dict[str, Any]) -> None:
    """Restrict each ``oneOf``'s ``Unknown*`` fallback to the tags no sibling variant claims.

    The restriction is applied to the union's branch, not to the shared definition: one
    ``Unknown*`` model may serve several unions with different known tags.
    """
    definitions = cast("dict[str, dict[str, Any]]", schema.get("$defs", {}))
    for node in _walk(schema):
        raw_branches = node.get("oneOf")
        if not isinstance(raw_branches, list):
            continue
        branches = cast("list[dict[str, Any]]", raw_branches)
        names = [str(branch.get("$ref", "")).removeprefix("#/$defs/") for branch in branches]
        unknown = [i for i, name in enumerate(names) if name.startswith("Unknown")]
        if len(unknown) != 1 or names[unknown[0]] not in definitions:
            continue
        known: set[str] = set()
        for i, name in enumerate(names):
            tags = _tags_of(definitions.get(name, {}))
            if i != unknown[0] and tags is not None:
                known.update(tags)
        if known:
            branches[unknown[0]] = {
                "allOf": [branches[unknown[0]]],
                "properties": {_TAG_FIELD: {"not": {"enum": sorted(known)}}},
            }


def core_json_schemas() -> dict[str, dict[str, Any]]:
    """``{model name: JSON Schema}`` for the core models, in validation (input) mode."""
    targets: dict[str, Any] = {
        "ContentItem": ContentItem,
        "EventEnvelope": EventEnvelope,
        "EventMsg": EventMsg,
        "ResponseItem": ResponseItem,
        "RolloutLine": RolloutLine,
        "TurnItem": TurnItem,
        "UserInput": UserInput,
    }
    schemas: dict[str, dict[str, Any]] = {}
    for name, target in targets.items():
        if isinstance(target, type):
            adapter: TypeAdapter[Any] = TypeAdapter(target)
        else:
            adapter = TypeAdapter(target, config=ConfigDict(title=name))
        schema = adapter.json_schema(mode="validation")
        schema.setdefault("title", name)
        _close_unknown_branches(schema)
        schemas[name] = _sorted(schema)
    return schemas
