"""Inbound request dispatch through jsonrpcserver (5.0.9), kept inside our error boundary.

jsonrpcserver looks the method up in a ``Methods`` dict built from our method table and calls it;
we use its async ``dispatch_to_response`` (a ``Response`` value, not a JSON string, so results may
hold ``orjson.Fragment`` and nothing is serialized twice). Where the library and the codex dialect
disagree, the library is bypassed, deliberately:

* **Parsing and validation**: it parses JSON itself and validates a ``"jsonrpc": "2.0"`` member the
  real server neither requires nor sends. We hand it the already-classified request through a
  pass-through deserializer and validator, with ``"jsonrpc"`` added only for its benefit; the
  response shape is written by ``protocol.jsonrpc`` (no ``"jsonrpc"`` member on the wire).
* **Batches**: never reach it; arrays are undecodable in the codex dialect.
* **Params binding**: it binds params as ``*args``/``**kwargs`` and maps absent, ``null`` and scalar
  params all to "no arguments", while the real server answers ``missing field `params` `` for some
  and ``invalid type`` for others. Params are decoded before dispatch (by the method table's
  ``ParamsSpec``) and travel in the context object jsonrpcserver passes as the first argument.
* **Errors**: its own errors (``-32601 Method not found``, ``-32602 Invalid params``, ``-32603`` with
  the exception text, ``-32000 Server error``) do not match the real server. Our method wrappers
  therefore always return ``Success`` carrying the outcome (value or exception), and the one
  boundary (``errors.error_object``) decides every error; should the library itself produce an
  error anyway, ``-32601`` maps to our unknown-method error and anything else to ``-32603``.

jsonrpcserver's async dispatcher runs the method through ``asyncio.gather``: handlers run in their
own asyncio task, so this layer requires the asyncio backend of anyio (the one the server uses).
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

with warnings.catch_warnings():
    # jsonrpcserver 5.0.9 loads its request schema with the deprecated
    # ``importlib.resources.read_text`` at import time; nothing of ours is involved.
    warnings.simplefilter("ignore", DeprecationWarning)
    from jsonrpcserver import Success, async_dispatch_to_response
from oslash.either import Left, Right  # pyright: ignore[reportMissingTypeStubs]

from codex_app_bridge.rpc.errors import METHOD_NOT_FOUND
from codex_app_bridge.rpc.methods import MethodSpec, MethodTable

if TYPE_CHECKING:
    from codex_app_bridge.rpc.connection import RequestContext

__all__ = ["Dispatcher", "Failed", "Outcome", "Succeeded"]


@dataclass(frozen=True, slots=True)
class Succeeded:
    value: object


@dataclass(frozen=True, slots=True)
class Failed:
    error: BaseException


Outcome = Succeeded | Failed

_JsonRpcMethod = Callable[..., Awaitable[Any]]


def _pass_through(request: Any) -> Any:
    return request


class _LibraryError(Exception):
    """jsonrpcserver answered an error on its own (a bug on our side); logged as internal."""


class Dispatcher:
    """Runs a classified, decoded request's handler through jsonrpcserver."""

    def __init__(self, table: MethodTable) -> None:
        self._table = table
        self._methods: dict[str, _JsonRpcMethod] = {spec.name: self._wrap(spec) for spec in table}

    def _wrap(self, spec: MethodSpec[Any]) -> _JsonRpcMethod:
        table = self._table

        async def method(ctx: RequestContext) -> Any:
            try:
                if spec.handler is None:
                    raise table.unsupported_error(spec)
                value = await spec.handler(ctx, ctx.params)
            except Exception as exc:
                return Success(Failed(exc))
            return Success(Succeeded(value))

        return method

    async def invoke(self, ctx: RequestContext) -> Outcome:
        """Call the handler of ``ctx.spec`` with ``ctx``; never raises (except cancellation)."""
        request = {"jsonrpc": "2.0", "method": ctx.method, "id": ctx.request_id}
        methods: Any = self._methods
        response: Any = await async_dispatch_to_response(
            "",
            methods,
            context=ctx,
            deserializer=lambda _text: request,  # pyright: ignore[reportUnknownLambdaType]
            validator=_pass_through,
        )
        if isinstance(response, Right):
            success: Any = cast(Any, response)._value
            outcome: object = success.result
            if isinstance(outcome, Succeeded | Failed):
                return outcome
            return Failed(_LibraryError(f"unexpected jsonrpcserver result {outcome!r}"))
        if isinstance(response, Left):
            error: Any = cast(Any, response)._error
            code: object = error.code
            if code == METHOD_NOT_FOUND:
                return Failed(self._table.unknown_method_error(ctx.method))
            return Failed(_LibraryError(f"jsonrpcserver error {error!r}"))
        return Failed(_LibraryError(f"unexpected jsonrpcserver response {response!r}"))
