"""``InjectedSource``: a test harness pushes the events of a running bridge's threads itself.

For in-process use: build the server with it and drive the threads from the test::

    source = InjectedSource()
    async with BridgeServer(source) as server:
        ...  # a client starts a thread and a turn (turn/start)
        submission = await source.next_submission(thread_id)   # the user_turn op; its id is
        turn_id = submission.id                                 # the turn id
        await source.push(thread_id, {"id": turn_id, "msg": {"type": "task_started", ...}})
        ...
        await source.push(thread_id, {"id": turn_id, "msg": {"type": "task_complete", ...}})
        source.submissions(thread_id)      # every Op the thread received, in order

* ``push(thread_id, envelope)``: one event envelope (an ``EventEnvelope``, or its JSON as a dict,
  ``str`` or ``bytes``, validated once: ``pydantic.ValidationError`` when malformed,
  ``UnknownEventError`` for an unknown event type unless ``allow_unknown=True``) into the
  thread's session, delivered in push order. It waits while ``EVENT_HIGH_WATER`` events are
  waiting for the runtime, so a harness is held to the pace clients read at. A thread has a
  session from its first ``turn/start`` on; ``push`` before that raises ``LookupError``
  (``wait_session`` waits for it). Events pushed while no turn runs are delivered too (thread-level
  events, or a whole turn the bridge did not ask for).
* ``submissions(thread_id)`` / ``next_submission(thread_id)``: the ``Submission`` s (Codex
  ``Op`` s: ``user_turn``, ``user_input``, ``interrupt``, ``shutdown``, ...) the thread's sessions
  received, oldest first; ``next_submission`` waits for the next one not yet returned by it.
* ``end(thread_id)``: the session stops, as a producer that dies: a turn still running fails
  (the runtime's ``error`` and failed ``task_complete``), the next ``turn/start`` opens a new
  session.

The source answers nothing by itself except ``shutdown`` (``shutdown_complete``): interrupts and
steering are the harness's to answer (the runtime still aborts an interrupted turn after its
grace period).

Boundary: no connections; what a harness pushes is delivered as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
from pydantic import JsonValue

from codex_app_bridge.protocol.core import (
    EVENT_ENVELOPE_ADAPTER,
    EventEnvelope,
    ShutdownCompleteEvent,
    ShutdownOp,
    Submission,
    UnknownEventMsg,
    parse_event_envelope,
)
from codex_app_bridge.sources._base import SourceDefaults
from codex_app_bridge.sources._session import (
    CoreSession,
    EventQueue,
    EventSource,
    SessionConfig,
    TurnSource,
    open_session,
)

__all__ = ["InjectableSource", "InjectedSession", "InjectedSource", "UnknownEventError"]


class UnknownEventError(ValueError):
    """``push`` of an event whose ``type`` the bridge does not know (nothing would show it)."""


@dataclass(slots=True)
class _Thread:
    session: InjectedSession | None = None
    submissions: list[Submission] = field(default_factory=list[Submission])
    read: int = 0
    """How many of ``submissions`` ``next_submission`` returned."""
    changed: anyio.Event = field(default_factory=anyio.Event)


class InjectedSource:
    """Sessions whose events a harness pushes (see the module docstring)."""

    def __init__(
        self, *, model: str = "codex-app-bridge-injected", model_provider: str = "codex-app-bridge"
    ) -> None:
        self._defaults = SourceDefaults(model=model, model_provider=model_provider)
        self._threads: dict[str, _Thread] = {}

    @property
    def defaults(self) -> SourceDefaults:
        return self._defaults

    def open_session(self, config: SessionConfig) -> InjectedSession:
        thread = self._thread(config.thread_id)
        session = InjectedSession(self, config.thread_id)
        thread.session = session
        self._changed(thread)
        return session

    # --- the harness's side -------------------------------------------------------------------

    async def push(
        self,
        thread_id: str,
        envelope: EventEnvelope | dict[str, JsonValue] | str | bytes,
        *,
        allow_unknown: bool = False,
    ) -> None:
        """Deliver one event envelope to the thread (see the module docstring)."""
        session = self._session(thread_id)
        if isinstance(envelope, str | bytes):
            envelope = parse_event_envelope(envelope)
        elif not isinstance(envelope, EventEnvelope):
            envelope = EVENT_ENVELOPE_ADAPTER.validate_python(envelope)
        if isinstance(envelope.msg, UnknownEventMsg) and not allow_unknown:
            raise UnknownEventError(f"unknown event type {envelope.msg.type!r}: no client sees it")
        await session.wait_for_room()
        session.emit(envelope)

    async def wait_session(self, thread_id: str) -> None:
        """Return once the thread has a running session (its first ``turn/start`` opened it)."""
        thread = self._thread(thread_id)
        while thread.session is None or thread.session.ended:
            await self._wait(thread)

    def submissions(self, thread_id: str) -> list[Submission]:
        """Every submission the thread received so far, oldest first."""
        return list(self._thread(thread_id).submissions)

    async def next_submission(self, thread_id: str) -> Submission:
        """The oldest submission this method has not returned yet (waits for one)."""
        thread = self._thread(thread_id)
        while thread.read >= len(thread.submissions):
            await self._wait(thread)
        thread.read += 1
        return thread.submissions[thread.read - 1]

    async def wait_submissions(self, thread_id: str, since: int) -> list[Submission]:
        """The submissions after the first ``since`` ones, once there is at least one."""
        thread = self._thread(thread_id)
        while len(thread.submissions) <= since:
            await self._wait(thread)
        return thread.submissions[since:]

    def end(self, thread_id: str) -> None:
        """Stop the thread's session, as a producer that died (``LookupError`` if none)."""
        self._session(thread_id).finish()

    # --- internals ----------------------------------------------------------------------------

    def _thread(self, thread_id: str) -> _Thread:
        thread = self._threads.get(thread_id)
        if thread is None:
            thread = self._threads[thread_id] = _Thread()
        return thread

    def _session(self, thread_id: str) -> InjectedSession:
        thread = self._threads.get(thread_id)
        session = None if thread is None else thread.session
        if session is None or session.ended:
            raise LookupError(
                f"thread {thread_id} has no running session (start a turn on it first)"
            )
        return session

    async def _wait(self, thread: _Thread) -> None:
        await thread.changed.wait()

    @staticmethod
    def _changed(thread: _Thread) -> None:
        thread.changed.set()
        thread.changed = anyio.Event()

    def record(self, thread_id: str, submission: Submission) -> None:
        thread = self._thread(thread_id)
        thread.submissions.append(submission)
        self._changed(thread)


