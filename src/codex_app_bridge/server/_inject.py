"""``serve --allow-inject``: the ``bridge/inject/*`` extension methods, for test harnesses that
drive a bridge over its JSON-RPC connection (the in-process equivalent is
``sources.InjectedSource``).

The server's source is wrapped in ``sources.InjectableSource``: every thread plays from the
server's own source except the threads a harness claims, whose events it pushes itself. Without
the flag none of these methods exists (``-32601``, as any unknown method). The methods (params and
results are JSON objects; errors are ``-32600`` with a message):

* ``bridge/inject/claim`` ``{threadId}`` -> ``{}``: the thread (made by ``thread/start``, before
  its first ``turn/start``) now plays from what the harness pushes. ``turn/start`` then answers
  and waits for the harness's events; its turn id is the submission id of the ``user_turn`` op.
* ``bridge/inject/push`` ``{threadId, events: [{id, msg}, ...]}`` -> ``{pushed: n}``: event
  envelopes into the thread's session, in order (validated; a bad one is refused with its index,
  the ones before it are delivered). The answer waits while clients are slow to read (the
  session's high-water mark), as a producer would be held back. The thread needs a session: its
  first ``turn/start`` opened one.
* ``bridge/inject/submissions`` ``{threadId, since?: 0, waitMs?: 0}`` -> ``{submissions: [{id,
  op}, ...], next}``: the Codex ``Op`` s the thread received after the first ``since`` ones
  (``next`` is the ``since`` of the following call); with ``waitMs``, waits up to that long for
  at least one.
* ``bridge/inject/end`` ``{threadId}`` -> ``{}``: the thread's session stops, as a producer that
  died (a running turn fails; the next ``turn/start`` opens a new session).

Boundary: request decoding and answers only; the behaviour is ``InjectableSource``'s.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import anyio

from codex_app_bridge.protocol.jsonrpc import JsonValue
from codex_app_bridge.rpc import MethodSpec, MethodTable, RawParams, RequestContext
from codex_app_bridge.rpc.errors import invalid_request

if TYPE_CHECKING:
    from codex_app_bridge.sources import InjectableSource

__all__ = ["INJECT_METHODS", "with_injection"]

INJECT_METHODS: Final = (
    "bridge/inject/claim",
    "bridge/inject/push",
    "bridge/inject/submissions",
    "bridge/inject/end",
)

_MAX_WAIT_MS: Final = 60_000

Params = dict[str, JsonValue]


def _thread_id(params: Params, source: InjectableSource, *, claimed: bool = True) -> str:
    thread_id = params.get("threadId")
    if not isinstance(thread_id, str):
        raise invalid_request("bridge/inject: params.threadId must be a string")
    if claimed and not source.claimed(thread_id):
        raise invalid_request(f"bridge/inject: thread {thread_id} is not claimed")
    return thread_id


def _int(params: Params, name: str) -> int:
    value = params.get(name, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise invalid_request(f"bridge/inject: params.{name} must be an integer >= 0")
    return value


def _handlers(
    source: InjectableSource, thread_exists: Callable[[str], bool]
) -> dict[str, Callable[[RequestContext, Params], Awaitable[object]]]:
    # the envelopes' models: loaded with the first inject request, not with ``initialize``
    from pydantic import ValidationError

    from codex_app_bridge.protocol._base import dump_jsonable

    injected = source.injected

    async def claim(ctx: RequestContext, params: Params) -> object:
        thread_id = _thread_id(params, source, claimed=False)
        if not thread_exists(thread_id):
            raise invalid_request(f"thread not found: {thread_id}")
        try:
            source.claim(thread_id)
        except ValueError as exc:
            raise invalid_request(f"bridge/inject: {exc}") from None
        return {}

    async def push(ctx: RequestContext, params: Params) -> object:
        thread_id = _thread_id(params, source)
        events = params.get("events")
        if not isinstance(events, list):
            raise invalid_request("bridge/inject/push: params.events must be a list of {id, msg}")
        for index, event in enumerate(events):
            if not isinstance(event, dict):
                raise invalid_request(f"bridge/inject/push: events[{index}] is not an object")
            try:
                await injected.push(thread_id, event)
            except LookupError as exc:
                raise invalid_request(f"bridge/inject/push: {exc}") from None
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                where = ".".join(str(part) for part in first["loc"])
                raise invalid_request(
                    f"bridge/inject/push: events[{index}] is not an event envelope: "
                    f"{where}: {first['msg']} ({index} delivered)"
                ) from None
            except ValueError as exc:  # UnknownEventError
                raise invalid_request(
                    f"bridge/inject/push: events[{index}]: {exc} ({index} delivered)"
                ) from None
        return {"pushed": len(events)}

    async def submissions(ctx: RequestContext, params: Params) -> object:
        thread_id = _thread_id(params, source)
        since = _int(params, "since")
        wait_ms = min(_int(params, "waitMs"), _MAX_WAIT_MS)
        found = injected.submissions(thread_id)[since:]
        if not found and wait_ms:
            with anyio.move_on_after(wait_ms / 1000):
                found = await injected.wait_submissions(thread_id, since)
        data: list[Any] = [dump_jsonable(submission) for submission in found]
        return {"submissions": data, "next": since + len(found)}

    async def end(ctx: RequestContext, params: Params) -> object:
        thread_id = _thread_id(params, source)
        try:
            injected.end(thread_id)
        except LookupError as exc:
            raise invalid_request(f"bridge/inject/end: {exc}") from None
        return {}

    return {
        "bridge/inject/claim": claim,
        "bridge/inject/push": push,
        "bridge/inject/submissions": submissions,
        "bridge/inject/end": end,
    }


def with_injection(
    table: MethodTable, source: InjectableSource, thread_exists: Callable[[str], bool]
) -> MethodTable:
    """``table`` plus the ``bridge/inject/*`` methods over ``source`` (see the module docstring).

    They run concurrently with everything (no thread scope): a ``push`` held back by a slow
    client must not hold up that thread's ``turn/interrupt``.
    """
    specs: list[MethodSpec[Any]] = list(table)
    for name, handler in _handlers(source, thread_exists).items():
        specs.append(MethodSpec(name, RawParams(), handler))
    return MethodTable(specs, unsupported_error=table.unsupported_error)
