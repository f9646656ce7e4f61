"""``ThreadRuntime``: one task per loaded thread at work (none while it is idle), owning everything
that plays its turns.

A loaded thread is an actor (the shape of Codex core's own session loop): the runtime task owns
the thread's ``CoreSession`` (the source's submission and event queues), the turn that is running
(``active_turn_id``: the one place that knows), the interrupt requests waiting for the turn to
end, and the thread's history log; it is the only caller of the thread listener's ``process``.
Request handlers run on the same event loop and call its control methods (``start_turn``,
``steer``, ``interrupt``), which never await: each records what it asks for and submits the
matching Codex ``Op`` to the session.

The loop: take every event the session has produced, and for each, synchronously, keep it in the
history log if thread history needs it, and have the listener reduce, encode and offer it to the
subscribers. Await only when there is nothing to take, or when a subscriber's outbound buffer is
over its high-water mark (backpressure: the session then stops producing as well).

What the runtime guarantees whatever the source does:

* **Start**: the first event of a turn is ``task_started`` (synthesized with the turn's accept
  time when the source begins with anything else).
* **Interrupt** (``turn/interrupt``): every request received while the turn runs is answered
  ``{}`` right before the turn's terminal notifications (``thread/status/changed``,
  ``turn/completed``), by the runtime itself (``DeferredReply``). The ``interrupt`` op goes to
  the source once. The terminal event of an interrupted turn is held while more
  ``turn/interrupt`` requests for the thread have been received by a connection and not handled
  yet (``pending_interrupts``, counted under the thread's canonical id; at most
  ``INTERRUPT_SETTLE`` seconds), so that requests a client sent back to back find the turn still
  running and are all answered before ``turn/completed``, as in the real server, where the
  abort takes core a while. A source that has not ended the turn ``INTERRUPT_GRACE`` seconds
  later gets a ``turn_aborted`` synthesized for it and is dropped (its task cancelled, what it
  still had is discarded): it no longer answers, so the next turn opens a new session.
* **A session that ends** (its producer died) while a turn runs: the turn fails with an ``error``
  and a failed ``task_complete`` that say so; the next ``start_turn`` opens a new session.

Server -> client requests (approvals, questions, dynamic tool calls): every event reaches the
listener through the thread's ``PendingRequests`` (``requests.feed``), which raises an event
that asks as a request instead of processing it; the client's answer comes back synchronously from the rpc layer and is submitted to the
session as its Codex ``Op``. Pending requests are resolved right before a turn's start and
terminal events are reduced (so before ``turn/completed``).

History: only the events ``thread/read`` / ``resume`` / ``fork`` rebuild turns from, and the
model's history, are kept (``HISTORY_EVENT_TYPES``: lifecycle events, completed items, recorded
response items and compactions: what a 0.163.0 rollout holds); deltas and other streaming
events are never retained, so memory follows what a thread holds, not what streamed. A turn's
events are kept as models while it runs and encoded once it has ended (``HistoryLog``): an idle
loaded thread holds its history as one buffer per turn, read back into models only by the
requests that rebuild turns.

An idle thread holds no task: a runtime that can start itself again (``spawn``, the registry's)
ends its task when no turn runs and nothing waits, once its session has let its own go
(``ParkableSession.park``; a session that cannot, e.g. a producer's, keeps both running), and
``start`` s it again at the next submission (``_poke``). One task at a time: a submission that
arrives while the task winds down has it go round again instead. What each piece of state is,
and who changes it, stays as above.

Boundary: no JSON-RPC beyond answering deferred replies; handlers decide what a request means.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import anyio.abc
from pydantic import JsonValue

from codex_app_bridge.listener import ThreadListener
from codex_app_bridge.protocol._base import dump_jsonable
from codex_app_bridge.protocol.core import (
    CompactOp,
    EventEnvelope,
    InterruptOp,
    RunUserShellCommandOp,
    ShutdownOp,
    Submission,
    UserInput,
    UserInputOp,
    UserTurnOp,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.rpc import DeferredReply, ServerRequests
from codex_app_bridge.server._history_log import HistoryLog
from codex_app_bridge.server._pending_requests import PendingRequests
from codex_app_bridge.sources import (
    TURN_END_TYPES,
    TURN_START_TYPES,
    CoreSession,
    ParkableSession,
    aborted_turn,
    failed_turn,
    task_started_event,
)

__all__ = [
    "HISTORY_EVENT_TYPES",
    "INTERRUPT_GRACE",
    "INTERRUPT_SETTLE",
    "ThreadRuntime",
    "TurnOrder",
]

logger = logging.getLogger(__name__)

INTERRUPT_GRACE: Final = 5.0
"""Seconds a source has to end an interrupted turn before the runtime aborts it itself."""

HISTORY_EVENT_TYPES: Final = frozenset(
    {
        "task_started",
        "turn_started",
        "task_complete",
        "turn_complete",
        "turn_aborted",
        "item_completed",
        "thread_rolled_back",
        "context_compacted",
        "token_count",
        "thread_settings_applied",
        "error",
        "raw_response_item",
        "compacted",
        "token_usage_record",
        "world_state",
    }
)
"""Event types kept in a thread's history log: what the paginated history builder reads, and
the model's history (every recorded ``ResponseItem`` and compaction: the ``response_item`` and
``compacted`` lines of the rollout, from which a new session's ``prior_items`` are rebuilt), and
the model source's ``token_usage_record`` / ``world_state`` records, which storage writes as
those lines."""

INTERRUPT_SETTLE: Final = 1.0
"""Longest an interrupted turn's end waits for interrupt requests still in flight (see above)."""
_SETTLE_POLL: Final = 0.005

