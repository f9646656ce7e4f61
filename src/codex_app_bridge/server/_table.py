"""The method table: every client method of 0.163.0, in the real server's order.

``build_method_table(handlers)`` lists all ``ALL_CLIENT_REQUEST_METHODS`` (so the unknown-method
error names them like the real server). The supported ones (``SUPPORTED_METHODS``) are bound to
their handler and their generated params model (serde-worded params errors); every other known
method decodes its params as a plain object and answers the unsupported error of ``_errors``
(``-32601 "<method> is not supported by codex-app-bridge"``). Experimental methods are marked for
the gate.

Serialization scopes: requests naming a ``threadId`` are handled in order per thread (across
connections, as the real server's thread scope); ``thread/start`` and the list methods run
concurrently. ``initialize`` is inline: the next request sees its outcome.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Final

from pydantic import BaseModel

from codex_app_bridge.protocol.v2 import (
    InitializeParams,
    ThreadArchiveParams,
    ThreadDeleteParams,
    ThreadForkParams,
    ThreadItemsListParams,
    ThreadListParams,
    ThreadLoadedListParams,
    ThreadMetadataUpdateParams,
    ThreadReadParams,
    ThreadResumeParams,
    ThreadRevertParams,
    ThreadSetNameParams,
    ThreadStartParams,
    ThreadTurnsListParams,
    ThreadUnarchiveParams,
    ThreadUnsubscribeParams,
    TurnInterruptParams,
    TurnStartParams,
    TurnSteerParams,
)
from codex_app_bridge.protocol.v2.methods import (
    ALL_CLIENT_REQUEST_METHODS,
    EXPERIMENTAL_CLIENT_REQUEST_METHODS,
)
from codex_app_bridge.rpc import MethodSpec, MethodTable, ModelParams, RawParams, RpcError
from codex_app_bridge.server._errors import unsupported_method
from codex_app_bridge.server._handlers import Handlers, handler_routes
from codex_app_bridge.server._ids import parse_thread_id

__all__ = ["SUPPORTED_METHODS", "build_method_table", "thread_scope"]

# Rust field counts of the params structs whose stable model has fewer fields than the real
# struct (``… expected struct X with N elements`` for array params; probed from the binary).
_FIELD_COUNTS: Final[dict[str, int]] = {
    "ThreadStartParams": 27,
    "ThreadResumeParams": 18,
    "ThreadForkParams": 21,
    "ThreadListParams": 16,
    "TurnStartParams": 27,
    "TurnSteerParams": 6,
}

# The Rust struct's first field where the generated model (alphabetical) starts differently: array
# params are read in that order (``initialize [1,2]`` -> ``… expected struct ClientInfo``; the
# others start with a string field; probed from the binary with ``[true,true]``).
_FIELD_ORDERS: Final[dict[str, tuple[str, ...]]] = {
    "InitializeParams": ("clientInfo", "capabilities"),
    "ThreadReadParams": ("threadId",),
    "ThreadResumeParams": ("threadId",),
    "ThreadForkParams": ("threadId",),
    "TurnStartParams": ("threadId",),
    "ThreadStartParams": ("model",),
}

SUPPORTED_METHODS: Final[dict[str, type[BaseModel]]] = {
    "initialize": InitializeParams,
    "thread/start": ThreadStartParams,
    "thread/resume": ThreadResumeParams,
    "thread/fork": ThreadForkParams,
    "thread/unsubscribe": ThreadUnsubscribeParams,
    "thread/list": ThreadListParams,
    "thread/loaded/list": ThreadLoadedListParams,
    "thread/read": ThreadReadParams,
    "thread/turns/list": ThreadTurnsListParams,
    "thread/items/list": ThreadItemsListParams,
    "thread/name/set": ThreadSetNameParams,
    "thread/archive": ThreadArchiveParams,
    "thread/unarchive": ThreadUnarchiveParams,
    "thread/delete": ThreadDeleteParams,
    "thread/metadata/update": ThreadMetadataUpdateParams,
    "thread/revert": ThreadRevertParams,
    "turn/start": TurnStartParams,
    "turn/steer": TurnSteerParams,
    "turn/interrupt": TurnInterruptParams,
}
"""Method name -> params model of every method this server implements."""


def thread_scope(params: Any) -> Hashable | None:
    """The serialization key of a request naming a thread: its canonical thread id."""
    raw = getattr(params, "thread_id", None)
    if not isinstance(raw, str):
        return None
    try:
        return ("thread", parse_thread_id(raw))
    except RpcError:
        return ("thread", raw)  # the handler reports the bad id


def build_method_table(handlers: Handlers) -> MethodTable:
    """The table over every 0.163.0 client method (see the module docstring)."""
    experimental = frozenset(EXPERIMENTAL_CLIENT_REQUEST_METHODS)
    routes = handler_routes(handlers)
    if set(routes) != set(SUPPORTED_METHODS):
        raise RuntimeError(f"handlers and params disagree: {set(routes) ^ set(SUPPORTED_METHODS)}")
    specs: list[MethodSpec[Any]] = []
    for method in ALL_CLIENT_REQUEST_METHODS:
        model = SUPPORTED_METHODS.get(method)
        if model is None:
            specs.append(MethodSpec(method, RawParams(), experimental=method in experimental))
            continue
        params = ModelParams(
            model,
            field_count=_FIELD_COUNTS.get(model.__name__),
            field_order=_FIELD_ORDERS.get(model.__name__),
        )
        has_thread = "thread_id" in model.model_fields
        specs.append(
            MethodSpec(
                method,
                params,
                routes[method],
                scope=thread_scope if has_thread else None,
                experimental=method in experimental,
                inline=method == "initialize",
            )
        )
    return MethodTable(specs, unsupported_error=unsupported_method)
