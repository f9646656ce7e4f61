"""JSON-RPC error codes, the one typed error handlers raise, and the one exception -> error boundary.

Handlers (and the gate, params decoding, the method table) raise ``RpcError(code, message, data)``.
``error_object`` is the only place where any exception becomes a JSON-RPC error object: an
``RpcError`` keeps its code and message; anything else is logged with its traceback and answered
``-32603 "Internal error"`` (the text never leaks exception details to the client).

The codes and messages are the real server's (0.163.0): nearly every validation or state error is
``-32600``, ``-32601`` is used for "not supported" cases, ``-32700`` is never sent (malformed JSON
gets no reply at all), and a full ingress queue answers ``-32001 "Server overloaded; retry later."``.

``params_error`` turns a pydantic ``ValidationError`` of a params model into the real server's
serde-worded message (``Invalid request: missing field `clientInfo` ``, ``Invalid request: invalid
type: integer `123`, expected a string``, ...); see ``_serde`` for how the words are chosen.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, cast

from codex_app_bridge.protocol.jsonrpc import ABSENT, ErrorObject, JsonValue
from codex_app_bridge.rpc._words import one_of, unexpected

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

__all__ = [
    "INPUT_TOO_LARGE",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "OVERLOADED",
    "OVERLOADED_MESSAGE",
    "RpcError",
    "error_object",
    "invalid_request",
    "missing_params_error",
    "overloaded_error",
    "params_error",
    "params_length_error",
    "params_type_error",
    "unknown_method_error",
]

logger = logging.getLogger(__name__)

INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
OVERLOADED: Final = -32001

OVERLOADED_MESSAGE: Final = "Server overloaded; retry later."
INPUT_TOO_LARGE: Final = "input_too_large"
"""The string the real server puts in error ``data`` for oversized input."""

_INTERNAL_MESSAGE: Final = "Internal error"


class RpcError(Exception):
    """The one error type handlers raise: a JSON-RPC ``code``, ``message`` and optional ``data``.

    ``data=None`` means the error object has no ``data`` member.
    """

    def __init__(self, code: int, message: str, data: JsonValue = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def __repr__(self) -> str:
        return f"RpcError({self.code}, {self.message!r})"


def error_object(exc: BaseException) -> ErrorObject:
    """THE exception -> JSON-RPC error boundary (see the module docstring)."""
    if isinstance(exc, RpcError):
        return ErrorObject(exc.code, exc.message, ABSENT if exc.data is None else exc.data)
    if isinstance(exc, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", exc)
        if len(group.exceptions) == 1:
            return error_object(group.exceptions[0])
    logger.error("internal error while handling a request", exc_info=cast(BaseException, exc))
    return ErrorObject(INTERNAL_ERROR, _INTERNAL_MESSAGE)


def invalid_request(message: str) -> RpcError:
    """``-32600`` with ``message`` verbatim (``Not initialized``, ``thread not found: …``)."""
    return RpcError(INVALID_REQUEST, message)


def overloaded_error() -> RpcError:
    """``-32001 "Server overloaded; retry later."``: the ingress queue is full."""
    return RpcError(OVERLOADED, OVERLOADED_MESSAGE)


def unknown_method_error(method: str, known: Sequence[str]) -> RpcError:
    """``Invalid request: unknown variant `foo/bar`, expected one of `initialize`, …``."""
    return invalid_request(f"Invalid request: unknown variant `{method}`, expected {one_of(known)}")


def missing_params_error() -> RpcError:
    """``params`` absent or ``null``: ``Invalid request: missing field `params` ``."""
    return invalid_request("Invalid request: missing field `params`")


def params_type_error(value: object, expected: str) -> RpcError:
    """``params`` of the wrong JSON type, e.g. ``expected struct ThreadListParams``."""
    return invalid_request(
        f"Invalid request: invalid type: {unexpected(value)}, expected {expected}"
    )


def params_length_error(length: int, struct_name: str, field_count: int) -> RpcError:
    """``params`` given as an array (serde reads a struct from a sequence by position).

    serde writes ``with 1 element`` for a one-field struct (``ThreadUnsubscribeParams``)."""
    noun = "element" if field_count == 1 else "elements"
    return invalid_request(
        f"Invalid request: invalid length {length}, expected struct {struct_name} "
        f"with {field_count} {noun}"
    )


def params_error(
    exc: ValidationError, model: type[BaseModel], raw: object, *, ignore_missing: bool = False
) -> RpcError | None:
    """A params model's ``ValidationError`` as the real server's serde-worded ``-32600``.

    With ``ignore_missing``, missing-field errors are left out (``None`` if nothing remains).
    """
    from codex_app_bridge.rpc._serde import serde_message  # the models' half: with pydantic

    errors = exc.errors(include_url=False)
    if ignore_missing:
        errors = [error for error in errors if error["type"] != "missing"]
        if not errors:
            return None
    return invalid_request(f"Invalid request: {serde_message(errors, model, raw)}")
