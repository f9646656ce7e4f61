"""A small method table and an in-memory client harness for the rpc tests.

The table imitates the shapes of the real server where messages depend on them (``initialize``
with ``clientInfo``, a ``thread/list``-like struct of 16 Rust fields, tagged/untagged unions,
enums, unsigned integers) and adds probe methods whose handlers the tests steer with
``anyio.Event``s kept in ``Probe`` (the connection's ``state``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeAliasType

from codex_app_bridge.protocol.jsonrpc import JsonValue
from codex_app_bridge.rpc import (
    Connection,
    Gate,
    MethodSpec,
    MethodTable,
    ModelParams,
    OutboundPolicy,
    RawParams,
    RequestContext,
    SerialScopes,
    ServerRequests,
    invalid_request,
)
from codex_app_bridge.transport import OutboundItem, TransportStreams, create_memory_transport_pair

TIMEOUT = 60


class Params(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, serialize_by_alias=True)


class ClientInfo(Params):
    name: str
    title: str | None = None
    version: str


class InitializeCapabilities(Params):
    experimental_api: Annotated[bool, Field(alias="experimentalApi")] = False
    opt_out_notification_methods: Annotated[
        list[str] | None, Field(alias="optOutNotificationMethods")
    ] = None


class InitializeParams(Params):
    client_info: Annotated[ClientInfo, Field(alias="clientInfo")]
    capabilities: InitializeCapabilities | None = None


SortDirection = TypeAliasType("SortDirection", Literal["asc", "desc"])
ThreadListCwdFilter = TypeAliasType("ThreadListCwdFilter", str | list[str])


class ThreadListParams(Params):
    cursor: str | None = None
    archived: bool | None = None
    limit: Annotated[int | None, Field(ge=0)] = None
    sort_direction: Annotated[SortDirection | None, Field(alias="sortDirection")] = None
    cwd: ThreadListCwdFilter | None = None
    source_kinds: Annotated[
        list[Literal["cli", "vscode", "exec"]] | None, Field(alias="sourceKinds")
    ] = None
    config: dict[str, Any] | None = None
    use_state_db_only: Annotated[bool, Field(alias="useStateDbOnly")] = False


class TextUserInput(Params):
    type: Literal["text"] = "text"
    text: str


class ImageUserInput(Params):
    type: Literal["image"] = "image"
    url: str


UserInput = TypeAliasType(
    "UserInput",
    Annotated[TextUserInput | ImageUserInput, Field(discriminator="type")],
)


class TurnStartParams(Params):
    thread_id: Annotated[str, Field(alias="threadId")]
    input: list[UserInput]


class ProbeParams(Params):
    key: str = "default"
    thread_id: Annotated[str | None, Field(alias="threadId")] = None


@dataclass
class Probe:
    """Per-connection test state: events that hold handlers, and what handlers saw."""

    release: dict[str, anyio.Event] = field(default_factory=dict[str, anyio.Event])
    started: dict[str, anyio.Event] = field(default_factory=dict[str, anyio.Event])
    order: list[str] = field(default_factory=list[str])
    initialized: bool = False

    def gate(self, key: str) -> anyio.Event:
        return self.release.setdefault(key, anyio.Event())

    def started_event(self, key: str) -> anyio.Event:
        return self.started.setdefault(key, anyio.Event())


def probe(ctx: RequestContext) -> Probe:
    state = ctx.connection.state
    assert isinstance(state, Probe)
    return state


async def handle_initialize(ctx: RequestContext, params: InitializeParams) -> dict[str, str]:
    state = probe(ctx)
    caps = params.capabilities
    if caps is not None and caps.opt_out_notification_methods:
        ctx.connection.set_notification_opt_out(caps.opt_out_notification_methods)
    state.initialized = True
    return {"userAgent": f"{params.client_info.name}/0.0.0"}


async def handle_echo(ctx: RequestContext, params: dict[str, JsonValue]) -> dict[str, JsonValue]:
    return {"echo": params}


async def handle_thread_list(ctx: RequestContext, params: ThreadListParams) -> dict[str, Any]:
    return {"data": [], "nextCursor": None, "limit": params.limit}


async def handle_turn_start(ctx: RequestContext, params: TurnStartParams) -> dict[str, Any]:
    async def started() -> None:
        await ctx.connection.notify("turn/started", {"threadId": params.thread_id})

    ctx.after_response(started)
    return {"turn": {"id": "turn-1", "status": "inProgress"}}


async def handle_wait(ctx: RequestContext, params: ProbeParams) -> dict[str, str]:
    state = probe(ctx)
    state.order.append(f"start:{params.key}")
    state.started_event(params.key).set()
    await state.gate(params.key).wait()
    state.order.append(f"end:{params.key}")
    return {"key": params.key}


async def handle_notify_many(ctx: RequestContext, params: dict[str, JsonValue]) -> dict[str, int]:
    count = params.get("count")
    assert isinstance(count, int)
    for index in range(count):
        await ctx.connection.notify("test/tick", {"index": index})
    return {"sent": count}


async def handle_ask_client(ctx: RequestContext, params: dict[str, JsonValue]) -> JsonValue:
    return await ctx.connection.request("item/tool/call", {"question": params.get("question")})


async def handle_fail_rpc(ctx: RequestContext, params: dict[str, JsonValue]) -> None:
    raise invalid_request("thread not found: abc")


async def handle_fail_internal(ctx: RequestContext, params: dict[str, JsonValue]) -> None:
    raise RuntimeError("secret internal detail")


async def handle_bad_result(ctx: RequestContext, params: dict[str, JsonValue]) -> object:
    return {"value": object()}


async def handle_model_result(ctx: RequestContext, params: dict[str, JsonValue]) -> BaseModel:
    return ClientInfo(name="n", version="v")


def thread_scope(params: ProbeParams) -> str | None:
    return params.thread_id


TABLE = MethodTable(
    [
        MethodSpec("initialize", ModelParams(InitializeParams), handle_initialize, inline=True),
        MethodSpec("test/echo", RawParams(), handle_echo),
        MethodSpec(
            "thread/list",
            ModelParams(ThreadListParams, field_count=16),
            handle_thread_list,
        ),
        MethodSpec("turn/start", ModelParams(TurnStartParams), handle_turn_start),
        MethodSpec("test/wait", ModelParams(ProbeParams), handle_wait, scope=thread_scope),
        MethodSpec("test/notifyMany", RawParams(), handle_notify_many),
        MethodSpec("test/askClient", RawParams(), handle_ask_client),
        MethodSpec("test/failRpc", RawParams(), handle_fail_rpc),
        MethodSpec("test/failInternal", RawParams(), handle_fail_internal),
        MethodSpec("test/badResult", RawParams(), handle_bad_result),
        MethodSpec("test/modelResult", RawParams(), handle_model_result),
        MethodSpec("thread/rollback", RawParams()),  # known, unsupported
    ]
)


async def initialize_gate(ctx: RequestContext) -> None:
    """The server layer's gate, in miniature: initialize first, once."""
    state = probe(ctx)
    if ctx.method == "initialize":
        if state.initialized:
            raise invalid_request("Already initialized")
    elif not state.initialized:
        raise invalid_request("Not initialized")