class InjectedSession:
    """One thread's session of an ``InjectedSource``."""

    def __init__(self, source: InjectedSource, thread_id: str) -> None:
        self._source = source
        self._thread_id = thread_id
        self._queue = EventQueue()
        self._done = anyio.Event()
        self.ended = False

    def submit(self, submission: Submission) -> None:
        if self.ended:
            return
        self._source.record(self._thread_id, submission)
        if isinstance(submission.op, ShutdownOp):
            self.emit(EventEnvelope(id=submission.id, msg=ShutdownCompleteEvent()))
            self.finish()

    def take_events(self) -> list[EventEnvelope]:
        return self._queue.take()

    async def run(self, ready: Callable[[], None]) -> None:
        self._queue.attach(ready)
        await self._done.wait()

    def emit(self, envelope: EventEnvelope) -> None:
        self._queue.emit(envelope)

    async def wait_for_room(self) -> None:
        await self._queue.wait_for_room(lambda: self.ended)

    def finish(self) -> None:
        self.ended = True
        self._done.set()
        self._queue.release()


class InjectableSource:
    """``fallback`` for every thread, except the ones a harness ``claim`` s: those play from
    ``injected`` (``serve --allow-inject``: the JSON-RPC side is ``server._inject``)."""

    def __init__(
        self, fallback: EventSource | TurnSource, injected: InjectedSource | None = None
    ) -> None:
        self.fallback = fallback
        self.injected = injected if injected is not None else InjectedSource()
        self._claimed: set[str] = set()
        self._opened: set[str] = set()

    @property
    def defaults(self) -> SourceDefaults:
        return self.fallback.defaults

    def claim(self, thread_id: str) -> None:
        """Play the thread's turns from ``injected`` (``ValueError`` once the fallback plays it)."""
        if thread_id in self._opened:
            raise ValueError(
                f"thread {thread_id} already plays its turns from the server's source; "
                "claim a thread before its first turn/start"
            )
        self._claimed.add(thread_id)

    def claimed(self, thread_id: str) -> bool:
        return thread_id in self._claimed

    def open_session(self, config: SessionConfig) -> CoreSession:
        if config.thread_id in self._claimed:
            return self.injected.open_session(config)
        self._opened.add(config.thread_id)
        return open_session(self.fallback, config)
