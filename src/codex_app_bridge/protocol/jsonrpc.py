"""The JSON-RPC envelope of the codex app-server dialect, hand-written.

Inbound, ``classify`` turns one decoded JSON value into a ``Request``, ``Notification``,
``Response`` or ``ErrorResponse``, trying the shapes in the real server's order (an untagged union):

1. Request ``{id, method, params?, trace?}``: ``id`` a string or a signed 64-bit integer;
2. Notification ``{method, params?}``: so a "request" whose ``id`` is ``1.5``, ``null``, ``true``
   or out of the 64-bit range is a notification (and the server ignores it);
3. Response ``{id, result}``;
4. Error ``{id, error: {code, message, data?}}``.

Anything else (arrays, i.e. batches; non-objects; objects matching no shape) is ``Undecodable``:
logged by the caller, never answered. An incoming ``"jsonrpc"`` member is tolerated and ignored,
as are unknown members.

Outbound, the encoders write the real server's shapes, which carry no ``"jsonrpc"`` member:
response ``{"id","result"}``, error ``{"error":{code,message[,data]},"id"}``, notification
``{"method","params","emittedAtMs"}`` and server request ``{"method","id","params"}``. Params and
results may be pre-encoded (``bytes`` or ``orjson.Fragment``) so that a notification fanned out to
many connections is encoded once.

An encoded message that is *kept* (queued behind a congested writer, pending until a client
answers, stored per thread) is kept as ``right_sized(data)``: orjson (3.13) returns its bytes in
the buffer it wrote into, at least 4 KiB and up to about eight times the text for long strings,
so a kept 100-byte notification would hold 4 KiB. What is written at once is not copied.

No I/O and no dispatch here: the rpc layer uses these shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Final, Literal, TypeAlias, TypeGuard

import orjson

from codex_app_bridge._clock import now_ms as _clock_ms

__all__ = [
    "ABSENT",
    "INT64_MAX",
    "INT64_MIN",
    "UNDECODABLE_REASON",
    "Absent",
    "ErrorObject",
    "ErrorResponse",
    "JsonValue",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "Undecodable",
    "classify",
    "encode_error",
    "encode_notification",
    "encode_response",
    "encode_server_request",
    "is_request_id",
    "now_ms",
    "right_sized",
]

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"

RequestId: TypeAlias = str | int
"""A JSON-RPC id: a string or a signed 64-bit integer, echoed with its exact JSON type."""

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

UNDECODABLE_REASON: Final = "data did not match any variant of untagged enum JSONRPCMessage"


class Absent(Enum):
    """Marks a member missing from the message (distinct from an explicit ``null``)."""

    ABSENT = "absent"

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = Absent.ABSENT

Params: TypeAlias = "JsonValue | Literal[Absent.ABSENT]"


@dataclass(frozen=True, slots=True)
class Request:
    """A client request: it gets exactly one response or error with the same ``id``."""

    id: RequestId
    method: str
    params: Params = ABSENT
    trace: dict[str, JsonValue] | None = None


@dataclass(frozen=True, slots=True)
class Notification:
    """A client notification: never answered."""

    method: str
    params: Params = ABSENT


@dataclass(frozen=True, slots=True)
class Response:
    """A client's result for a server -> client request."""

    id: RequestId
    result: JsonValue


@dataclass(frozen=True, slots=True)
class ErrorObject:
    """The ``error`` member of an error response."""

    code: int
    message: str
    data: JsonValue | Literal[Absent.ABSENT] = ABSENT

    def to_json(self) -> dict[str, JsonValue]:
        """The wire object; ``data`` is written only when present."""
        obj: dict[str, JsonValue] = {"code": self.code, "message": self.message}
        if self.data is not ABSENT:
            obj["data"] = self.data
        return obj


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """A client's error for a server -> client request."""

    id: RequestId
    error: ErrorObject


@dataclass(frozen=True, slots=True)
class Undecodable:
    """An inbound value matching no message shape (batch, non-object, ...); never answered."""

    reason: str


