"""A test client for the bridge (or any ``codex app-server``): requests, turns, answers to the
server's requests, and assertions on what it saw.

``BridgeClient`` speaks JSON-RPC over a ``Channel`` (an in-memory pair with a server in the
test's event loop, or the stdio of a ``serve`` process: ``testing._bridge``). It keeps every
message it receives (``received``); ``run_turn`` starts a turn, answers each server request
with ``answer_server_request`` (accept, or decline) and returns a ``TurnResult`` once the turn
has completed. Every wait is bounded by ``timeout`` (a hang guard, 60 s by default).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import anyio

from codex_app_bridge.testing._answers import answer_server_request

__all__ = ["BridgeClient", "BridgeRpcError", "Channel", "TurnResult"]

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Channel:
    """How a client reaches a server: send one message, receive the next (``None``: closed)."""

    send: Callable[[JsonObject], Awaitable[None]]
    receive: Callable[[], Awaitable[JsonObject | None]]
    close: Callable[[], Awaitable[None]]


class BridgeRpcError(AssertionError):
    """The server answered a request with an error."""

    def __init__(self, method: str, error: JsonObject) -> None:
        super().__init__(f"{method} failed: {error}")
        self.method = method
        self.error = error


@dataclass
class TurnResult:
    """One turn as the client saw it, from ``turn/start`` to ``turn/completed``."""

    turn: JsonObject
    """The ``turn`` of ``turn/completed`` (``id``, ``status``, ``error``, ...)."""
    notifications: list[JsonObject]
    """Every notification received meanwhile, in order."""
    requests: list[JsonObject] = field(default_factory=list[JsonObject])
    """Every request the server sent meanwhile (approvals, questions, ...)."""

    @property
    def status(self) -> str:
        return str(self.turn.get("status"))

    @property
    def items(self) -> list[JsonObject]:
        """The items of ``item/completed``, in order."""
        return [
            cast(JsonObject, n["params"]["item"])
            for n in self.notifications
            if n.get("method") == "item/completed"
        ]

    @property
    def text(self) -> str | None:
        """The text of the last agent message, if any."""
        texts = [i.get("text") for i in self.items if i.get("type") == "agentMessage"]
        return cast(str, texts[-1]) if texts else None

    def methods(self) -> list[str]:
        return [str(n.get("method")) for n in self.notifications]

    def assert_completed(self, text: str | None = None) -> None:
        """The turn completed (with ``text`` as its last agent message, when given)."""
        assert self.status == "completed", f"turn {self.status}: {self.turn.get('error')}"
        if text is not None:
            assert self.text == text, f"the turn said {self.text!r}, not {text!r}"

    def assert_failed(self, message: str | None = None) -> None:
        """The turn failed (with that error message, when given)."""
        assert self.status == "failed", f"the turn is {self.status}, not failed"
        if message is not None:
            error = cast(JsonObject, self.turn.get("error") or {})
            assert error.get("message") == message, f"the error is {error.get('message')!r}"

    def assert_approval_requested(self, command: str | None = None) -> JsonObject:
        """A command approval was asked for (for ``command``, as the user typed it or as the
        client shows it); returns its params."""
        asked = [
            cast(JsonObject, r["params"])
            for r in self.requests
            if r.get("method") == "item/commandExecution/requestApproval"
        ]
        assert asked, f"no command approval was asked for (requests: {self.requests})"
        if command is None:
            return asked[0]
        for params in asked:
            shown = str(params.get("command"))
            actions = cast(list[JsonObject], params.get("commandActions") or [])
            if command == shown or any(a.get("command") == command for a in actions):
                return params
        raise AssertionError(f"no approval for {command!r}: {[p.get('command') for p in asked]}")


class BridgeClient:
    """A JSON-RPC client (see the module docstring)."""

    def __init__(self, channel: Channel, *, timeout: float = 60.0, accept: bool = True) -> None:
        self.channel = channel
        self.timeout = timeout
        self.accept = accept
        """How server requests are answered by default (``run_turn(answer=...)`` per turn)."""
        self.received: list[JsonObject] = []
        self._next_id = 1
        self._backlog: list[JsonObject] = []

    async def _next(self) -> JsonObject:
        if self._backlog:
            return self._backlog.pop(0)
        with anyio.fail_after(self.timeout):
            message = await self.channel.receive()
        if message is None:
            raise AssertionError("the server closed the connection")
        self.received.append(message)
        return message

    async def send(self, message: JsonObject) -> None:
        await self.channel.send(message)

    async def request(self, method: str, params: JsonObject | None = None) -> Any:
        """Send a request, return its result (``BridgeRpcError`` for an error answer).
        Messages received meanwhile are kept for the next waits."""
        request_id = self._next_id
        self._next_id += 1
        await self.send({"id": request_id, "method": method, "params": params or {}})
        held: list[JsonObject] = []
        while True:
            message = await self._next()
            if message.get("id") == request_id and "method" not in message:
                self._backlog[:0] = held
                if "error" in message:
                    raise BridgeRpcError(method, cast(JsonObject, message["error"]))
                return message.get("result")
            held.append(message)

    async def initialize(self, name: str = "codex-app-bridge-test", **capabilities: Any) -> Any:
        params: JsonObject = {"clientInfo": {"name": name, "version": "1"}}
        if capabilities:
            params["capabilities"] = capabilities
        result = await self.request("initialize", params)
        await self.send({"method": "initialized"})
        return result

    async def start_thread(self, **params: Any) -> str:
        """``thread/start``; the new thread's id."""
        result = await self.request("thread/start", params)
        return str(result["thread"]["id"])

    async def run_turn(
        self, thread_id: str, text: str, *, answer: str | None = None, **params: Any
    ) -> TurnResult:
        """Start a turn with ``text``, answer what the server asks (``answer``: ``"accept"``
        or ``"decline"``; default: the client's), return the turn once it completed."""
        accept = self.accept if answer is None else answer == "accept"
        input_items = [{"type": "text", "text": text}]
        started = await self.request(
            "turn/start", {"threadId": thread_id, "input": input_items, **params}
        )
        turn_id = started["turn"]["id"]
        notifications: list[JsonObject] = []
        requests: list[JsonObject] = []
        while True:
            message = await self._next()
            method = message.get("method")
            if method is None:
                continue  # a late answer to something else
            if "id" in message:
                requests.append(message)
                result = answer_server_request(str(method), message.get("params"), accept=accept)
                reply: JsonObject = (
                    {"id": message["id"], "result": result}
                    if result is not None
                    else {"id": message["id"], "error": {"code": -32601, "message": str(method)}}
                )
                await self.send(reply)
                continue
            notifications.append(message)
            params_ = cast(JsonObject, message.get("params") or {})
            turn = cast(JsonObject, params_.get("turn") or {})
            if method == "turn/completed" and turn.get("id") == turn_id:
                return TurnResult(turn, notifications, requests)

    async def close(self) -> None:
        await self.channel.close()
