"""What a handler gets with its params: the request's context, and the reply it may defer.

Below ``connection`` (which builds both) and ``methods`` / ``_dispatch`` (which name
``RequestContext`` in their types), so the rpc modules depend one way: a context knows its
connection only as ``ContextConnection``, the part of a connection that handlers use.
``encode_result`` (``_encode``) is the one place a handler's return value becomes response
bytes (or the error saying it cannot).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from codex_app_bridge.protocol.jsonrpc import RequestId, encode_error
from codex_app_bridge.rpc._encode import encode_result
from codex_app_bridge.rpc.errors import error_object
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
