"""The method table: every client method of 0.163.0, in the real server's order.

``build_method_table(handlers)`` lists all ``ALL_CLIENT_REQUEST_METHODS`` (so the unknown-method
error names them like the real server). The supported ones (``SUPPORTED_METHODS``) are bound to
their handler and their generated params model (serde-worded params errors; ``thread/list``'s
plain params are read without it, ``_handlers_lists.ThreadListParamsSpec``); every other known
method decodes its params as a plain object and answers the unsupported error of ``_errors``
(``-32601 "<method> is not supported by codex-app-bridge"``). Experimental methods are marked for
the gate.

Serialization scopes: requests naming a ``threadId`` are handled in order per thread (across
connections, as the real server's thread scope); ``thread/start`` and the list methods run
concurrently. ``initialize`` is inline: the next request sees its outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import TYPE_CHECKING, Any, Final, cast

from codex_app_bridge.protocol.v2.methods import (
    ALL_CLIENT_REQUEST_METHODS,
    EXPERIMENTAL_CLIENT_REQUEST_METHODS,
)
from codex_app_bridge.rpc import (
    Handler,
    ImmediateHandler,
    MethodSpec,
    MethodTable,
    ModelParams,
    RpcError,
)
from codex_app_bridge.rpc.methods import AnyParams
from codex_app_bridge.server._errors import unsupported_method
from codex_app_bridge.server._handshake import ClientHello, InitializeParamsSpec
from codex_app_bridge.server._ids import parse_thread_id

if TYPE_CHECKING:
    from pydantic import BaseModel

    from codex_app_bridge.server._handlers import Handlers

__all__ = [
    "COUNTED_METHODS",
    "SUPPORTED_METHODS",
    "DeferredMethodTable",
    "build_method_table",
    "in_flight_key",
    "initialize_spec",
    "method_spec",
    "thread_scope",
]

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

_SUPPORTED_PARAMS: Final[dict[str, str]] = {
    "initialize": "InitializeParams",
    "thread/start": "ThreadStartParams",
    "thread/resume": "ThreadResumeParams",
    "thread/fork": "ThreadForkParams",
    "thread/unsubscribe": "ThreadUnsubscribeParams",
    "thread/list": "ThreadListParams",
    "thread/loaded/list": "ThreadLoadedListParams",
    "thread/read": "ThreadReadParams",
    "thread/turns/list": "ThreadTurnsListParams",
    "thread/items/list": "ThreadItemsListParams",
    "thread/name/set": "ThreadSetNameParams",
    "thread/archive": "ThreadArchiveParams",
    "thread/unarchive": "ThreadUnarchiveParams",
    "thread/delete": "ThreadDeleteParams",
    "thread/metadata/update": "ThreadMetadataUpdateParams",
    "thread/revert": "ThreadRevertParams",
    "turn/start": "TurnStartParams",
    "turn/steer": "TurnSteerParams",
    "turn/interrupt": "TurnInterruptParams",
    # the machine (_handlers_machine)
    "command/exec": "CommandExecParams",
    "command/exec/write": "CommandExecWriteParams",
    "command/exec/terminate": "CommandExecTerminateParams",
    "command/exec/resize": "CommandExecResizeParams",
    "fs/readFile": "FsReadFileParams",
    "fs/writeFile": "FsWriteFileParams",
    "fs/createDirectory": "FsCreateDirectoryParams",
    "fs/getMetadata": "FsGetMetadataParams",
    "fs/readDirectory": "FsReadDirectoryParams",
    "fs/remove": "FsRemoveParams",
    "fs/copy": "FsCopyParams",
    "fs/watch": "FsWatchParams",
    "fs/unwatch": "FsUnwatchParams",
    "fuzzyFileSearch": "FuzzyFileSearchParams",
    "thread/compact/start": "ThreadCompactStartParams",
    "thread/goal/get": "ThreadGoalGetParams",
    "thread/goal/set": "ThreadGoalSetParams",
    "thread/goal/clear": "ThreadGoalClearParams",
    "thread/shellCommand": "ThreadShellCommandParams",
    # experimental, params not in 0.163.0's exported schemas (_machine_params)
    "process/spawn": "ProcessSpawnParams",
    "process/writeStdin": "ProcessWriteStdinParams",
    "process/kill": "ProcessKillParams",
    "process/resizePty": "ProcessResizePtyParams",
    "fuzzyFileSearch/sessionStart": "FuzzyFileSearchSessionStartParams",
    "fuzzyFileSearch/sessionUpdate": "FuzzyFileSearchSessionUpdateParams",
    "fuzzyFileSearch/sessionStop": "FuzzyFileSearchSessionStopParams",
}
"""Method name -> ``protocol.v2`` name of its params model, for every method implemented here."""

if TYPE_CHECKING:
    SUPPORTED_METHODS: dict[str, type[BaseModel] | None]
    """Method name -> params model of every method this server implements (``None``: the
    method's row decodes its own params, ``_config_methods``)."""


def __getattr__(name: str) -> dict[str, type[BaseModel] | None]:
    # ``SUPPORTED_METHODS`` is made when first read: its models are created on first access
    # (``protocol._lazy``), and answering ``initialize`` needs only ``InitializeParams``.
    if name != "SUPPORTED_METHODS":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
    from codex_app_bridge.protocol import v2
    from codex_app_bridge.server import _machine_params
    from codex_app_bridge.server._handlers import CONFIG_METHODS

    models: dict[str, type[BaseModel] | None] = {
        method: getattr(v2, model, None) or getattr(_machine_params, model)
        for method, model in _SUPPORTED_PARAMS.items()
    }
    models.update(dict.fromkeys(CONFIG_METHODS))
    globals()[name] = models
    return models


COUNTED_METHODS: Final = frozenset({"turn/interrupt"})
"""Methods whose requests in flight the thread runtime asks about (``in_flight_key``)."""


def in_flight_key(method: str, params: object) -> Hashable | None:
    """What a received request of ``COUNTED_METHODS`` is counted under until handled
    (``rpc.Connection.unhandled``): the method and its thread's canonical id, so a client may
    spell the id any way the real server accepts; ``None`` for every other request."""
    if method not in COUNTED_METHODS or not isinstance(params, dict):
        return None
    raw = cast("dict[str, Any]", params).get("threadId")
    if not isinstance(raw, str):
        return None
    try:
        return (method, parse_thread_id(raw))
    except RpcError:
        return None  # refused by its handler: nothing waits for it


def thread_scope(params: Any) -> Hashable | None:
    """The serialization key of a request naming a thread: its canonical thread id."""
    raw = getattr(params, "thread_id", None)
    if not isinstance(raw, str):
        return None
    try:
        return ("thread", parse_thread_id(raw))
    except RpcError:
        return ("thread", raw)  # the handler reports the bad id


def _spec(
    method: str,
    model: type[BaseModel],
    handler: Handler[Any] | None,
    immediate: ImmediateHandler[Any] | None,
) -> MethodSpec[Any]:
    params = ModelParams(
        model,
        field_count=_FIELD_COUNTS.get(model.__name__),
        field_order=_FIELD_ORDERS.get(model.__name__),
    )
    has_thread = "thread_id" in model.model_fields
    return MethodSpec(
        method,
        params,
        handler,
        scope=thread_scope if has_thread else None,
        experimental=method in EXPERIMENTAL_CLIENT_REQUEST_METHODS,
        immediate=immediate,
    )


def initialize_spec(handler: Handler[ClientHello]) -> MethodSpec[ClientHello]:
    """``initialize``: its params decoded without the models when they can be
    (``_handshake.InitializeParamsSpec``), handled inline."""
    return MethodSpec("initialize", InitializeParamsSpec(), handler, inline=True)


def method_spec(handlers: Handlers, method: str) -> MethodSpec[Any]:
    """The table row of one 0.163.0 client method (its handlers' namespace and params model
    loaded now if they are not yet)."""
    from codex_app_bridge.server._handlers import CONFIG_METHODS, Immediate, handler_route

    if method in CONFIG_METHODS:
        return handlers.config_specs[method]
    model_name = _SUPPORTED_PARAMS.get(method)
    if model_name is None:
        return MethodSpec(
            method, AnyParams(), experimental=method in EXPERIMENTAL_CLIENT_REQUEST_METHODS
        )
    route = handler_route(handlers, method)
    if method == "initialize":
        return initialize_spec(cast("Handler[ClientHello]", route))
    if method == "thread/list":  # its params are read without the models when they can be
        from codex_app_bridge.server._handlers_lists import ThreadListParamsSpec

        assert not isinstance(route, Immediate)
        params = ThreadListParamsSpec(_FIELD_COUNTS[model_name])
        return MethodSpec(method, params, route)
    model = _params_model(model_name)
    if isinstance(route, Immediate):
        return _spec(method, model, None, route.handler)
    return _spec(method, model, route, None)


def _params_model(name: str) -> type[BaseModel]:
    from codex_app_bridge.protocol import v2

    model: type[BaseModel] | None = getattr(v2, name, None)
    if model is None:
        from codex_app_bridge.server import _machine_params

        model = cast("type[BaseModel]", getattr(_machine_params, name))
    return model


def build_method_table(handlers: Handlers) -> MethodTable:
    """The table over every 0.163.0 client method (see the module docstring)."""
    from codex_app_bridge.server._handlers import CONFIG_METHODS, ROUTES

    routed = {"initialize", *ROUTES, *CONFIG_METHODS}
    supported = __getattr__("SUPPORTED_METHODS")
    if routed != set(supported):
        raise RuntimeError(f"handlers and params disagree: {routed ^ set(supported)}")
    specs = [method_spec(handlers, method) for method in ALL_CLIENT_REQUEST_METHODS]
    return MethodTable(specs, unsupported_error=unsupported_method)


class DeferredMethodTable(MethodTable):
    """The method table of a server that has not needed its handlers yet.

    ``initialize`` is served by ``initialize`` (the server's own handler: it needs no domain
    module). With ``row``, the first lookup of any other known method builds that method's row
    alone (``row(name)``, ``method_spec``: its namespace of handlers and its params model), so
    the first request of a process loads what it needs and no more; without, the first lookup
    builds the whole table with ``load``. Unknown methods are told apart by name alone, so they
    load nothing.
    """

    def __init__(
        self,
        initialize: Handler[ClientHello],
        load: Callable[[], MethodTable],
        *,
        row: Callable[[str], MethodSpec[Any]] | None = None,
        extra_names: tuple[str, ...] = (),
    ) -> None:
        """``extra_names``: the methods ``load`` adds after the 0.163.0 ones (in its order)."""
        self._initialize_handler = initialize
        self._initialize = initialize_spec(initialize)
        self._load = load
        self._row = row
        self._rows: dict[str, MethodSpec[Any]] = {"initialize": self._initialize}
        self._extra_names = extra_names
        self._full: MethodTable | None = None
        super().__init__([self._initialize], unsupported_error=unsupported_method)
        self.names = (*ALL_CLIENT_REQUEST_METHODS, *extra_names)
        self._known = frozenset(self.names)

    def extended(
        self, extend: Callable[[MethodTable], MethodTable], names: tuple[str, ...]
    ) -> DeferredMethodTable:
        """This table plus the methods ``extend`` adds to the full one (``names``, in its order),
        still built on the first request other than ``initialize``."""
        return DeferredMethodTable(
            self._initialize_handler,
            lambda: extend(self.full),
            extra_names=(*self._extra_names, *names),
        )

    @property
    def full(self) -> MethodTable:
        """The complete table (built on first use)."""
        if self._full is None:
            if self._row is None:
                self._full = self._load()
            else:
                specs = [self._built(name) for name in self.names]
                self._full = MethodTable(specs, unsupported_error=unsupported_method)
        return self._full

    def _built(self, name: str) -> MethodSpec[Any]:
        spec = self._rows.get(name)
        if spec is None:
            assert self._row is not None
            spec = self._rows[name] = self._row(name)
        return spec

    def get(self, name: str) -> MethodSpec[Any] | None:
        if self._full is not None:
            return self._full.get(name)
        if name == "initialize":
            return self._initialize
        if name not in self._known:
            return None
        return self.full.get(name) if self._row is None else self._built(name)

    def __iter__(self) -> Iterator[MethodSpec[Any]]:
        return iter(self.full)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self._known
