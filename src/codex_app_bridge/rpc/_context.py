"""What a handler gets with its params: the request's context, and the reply it may defer.

Below ``connection`` (which builds both) and ``methods`` / ``_dispatch`` (which name
``RequestContext`` in their types), so the rpc modules depend one way: a context knows its
connection only as ``ContextConnection``, the part of a connection that handlers use.
``encode_result`` is the one place a handler's return value becomes response bytes (or the
error saying it cannot).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from codex_app_bridge.protocol.jsonrpc import RequestId, encode_error, encode_response
from codex_app_bridge.rpc.errors import INTERNAL_ERROR, RpcError, error_object
from codex_app_bridge.rpc.outbox import EncodedParams, Outbox

if TYPE_CHECKING:
    from codex_app_bridge.protocol.jsonrpc import Request

__all__ = [
    "ContextConnection",
    "DeferredReply",
    "RequestContext",
    "RequestMethod",
    "encode_result",
]


class ContextConnection(Outbox, Protocol):
    """The connection as a handler sees it (``rpc.connection.Connection`` is one)."""

    state: Any
    """The server layer's per-connection state."""

    def set_notification_opt_out(self, methods: Iterable[str]) -> None: ...

    async def notify(
        self, method: str, params: EncodedParams, *, emitted_at_ms: int | None = None
    ) -> bool: ...


class RequestMethod(Protocol):
    """What a context says of its method (``rpc.methods.MethodSpec`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def experimental(self) -> bool: ...


@dataclass(eq=False)
class RequestContext:
    """What a handler (and the gate) gets besides its decoded params."""

    connection: ContextConnection
    request: Request
    spec: RequestMethod
    params: Any
    _after_response: list[Callable[[], Awaitable[None]]] = field(
        default_factory=list[Callable[[], Awaitable[None]]]
    )

    @property
    def request_id(self) -> RequestId:
        return self.request.id

    @property
    def method(self) -> str:
        return self.request.method

    _deferred: DeferredReply | None = None

    def after_response(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Run ``callback`` once this request's successful response is queued (never on error)."""
        self._after_response.append(callback)

    def take_after_response(self) -> list[Callable[[], Awaitable[None]]]:
        """The callbacks ``after_response`` registered, handed over once (the context keeps
        none): a callback usually closes over its context, so a kept one would tie the context
        and all it refers to (the connection, the params) into a cycle that outlives the
        request, freed only by the collector's next full pass."""
        callbacks, self._after_response = self._after_response, []
        return callbacks

    def defer(self) -> DeferredReply:
        """Answer this request later: the handler's return value is ignored (unless it raises,
        which answers the error at once) and the returned reply writes the one response."""
        if self._deferred is None:
            self._deferred = DeferredReply(self.connection, self.request.id)
        return self._deferred


class DeferredReply:
    """The one future response to a request whose handler returned before it could answer.

    ``resolve`` / ``fail`` are synchronous and idempotent (the first one answers); the bytes go
    into the connection's outbound stream at that point, so the caller decides exactly which
    notifications the response precedes.
    """

    def __init__(self, connection: ContextConnection, request_id: RequestId) -> None:
        self._connection = connection
        self.request_id = request_id
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    @property
    def connection_id(self) -> int:
        return self._connection.connection_id

    def resolve(self, value: object) -> bool:
        """Answer ``value`` (a model, pre-encoded bytes or plain JSON data)."""
        if self._done:
            return False
        self._done = True
        data, _ = encode_result(self.request_id, value)
        return self._connection.offer(data)

    def fail(self, exc: BaseException) -> bool:
        """Answer the error ``exc`` stands for (through the one error boundary)."""
        if self._done:
            return False
        self._done = True
        return self._connection.offer(encode_error(self.request_id, error_object(exc)))

    def cancel(self) -> None:
        """Never answer (the handler failed and its error was sent instead)."""
        self._done = True


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
