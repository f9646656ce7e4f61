"""The two-way source contract: Codex core's own queues, for one thread.

A thread's runtime (``server``) talks to whatever produces its events the way a Codex client
talks to core: it *submits* ``Submission`` s (``{id, op}``: ``user_turn``, ``user_input``,
``interrupt``, approval decisions, ``shutdown``, ...) and *reads* ``EventEnvelope`` s
(``{id, msg}``) for the whole thread, in order, turn after turn. A ``CoreSession`` is that pair of
queues:

* ``submit(submission)``: never blocks; the session takes it in order.
* ``take_events()``: every event produced since the last call (possibly none), oldest first.
* ``run(ready)``: the session's own task, run by the runtime for the thread's lifetime; it calls
  ``ready()`` whenever events become available (the runtime then takes them) and returns when the
  session has ended (after ``shutdown``, or when its producer is gone). It never raises for
  a producer's fault: it reports it as events and returns.

A session that has nothing to do may let its task go while the thread waits (``ParkableSession``:
``TurnPlayer``): ``park()`` answers whether it will; if so, ``run`` returns once its current step
is over, without ending the session, what is submitted meanwhile waits in its queue, and the
runtime calls ``run`` again before it expects events. An idle loaded thread then holds no task
(two tasks, their coroutines, cancel scopes and events: ~10 KiB of small objects each, issue 23).

Flow: a session keeps at most about ``EVENT_HIGH_WATER`` events waiting; past that it stops
producing until the runtime has taken them, so a producer is never read faster than clients take
its events and memory stays bounded whatever it streams.

An ``EventSource`` opens one session per thread (``open_session``). Sources that produce one turn
at a time as an async iterator of ``EventMsg`` (``TurnSource``: the built-in agent, scripts, test
fakes) are adapted by ``TurnPlayer``, which plays Codex core's part: a ``user_turn`` (or
``user_input`` while idle) starts the next turn with the submission id as the turn id,
``user_input`` during a turn is steered into it (its user-message item enters before the turn's
next event), an answer op (``exec_approval``, ``patch_approval``, ``user_input_answer``, ...) goes
to the playing turn's ``TurnRequest.replies`` (a source that asked awaits it there; one that
arrives while no turn plays is dropped), ``interrupt`` stops pulling at once and ends the turn
with ``turn_aborted`` (ops queued behind a turn's ``user_turn`` before the session's task took
it, a parked one's, act on that turn the same way: ``Inbox.started``), a turn that stops
without a terminal event or raises ends ``failed`` (an ``error`` event, then a failed
``task_complete``), and ``shutdown`` ends the session with
``shutdown_complete``. A turn is over at its terminal event: the source's iterator is then closed
(its clean-up ends before the next turn plays), and what is submitted meanwhile is taken as
after the turn (user input starts the next one, as in core).

Boundary: no connections, no JSON-RPC, no thread state beyond what producing needs.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

import anyio

from codex_app_bridge._scriptfile import ScriptError
from codex_app_bridge.projection import new_item_id, uuid7
from codex_app_bridge.protocol._base import dump_json
from codex_app_bridge.protocol.core import (
    CompactOp,
    ContextCompactionItem,
    ErrorEvent,
    EventEnvelope,
    EventMsg,
    InterruptOp,
    ItemCompletedEvent,
    ItemStartedEvent,
    RunUserShellCommandOp,
    ShutdownCompleteEvent,
    ShutdownOp,
    Submission,
    TaskCompleteEvent,
    TaskError,
    TokenCountEvent,
    TokenUsage,
    UserInput,
    UserInputOp,
    UserMessageItem,
    UserTurnOp,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.sources._base import (
    TURN_END_TYPES,
    TURN_START_TYPES,
    SourceDefaults,
    TurnRequest,
    aborted_turn,
    failed_turn,
    task_started_event,
    user_message_events,
)
from codex_app_bridge.sources._replies import ANSWER_OP_TYPES, Replies

if TYPE_CHECKING:
    from codex_app_bridge.sources._goals import ThreadGoals

__all__ = [
    "EVENT_HIGH_WATER",
    "CoreSession",
    "EventQueue",
    "EventSource",
    "Inbox",
    "ParkableSession",
    "RunningTurn",
    "SessionConfig",
    "TurnPlayer",
    "TurnSource",
    "open_session",
]

logger = logging.getLogger(__name__)

EVENT_HIGH_WATER: Final = 1024
"""Events a session keeps waiting for the runtime before it stops producing."""
NO_USER_SHELL: Final = (
    "thread/shellCommand: this thread's source runs no commands on this machine (commands run "
    "on threads of the model source: serve with a model provider)"
)
_PLAYED_KEPT: Final = 64


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """What a session is opened with: the thread and its settings at that point."""

    thread_id: str
    model: str
    cwd: str
    first_turn_index: int = 0
    """``TurnRequest.turn_index`` of the first turn this session plays (turns already in the
    thread's history, e.g. of a fork, count)."""
    prior_items: Sequence[Mapping[str, Any]] = ()
    """The thread's model-visible history before this session opened (a resumed, forked or
    reloaded thread): the ``ResponseItem`` s, as JSON objects, that Codex core rebuilds from the
    rollout (its ``response_item`` lines, a compaction's replacement history applied); empty for a
    new thread. A source that calls a model starts its context from them."""
    settings: object | None = None
    """The thread's resolved settings (the server's ``config.EffectiveConfig``; opaque here): a
    model source reads the provider, model, instructions and permissions from it. ``None``:
    the source resolves its own defaults."""
    originator: str | None = None
    """``clientInfo.name`` of the first client that initialized (Codex's ``originator``)."""
    user_agent: str | None = None
    """The user agent the server answered ``initialize`` with (sent to the model provider)."""
    installation_id: str | None = None
    dynamic_tools: Sequence[Mapping[str, Any]] = ()
    """thread/start ``dynamicTools`` (``{name, description, inputSchema}``): tools the client runs."""
    history_initialization: str = "new"
    """How the history came to be: ``new``, ``cold_resume`` (read back from storage) or
    ``warm_fork`` (a fork of a loaded thread), as Codex's turn metadata names it."""
    goals: ThreadGoals | None = None
    """The server's goals (``ThreadGoals``, their one owner): a model source answers the goal
    tools from them and charges a goal its turns' tokens. ``None``: no goals."""
    token_total: TokenUsage | None = None
    """The ``total_token_usage`` of the last ``token_count`` in the thread's history before
    this session opened (core seeds its usage from it on resume and fork); ``None``: none."""
    forked_from: tuple[str, int] | None = None
    """A ``warm_fork``'s parent: ``(thread id, end of the copied history, exclusive)``, the end
    counted in the parent's history log (what the turn metadata's ``forked_from_*`` carry)."""


@runtime_checkable
class CoreSession(Protocol):
    """One thread's submission and event queues (see the module docstring)."""

    def submit(self, submission: Submission) -> None: ...

    def take_events(self) -> list[EventEnvelope]: ...

    async def run(self, ready: Callable[[], None]) -> None: ...


@runtime_checkable
class ParkableSession(CoreSession, Protocol):
    """A session whose task can end while it is idle, the session staying open (see the module
    docstring)."""

    def park(self) -> bool:
        """``True``: nothing plays and nothing waits, and ``run`` returns once its current step
        is over (called again later, with the same ``ready``); ``False``: it runs on."""
        ...


@runtime_checkable
class EventSource(Protocol):
    """Opens a session per thread."""

    @property
    def defaults(self) -> SourceDefaults: ...

    def open_session(self, config: SessionConfig) -> CoreSession: ...


@runtime_checkable
class TurnSource(Protocol):
    """Produces the core events of one turn at a time (adapted by ``TurnPlayer``)."""

    @property
    def defaults(self) -> SourceDefaults: ...

    def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        """The events of the turn ``request`` describes (an async generator, usually)."""
        ...


class EventQueue:
    """The event half of a session: what it produced, waiting for the runtime to take it.

    ``emit`` appends and calls the runtime's ``ready`` when the queue stops being empty;
    ``take`` hands everything over and wakes a producer waiting for room; ``wait_for_room``
    returns once fewer than ``EVENT_HIGH_WATER`` events wait (or ``release`` was called, for a
    session that ends while its producer waits).
    """

    __slots__ = ("_events", "_ready", "_room")

    def __init__(self) -> None:
        self._events: list[EventEnvelope] = []
        self._ready: Callable[[], None] = _nothing
        self._room: anyio.Event | None = None

    def __len__(self) -> int:
        return len(self._events)

    @property
    def full(self) -> bool:
        return len(self._events) >= EVENT_HIGH_WATER

    def attach(self, ready: Callable[[], None]) -> None:
        """The runtime's ``ready`` callback (called now if events are already waiting)."""
        self._ready = ready
        if self._events:
            ready()

    def emit(self, envelope: EventEnvelope) -> None:
        self._events.append(envelope)
        if len(self._events) == 1:
            self._ready()

    def take(self) -> list[EventEnvelope]:
        events, self._events = self._events, []
        self.release()
        return events

    def release(self) -> None:
        """Wake a producer waiting for room."""
        if self._room is not None:
            self._room.set()
            self._room = None

    async def wait_for_room(self, stop: Callable[[], bool] = lambda: False) -> None:
        while self.full and not stop():
            self._room = anyio.Event()
            await self._room.wait()


class RunningTurn(Protocol):
    """What ``Inbox.submit`` acts on at once while a session runs a turn."""

    scope: anyio.CancelScope
    steers: list[Sequence[UserInput]]
    replies: Replies
    interrupted: bool


class Inbox:
    """The submission half of a session: ``submit`` does at once what core does with an op
    while a turn runs (an interrupt cancels it, input steers it, an answer resolves its
    request) and queues the rest for the session's task, which takes them with ``next``.
    An answer with no turn to take it is dropped."""

    __slots__ = ("_label", "_parking", "_pending", "_wake")

    def __init__(self, label: object) -> None:
        self._label = label
        """Names the session in the log."""
        self._pending: list[Submission] = []
        """A list, not a deque: a deque's first block (~0.6 KiB) would stay for the thread's
        life, and a session rarely has more than one submission waiting."""
        self._wake: anyio.Event | None = None
        self._parking = False

    @property
    def pending(self) -> bool:
        """Submissions wait to be taken."""
        return bool(self._pending)

    def park(self) -> None:
        """Have the next ``next_or_park`` return ``None`` at once, what waits staying queued."""
        self._parking = True
        if self._wake is not None:
            self._wake.set()

    def submit(self, submission: Submission, running: RunningTurn | None) -> None:
        op = submission.op
        if running is not None and _act_on(running, submission):
            return
        if isinstance(op, ANSWER_OP_TYPES):
            logger.debug("%s: dropping %s: no turn is running", self._label, op.type)
            return
        self._pending.append(submission)
        if self._wake is not None:
            self._wake.set()

    def started(self, running: RunningTurn) -> None:
        """The session's task has taken a submission that starts a turn: what was queued behind
        it was sent for that turn (the runtime saw it running as soon as it asked; the session's
        task had not run yet, e.g. a parked one), so it acts on it now as ``submit`` would have,
        in order, up to the first that waits for the turn's end or the interrupt that ends it."""
        while self._pending and not running.interrupted:
            if not _act_on(running, self._pending[0]):
                return
            del self._pending[0]

    async def next(self) -> Submission:
        """The oldest submission queued, once there is one (for a session that never calls
        ``park``)."""
        submission = await self.next_or_park()
        if submission is None:
            raise RuntimeError(f"{self._label}: parked, but its session does not park")
        return submission

    async def next_or_park(self) -> Submission | None:
        """The oldest submission queued, once there is one; or ``None`` once ``park`` was
        called (before anything else is taken)."""
        while True:
            if self._parking:
                self._parking = False
                return None
            if self._pending:
                return self._pending.pop(0)
            self._wake = anyio.Event()
            await self._wake.wait()
            self._wake = None


def _act_on(running: RunningTurn, submission: Submission) -> bool:
    """Do what core does at once with ``submission`` while a turn runs; ``False``: it waits
    for the turn's end."""
    op = submission.op
    if isinstance(op, InterruptOp):
        running.interrupted = True
        running.scope.cancel()
        return True
    if isinstance(op, UserInputOp | UserTurnOp):
        running.steers.append(list(op.items))
        return True
    return running.replies.put(op)


def open_session(source: EventSource | TurnSource, config: SessionConfig) -> CoreSession:
    """The session of ``source`` for a thread (a ``TurnSource`` is played by ``TurnPlayer``)."""
    if isinstance(source, EventSource):
        return source.open_session(config)
    return TurnPlayer(source, config)


@dataclass(slots=True)
class _Playing:
    turn_id: str
    started_at_ms: int
    scope: anyio.CancelScope
    steers: list[Sequence[UserInput]]
    replies: Replies
    interrupted: bool = False


class TurnPlayer:
    """Plays a ``TurnSource`` as a ``CoreSession`` (see the module docstring)."""

    def __init__(self, source: TurnSource, config: SessionConfig) -> None:
        self._source = source
        self._config = config
        self._inbox = Inbox(config)
        self._queue = EventQueue()
        self._playing: _Playing | None = None
        self._turns = config.first_turn_index
        self._token_total = None if config.token_total is None else dump_json(config.token_total)
        """The thread's token usage so far, as JSON: a model would be six small objects kept
        for as long as the thread is loaded; it is read once per turn (``TurnRequest``)."""
        self._ended = False
        self._played: list[str] = []
        """Ids of the turns played lately (the last ``_PLAYED_KEPT``): input steered into one of
        them after its end plays as a turn of its own, under a new id (never a second turn of
        the same id). A list, not a bounded deque, whose first block (~0.6 KiB) would stay for
        the thread's life."""

    # --- the contract -------------------------------------------------------------------------

    def submit(self, submission: Submission) -> None:
        self._inbox.submit(submission, self._playing)

    def take_events(self) -> list[EventEnvelope]:
        return self._queue.take()

    async def run(self, ready: Callable[[], None]) -> None:
        self._queue.attach(ready)
        while not self._ended:
            submission = await self._inbox.next_or_park()
            if submission is None:
                return  # parked: the runtime runs the session again for its next submission
            await self._take(submission)
            del submission  # nothing of a turn stays referenced while the session waits

    def park(self) -> bool:
        """Let the session's task go while the thread is idle (``ParkableSession``): nothing
        plays, nothing waits, and the session has not ended."""
        if self._ended or self._playing is not None or self._inbox.pending:
            return False
        self._inbox.park()
        return True

    async def _take(self, submission: Submission) -> None:
        """One submission taken while no turn plays (a method of its own, so that nothing of
        it, the turn's input included, stays referenced while the session waits for the next)."""
        op = submission.op
        if isinstance(op, UserTurnOp | UserInputOp):
            turn_id = submission.id
            if turn_id in self._played:
                # steered into a turn that ended meanwhile (the runtime had not seen its
                # end yet): core takes it as the next turn, and the runtime follows a turn
                # the session starts; reusing the id would make two turns of one id
                turn_id = str(uuid7())
            await self._play(turn_id, op)
        elif isinstance(op, ShutdownOp):
            self._emit(EventEnvelope.trusted(submission.id, ShutdownCompleteEvent()))
            self._ended = True
        elif isinstance(op, CompactOp):
            self._compaction_turn(submission.id)
        elif isinstance(op, RunUserShellCommandOp):
            self._refused_turn(submission.id, NO_USER_SHELL)
        elif not isinstance(op, InterruptOp):  # an interrupt while idle has nothing to stop
            logger.debug("%s: ignoring %s (not a turn source's op)", self._config, op.type)

    # --- producing ----------------------------------------------------------------------------

    def _compaction_turn(self, turn_id: str) -> None:
        """A ``compact`` op: a turn source has no model to summarize with, so the turn shows a
        compaction item and leaves the history as it is (a model source replaces it)."""
        started = now_ms()
        item = ContextCompactionItem(id=new_item_id())
        thread_id = self._config.thread_id
        for event in (
            task_started_event(turn_id, started),
            ItemStartedEvent(
                thread_id=thread_id, turn_id=turn_id, item=item, started_at_ms=started
            ),
            ItemCompletedEvent(
                thread_id=thread_id,
                turn_id=turn_id,
                item=item,
                started_at_ms=started,
                completed_at_ms=now_ms(),
            ),
            TaskCompleteEvent(
                turn_id=turn_id,
                root_turn_id=turn_id,
                last_agent_message=None,
                started_at=started // 1000,
                completed_at=now_ms() // 1000,
                duration_ms=max(0, now_ms() - started),
            ),
        ):
            self._emit(EventEnvelope.trusted(turn_id, event))

    def _refused_turn(self, turn_id: str, message: str) -> None:
        """An op a turn source cannot do (it runs nothing on the machine): a failed turn that
        says why, so the thread is idle again."""
        started = now_ms()
        error = TaskError(message=message, codex_error_info="other")
        for event in (
            task_started_event(turn_id, started),
            ErrorEvent(message=message, codex_error_info="other"),
            TaskCompleteEvent(
                turn_id=turn_id,
                root_turn_id=turn_id,
                last_agent_message=None,
                error=error,
                started_at=started // 1000,
                completed_at=now_ms() // 1000,
                duration_ms=max(0, now_ms() - started),
            ),
        ):
            self._emit(EventEnvelope.trusted(turn_id, event))

    def _emit(self, envelope: EventEnvelope) -> None:
        self._queue.emit(envelope)

    def _emit_steers(self, playing: _Playing) -> None:
        while playing.steers:
            inputs = playing.steers.pop(0)
            item = UserMessageItem(id=new_item_id(), content=list(inputs))
            for event in user_message_events(
                self._config.thread_id, playing.turn_id, item, now_ms()
            ):
                self._emit(EventEnvelope.trusted(playing.turn_id, event))

    async def _play(self, turn_id: str, op: UserTurnOp | UserInputOp) -> None:
        model = op.model if isinstance(op, UserTurnOp) else self._config.model
        cwd = op.cwd if isinstance(op, UserTurnOp) else self._config.cwd
        request = TurnRequest(
            thread_id=self._config.thread_id,
            turn_id=turn_id,
            input=list(op.items),
            user_message_id=new_item_id(),
            turn_index=self._turns,
            model=model,
            cwd=cwd,
            replies=Replies(turn_id),
            token_total=(
                None
                if self._token_total is None
                else TokenUsage.model_validate_json(self._token_total)
            ),
        )
        self._turns += 1
        self._played.append(turn_id)
        if len(self._played) > _PLAYED_KEPT:
            del self._played[0]
        playing = _Playing(turn_id, request.started_at_ms, anyio.CancelScope(), [], request.replies)
        self._playing = playing
        self._inbox.started(playing)
        failure: str | None = None
        ended = False
        queue = self._queue
        emit, wrap = queue.emit, EventEnvelope.trusted
        try:
            with playing.scope:
                try:
                    async with aclosing(self._events(request)) as events:
                        async for event in events:
                            kind = event.type
                            if playing.steers and kind not in TURN_START_TYPES:
                                self._emit_steers(playing)
                            emit(wrap(turn_id, event))
                            if kind == "token_count":
                                self._count_tokens(event)
                            elif kind in TURN_END_TYPES:
                                # the turn is over now, while its source still closes: what
                                # is submitted from here on is for what comes after it
                                self._playing = None
                                ended = True
                                break
                            if queue.full:
                                await queue.wait_for_room()
                except ScriptError as exc:  # a bad recorded line: its message says it all
                    logger.error("turn %s failed: %s", turn_id, exc)
                    failure = f"codex-app-bridge: the event source failed: {exc}"
                except Exception as exc:
                    logger.exception("event source failed during turn %s", turn_id)
                    failure = f"codex-app-bridge: the event source failed: {exc}"
        finally:
            self._playing = None
        if ended:
            return
        self._emit_steers(playing)
        if playing.interrupted and failure is None:
            self._emit(
                EventEnvelope.trusted(
                    turn_id, aborted_turn(turn_id, playing.started_at_ms, now_ms())
                )
            )
            return
        message = failure or (
            "codex-app-bridge: the event source ended the turn without task_complete"
        )
        ending = failed_turn(
            turn_id, message, started_at_ms=playing.started_at_ms, completed_at_ms=now_ms()
        )
        for event in ending:
            self._emit(EventEnvelope.trusted(turn_id, event))

    def _count_tokens(self, event: EventMsg) -> None:
        if isinstance(event, TokenCountEvent) and event.info is not None:
            self._token_total = dump_json(event.info.total_token_usage)

    async def _events(self, request: TurnRequest) -> AsyncGenerator[EventMsg]:
        # Wrapped so that a source failing to even begin fails on the first pull, like any other,
        # and so that closing the turn closes the source's own iterator: its clean-up runs
        # before the next turn plays, not whenever the event loop finalizes it.
        events = self._source.turn(request)
        try:
            async for event in events:
                yield event
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()


def _nothing() -> None:
    return None
