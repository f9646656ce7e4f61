"""JSON Schemas of the hand-written core models: the input contract the bridge accepts.

Role: ``core_json_schemas()`` feeds ``protocol-schemas/generate.py``, which writes one file per
model under ``protocol-schemas/core/`` and fails CI when they drift from the models. Boundary:
schema generation only; the output is deterministic (every object's keys sorted) so that the
exported files diff cleanly.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, TypeAdapter

from codex_app_bridge.protocol.core._envelope import EventEnvelope
from codex_app_bridge.protocol.core._event_msg import EventMsg
from codex_app_bridge.protocol.core._response_item import ContentItem, ResponseItem
from codex_app_bridge.protocol.core._rollout import RolloutLine
from codex_app_bridge.protocol.core._turn_item import TurnItem
from codex_app_bridge.protocol.core._user_input import UserInput

__all__ = ["core_json_schemas"]


def _sorted(value: Any) -> Any:
    """A copy of a JSON value with the keys of every object in sorted order."""
    if isinstance(value, dict):
        mapping: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return {key: _sorted(mapping[key]) for key in sorted(mapping)}
    if isinstance(value, list):
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return [_sorted(item) for item in items]
    return value


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
        schemas[name] = _sorted(schema)
    return schemas
