"""Subscriptions and fan-out: ``ListenerHub`` (one per server) and ``ThreadListener`` (per thread).

Role: hold each loaded thread's reducer state and subscriber set, run every core event through
the reducer, and hand the resulting notifications to the right connections' outboxes, in event
order. This is the only stateful part of the listener layer.

The hot path is synchronous: ``ThreadListener.process`` reduces one event and offers the encoded
notification to every recipient without awaiting anything (no lock, no checkpoint). Streaming
deltas skip the reducer (they do not change its state) and are written from the mapping layer's
byte templates (``DELTA_ROWS``). A thread has one caller of ``process``, its runtime task, so
events are reduced and delivered in the order they are processed. Flow control is separate,
and per thread: an outbox that reports itself ``congested`` after one of a thread's offers is
remembered by that thread, and its ``wait_writable`` (awaited by the caller between batches)
returns once every such outbox has room again; a client that congests one thread never holds up
another that it does not subscribe to.

Boundary: no transport. Connections are reached through the rpc layer's ``Outbox`` protocol
(``connection_id``, ``closed``, ``wants``, ``offer_notification``, ``congested``,
``wait_writable``); what a full outbound queue does (buffer and report congestion on stdio,
disconnect a slow socket client) is the outbox's policy.

Delivery rules (runtime spec §2.3):

* ``Audience.BROADCAST`` (``thread/status/changed``, ``thread/goal/updated`` and
  ``ListenerHub.broadcast``) goes to every initialized connection (``add_connection``) and to the
  thread's subscribers; ``Audience.SUBSCRIBERS`` to the thread's subscribers; ``Audience.RAW``
  only to subscribers that opted in with ``subscribe(..., raw_events=True)``.
* Each notification is encoded once (``OutboundNotification.encode`` stamps ``emittedAtMs``
  with the hub's clock) and the same bytes go to every recipient that wants the method; nothing
  is encoded when no recipient wants it.
* Recipients are served one after the other; an outbox that raises is logged and skipped, a
  closed outbox is dropped from the thread (and the hub), and the next recipient still gets the
  notification.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, replace
from typing import Literal

import orjson
from pydantic import ValidationError

from codex_app_bridge.listener import _convert as convert
from codex_app_bridge.listener._read_state import ReadState
from codex_app_bridge.listener._reducer import (
    Audience,
    ReduceContext,
    Reduction,
    ThreadState,
    ThreadStatusModel,
    reduce,
    revert_read_state,
)
from codex_app_bridge.listener._requests import (
    Answer,
    RaisedRequest,
    abandon_request,
    raise_request,
    resolve_request,
)
from codex_app_bridge.listener._state import emit
from codex_app_bridge.mapping import DELTA_ROWS
from codex_app_bridge.projection import parse_turn_item
from codex_app_bridge.protocol._base import dump_json
from codex_app_bridge.protocol.core import (
    EventEnvelope,
    ItemCompletedEvent,
    ItemStartedEvent,
    Op,
    RawResponseItemEvent,
    ResponseItem,
    ThreadSettingsSnapshot,
    parse_event_envelope,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.protocol.v2 import (
    ThreadSettings,
    ThreadSettingsUpdatedNotification,
)
from codex_app_bridge.rpc.outbox import OutboundNotification, Outbox

__all__ = ["ListenerHub", "ThreadExistsError", "ThreadListener", "UnsubscribeStatus"]

logger = logging.getLogger("codex_app_bridge.listener")

UnsubscribeStatus = Literal["unsubscribed", "notSubscribed"]


class ThreadExistsError(KeyError, ValueError):
    """``create_thread`` for a thread id that is already loaded."""


@dataclass(slots=True)
class _Subscriber:
    outbox: Outbox
    raw_events: bool


Congested = dict[int, Outbox]
"""Outboxes one sender's offers left congested, by connection id, until they have room again."""


