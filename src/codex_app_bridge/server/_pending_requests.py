"""The pending server -> client requests of one loaded thread (approvals, questions, tool calls).

Role: the part of a ``ThreadRuntime`` that asks the thread's clients and routes their answers
back to the source. Owned by the runtime (one per thread) and called synchronously from its
event path, like everything else on the hot path; the offline ``map`` uses it the same way, so
that it shows what a live client sees:

* ``feed(envelope)``: how every event of the thread reaches its listener: an event that asks is
  raised (below); a turn's start or end first cleans up what is still pending; any other event
  is the listener's to ``process``.
* ``raise_(envelope)``: a core event that asks (``REQUEST_EVENT_TYPES``) goes through the
  listener (status flags, the synthetic ``item/started``), gets the next id of the process-wide
  counter (``rpc.ServerRequests``: integers from 0), and is encoded once and offered to every
  connection subscribed to the thread at that moment. It stays pending, with its bytes (copied to
  their own size, ``right_sized``: an approval may wait for hours, and orjson's buffer is at
  least 4 KiB), until answered or cleaned up.
* An answer (a ``result`` or an ``error`` from any connection; the first one wins, a later one
  finds no request and is logged by the connection) is handed over synchronously by the rpc
  layer: the listener sends ``serverRequest/resolved`` to everyone subscribed, the status
  change and, for a declined command, its ``item/completed``; then the decision is submitted to
  the source as the matching Codex ``Op`` (``ExecApprovalOp``, ``PatchApprovalOp``, ...).
* ``replay_to(outbox)``: a connection that subscribes later (``thread/resume``) gets every
  pending request again, with the same id and bytes, after its response.
* A request whose payload cannot be converted is not sent; the source gets the error fallback of
  its kind at once (``unraisable_answer``), so the turn goes on.
* ``clean_up()``: at the turn's end (and start), before ``turn/completed``: every pending
  request is withdrawn and resolved (``serverRequest/resolved``); no ``Op`` is sent.
* Another server's answer (a cluster, ``server._shared``): ``relay(key, answer)`` is told of
  each answer a client of this server gave (``key``: ``sources.request_key`` of the request);
  ``answered_elsewhere(key, answer)`` resolves the request that key names here as that answer
  did there (the same notifications), without an ``Op`` (the server that plays the turn has
  it); a request not raised yet is resolved as it is raised (until the turn ends).

A client that disconnects leaves the request pending for the others (and for a later resume);
the turn never hangs on it beyond its interrupt. Boundary: no JSON-RPC beyond encoding the
request; the listener decides what is sent around it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import orjson

from codex_app_bridge.listener import REQUEST_EVENT_TYPES, ThreadListener
from codex_app_bridge.listener._requests import (
    Answer,
    RaisedRequest,
    unraisable_answer,
)
from codex_app_bridge.protocol.core import EventEnvelope, Op, Submission
from codex_app_bridge.protocol.jsonrpc import (
    ErrorResponse,
    Response,
    encode_server_request,
    right_sized,
)
from codex_app_bridge.rpc.answers import ServerRequests
from codex_app_bridge.rpc.outbox import Outbox
from codex_app_bridge.sources import TURN_END_TYPES, TURN_START_TYPES
from codex_app_bridge.sources._replies import request_key

__all__ = ["PendingRequests"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Pending:
    request_id: int
    raised: RaisedRequest
    data: bytes
    key: Hashable | None


class PendingRequests:
    """One thread's pending server -> client requests (see the module docstring)."""

    def __init__(
        self,
        listener: ThreadListener,
        registry: ServerRequests,
        submit: Callable[[Submission], None],
    ) -> None:
        self._listener = listener
        self._registry = registry
        self._submit = submit
        self._pending: dict[int, _Pending] = {}
        self._elsewhere: dict[Hashable, Answer] = {}
        """Answers given on another server to requests not raised here yet (this turn)."""
        self.relay: Callable[[Hashable, Answer], None] | None = None
        """Told of each answer a client of this server gave (see the module docstring)."""

    def __len__(self) -> int:
        return len(self._pending)

    def pending_methods(self) -> list[tuple[int, str]]:
        """``(id, method)`` of each pending request, oldest first."""
        return [(p.request_id, p.raised.method) for p in self._pending.values()]

    def feed(self, envelope: EventEnvelope) -> None:
        """Hand one event of the thread to its listener, as the live server does (see the
        module docstring)."""
        kind = envelope.msg.type
        if kind in REQUEST_EVENT_TYPES:
            self.raise_(envelope)
            return
        if self._pending and (kind in TURN_END_TYPES or kind in TURN_START_TYPES):
            self.clean_up()
        self._listener.process(envelope)

    def raise_(self, envelope: EventEnvelope) -> None:
        raised = self._listener.raise_request(envelope)
        if raised is None:
            # it cannot be sent: answer the source at once rather than leave the turn waiting
            op = unraisable_answer(envelope)
            if op is not None:
                self._submit(Submission(id=envelope.id, op=op))
            return
        request_id = self._registry.register(self._answered)
        params = orjson.dumps(raised.params_data())
        data = right_sized(encode_server_request(request_id, raised.method, params))
        key = request_key(envelope.msg, envelope.id)
        self._pending[request_id] = _Pending(request_id, raised, data, key)
        reached = self._listener.offer_request(data)
        logger.debug(
            "thread %s: %s #%s sent to %s",
            self._listener.thread_id,
            raised.method,
            request_id,
            reached,
        )
        if self._elsewhere and key in self._elsewhere:
            self.answered_elsewhere(key, self._elsewhere.pop(key))

    def answered_elsewhere(self, key: Hashable, answer: Answer) -> None:
        """Another server's client answered the request ``key`` names: resolve it here alike
        (see the module docstring)."""
        entry = next((p for p in self._pending.values() if p.key == key), None)
        if entry is None:
            self._elsewhere[key] = answer
            return
        del self._pending[entry.request_id]
        self._registry.discard(entry.request_id)
        try:
            self._listener.resolve_request(entry.raised, entry.request_id, answer)
        except Exception:  # an answer this server cannot read: the turn's end resolves it
            logger.exception("could not resolve server request %s", entry.request_id)

    def replay_to(self, outbox: Outbox) -> None:
        """Offer every pending request to one (newly subscribed) connection."""
        for pending in self._pending.values():
            self._listener.offer_request(pending.data, outbox.connection_id)

    def clean_up(self) -> None:
        """Withdraw and resolve every pending request (the turn ended or a new one began)."""
        pending, self._pending = list(self._pending.values()), {}
        self._elsewhere.clear()
        for entry in pending:
            self._registry.discard(entry.request_id)
            self._listener.abandon_request(entry.raised, entry.request_id)

    def close(self) -> None:
        """The thread's runtime stopped: clean up, and drop the way to its session (an answer
        that comes later finds no request, as after ``clean_up``; nothing points back at the
        runtime, so an unloaded thread is freed by reference counting)."""
        self.clean_up()
        self._submit = _nowhere

    def _answered(self, message: Response | ErrorResponse) -> None:
        request_id = message.id
        entry = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
        if entry is None:
            return
        answer = message.result if isinstance(message, Response) else message.error
        if isinstance(message, ErrorResponse):
            logger.warning(
                "client answered %s #%s with an error: %s",
                entry.raised.method,
                request_id,
                message.error.message,
            )
        try:
            op: Op = self._listener.resolve_request(entry.raised, entry.request_id, answer)
        except Exception:  # a bug must not break the connection that answered
            logger.exception("could not resolve server request %s", entry.request_id)
            return
        if self.relay is not None and entry.key is not None:
            self.relay(entry.key, answer)  # first: the other servers resolve it before the Op
        self._submit(Submission(id=entry.raised.turn_id, op=op))


def _nowhere(submission: Submission) -> None:
    logger.debug("no session for %s: the thread was unloaded", submission.op.type)
