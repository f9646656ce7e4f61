"""Subscriptions and fan-out: ``ListenerHub`` (one per server) and ``ThreadListener`` (per thread).

Role: hold each loaded thread's reducer state and subscriber set, run every core event through
the reducer under a per-thread lock, and hand the resulting notifications to the right
connections' outboxes, in event order. This is the only stateful part of the listener layer.

Boundary: no transport. Connections are reached through the rpc layer's ``Outbox`` protocol
(``connection_id``, ``closed``, ``wants``, ``send_notification``); what a full outbound queue
does (wait on stdio, disconnect a slow socket client) is the outbox's policy.

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
  notification. Per-thread order is the order ``handle`` / ``record_response_item`` were called:
  an ``anyio.Lock`` (FIFO) serializes them, reduction and delivery included.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import anyio
import orjson
from pydantic import ValidationError

from codex_app_bridge.listener._reducer import (
    Audience,
    Emission,
    ReduceContext,
    ThreadState,
    ThreadStatusModel,
    reduce,
)
from codex_app_bridge.projection import parse_turn_item
from codex_app_bridge.protocol._base import dump_json
from codex_app_bridge.protocol.core import (
    EventEnvelope,
    ItemCompletedEvent,
    ItemStartedEvent,
    RawResponseItemEvent,
    ResponseItem,
    parse_event_envelope,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.protocol.v2 import ThreadTokenUsage
from codex_app_bridge.rpc.outbox import OutboundNotification, Outbox

__all__ = ["ListenerHub", "ThreadExistsError", "ThreadListener", "TurnEndHook", "UnsubscribeStatus"]

logger = logging.getLogger("codex_app_bridge.listener")

TurnEndHook = Callable[[], Awaitable[object]]
"""An async callable run once when the active turn's terminal event has been reduced."""

UnsubscribeStatus = Literal["unsubscribed", "notSubscribed"]


class ThreadExistsError(KeyError, ValueError):
    """``create_thread`` for a thread id that is already loaded."""


@dataclass(slots=True)
class _Subscriber:
    outbox: Outbox
    raw_events: bool


class ListenerHub:
    """All loaded threads and all initialized connections of one server process."""

    def __init__(self, *, clock: Callable[[], int] | None = None) -> None:
        self._clock: Callable[[], int] = clock if clock is not None else now_ms
        self._connections: dict[int, Outbox] = {}
        self._threads: dict[str, ThreadListener] = {}
        self._memberships: dict[int, set[str]] = {}

    # --- connections ----------------------------------------------------------------------

    def add_connection(self, outbox: Outbox) -> None:
        """A connection finished ``initialize``: it receives broadcasts from now on."""
        self._connections[outbox.connection_id] = outbox

    def remove_connection(self, connection_id: int) -> None:
        """A connection closed: forget it everywhere (broadcasts and every subscription)."""
        self._connections.pop(connection_id, None)
        for thread_id in self._memberships.pop(connection_id, set()):
            listener = self._threads.get(thread_id)
            if listener is not None:
                listener.drop_subscriber(connection_id)

    def connection_ids(self) -> list[int]:
        """The initialized connections, in the order they were added."""
        return list(self._connections)

    # --- threads --------------------------------------------------------------------------

    def create_thread(self, thread_id: str) -> ThreadListener:
        """Load a thread (status ``idle``, no subscribers); ``ThreadExistsError`` if loaded."""
        if thread_id in self._threads:
            raise ThreadExistsError(thread_id)
        listener = ThreadListener(self, thread_id)
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
            for connection_id in listener.subscriber_ids():
                self._forget_membership(connection_id, thread_id)
        return listener

    # --- sending --------------------------------------------------------------------------

    async def broadcast(self, method: str, params: object) -> None:
        """Send one notification to every initialized connection (``thread/started``, ...).

        ``params`` is a wire model, pre-encoded JSON bytes or plain JSON data.
        """
        await self.deliver(method, _params_json(params), list(self._connections.values()))

    async def deliver(self, method: str, params_json: bytes, recipients: Iterable[Outbox]) -> None:
        """Encode once and send to each recipient that wants ``method``; never raises."""
        wanted: list[Outbox] = []
        for outbox in recipients:
            if outbox.closed:
                self._drop_closed(outbox.connection_id)
            elif outbox.wants(method):
                wanted.append(outbox)
        if not wanted:
            return
        notification = OutboundNotification.encode(method, params_json, emitted_at_ms=self._clock())
        for outbox in wanted:
            try:
                await outbox.send_notification(notification)
            except Exception:  # one broken connection must not starve the others
                logger.warning(
                    "dropping %s for connection %s: send failed",
                    method,
                    outbox.connection_id,
                    exc_info=True,
                )

    # --- bookkeeping used by ThreadListener -----------------------------------------------

    def now_ms(self) -> int:
        return self._clock()

    def broadcast_targets(self) -> list[Outbox]:
        return list(self._connections.values())

    def _note_membership(self, connection_id: int, thread_id: str) -> None:
        self._memberships.setdefault(connection_id, set()).add(thread_id)

    def _forget_membership(self, connection_id: int, thread_id: str) -> None:
        threads = self._memberships.get(connection_id)
        if threads is not None:
            threads.discard(thread_id)
            if not threads:
                del self._memberships[connection_id]

    def _drop_closed(self, connection_id: int) -> None:
        # the connection's own close path calls remove_connection too; this only stops us from
        # trying again in the meantime
        if connection_id in self._connections and self._connections[connection_id].closed:
            del self._connections[connection_id]
        for thread_id in list(self._memberships.get(connection_id, ())):
            listener = self._threads.get(thread_id)
            if listener is not None and listener.subscriber_closed(connection_id):
                listener.drop_subscriber(connection_id)


