"""A thread another node owns, as this node's runtime sees it: a ``CoreSession`` over the log.

``FollowerSession`` is the source contract (``sources._session``) with both queues elsewhere:
its events are the thread's log, read by an ordered JetStream consumer from the sequence after
the history this node loaded (so nothing is seen twice, nothing skipped; the consumer starts
again from the last sequence it delivered when NATS comes back), and each submission goes to
the owner by request/reply on the thread's control subject, in order. The node's own runtime,
listener and mapper serve its clients from these events exactly as they serve a local thread.

A user turn the owner cannot be reached for fails here, as a turn whose source stopped does
(``sources.failed_turn``): that turn never reached the log, so only this node shows it.

``ClusterSource`` is the source every node runs with: a followed thread gets a
``FollowerSession``, any other thread the node's own source (the owner plays its turns).

Boundary: the source contract only; which thread is followed is the node's (``_node``).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol, cast

import anyio
import orjson

from codex_app_bridge.protocol._base import dump_json
from codex_app_bridge.protocol.core import (
    EventEnvelope,
    ShutdownOp,
    Submission,
    UserTurnOp,
    parse_event_envelope,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.sources import (
    TURN_END_TYPES,
    TURN_START_TYPES,
    CoreSession,
    EventSource,
    SessionConfig,
    SourceDefaults,
    TurnSource,
    aborted_turn,
    failed_turn,
    open_session,
)
from codex_app_bridge.sources._session import EventQueue

__all__ = ["ClusterSource", "FollowerSession", "LogNode"]

logger = logging.getLogger(__name__)

CONTROL_TIMEOUT: Final = 10.0
"""Seconds a submission waits for the owner's answer."""


class LogNode(Protocol):
    """What a followed thread's session needs of its node (``_node.ClusterNode``)."""

    def follows(self, thread_id: str) -> bool:
        """Whether another node plays the thread's turns."""
        ...

    async def consume(
        self, thread_id: str, receive: Callable[[list[bytes]], Awaitable[None]]
    ) -> None:
        """Deliver the thread's log after what this node has, in order, to ``receive`` (the
        events of each message, as JSON lines; none twice)."""
        ...

    def stop_consuming(self, thread_id: str) -> None: ...

    def opened(self, session: FollowerSession) -> None:
        """A followed thread's session was opened (the node may end it: ``take_over``)."""
        ...

    async def send_control(
        self, thread_id: str, data: bytes, seconds: float, *, answer: bool = False
    ) -> str | None:
        """Send a submission (``answer``: an answer's line, ``_answers``) to the thread's
        owner; ``None`` once taken, else why not."""
        ...