class _Router:
    """The state the hub and its thread listeners share: clock, connections, subscriptions.

    Kept apart from both public classes so neither reaches into the other's internals.
    """

    def __init__(self, clock: Callable[[], int]) -> None:
        self.clock = clock
        self.connections: dict[int, Outbox] = {}
        self.subscribers: dict[str, dict[int, _Subscriber]] = {}
        """thread id -> connection id -> subscriber, in subscription order."""
        self.memberships: dict[int, set[str]] = {}
        """connection id -> the thread ids it is subscribed to."""

    def subscribe(self, thread_id: str, outbox: Outbox, raw_events: bool) -> None:
        subscribers = self.subscribers.setdefault(thread_id, {})
        existing = subscribers.get(outbox.connection_id)
        keep_raw = existing is not None and existing.raw_events
        subscribers[outbox.connection_id] = _Subscriber(outbox, raw_events or keep_raw)
        self.memberships.setdefault(outbox.connection_id, set()).add(thread_id)

    def unsubscribe(self, thread_id: str, connection_id: int) -> bool:
        if self.subscribers.get(thread_id, {}).pop(connection_id, None) is None:
            return False
        threads = self.memberships.get(connection_id)
        if threads is not None:
            threads.discard(thread_id)
            if not threads:
                del self.memberships[connection_id]
        return True

    def forget_connection(self, connection_id: int) -> None:
        self.connections.pop(connection_id, None)
        for thread_id in self.memberships.pop(connection_id, set()):
            self.subscribers.get(thread_id, {}).pop(connection_id, None)

    def forget_thread(self, thread_id: str) -> None:
        for connection_id in list(self.subscribers.pop(thread_id, {})):
            threads = self.memberships.get(connection_id)
            if threads is not None:
                threads.discard(thread_id)
                if not threads:
                    del self.memberships[connection_id]

    def recipients(self, thread_id: str, audience: Audience) -> list[Outbox]:
        subscribers = self.subscribers.get(thread_id, {})
        if audience is Audience.RAW:
            return [s.outbox for s in subscribers.values() if s.raw_events]
        outboxes = [s.outbox for s in subscribers.values()]
        if audience is Audience.SUBSCRIBERS:
            return outboxes
        return outboxes + [
            o for o in self.connections.values() if o.connection_id not in subscribers
        ]

    def deliver(
        self, method: str, params_json: bytes, recipients: Iterable[Outbox], congested: Congested
    ) -> None:
        """Encode once and offer to each recipient that wants ``method``; never raises."""
        wanted = self.wanted(method, recipients)
        if wanted:
            notification = OutboundNotification.encode(
                method, params_json, emitted_at_ms=self.clock()
            )
            self.offer(notification, wanted, congested)

    def wanted(self, method: str, recipients: Iterable[Outbox]) -> list[Outbox]:
        wanted: list[Outbox] = []
        for outbox in recipients:
            if outbox.closed:
                # the connection's own close path calls remove_connection as well; dropping it
                # here keeps us from trying again in the meantime
                self.forget_connection(outbox.connection_id)
            elif outbox.wants(method):
                wanted.append(outbox)
        return wanted

    def offer(
        self, notification: OutboundNotification, recipients: Iterable[Outbox], congested: Congested
    ) -> None:
        """Hand the same encoded notification to each recipient, in order; never raises.

        A closed recipient is forgotten instead; opt-out is each outbox's own check. A recipient
        that is congested afterwards is noted in ``congested`` (the sender's own set).
        """
        for outbox in recipients:
            if outbox.closed:
                self.forget_connection(outbox.connection_id)
                continue
            try:
                outbox.offer_notification(notification)
            except Exception:  # one broken connection must not starve the others
                logger.warning(
                    "dropping %s for connection %s: send failed",
                    notification.method,
                    outbox.connection_id,
                    exc_info=True,
                )
                continue
            if outbox.congested:
                congested[outbox.connection_id] = outbox


async def _wait_writable(congested: Congested) -> None:
    """Return once no outbox noted in ``congested`` is still congested."""
    while congested:
        _, outbox = congested.popitem()
        if outbox.congested and not outbox.closed:
            await outbox.wait_writable()


