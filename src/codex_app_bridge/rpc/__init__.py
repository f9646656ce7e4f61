"""RPC layer: JSON-RPC message classification, request ids, dispatch, the single
exception -> JSON-RPC error boundary, outbound queues and server -> client requests.

Pieces, bottom-up: ``errors`` (codes, ``RpcError``, ``error_object``, serde-worded params errors),
``methods`` (``MethodSpec`` / ``MethodTable`` / params decoding), ``scopes`` (FIFO per scope key),
``answers`` (server -> client requests: process-wide ids, where clients' answers go),
``outbox`` (what upper layers send through), ``_context`` (``RequestContext``, ``DeferredReply``), ``connection`` (one client:
read, classify, dispatch, answer).
Nothing here knows threads, turns or items: a scope key is just a hashable value.
"""

from codex_app_bridge.rpc._context import DeferredReply, RequestContext
from codex_app_bridge.rpc.answers import (
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
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    OVERLOADED,
    OVERLOADED_MESSAGE,
    RpcError,
    error_object,
    invalid_request,
    params_error,
)
from codex_app_bridge.rpc.methods import (
    Handler,
    ImmediateHandler,
    MethodSpec,
    MethodTable,
    ModelParams,
    ParamsSpec,
    RawParams,
)
from codex_app_bridge.rpc.outbox import EncodedParams, OutboundNotification, Outbox
from codex_app_bridge.rpc.scopes import ScopeTicket, SerialScopes

__all__ = [
    "INGRESS_QUEUE_CAPACITY",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_IN_FLIGHT",
    "METHOD_NOT_FOUND",
    "OUTBOUND_HIGH_WATER",
    "OVERLOADED",
    "OVERLOADED_MESSAGE",
    "SOCKET_OUTBOUND_BUDGET",
    "Connection",
    "ConnectionClosedError",
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
    "RpcError",
    "ScopeTicket",
    "SerialScopes",
    "ServerRequestError",
    "ServerRequests",
    "error_object",
    "invalid_request",
    "outbound_policy_for",
    "params_error",
]
