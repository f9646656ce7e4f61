"""Properties over generated input: for any event the core ``EventMsg`` adapter accepts, the
mapper returns a notification or ``None`` and never raises, and whatever it returns is valid
against the vendored 0.163.0 schema. The same holds for turn items on their own."""

from __future__ import annotations

from typing import Any

import pydantic
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from codex_app_bridge.mapping import item_event_to_server_notification, thread_item_from_turn_item
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import dump_dict
from tests.mapping.schema_strategy import from_schema
from tests.mapping.support import schema_errors

EVENT_SCHEMA = core.EVENT_MSG_ADAPTER.json_schema()
EVENT_DEFS: dict[str, Any] = EVENT_SCHEMA["$defs"]
TURN_ITEM_SCHEMA = core.TURN_ITEM_ADAPTER.json_schema()

# Every event variant by its schema, so each is drawn as often as any other; the item events and
# legacy begin/end events twice as often, since they are what the mapper works on.
MAPPED_TYPES = {
    "ItemStartedEvent", "ItemCompletedEvent", "ExecCommandBeginEvent", "ExecCommandEndEvent",
    "ExecCommandOutputDeltaEvent", "McpToolCallBeginEvent", "McpToolCallEndEvent",
    "PatchApplyBeginEvent", "PatchApplyEndEvent", "PatchApplyUpdatedEvent",
    "DynamicToolCallResponseEvent", "SubAgentActivityEvent", "CollabAgentSpawnEndEvent",
    "CollabWaitingEndEvent", "CollabAgentInteractionEndEvent", "CollabCloseEndEvent",
}  # fmt: skip
VARIANTS = list(EVENT_SCHEMA["oneOf"])
WEIGHTED = VARIANTS + [v for v in VARIANTS if v.get("$ref", "").rsplit("/", 1)[-1] in MAPPED_TYPES]

events = st.one_of([from_schema(variant, EVENT_DEFS) for variant in WEIGHTED])
turn_items = from_schema(TURN_ITEM_SCHEMA, TURN_ITEM_SCHEMA.get("$defs", {}))


def validated(adapter: pydantic.TypeAdapter[Any], data: Any) -> Any:
    try:
        return adapter.validate_python(data)
    except pydantic.ValidationError:
        assume(False)
        raise AssertionError("unreachable") from None


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(payload=events, thread_id=st.text(max_size=8), turn_id=st.text(max_size=8))
def test_mapper_never_raises_and_writes_only_schema_valid_notifications(
    payload: Any, thread_id: str, turn_id: str
) -> None:
    msg = validated(core.EVENT_MSG_ADAPTER, payload)
    notification = item_event_to_server_notification(msg, thread_id, turn_id)
    if notification is not None:
        written = dump_dict(notification)
        assert written["params"]["threadId"] == thread_id
        assert schema_errors(written) == []


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=turn_items)
def test_turn_item_conversion_never_raises_and_keeps_the_item_id(data: Any) -> None:
    item = validated(core.TURN_ITEM_ADAPTER, data)
    thread_item = thread_item_from_turn_item(item)
    if thread_item is not None:
        # every turn item (an extension one among its extra fields) names the item it becomes
        assert thread_item.id == getattr(item, "id", None)
