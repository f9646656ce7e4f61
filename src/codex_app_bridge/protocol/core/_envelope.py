"""The core event envelope ``{"id": <submission/turn id>, "msg": <EventMsg>}``.

Role: the unit a source hands to the listener. The app-server calls ``id`` the *event turn id*;
the stateless mapper uses it as ``turnId``. Boundary: the model and its adapter only; an unknown
``msg.type`` parses into ``UnknownEventMsg`` instead of failing the envelope.
"""

from typing import Any, Self, cast

import orjson
from pydantic import BaseModel, TypeAdapter

from codex_app_bridge.protocol._base import CoreModel
from codex_app_bridge.protocol.core._event_msg import EventMsg, validate_event_msg

__all__ = [
    "EVENT_ENVELOPE_ADAPTER",
    "EventEnvelope",
    "dump_event_envelope",
    "dump_trusted_envelope",
    "parse_event_envelope",
    "parse_trusted_envelope",
]


class EventEnvelope(CoreModel):
    """One core event: ``id`` correlates it with a submission (the turn), ``msg`` is the event."""

    id: str
    msg: EventMsg

    @classmethod
    def trusted(cls, id: str, msg: EventMsg) -> Self:
        """An envelope around an event that is already a validated model (no re-validation:
        the hot path of every source)."""
        envelope = _new(cls)
        _set(envelope, "__dict__", {"id": id, "msg": msg})
        _set(envelope, "__pydantic_fields_set__", _FIELDS)
        _set(envelope, "__pydantic_extra__", {})
        _set(envelope, "__pydantic_private__", None)
        return envelope


_FIELDS = frozenset({"id", "msg"})
_new = object.__new__
_set = object.__setattr__


EVENT_ENVELOPE_ADAPTER: TypeAdapter[EventEnvelope] = TypeAdapter(EventEnvelope)


def parse_event_envelope(data: bytes | str) -> EventEnvelope:
    """Validate one JSON-encoded envelope (``pydantic.ValidationError`` when malformed).

    Through the model's own validator, not ``EVENT_ENVELOPE_ADAPTER``: an adapter of a model
    built before the model's validator caches the string values it parses (pydantic's JSON
    string cache, 16,384 entries: every turn, item and thread id read), not only the keys as
    ``CoreModel`` asks, and those strings outlive the threads they named, spread over the
    allocator's arenas (issue 23: 400 bytes per thread played stayed after a soak's load)."""
    return EventEnvelope.model_validate_json(data)


def dump_event_envelope(envelope: EventEnvelope) -> bytes:
    """The envelope as compact JSON bytes, with the model's null-versus-absent choices."""
    return EVENT_ENVELOPE_ADAPTER.dump_json(envelope, by_alias=True)


def dump_trusted_envelope(envelope: EventEnvelope) -> bytes:
    """``dump_event_envelope`` 's bytes, written with the serializer of the event's own model:
    the adapter's serializer covers every event kind and is built, at its first use, for all of
    them (tens of milliseconds), where one model's is built for that model alone. An envelope
    with extra fields goes through the adapter."""
    if envelope.__pydantic_extra__:
        return dump_event_envelope(envelope)
    msg = cast("BaseModel", envelope.msg)
    written: bytes = type(msg).__pydantic_serializer__.to_json(msg, by_alias=True)
    return b"".join((b'{"id":', orjson.dumps(envelope.id), b',"msg":', written, b"}"))


def parse_trusted_envelope(data: bytes) -> EventEnvelope:
    """Read back what ``dump_trusted_envelope`` wrote (this process's own lines: validated
    when they were made), with the model its event's tag names (``validate_event_msg``) rather
    than the adapter's union, for the reason above; anything else through the adapter."""
    decoded: Any = orjson.loads(data)
    if type(decoded) is dict and len(decoded) == 2:  # pyright: ignore[reportUnknownArgumentType]
        fields = cast("dict[str, Any]", decoded)
        id_, msg = fields.get("id"), fields.get("msg")
        if type(id_) is str and type(msg) is dict:
            return EventEnvelope.trusted(id_, validate_event_msg(cast("dict[str, Any]", msg)))
    return parse_event_envelope(data)