class FollowerSession:
    """The session of a thread another node owns (see the module docstring)."""

    def __init__(self, node: LogNode, thread_id: str) -> None:
        self._node = node
        self.thread_id = thread_id
        self._queue = EventQueue()
        self._outbox: deque[Submission | bytes] = deque()
        """Submissions for the owner, and answers' lines (``relay``), in order."""
        self._wake: anyio.Event | None = None
        """Set when a submission waits (``_forward``)."""
        self._done: anyio.Event | None = None
        self._ended = False
        self._running: tuple[str, int] | None = None
        """The turn of the log that has started and not ended (id, when it was seen)."""
        self._bounded = False
        """A turn started or ended in the log since the session opened (else the history the
        thread was loaded with tells which turn is open)."""

    # --- the contract -------------------------------------------------------------------------

    def submit(self, submission: Submission) -> None:
        if isinstance(submission.op, ShutdownOp):
            self._ended = True  # the thread is unloaded here; the owner plays on
            if self._done is not None:
                self._done.set()
            return
        self._outbox.append(submission)
        if self._wake is not None:
            self._wake.set()

    def relay(self, line: bytes) -> None:
        """Send an answer a client of this node gave to the owner, before the ``Op`` that
        follows it (``_answers``): the owner and the other nodes resolve the request first."""
        self._outbox.append(line)
        if self._wake is not None:
            self._wake.set()

    def take_events(self) -> list[EventEnvelope]:
        return self._queue.take()

    async def run(self, ready: Callable[[], None]) -> None:
        self._queue.attach(ready)
        done = self._done = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:
                await self._node.consume(self.thread_id, self._receive)
                tg.start_soon(self._forward)
                if not self._ended:
                    await done.wait()
                tg.cancel_scope.cancel()
        finally:
            self._ended = True
            self._queue.release()
            self._node.stop_consuming(self.thread_id)

    # --- the log ------------------------------------------------------------------------------

    async def _receive(self, lines: list[bytes]) -> None:
        """Events of the log as JSON lines (called in order by the consumer)."""
        for line in lines:
            try:
                envelope = parse_event_envelope(line)
            except ValueError:
                logger.warning("thread %s: an event of the log could not be read", self.thread_id)
                continue
            await self._event(envelope)

    async def _event(self, envelope: EventEnvelope) -> None:
        kind = envelope.msg.type
        if kind in TURN_START_TYPES:
            self._running, self._bounded = (envelope.id, now_ms()), True
        elif kind in TURN_END_TYPES:
            self._bounded = True
            if self._running and self._running[0] == envelope.id:
                self._running = None
        self._queue.emit(envelope)
        if self._queue.full:
            await self._queue.wait_for_room(lambda: self._ended)

    def take_over(self, history: list[EventEnvelope]) -> None:
        """This node owns the thread now (its owner died) and has the whole log: the turn
        that was in flight (seen in the log since the session opened, or left open in the
        ``history`` the thread was loaded with) ends as a turn cut by a crash reads back in
        Codex (interrupted), and the session ends; the next submission opens one of the
        node's own source."""
        running = self._running if self._bounded else open_turn(history)
        self._running = None
        if running is not None:
            turn_id, started = running
            self._queue.emit(
                EventEnvelope(id=turn_id, msg=aborted_turn(turn_id, started, now_ms()))
            )
        self._ended = True
        if self._done is not None:
            self._done.set()

    # --- submissions --------------------------------------------------------------------------

    async def _forward(self) -> None:
        while True:
            while self._outbox:
                submission = self._outbox.popleft()
                if isinstance(submission, bytes):
                    error = await self._node.send_control(
                        self.thread_id, submission, CONTROL_TIMEOUT, answer=True
                    )
                    if error is not None:  # the others resolve it at the turn's end
                        logger.warning("thread %s: answer not passed on: %s", self.thread_id, error)
                    continue
                error = await self._node.send_control(
                    self.thread_id, dump_json(submission), CONTROL_TIMEOUT
                )
                if error is not None:
                    self._refused(submission, error)
            wake = self._wake = anyio.Event()
            if not self._outbox:
                await wake.wait()

    def _refused(self, submission: Submission, error: str) -> None:
        logger.warning(
            "thread %s: the owner did not take %s: %s", self.thread_id, submission.op.type, error
        )
        if isinstance(submission.op, UserTurnOp):
            at = now_ms()
            message = f"codex-app-bridge: the thread's owner could not be reached ({error})"
            for msg in failed_turn(submission.id, message, started_at_ms=at, completed_at_ms=at):
                self._queue.emit(EventEnvelope(id=submission.id, msg=msg))


def open_turn(history: list[EventEnvelope]) -> tuple[str, int] | None:
    """The turn a history leaves open (its id, and when it started, in ms), or ``None``."""
    for envelope in reversed(history):
        msg = envelope.msg
        if msg.type in TURN_END_TYPES:
            return None
        if msg.type in TURN_START_TYPES:
            started: int | None = getattr(msg, "started_at", None)
            return envelope.id, now_ms() if started is None else started * 1000
    return None


def control_error(reply: bytes) -> str | None:
    """The owner's refusal in a control reply (``None``: taken)."""
    try:
        data: Any = orjson.loads(reply)
    except orjson.JSONDecodeError:
        return "unreadable answer"
    answer = cast("dict[str, Any]", data) if isinstance(data, dict) else {}
    if answer.get("ok") is True:
        return None
    return str(answer.get("error") or "refused")


class ClusterSource:
    """The node's source: followed threads read the log, the others play here."""

    def __init__(self, node: LogNode, inner: Callable[[], EventSource | TurnSource]) -> None:
        self._node = node
        self._make_inner = inner
        self._inner: EventSource | TurnSource | None = None

    @property
    def inner(self) -> EventSource | TurnSource:
        if self._inner is None:
            self._inner = self._make_inner()
        return self._inner

    @property
    def defaults(self) -> SourceDefaults:
        return self.inner.defaults

    def open_session(self, config: SessionConfig) -> CoreSession:
        if self._node.follows(config.thread_id):
            session = FollowerSession(self._node, config.thread_id)
            self._node.opened(session)
            return session
        return open_session(self.inner, config)