Message: TypeAlias = Request | Notification | Response | ErrorResponse


def is_request_id(value: object) -> TypeGuard[RequestId]:
    """True for a string or an integer in the signed 64-bit range (``bool`` is not an id)."""
    if isinstance(value, str):
        return True
    return type(value) is int and INT64_MIN <= value <= INT64_MAX


def _is_trace(value: object) -> bool:
    # W3C trace context: absent/null, or an object whose known members are strings or null.
    if value is None:
        return True
    if not isinstance(value, dict):
        return False
    trace: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    return all(
        trace.get(key) is None or isinstance(trace.get(key), str)
        for key in ("traceparent", "tracestate")
    )


def _error_object(value: object) -> ErrorObject | None:
    if not isinstance(value, dict):
        return None
    obj: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    code = obj.get("code")
    message = obj.get("message")
    if type(code) is not int or not INT64_MIN <= code <= INT64_MAX:
        return None
    if not isinstance(message, str):
        return None
    return ErrorObject(code=code, message=message, data=obj.get("data", ABSENT))


def classify(value: object) -> Message | Undecodable:
    """Classify one decoded inbound JSON value (see the module docstring for the order)."""
    if not isinstance(value, dict):
        return Undecodable(UNDECODABLE_REASON)
    obj: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    method = obj.get("method")
    has_id = "id" in obj
    msg_id = obj.get("id")
    if isinstance(method, str):
        trace = obj.get("trace")
        if has_id and is_request_id(msg_id) and _is_trace(trace):
            return Request(
                id=msg_id,
                method=method,
                params=obj.get("params", ABSENT),
                trace=trace,
            )
        return Notification(method=method, params=obj.get("params", ABSENT))
    if has_id and is_request_id(msg_id):
        if "result" in obj:
            return Response(id=msg_id, result=obj["result"])
        error = _error_object(obj.get("error"))
        if error is not None:
            return ErrorResponse(id=msg_id, error=error)
    return Undecodable(UNDECODABLE_REASON)


def now_ms() -> int:
    """Unix time in milliseconds (the ``emittedAtMs`` of notifications), from the process
    clock (``codex_app_bridge._clock``: wall time, or a seeded run's standing time)."""
    return _clock_ms()


def _embed(value: object) -> object:
    # Pre-encoded JSON is embedded verbatim; anything else is left for orjson to encode.
    if isinstance(value, bytes):
        return orjson.Fragment(value)
    return value


def right_sized(data: bytes) -> bytes:
    """``data`` in an allocation of its own length, for encoded JSON that outlives the call that
    made it (see the module docstring). ``bytes(data)`` and ``data[:]`` would return the same
    object; a copy through a ``memoryview`` is one ``memcpy``."""
    return bytes(memoryview(data))


def encode_response(request_id: RequestId, result: object) -> bytes:
    """``{"id":…,"result":…}``; ``result`` may be ``bytes``/``orjson.Fragment`` (pre-encoded)."""
    return orjson.dumps({"id": request_id, "result": _embed(result)})


def encode_error(request_id: RequestId, error: ErrorObject) -> bytes:
    """``{"error":{"code":…,"message":…[,"data":…]},"id":…}``."""
    return orjson.dumps({"error": error.to_json(), "id": request_id})


def encode_notification(method: str, params: object, *, emitted_at_ms: int | None = None) -> bytes:
    """``{"method":…,"params":…,"emittedAtMs":…}`` (``emittedAtMs`` defaults to now)."""
    emitted = now_ms() if emitted_at_ms is None else emitted_at_ms
    return orjson.dumps({"method": method, "params": _embed(params), "emittedAtMs": emitted})


def encode_server_request(request_id: RequestId, method: str, params: object) -> bytes:
    """``{"method":…,"id":…,"params":…}``: a server -> client request."""
    return orjson.dumps({"method": method, "id": request_id, "params": _embed(params)})