_ABANDONED_KEPT: Final = 16


@dataclass(frozen=True, slots=True)
class TurnOrder:
    """What ``turn/start`` asks of the source (the ``user_turn`` op's content)."""

    turn_id: str
    items: Sequence[UserInput]
    cwd: str
    model: str
    approval_policy: object
    sandbox_policy: object
    effort: str | None = None
    service_tier: str | None = None
    collaboration_mode: dict[str, Any] | None = None


@dataclass(slots=True)
class _Turn:
    turn_id: str
    accepted_at_ms: int
    opened: bool = False
    interrupt_replies: list[DeferredReply] = field(default_factory=list[DeferredReply])
    interrupt_deadline: float | None = None
    settle_at: float | None = None


class ThreadRuntime:
    """The task that plays one thread's turns (see the module docstring)."""

    def __init__(
        self,
        thread_id: str,
        listener: ThreadListener,
        open_session: Callable[[], CoreSession],
        *,
        history: Iterable[EventEnvelope] | HistoryLog | None = None,
        on_turn_end: Callable[[EventEnvelope], None] | None = None,
        interrupt_grace: float = INTERRUPT_GRACE,
        pending_interrupts: Callable[[], int] | None = None,
        server_requests: ServerRequests | None = None,
        spawn: Callable[[ThreadRuntime], None] | None = None,
    ) -> None:
        """``spawn(runtime)`` runs ``runtime.run`` in a new task (the server's task group): given,
        the runtime is started with ``start`` and ends its task while the thread is idle (see
        the module docstring); ``None``: whoever runs ``run`` keeps it running until ``stop``."""
        self.thread_id = thread_id
        self.listener = listener
        self.log = history.copy() if isinstance(history, HistoryLog) else HistoryLog(history or ())
        """The thread's history log (the runtime is its one writer; a finished turn's events
        are kept encoded, ``HistoryLog``)."""
        self.sink: Callable[[EventEnvelope], None] | None = None
        """Called with each history event as it is kept (the thread's rollout writer)."""
        self.tap: Callable[[EventEnvelope], None] | None = None
        """Called with every event the listener is given, deltas included, in that order (a
        cluster's log of the thread, ``server._shared``): synchronously, so it must not block."""
        self._follow = False
        self._open_session = open_session
        self._session: CoreSession | None = None
        self._session_scope: anyio.CancelScope | None = None
        self._session_done = False
        self._on_turn_end = on_turn_end
        self._grace = interrupt_grace
        self._pending_interrupts = pending_interrupts or (lambda: 0)
        self._turn: _Turn | None = None
        self._abandoned: deque[str] | None = None
        """Turns aborted by the runtime (the last ``_ABANDONED_KEPT``), whose late events are
        dropped: made at the first such abort (an empty bounded deque is ~0.6 KiB, kept for the
        thread's life)."""
        self._held: list[EventEnvelope] = []
        self._unsent: list[EventEnvelope] = []
        """The rest of a batch that congested a subscriber: processed once it has room."""
        """Events from an interrupted turn's terminal event on, held until it settles."""
        self._wake: anyio.Event | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._spawn = spawn
        self._running = False
        """A task runs ``run`` (or has been spawned to)."""
        self._poked = False
        """Something happened since the task last looked (it goes round again before it ends)."""
        self._session_waiting = False
        """The session is open but its task is not running (parked, or opened while the
        runtime had no task): ``run`` starts it."""
        self._stopped = False
        self.ended = False
        """The task has ended, its session's with it (after ``stop``)."""
        registry = server_requests if server_requests is not None else ServerRequests()
        self.requests = PendingRequests(listener, registry, self._submit_answer)
        """The thread's pending server -> client requests."""

    # --- what handlers ask (never awaits) -----------------------------------------------------

    @property
    def history(self) -> list[EventEnvelope]:
        """The history log's events, oldest first, as models of the caller's own (built anew
        from the log at each call: bind the result, do not ask twice)."""
        return self.log.events()

    @property
    def running(self) -> bool:
        """The runtime has a task (an idle thread's runtime, once parked, has none)."""
        return self._running

    @property
    def active_turn_id(self) -> str | None:
        """The turn that is running, from ``start_turn`` until its terminal event."""
        return None if self._turn is None else self._turn.turn_id

    def start_turn(self, order: TurnOrder) -> None:
        """Start a turn (``RuntimeError`` if one is running: handlers check first)."""
        if self._turn is not None:
            raise RuntimeError(f"turn {self._turn.turn_id} is still running")
        self._turn = _Turn(order.turn_id, now_ms())
        op = UserTurnOp(
            items=list(order.items),
            cwd=order.cwd,
            approval_policy=_json(order.approval_policy),
            sandbox_policy=_json(order.sandbox_policy),
            model=order.model,
            effort=order.effort,
            service_tier=order.service_tier,
            collaboration_mode=_json(order.collaboration_mode),
        )
        self._submit(Submission(id=order.turn_id, op=op))

    def compact(self, turn_id: str) -> None:
        """Compact the thread's history as a turn of its own (``thread/compact/start``; the
        ``compact`` op; ``RuntimeError`` if a turn is running: handlers check first)."""
        if self._turn is not None:
            raise RuntimeError(f"turn {self._turn.turn_id} is still running")
        self._turn = _Turn(turn_id, now_ms())
        self._submit(Submission(id=turn_id, op=CompactOp()))

    def shell_command(self, turn_id: str, command: str, timeout_ms: int | None) -> None:
        """Run a command the user typed as a turn of its own (``thread/shellCommand``; the
        ``run_user_shell_command`` op; ``RuntimeError`` if a turn is running: handlers check
        first)."""
        if self._turn is not None:
            raise RuntimeError(f"turn {self._turn.turn_id} is still running")
        self._turn = _Turn(turn_id, now_ms())
        op = RunUserShellCommandOp(command=command, timeout_ms=timeout_ms)
        self._submit(Submission(id=turn_id, op=op))

    def steer(self, items: Sequence[UserInput]) -> None:
        """Add user input to the running turn (the source takes it as Codex does)."""
        if self._turn is not None:
            self._submit(Submission(id=self._turn.turn_id, op=UserInputOp(items=list(items))))

    def interrupt(self, reply: DeferredReply | None) -> None:
        """Interrupt the running turn; ``reply`` is answered ``{}`` right before it ends
        (``None``: an interrupt another server answers, ``server._shared``)."""
        turn = self._turn
        if turn is None:
            if reply is not None:
                reply.resolve({})
            return
        if reply is not None:
            turn.interrupt_replies.append(reply)
        if turn.interrupt_deadline is None:
            turn.interrupt_deadline = anyio.current_time() + self._grace
            self._submit(Submission(id=turn.turn_id, op=InterruptOp()))
            self._poke()

    def answer(self, submission: Submission) -> None:
        """A client's answer to a server request, as an ``Op``, for the session that asked (one
        that reached another server first, ``server._shared``)."""
        self._submit_answer(submission)

    def truncate_history(self, length: int) -> None:
        """Keep the first ``length`` events of the history log (``thread/revert``, never while
        a turn runs). The session goes too, as the real server unloads and reloads a thread to
        cut it: the next turn opens a new one, whose model history is the log as it is now."""
        self.log.truncate(length)
        if self._session is not None and self._turn is None:
            self._drop_session()

    def follow(self) -> None:
        """Open the session now rather than at the first submission: its events come from
        elsewhere (another server's turns, ``server._shared``) and must reach the listener
        whether or not this server submits anything."""
        self._follow = True
        if self._task_group is not None and self._session is None:
            self._start_session()
        self._poke()  # a parked runtime starts again (and opens the session)

    def follow_elsewhere(self) -> None:
        """Another server plays the thread's turns from now on (``server._shared``: it took
        the thread from this one): the session that played them here is dropped as it is (the
        turn it was playing ends as the other server's events end it), and a session that
        follows those events opens (``follow``)."""
        self._drop_session()
        self.follow()

    def stop(self) -> None:
        """Ask the session to shut down (the thread is being unloaded)."""
        self.requests.clean_up()  # an unloaded thread's requests are resolved, as Codex
        if self._session is not None and not self._session_done:
            self._session.submit(Submission(id="shutdown", op=ShutdownOp()))
        self._stopped = True
        self._poke()

    # --- the task -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the runtime's task (with ``spawn``; without it, the owner runs ``run``)."""
        if self._spawn is None:
            raise RuntimeError("this runtime is run by its owner (no spawn)")
        if not self._running and not self.ended:
            self._spawn(self)
            self._running = True

    async def run(self) -> None:
        """Play the thread's turns until it is stopped, or, with ``spawn``, until it is idle
        (``start`` runs it again)."""
        self._running = True
        parked = False
        try:
            while True:
                self._poked = False
                parked = False
                async with anyio.create_task_group() as tg:
                    self._task_group = tg
                    try:
                        if self._session_waiting:
                            self._run_waiting_session()
                        elif self._follow and self._session is None:
                            self._start_session()
                        parked = await self._loop()
                    finally:
                        self._task_group = None
                        if not parked:
                            tg.cancel_scope.cancel()
                        # parked: the session's task ends by itself (it was asked to)
                if not (parked and self._poked):
                    break
        finally:
            self._running = False
        if parked:
            return
        if self._stopped:
            self._release()
        self.ended = True

    def _release(self) -> None:
        """A stopped runtime lets go of what points back at it: its session (whose queue wakes
        it through ``_poke``), the registry's turn-end callback (which holds the thread's
        record, which holds this runtime) and its requests' way to submit answers. An unloaded
        thread is then freed by reference counting as soon as the registry forgets its record,
        instead of waiting, history and all, as cyclic garbage for the collector's next full
        pass: a soak of 30 clients left 100,000 such objects (30 MB) waiting, and the
        allocator's arenas they had filled were never given back (issue 23). (The registry's
        callbacks hold the record: ``_open_session`` and ``_on_turn_end`` are partials of it.)"""
        self._session = None
        self._session_waiting = False
        self._open_session = _unloaded
        self._on_turn_end = None
        self._spawn = None
        self.requests.close()

    async def _loop(self) -> bool:
        """``True``: the thread is idle and the task may end (``_park``); ``False``: stopped."""
        listener = self.listener
        while True:
            session = self._session
            if self._unsent:
                events, self._unsent = self._unsent, []
            elif self._held:
                events = self._release_held()
            else:
                events = session.take_events() if session is not None else []
            if events:
                self._process(events)
                if listener.congested:
                    await listener.wait_writable()
                continue
            if self._session_done:
                self._on_session_end()
            if self._stopped and (session is None or self._session_done):
                return False
            if self._spawn is not None and self._park():
                self._poked = False  # from here on, a poke has ``run`` go round again
                return True
            self._check_interrupt_deadline()
            self._wake = anyio.Event()
            deadline = self._deadline()
            if math.isinf(deadline):
                await self._wake.wait()
            else:
                with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                    await self._wake.wait()
            self._wake = None

    def _park(self) -> bool:
        """Whether the task may end now: no turn, nothing held back, the thread not followed
        nor stopped, and a session that is gone, ended, or lets its task go too."""
        if self._turn is not None or self._held or self._unsent or self._follow or self._stopped:
            return False
        session = self._session
        if session is None or self._session_done or self._session_waiting:
            return True
        if isinstance(session, ParkableSession) and session.park():
            self._session_waiting = True  # its task returns by itself; ``run`` starts it again
            return True
        return False

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()
        self._poked = True
        if not self._running and self._spawn is not None and not self.ended:
            self.start()

    def _submit(self, submission: Submission) -> None:
        session = self._session
        if session is None or self._session_done:
            session = self._start_session()
        session.submit(submission)
        self._poke()  # a session may produce while taking a submission

    def _submit_answer(self, submission: Submission) -> None:
        """A client's answer to a server request, for the session that asked (if still there)."""
        session = self._session
        if session is None or self._session_done:
            logger.debug("thread %s: no session for %s", self.thread_id, submission.op.type)
            return
        session.submit(submission)
        self._poke()

    def _start_session(self) -> CoreSession:
        session = self._open_session()
        self._session = session
        self._session_done = False
        self._session_waiting = True
        if self._task_group is not None:
            self._run_waiting_session()
        elif self._spawn is None and not self._running:
            raise RuntimeError("the thread runtime is not running")
        return session

    def _run_waiting_session(self) -> None:
        session = self._session
        assert session is not None
        assert self._task_group is not None
        self._session_waiting = False
        self._task_group.start_soon(self._run_session, session)

    async def _run_session(self, session: CoreSession) -> None:
        try:
            with anyio.CancelScope() as scope:
                if session is self._session:
                    self._session_scope = scope
                await session.run(self._poke)
        except Exception:
            logger.exception("thread %s: the event source failed", self.thread_id)
        finally:
            if session is self._session:
                self._session_scope = None
                if not self._session_waiting:  # else parked: it has not ended
                    self._session_done = True
                    self._poke()

    def _drop_session(self) -> None:
        """Stop using a session that no longer answers; the next submission opens a new one."""
        if self._session_scope is not None:
            self._session_scope.cancel()
        self._session = None
        self._session_scope = None
        self._session_done = False
        self._session_waiting = False

    def _deadline(self) -> float:
        turn = self._turn
        if turn is None or turn.interrupt_deadline is None:
            return math.inf
        if self._held:
            return anyio.current_time() + _SETTLE_POLL
        return turn.interrupt_deadline

    def _settling(self, turn: _Turn) -> bool:
        """An interrupted turn's end waits: interrupt requests are still in flight."""
        if turn.interrupt_deadline is None or not self._pending_interrupts():
            return False
        now = anyio.current_time()
        if turn.settle_at is None:
            turn.settle_at = now + INTERRUPT_SETTLE
        return now < turn.settle_at

    def _release_held(self) -> list[EventEnvelope]:
        turn = self._turn
        if turn is not None and self._settling(turn):
            return []
        session = self._session
        events = self._held + (session.take_events() if session is not None else [])
        self._held = []
        return events

    def _process(self, events: list[EventEnvelope]) -> None:
        listener = self.listener
        process_delta = listener.process_delta
        for index, envelope in enumerate(events):
            if listener.congested and index:
                # a subscriber has more waiting than its mark: the rest waits for it (a source
                # never outruns delivery, however large its batch)
                self._unsent = events[index:]
                return
            turn = self._turn
            if turn is not None and turn.opened and envelope.id == turn.turn_id:
                # a streaming delta of the running turn (most of a stream): it changes no turn
                # state, is never kept and asks nothing, so it goes straight to the listener
                try:
                    if process_delta(envelope):
                        if self.tap is not None:
                            self.tap(envelope)
                        continue
                except Exception:  # a bug must not stop the thread
                    logger.exception("thread %s: could not process a delta", self.thread_id)
                    continue
            if (
                turn is not None
                and turn.interrupt_deadline is not None
                and envelope.id == turn.turn_id
                and envelope.msg.type in TURN_END_TYPES
                and self._settling(turn)
            ):
                self._held = events[index:]
                return
            self._on_event(envelope)

    # --- events -------------------------------------------------------------------------------

    def _on_event(self, envelope: EventEnvelope) -> None:
        turn = self._turn
        kind = envelope.msg.type
        if turn is not None and envelope.id == turn.turn_id:
            if not turn.opened:
                turn.opened = True
                if kind not in TURN_START_TYPES:
                    self._feed(self._started(turn))
            if kind in TURN_END_TYPES:
                self._end_turn(envelope)
                return
        elif self._abandoned is not None and envelope.id in self._abandoned:
            logger.debug("thread %s: dropping %s of an aborted turn", self.thread_id, kind)
            return
        elif turn is None and kind in TURN_START_TYPES:
            # a turn the session started by itself (input that arrived as the previous turn
            # ended): the runtime follows it as the running turn, so it can be interrupted,
            # steered and ended like any other
            self._turn = _Turn(envelope.id, now_ms(), opened=True)
        self._feed(envelope)

    def _feed(self, envelope: EventEnvelope) -> None:
        kind = envelope.msg.type
        if self.tap is not None:
            self.tap(envelope)
        if kind in HISTORY_EVENT_TYPES:
            self.log.append(envelope)
            if self.sink is not None:
                self.sink(envelope)
        try:
            self.requests.feed(envelope)
        except Exception:  # a bug must not stop the thread
            logger.exception("thread %s: could not process %s", self.thread_id, envelope.msg.type)

    def _started(self, turn: _Turn) -> EventEnvelope:
        return EventEnvelope.trusted(
            turn.turn_id, task_started_event(turn.turn_id, turn.accepted_at_ms)
        )

    def _end_turn(self, terminal: EventEnvelope) -> None:
        turn = self._turn
        assert turn is not None
        self._turn = None
        for reply in turn.interrupt_replies:
            reply.resolve({})
        if self._on_turn_end is not None:
            self._on_turn_end(terminal)
        self._feed(terminal)
        self.log.freeze()  # the turn's events are read again only by thread/read & co

    def _check_interrupt_deadline(self) -> None:
        turn = self._turn
        if turn is None or turn.interrupt_deadline is None or self._held:
            return
        if anyio.current_time() < turn.interrupt_deadline:
            return
        logger.warning(
            "thread %s: the source did not end interrupted turn %s within %.1f s; aborting it",
            self.thread_id,
            turn.turn_id,
            self._grace,
        )
        if self._abandoned is None:
            self._abandoned = deque(maxlen=_ABANDONED_KEPT)
        self._abandoned.append(turn.turn_id)
        self._drop_session()
        if not turn.opened:
            turn.opened = True
            self._feed(self._started(turn))
        aborted = aborted_turn(turn.turn_id, turn.accepted_at_ms, now_ms())
        self._end_turn(EventEnvelope.trusted(turn.turn_id, aborted))

    def _on_session_end(self) -> None:
        turn = self._turn
        if turn is None:
            return
        message = "codex-app-bridge: the event source stopped before the turn ended"
        if not turn.opened:
            turn.opened = True
            self._feed(self._started(turn))
        error, failed = failed_turn(
            turn.turn_id, message, started_at_ms=turn.accepted_at_ms, completed_at_ms=now_ms()
        )
        self._feed(EventEnvelope.trusted(turn.turn_id, error))
        self._end_turn(EventEnvelope.trusted(turn.turn_id, failed))


def _unloaded() -> CoreSession:
    raise RuntimeError("the thread was unloaded: its runtime opens no session")


def _json(value: object) -> JsonValue:
    """A wire model as plain JSON data (the op carries Codex's JSON, not our models)."""
    data: JsonValue = dump_jsonable(value)
    return data