class Client:
    """The client end of an in-memory connection."""

    def __init__(self, streams: TransportStreams) -> None:
        self.read, self.write = streams

    async def send(self, message: OutboundItem) -> None:
        await self.write.send(message)

    async def receive(self) -> Any:
        with anyio.fail_after(TIMEOUT):
            return await self.read.receive()

    async def call(self, request_id: Any, method: str, params: Any = None) -> Any:
        message: dict[str, Any] = {"id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.receive()

    async def initialize(self, **capabilities: Any) -> Any:
        params: dict[str, Any] = {"clientInfo": {"name": "test", "version": "1"}}
        if capabilities:
            params["capabilities"] = capabilities
        reply = await self.call("init", "initialize", params)
        assert "result" in reply, reply
        return reply

    async def close(self) -> None:
        await self.write.aclose()


@dataclass
class Served:
    client: Client
    connection: Connection
    probe: Probe
    finished: anyio.Event


@asynccontextmanager
async def serving(
    table: MethodTable = TABLE,
    *,
    gate: Gate | None = None,
    policy: OutboundPolicy = OutboundPolicy.BACKPRESSURE,
    scopes: SerialScopes | None = None,
    server_requests: ServerRequests | None = None,
    capacity: int = 128,
    **options: Any,
) -> AsyncGenerator[Served]:
    """Run a ``Connection`` over an in-memory pair; on exit, EOF and wait for it to finish."""
    async with create_memory_transport_pair(capacity=capacity) as (client_streams, server_streams):
        state = Probe()
        connection = Connection(
            server_streams,
            table,
            policy=policy,
            gate=gate,
            scopes=scopes,
            server_requests=server_requests,
            state=state,
            **options,
        )
        finished = anyio.Event()

        async def run() -> None:
            try:
                await connection.run()
            finally:
                finished.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            served = Served(Client(client_streams), connection, state, finished)
            yield served
            for event in state.release.values():
                event.set()
            await served.client.close()
            with anyio.fail_after(TIMEOUT):
                await finished.wait()


__all__ = [
    "TABLE",
    "TIMEOUT",
    "Client",
    "Probe",
    "Served",
    "initialize_gate",
    "serving",
]
