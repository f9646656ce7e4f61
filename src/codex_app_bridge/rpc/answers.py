"""Answers to server -> client requests: process-wide integer ids and where each answer goes.

The real server numbers its requests to clients (approvals, ``item/tool/call``, ...) with one
process-wide integer counter starting at 0, and routes a client's response by id alone: any
connection may answer, the first answer wins, and a response for an unknown id is logged and
ignored. ``ServerRequests`` is that registry; the server layer creates one per process and gives it
to every connection. A pending request is settled by the client's result, by its error
(``ServerRequestError``) or by cancellation (``ConnectionClosedError`` when its connection goes
away, or any exception the owner chooses).

Besides awaitable requests (``create``), an owner that must not await (a thread runtime, whose
requests belong to the thread and not to one connection) registers a synchronous callback
(``register``): the client's answer is handed to it from the reading connection's task, at once,
and ``discard`` withdraws it (the answer then finds no request, as in the real server).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import anyio

from codex_app_bridge.protocol.jsonrpc import (
    ErrorObject,
    ErrorResponse,
    JsonValue,
    RequestId,
    Response,
)

__all__ = [
    "AnswerCallback",
    "ConnectionClosedError",
    "PendingServerRequest",
    "ServerRequestError",
    "ServerRequests",
]


class ServerRequestError(Exception):
    """The client answered a server -> client request with an error object."""

    def __init__(self, error: ErrorObject) -> None:
        super().__init__(f"{error.code}: {error.message}")
        self.error = error


class ConnectionClosedError(Exception):
    """The connection closed before the client answered."""


class PendingServerRequest:
    """A server -> client request waiting for its answer."""

    __slots__ = ("_error", "_event", "_result", "id")

    def __init__(self, request_id: int) -> None:
        self.id = request_id
        self._event = anyio.Event()
        self._result: JsonValue = None
        self._error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self._event.is_set()

    def _settle(self, result: JsonValue = None, error: BaseException | None = None) -> None:
        self._result = result
        self._error = error
        self._event.set()

    async def wait(self) -> JsonValue:
        """The client's ``result``; raises ``ServerRequestError`` / the cancellation reason."""
        await self._event.wait()
        if self._error is not None:
            raise self._error
        return self._result


AnswerCallback = Callable[[Response | ErrorResponse], None]
"""Receives a client's answer (result or error) to a registered request; must not raise."""


class ServerRequests:
    """Ids and pending responses of server -> client requests (one per process)."""

    def __init__(self, first_id: int = 0) -> None:
        self._ids = itertools.count(first_id)
        self._pending: dict[RequestId, PendingServerRequest] = {}
        self._callbacks: dict[RequestId, AnswerCallback] = {}

    def register(self, on_answer: AnswerCallback) -> int:
        """The next id, answered through ``on_answer`` (called once, synchronously)."""
        request_id = next(self._ids)
        self._callbacks[request_id] = on_answer
        return request_id

    def discard(self, request_id: RequestId) -> bool:
        """Withdraw a registered request; False if it was already answered or withdrawn."""
        return self._callbacks.pop(request_id, None) is not None

    def create(self) -> PendingServerRequest:
        """A new pending request with the next id."""
        pending = PendingServerRequest(next(self._ids))
        self._pending[pending.id] = pending
        return pending

    def resolve(self, message: Response | ErrorResponse) -> bool:
        """Settle the request a client message answers; False if no request has that id."""
        callback = self._callbacks.pop(message.id, None)
        if callback is not None:
            callback(message)
            return True
        pending = self._pending.pop(message.id, None)
        if pending is None:
            return False
        if isinstance(message, Response):
            pending._settle(result=message.result)  # pyright: ignore[reportPrivateUsage]
        else:
            pending._settle(error=ServerRequestError(message.error))  # pyright: ignore[reportPrivateUsage]
        return True

    def cancel(self, request_id: RequestId, reason: BaseException) -> bool:
        """Settle a pending request with ``reason``; False if it was already answered."""
        pending = self._pending.pop(request_id, None)
        if pending is None:
            return False
        pending._settle(error=reason)  # pyright: ignore[reportPrivateUsage]
        return True

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._pending or request_id in self._callbacks

    def __len__(self) -> int:
        return len(self._pending) + len(self._callbacks)
