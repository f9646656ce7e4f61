"""A handler's return value as response bytes: ``encode_result``, the one place that makes
them (or the error saying it cannot), for the connection (``_context``, ``connection``) and for
what answers before the connection exists (``server._first_list``, which imports this alone:
not the context and the outbox it is built on).

Boundary: bytes of one response; no connection.
"""

from __future__ import annotations

from typing import Any

import orjson

from codex_app_bridge.protocol.jsonrpc import RequestId, encode_error, encode_response
from codex_app_bridge.rpc.errors import INTERNAL_ERROR, RpcError, error_object

__all__ = ["encode_result"]


def _model_json(value: object) -> orjson.Fragment | None:
    """A pydantic model's JSON (by alias); ``None`` for anything else. Told apart by its
    serializer, so that this layer never imports pydantic (``initialize`` is answered without
    it)."""
    serializer: Any = getattr(type(value), "__pydantic_serializer__", None)
    if serializer is None:
        return None
    return orjson.Fragment(serializer.to_json(value, by_alias=True))


def _orjson_default(value: object) -> object:
    # Models nested in plain containers (``{"data": [thread_model, ...]}``).
    encoded = _model_json(value)
    if encoded is None:
        raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")
    return encoded


def encode_result(request_id: RequestId, value: object) -> tuple[bytes, bool]:
    """The response to a handler's return value (a model, pre-encoded bytes or plain JSON data)
    and True; or, when the value cannot be serialized, the internal error saying why and False."""
    try:
        if isinstance(value, bytes | orjson.Fragment):
            return encode_response(request_id, value), True
        encoded = _model_json(value)
        if encoded is not None:
            return encode_response(request_id, encoded), True
        return orjson.dumps({"id": request_id, "result": value}, default=_orjson_default), True
    except (TypeError, ValueError) as exc:
        failure = RpcError(INTERNAL_ERROR, f"failed to serialize response: {exc}")
        return encode_error(request_id, error_object(failure)), False
