"""RPC layer: JSON-RPC message classification, request ids, dispatch, the single
exception -> JSON-RPC error boundary, outbound queues and server -> client requests.

Pieces, bottom-up: ``errors`` (codes, ``RpcError``, ``error_object``, serde-worded params errors),
``methods`` (``MethodSpec`` / ``MethodTable`` / params decoding), ``scopes`` (FIFO per scope key),
``answers`` (server -> client requests: process-wide ids, where clients' answers go),
``outbox`` (what upper layers send through), ``_encode`` (``encode_result``: a response's bytes), ``_context``
(``RequestContext``, ``DeferredReply``), ``connection`` (one client:
read, classify, dispatch, answer).
Nothing here knows threads, turns or items: a scope key is just a hashable value.
"""

import typing as _typing

from codex_app_bridge._reexports import import_reexport as _import_reexport

if _typing.TYPE_CHECKING:
    from codex_app_bridge.rpc._context import (
        ContextConnection,
        DeferredReply,
        RequestContext,
        RequestMethod,
    )
    from codex_app_bridge.rpc._encode import encode_result
    from codex_app_bridge.rpc.answers import (
        AnswerCallback,
        ConnectionClosedError,
        PendingServerRequest,
        ServerRequestError,
        ServerRequests,
    )
    from codex_app_bridge.rpc.connection import (
        INGRESS_QUEUE_CAPACITY,
        MAX_IN_FLIGHT,
        OUTBOUND_HIGH_WATER,
        SOCKET_OUTBOUND_BUDGET,
        Connection,
        CountKey,
        Gate,
        OutboundPolicy,
        outbound_policy_for,
    )
    from codex_app_bridge.rpc.errors import (
        INPUT_TOO_LARGE,
        INTERNAL_ERROR,
        INVALID_PARAMS,
        INVALID_REQUEST,
        METHOD_NOT_FOUND,
        OVERLOADED,
        OVERLOADED_MESSAGE,
        RpcError,
        error_object,
        invalid_request,
        missing_params_error,
        overloaded_error,
        params_error,
        params_length_error,
        params_type_error,
        unknown_method_error,
    )
    from codex_app_bridge.rpc.methods import (
        Handler,
        ImmediateHandler,
        MethodSpec,
        MethodTable,
        ModelParams,
        ParamsSpec,
        RawParams,
        default_unsupported_error,
    )
    from codex_app_bridge.rpc.outbox import EncodedParams, OutboundNotification, Outbox
    from codex_app_bridge.rpc.scopes import ScopeTicket, SerialScopes

# where each public name lives: its module is imported on first use, so that a light module of
# this package (what answering ``initialize`` needs) is imported without the rest (anyio)
_SOURCES: dict[str, str] = {
    **dict.fromkeys(
        ("ContextConnection", "DeferredReply", "RequestContext", "RequestMethod"),
        "codex_app_bridge.rpc._context",
    ),
    "encode_result": "codex_app_bridge.rpc._encode",
    **dict.fromkeys(
        (
            "AnswerCallback",
            "ConnectionClosedError",
            "PendingServerRequest",
            "ServerRequestError",
            "ServerRequests",
        ),
        "codex_app_bridge.rpc.answers",
    ),
    **dict.fromkeys(
        (
            "INGRESS_QUEUE_CAPACITY",
            "MAX_IN_FLIGHT",
            "OUTBOUND_HIGH_WATER",
            "SOCKET_OUTBOUND_BUDGET",
            "Connection",
            "CountKey",
            "Gate",
            "OutboundPolicy",
            "outbound_policy_for",
        ),
        "codex_app_bridge.rpc.connection",
    ),
    **dict.fromkeys(
        (
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
        ),
        "codex_app_bridge.rpc.errors",
    ),
    **dict.fromkeys(
        (
            "Handler",
            "ImmediateHandler",
            "MethodSpec",
            "MethodTable",
            "ModelParams",
            "ParamsSpec",
            "RawParams",
            "default_unsupported_error",
        ),
        "codex_app_bridge.rpc.methods",
    ),
    **dict.fromkeys(
        ("EncodedParams", "OutboundNotification", "Outbox"), "codex_app_bridge.rpc.outbox"
    ),
    **dict.fromkeys(("ScopeTicket", "SerialScopes"), "codex_app_bridge.rpc.scopes"),
}

__all__ = [
    "INGRESS_QUEUE_CAPACITY",
    "INPUT_TOO_LARGE",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_IN_FLIGHT",
    "METHOD_NOT_FOUND",
    "OUTBOUND_HIGH_WATER",
    "OVERLOADED",
    "OVERLOADED_MESSAGE",
    "SOCKET_OUTBOUND_BUDGET",
    "AnswerCallback",
    "Connection",
    "ConnectionClosedError",
    "ContextConnection",
    "CountKey",
    "DeferredReply",
    "EncodedParams",
    "Gate",
    "Handler",
    "ImmediateHandler",
    "MethodSpec",
    "MethodTable",
    "ModelParams",
    "OutboundNotification",
    "OutboundPolicy",
    "Outbox",
    "ParamsSpec",
    "PendingServerRequest",
    "RawParams",
    "RequestContext",
    "RequestMethod",
    "RpcError",
    "ScopeTicket",
    "SerialScopes",
    "ServerRequestError",
    "ServerRequests",
    "default_unsupported_error",
    "encode_result",
    "error_object",
    "invalid_request",
    "missing_params_error",
    "outbound_policy_for",
    "overloaded_error",
    "params_error",
    "params_length_error",
    "params_type_error",
    "unknown_method_error",
]


def __getattr__(name: str) -> object:
    return _import_reexport(__name__, globals(), _SOURCES, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