class ListenerHub:
    """All loaded threads and all initialized connections of one server process."""

    def __init__(self, *, clock: Callable[[], int] | None = None) -> None:
        self._router = _Router(clock if clock is not None else now_ms)
        self._threads: dict[str, ThreadListener] = {}

    # --- connections ----------------------------------------------------------------------

    def add_connection(self, outbox: Outbox) -> None:
        """A connection finished ``initialize``: it receives broadcasts from now on."""
        self._router.connections[outbox.connection_id] = outbox

    def remove_connection(self, connection_id: int) -> None:
        """A connection closed: forget it everywhere (broadcasts and every subscription)."""
        self._router.forget_connection(connection_id)

    def connection_ids(self) -> list[int]:
        """The initialized connections, in the order they were added."""
        return list(self._router.connections)

    # --- threads --------------------------------------------------------------------------

    def create_thread(
        self, thread_id: str, *, settings: ThreadSettingsSnapshot | None = None
    ) -> ThreadListener:
        """Load a thread (status ``idle``, no subscribers); ``ThreadExistsError`` if loaded.

        ``settings`` are the thread's settings as ``thread/start`` / ``thread/resume`` reported
        them: the baseline ``thread/settings/updated`` is computed against. Without them the
        first ``thread_settings_applied`` event becomes the baseline silently.
        """
        if thread_id in self._threads:
            raise ThreadExistsError(thread_id)
        listener = ThreadListener(self._router, thread_id, settings)
        self._threads[thread_id] = listener
        return listener

    def get(self, thread_id: str) -> ThreadListener | None:
        return self._threads.get(thread_id)

    def loaded_thread_ids(self) -> list[str]:
        """Loaded thread ids in creation order."""
        return list(self._threads)

    def remove_thread(self, thread_id: str) -> ThreadListener | None:
        """Unload a thread (its subscriptions go with it); the listener, or ``None``."""
        listener = self._threads.pop(thread_id, None)
        if listener is not None:
            self._router.forget_thread(thread_id)
        return listener

    # --- sending --------------------------------------------------------------------------

    def offer_broadcast(self, method: str, params: object) -> None:
        """Queue one notification for every initialized connection, without waiting."""
        recipients = list(self._router.connections.values())
        self._router.deliver(method, _params_json(params), recipients, {})

    async def broadcast(self, method: str, params: object) -> None:
        """Send one notification to every initialized connection (``thread/started``, ...),
        then wait for room where it congested one.

        ``params`` is a wire model, pre-encoded JSON bytes or plain JSON data.
        """
        recipients = list(self._router.connections.values())
        congested: Congested = {}
        self._router.deliver(method, _params_json(params), recipients, congested)
        await _wait_writable(congested)


def _params_json(params: object) -> bytes:
    if isinstance(params, bytes):
        return params
    if isinstance(params, orjson.Fragment):
        return orjson.dumps(params)
    return dump_json(params)


