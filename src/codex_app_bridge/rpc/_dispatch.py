"""Inbound request dispatch: the decoded request's handler, called inside our error boundary.

The method table (``methods``) gives each method its params decoder and its handler; the
connection decodes the params before dispatch, so the handler gets ``(ctx, params)`` and returns
the result (a model, pre-encoded JSON or plain data) or raises. ``Dispatcher.invoke`` turns
that into an ``Outcome``; the one boundary (``errors.error_object``) decides every error.

This replaced dispatching through jsonrpcserver (5.0.9): the codex dialect already bypassed its
parsing, validation, params binding and error shapes, so all it still did was find the method
and call it, through ``asyncio.gather`` and an ``inspect.signature`` check of the arguments on
every call; that cost 40-50 us a request (about half of the request path under a profiler),
which kept pipelined requests well below the real server's rate (issue 9's request goal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codex_app_bridge.rpc._context import RequestContext
from codex_app_bridge.rpc.methods import MethodSpec, MethodTable

__all__ = ["Dispatcher", "Failed", "Outcome", "Succeeded"]


@dataclass(frozen=True, slots=True)
class Succeeded:
    value: object


@dataclass(frozen=True, slots=True)
class Failed:
    error: BaseException


Outcome = Succeeded | Failed


class Dispatcher:
    """Runs a classified, decoded request's handler."""

    def __init__(self, table: MethodTable) -> None:
        self._table = table

    async def invoke(self, ctx: RequestContext, spec: MethodSpec[Any]) -> Outcome:
        """Call the handler of ``spec`` with ``ctx``; never raises (except cancellation)."""
        handler = spec.handler
        if handler is None:
            return self.invoke_now(ctx, spec)
        try:
            value = await handler(ctx, ctx.params)
        except Exception as exc:
            return Failed(exc)
        return Succeeded(value)

    def invoke_now(self, ctx: RequestContext, spec: MethodSpec[Any]) -> Outcome:
        """Call the immediate handler of ``spec`` with ``ctx`` (a known method with no handler at
        all answers the table's unsupported error); never raises."""
        try:
            if spec.immediate is None:
                raise self._table.unsupported_error(spec)
            return Succeeded(spec.immediate(ctx, ctx.params))
        except Exception as exc:
            return Failed(exc)