def _params_json(params: object) -> bytes:
    if isinstance(params, bytes):
        return params
    if isinstance(params, orjson.Fragment):
        return orjson.dumps(params)
    return dump_json(params)


class ThreadListener:
    """One loaded thread: reducer state, subscribers and the turn-end hooks."""

    def __init__(self, hub: ListenerHub, thread_id: str) -> None:
        self._hub = hub
        self._thread_id = thread_id
        self._state = ThreadState()
        self._subscribers: dict[int, _Subscriber] = {}
        self._lock = anyio.Lock()
        self._turn_end_hooks: list[TurnEndHook] = []
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
        existing = self._subscribers.get(outbox.connection_id)
        keep_raw = existing is not None and existing.raw_events
        self._subscribers[outbox.connection_id] = _Subscriber(outbox, raw_events or keep_raw)
        self._hub._note_membership(outbox.connection_id, self._thread_id)  # pyright: ignore[reportPrivateUsage]

    def unsubscribe(self, connection_id: int) -> UnsubscribeStatus:
        """Detach a connection; the thread stays loaded and a running turn keeps running."""
        if self._subscribers.pop(connection_id, None) is None:
            return "notSubscribed"
        self._hub._forget_membership(connection_id, self._thread_id)  # pyright: ignore[reportPrivateUsage]
        return "unsubscribed"

    def is_subscribed(self, connection_id: int) -> bool:
        return connection_id in self._subscribers

    def subscriber_ids(self) -> list[int]:
        """Subscribed connection ids, in subscription order."""
        return list(self._subscribers)

    def drop_subscriber(self, connection_id: int) -> None:
        """Forget a subscriber without answering anyone (its connection is gone)."""
        self._subscribers.pop(connection_id, None)

    def subscriber_closed(self, connection_id: int) -> bool:
        subscriber = self._subscribers.get(connection_id)
        return subscriber is not None and subscriber.outbox.closed

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
        """Events skipped so far: unknown, malformed, or out of scope (approval requests)."""
        return self._skipped

    @property
    def last_skip_reason(self) -> str | None:
        """Why the most recent skipped event was skipped (``None`` before the first)."""
        return self._last_skip_reason

    @property
    def token_usage(self) -> ThreadTokenUsage | None:
        """The last ``thread/tokenUsage/updated`` payload's usage (for replay on resume)."""
        return self._state.token_usage

    @property
    def state(self) -> ThreadState:
        """The reducer state (immutable snapshot)."""
        return self._state

    def add_turn_end_hook(self, hook: TurnEndHook) -> None:
        """Run ``hook()`` once, when the active turn's terminal event (``task_complete`` /
        ``turn_aborted``) has been reduced and before its notifications are sent.

        The hook runs under the thread's lock: it must not call ``handle`` on this listener.
        """
        self._turn_end_hooks.append(hook)

    # --- events ---------------------------------------------------------------------------

    async def handle(self, envelope: EventEnvelope) -> None:
        """Reduce one core event and fan out its notifications. Never raises for bad events."""
        async with self._lock:
            await self._process(envelope)

    async def handle_json(self, data: bytes | str) -> bool:
        """Parse one ``{id, msg}`` envelope and handle it; a malformed one is skipped (False)."""
        try:
            envelope = parse_event_envelope(data)
        except (ValidationError, ValueError) as exc:
            async with self._lock:
                self._skip(f"malformed envelope: {exc}")
            return False
        await self.handle(envelope)
        return True

    async def record_response_item(self, item: ResponseItem, *, turn_id: str) -> None:
        """Codex core's seed behaviour for a recorded history item (issue 4.3).

        Emits the ``raw_response_item`` event and, when ``parse_turn_item`` gives a turn item,
        an ``item_started`` then an ``item_completed`` event for it; all three go through the
        reducer like any other core event, atomically with respect to other events.
        """
        async with self._lock:
            await self._process(EventEnvelope(id=turn_id, msg=RawResponseItemEvent(item=item)))
            turn_item = parse_turn_item(item)
            if turn_item is None:
                return
            now = self._hub.now_ms()
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
            await self._process(EventEnvelope(id=turn_id, msg=started))
            await self._process(EventEnvelope(id=turn_id, msg=completed))

    def _skip(self, reason: str) -> None:
        self._skipped += 1
        self._last_skip_reason = reason
        logger.debug("thread %s: skipped event (%s)", self._thread_id, reason)

    async def _process(self, envelope: EventEnvelope) -> None:
        ctx = ReduceContext(thread_id=self._thread_id, now_ms=self._hub.now_ms())
        reduction = reduce(self._state, envelope, ctx)
        if reduction.skipped is not None:
            self._skip(reduction.skipped)
            return
        self._state = reduction.state
        if reduction.turn_ended and self._turn_end_hooks:
            hooks, self._turn_end_hooks = self._turn_end_hooks, []
            for hook in hooks:
                try:
                    await hook()
                except Exception:
                    logger.warning(
                        "thread %s: turn-end hook failed", self._thread_id, exc_info=True
                    )
        for emission in reduction.emissions:
            await self._hub.deliver(
                emission.method, emission.params_json(), self._recipients(emission)
            )

    def _recipients(self, emission: Emission) -> list[Outbox]:
        if emission.audience is Audience.RAW:
            return [s.outbox for s in self._subscribers.values() if s.raw_events]
        subscribers = [s.outbox for s in self._subscribers.values()]
        if emission.audience is Audience.SUBSCRIBERS:
            return subscribers
        seen = {outbox.connection_id for outbox in subscribers}
        others = [o for o in self._hub.broadcast_targets() if o.connection_id not in seen]
        return subscribers + others