class ThreadListener:
    """One loaded thread: reducer state and subscribers."""

    def __init__(
        self, router: _Router, thread_id: str, settings: ThreadSettingsSnapshot | None = None
    ) -> None:
        self._router = router
        self._thread_id = thread_id
        baseline = None if settings is None else convert.thread_settings(settings)
        self._state = ThreadState(thread_settings=baseline)
        self._congested: Congested = {}
        """This thread's recipients that its offers left congested (see the module docstring)."""
        self._skipped = 0
        self._last_skip_reason: str | None = None

    @property
    def thread_id(self) -> str:
        return self._thread_id

    # --- subscriptions --------------------------------------------------------------------

    def subscribe(self, outbox: Outbox, raw_events: bool = False) -> None:
        """Attach a connection to this thread's turn and item traffic (idempotent).

        ``raw_events`` opts the connection in to ``rawResponseItem/completed`` and
        ``rawResponse/completed``; an opt-in is kept when the same connection subscribes again
        without it (a resume cannot turn raw events off, as in Codex).
        """
        self._router.subscribe(self._thread_id, outbox, raw_events)

    def unsubscribe(self, connection_id: int) -> UnsubscribeStatus:
        """Detach a connection; the thread stays loaded and a running turn keeps running."""
        removed = self._router.unsubscribe(self._thread_id, connection_id)
        return "unsubscribed" if removed else "notSubscribed"

    def is_subscribed(self, connection_id: int) -> bool:
        return connection_id in self._router.subscribers.get(self._thread_id, {})

    def subscriber_ids(self) -> list[int]:
        """Subscribed connection ids, in subscription order."""
        return list(self._router.subscribers.get(self._thread_id, {}))

    # --- state ----------------------------------------------------------------------------

    @property
    def status(self) -> ThreadStatusModel:
        """The v2 ``ThreadStatus``: ``idle`` / ``active {activeFlags}`` / ``systemError`` /
        ``notLoaded``."""
        return self._state.watch.status()

    @property
    def active_turn_id(self) -> str | None:
        return self._state.active_turn_id

    @property
    def skipped_events(self) -> int:
        """Events skipped so far: unknown, malformed, or out of scope (a server request given
        to ``process`` instead of ``raise_request``)."""
        return self._skipped

    @property
    def last_skip_reason(self) -> str | None:
        """Why the most recent skipped event was skipped (``None`` before the first)."""
        return self._last_skip_reason

    @property
    def state(self) -> ThreadState:
        """The reducer state (immutable snapshot)."""
        return self._state

    # --- events ---------------------------------------------------------------------------

    def process(self, envelope: EventEnvelope) -> None:
        """Reduce one core event and offer its notifications now, without awaiting anything.

        Never raises for bad or unknown events (skipped, counted). Callers that may outrun a
        connection await :meth:`wait_writable` between batches.
        """
        if not self.process_delta(envelope):
            self._reduce(envelope)

    def process_delta(self, envelope: EventEnvelope) -> bool:
        """Offer a streaming delta (``mapping.DELTA_ROWS``) from its byte template, without
        the reducer (a delta changes no reducer state); False, and nothing done, for any other
        event."""
        msg = envelope.msg
        row = DELTA_ROWS.get(type(msg))
        if row is None:
            return False
        router = self._router
        subscribers = router.subscribers.get(self._thread_id)
        if not subscribers:
            return True
        try:
            data = row.encode(msg, self._thread_id, envelope.id, router.clock())
        except (TypeError, ValueError):
            return True  # what the model path cannot encode either (a lone surrogate)
        if data is None:
            return True
        # opt-out and closed connections are handled by ``offer``, per recipient
        router.offer(
            OutboundNotification(row.method, data),
            [s.outbox for s in subscribers.values()],
            self._congested,
        )
        return True

    async def wait_writable(self) -> None:
        """Return once every connection this thread's traffic congested has room again."""
        await _wait_writable(self._congested)

    @property
    def congested(self) -> bool:
        """A recipient of this thread reported congestion since the last :meth:`wait_writable`."""
        return bool(self._congested)

    def announce_settings(self, settings: ThreadSettings) -> None:
        """``thread/settings/updated`` to the subscribers, for settings the server changed
        itself (a ``turn/start`` that selects another collaboration mode); the baseline later
        ``thread_settings_applied`` events are compared with moves to ``settings``."""
        params = ThreadSettingsUpdatedNotification(
            thread_id=self._thread_id, thread_settings=settings
        )
        self._apply(
            Reduction(
                replace(self._state, thread_settings=settings),
                (emit("thread/settings/updated", params),),
            )
        )

    async def handle(self, envelope: EventEnvelope) -> None:
        """``process`` one event, then wait for room where it congested a connection."""
        self.process(envelope)
        if self._congested:
            await _wait_writable(self._congested)

    async def handle_json(self, data: bytes | str) -> bool:
        """Parse one ``{id, msg}`` envelope and handle it; a malformed one is skipped (False)."""
        try:
            envelope = parse_event_envelope(data)
        except (ValidationError, ValueError) as exc:
            self._skip(f"malformed envelope: {exc}")
            return False
        await self.handle(envelope)
        return True

    async def record_response_item(self, item: ResponseItem, *, turn_id: str) -> None:
        """Codex core's seed behaviour for a recorded history item (issue 4.3).

        Emits the ``raw_response_item`` event and, when ``parse_turn_item`` gives a turn item,
        an ``item_started`` then an ``item_completed`` event for it; all three go through the
        reducer like any other core event, with nothing in between.
        """
        self._reduce(EventEnvelope.trusted(turn_id, RawResponseItemEvent(item=item)))
        turn_item = parse_turn_item(item)
        if turn_item is not None:
            now = self._router.clock()
            started = ItemStartedEvent(
                thread_id=self._thread_id, turn_id=turn_id, item=turn_item, started_at_ms=now
            )
            completed = ItemCompletedEvent(
                thread_id=self._thread_id,
                turn_id=turn_id,
                item=turn_item,
                started_at_ms=now,
                completed_at_ms=now,
            )
            self._reduce(EventEnvelope.trusted(turn_id, started))
            self._reduce(EventEnvelope.trusted(turn_id, completed))
        if self._congested:
            await _wait_writable(self._congested)

    # --- server -> client requests (``_requests``; ids and sending are the server's) --

    def raise_request(self, envelope: EventEnvelope) -> RaisedRequest | None:
        """Reduce an event that asks the client something and offer the notifications that
        precede the request; the request to send (``None`` if the event was skipped)."""
        reduction, raised = raise_request(self._state, envelope, self._context())
        self._apply(reduction)
        return raised

    def offer_request(self, data: bytes, connection_id: int | None = None) -> list[int]:
        """Offer an encoded server request to every subscriber (or only to ``connection_id``,
        a replay); the connection ids it was queued for."""
        recipients = self._router.recipients(self._thread_id, Audience.SUBSCRIBERS)
        reached: list[int] = []
        for outbox in recipients:
            if connection_id is not None and outbox.connection_id != connection_id:
                continue
            if outbox.closed:
                continue
            try:
                queued = outbox.offer(data)
            except Exception:  # one broken connection must not starve the others
                logger.warning("dropping a server request for %s", outbox.connection_id)
                continue
            if queued:
                reached.append(outbox.connection_id)
            if outbox.congested:
                self._congested[outbox.connection_id] = outbox
        return reached

    def resolve_request(self, raised: RaisedRequest, request_id: int, answer: Answer) -> Op:
        """A client's answer: offer what it causes; the ``Op`` that carries it to the source."""
        reduction, op = resolve_request(self._state, raised, request_id, answer, self._context())
        self._apply(reduction)
        return op

    def abandon_request(self, raised: RaisedRequest, request_id: int) -> None:
        """A request the turn's end cleans up (``serverRequest/resolved``)."""
        self._apply(abandon_request(self._state, raised, request_id, self._context()))

    def seed_read_state(self, read_state: ReadState) -> None:
        """Start from this read state (a thread loaded from its rollout), silently."""
        self._state = replace(self._state, read_state=read_state)

    def revert_read_state(self, kept_turn_ids: Collection[str]) -> None:
        """A revert kept these turns: offer ``thread/readState/changed`` if that moved it."""
        self._apply(revert_read_state(self._state, kept_turn_ids, self._context()))

    def _context(self) -> ReduceContext:
        return ReduceContext(thread_id=self._thread_id, now_ms=self._router.clock())

    def _apply(self, reduction: Reduction) -> None:
        if reduction.skipped is not None:
            self._skip(reduction.skipped)
            return
        self._state = reduction.state
        router = self._router
        for emission in reduction.emissions:
            recipients = router.recipients(self._thread_id, emission.audience)
            router.deliver(emission.method, emission.params_json(), recipients, self._congested)

    def _skip(self, reason: str) -> None:
        self._skipped += 1
        self._last_skip_reason = reason
        logger.debug("thread %s: skipped event (%s)", self._thread_id, reason)

    def _reduce(self, envelope: EventEnvelope) -> None:
        self._apply(reduce(self._state, envelope, self._context()))
