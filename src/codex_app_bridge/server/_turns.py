"""The turn runner: plays one turn of an event source into a thread's listener.

``TurnRun.run`` pulls the source's events one at a time and feeds each, wrapped in
``EventEnvelope(id=turn_id, msg=event)``, to the thread's listener (which reduces it and fans the
notifications out), appending it to the thread's event log first. It owns what no source should
have to get right:

* **Order across turns**: a run waits until the previous run on the thread has fed its last event.
* **Start**: the first event fed is always ``task_started`` (synthesized if the source does not
  begin with one), so the listener knows the turn before anything else, even an interrupt.
* **Interrupt** (``interrupt()``): the pull is cancelled at once (the source's pacing ``await``
  included), the source is closed, and a ``turn_aborted`` (``reason: "interrupted"``, with
  timings) is fed. Events already pulled are still fed; nothing half-fed is ever cut.
* **Steering** (``steer()``): the steered input becomes a ``UserMessage`` item
  (``item_started`` + ``item_completed``) fed before the next event of the turn.
* **Ending**: a source that stops without a terminal event, or raises, gets an ``error`` and a
  failed ``task_complete`` fed for it, so clients always see ``turn/completed``. The thread's
  ``active_run`` is cleared just before the terminal event is fed (a ``turn/start`` that reacts to
  ``turn/completed`` starts a new turn), and ``done`` is set once it has been fed.
* **End hooks** (``add_end_hook``): run once when the terminal event has been reduced, before its
  notifications are fanned out (through the listener's turn-end hook), or right after it was fed
  if the listener did not run them; ``turn/interrupt`` answers from one.

Boundary: no connections, no JSON-RPC; the handlers create runs and call ``interrupt``/``steer``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING

import anyio

from codex_app_bridge.protocol.core import (
    ErrorEvent,
    EventEnvelope,
    EventMsg,
    TaskCompleteEvent,
    TurnAbortedEvent,
    UserInput,
    UserMessageItem,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.sources import (
    TURN_END_TYPES,
    TURN_START_TYPES,
    EventSource,
    TurnRequest,
    failed_task_complete,
    task_started_event,
    user_message_events,
)

if TYPE_CHECKING:
    from codex_app_bridge.server._threads import ThreadRecord

__all__ = ["EndHook", "TurnRun"]

logger = logging.getLogger(__name__)

EndHook = Callable[[], Awaitable[None]]


class TurnRun:
    """One turn being played on one thread (see the module docstring)."""

    def __init__(
        self,
        record: ThreadRecord,
        source: EventSource,
        request: TurnRequest,
        *,
        previous: TurnRun | None = None,
    ) -> None:
        self.record = record
        self.source = source
        self.request = request
        self.turn_id = request.turn_id
        self.done = anyio.Event()
        self._previous = previous
        self._interrupted = False
        self._pull_scope: anyio.CancelScope | None = None
        self._steers: list[tuple[str, list[UserInput]]] = []
        self._end_hooks: list[EndHook] = []
        self._ended = False
        self._terminal_fed = False

    # ------------------------------------------------------------------ control (from handlers)

    @property
    def interrupted(self) -> bool:
        return self._interrupted

    def interrupt(self) -> None:
        """Stop the turn: it ends with ``turn_aborted`` (idempotent)."""
        self._interrupted = True
        if self._pull_scope is not None:
            self._pull_scope.cancel()

    def steer(self, message_id: str, inputs: Sequence[UserInput]) -> None:
        """Add user input to the running turn (fed before the turn's next event)."""
        self._steers.append((message_id, list(inputs)))

    def add_end_hook(self, hook: EndHook) -> None:
        """Run ``hook`` once the turn's terminal event is reduced (see the module docstring)."""
        if self._ended:
            raise RuntimeError("the turn has already ended")
        self._end_hooks.append(hook)

    # ------------------------------------------------------------------ running

    async def run(self) -> None:
        try:
            if self._previous is not None:
                await self._previous.done.wait()
                self._previous = None
            try:
                await self._play()
            except Exception:
                # A bug must not take the server down with it: end the turn if we still can.
                logger.exception("turn %s failed", self.turn_id)
                if not self._terminal_fed:
                    with contextlib.suppress(Exception):
                        await self._feed_terminal(
                            self._failed("codex-app-bridge: internal error while running the turn")
                        )
        finally:
            if self.record.active_run is self:
                self.record.active_run = None
            self.done.set()

    async def _play(self) -> None:
        started = False
        failure: str | None = None
        events = self._source_events()
        async with aclosing(events):
            while True:
                if self._interrupted and started:
                    break
                event: EventMsg | None = None
                with anyio.CancelScope() as scope:
                    self._pull_scope = scope
                    if self._interrupted and started:
                        scope.cancel()
                    try:
                        event = await anext(events, None)
                    except Exception as exc:
                        logger.exception("event source failed during turn %s", self.turn_id)
                        failure = f"codex-app-bridge: the event source failed: {exc}"
                    finally:
                        self._pull_scope = None
                if scope.cancelled_caught or failure is not None:
                    break
                if event is None:
                    break
                if not started and event.type not in TURN_START_TYPES:
                    await self._feed_started()
                started = True
                await self._feed_steers()
                if event.type in TURN_END_TYPES:
                    await self._feed_terminal(event)
                    return
                await self._feed(event)
        if not started:
            await self._feed_started()
        await self._feed_steers()
        if self._interrupted and failure is None:
            await self._feed_terminal(self._aborted())
            return
        message = failure or (
            "codex-app-bridge: the event source ended the turn without task_complete"
        )
        await self._feed(ErrorEvent(message=message, codex_error_info="other"))
        await self._feed_terminal(self._failed(message))

    async def _source_events(self) -> AsyncGenerator[EventMsg]:
        # Wrapped so that a source failing to even begin fails on the first pull, like any other.
        async for event in self.source.turn(self.request):
            yield event

    # ------------------------------------------------------------------ feeding

    async def _feed(self, event: EventMsg) -> None:
        envelope = EventEnvelope(id=self.turn_id, msg=event)
        self.record.events.append(envelope)
        if self.record.sink is not None:
            await self.record.sink(self.record, envelope)
        await self.record.listener.handle(envelope)
        if event.type in TURN_START_TYPES:
            self.record.listener.add_turn_end_hook(self._run_end_hooks)

    async def _feed_started(self) -> None:
        await self._feed(task_started_event(self.turn_id, self.request.started_at_ms))

    async def _feed_steers(self) -> None:
        while self._steers:
            message_id, inputs = self._steers.pop(0)
            item = UserMessageItem(id=message_id, content=inputs)
            for event in user_message_events(self.record.id, self.turn_id, item, now_ms()):
                await self._feed(event)

    async def _feed_terminal(self, event: EventMsg) -> None:
        if self.record.active_run is self:
            self.record.active_run = None
        self.record.touch()
        await self._feed(event)
        self._terminal_fed = True
        # The listener runs the hooks before fanning the terminal event out; if it skipped the
        # event (or had no turn), run them now so that nobody waits forever.
        await self._run_end_hooks()

    async def _run_end_hooks(self) -> None:
        if self._ended:
            return
        self._ended = True
        hooks, self._end_hooks = self._end_hooks, []
        for hook in hooks:
            try:
                await hook()
            except Exception:
                logger.exception("turn end hook failed for turn %s", self.turn_id)

    # ------------------------------------------------------------------ synthesized terminals

    def _aborted(self) -> TurnAbortedEvent:
        now = now_ms()
        started = self.request.started_at_ms
        return TurnAbortedEvent(
            root_turn_id=self.turn_id,
            turn_id=self.turn_id,
            reason="interrupted",
            started_at=started // 1000,
            completed_at=now // 1000,
            duration_ms=max(0, now - started),
        )

    def _failed(self, message: str) -> TaskCompleteEvent:
        return failed_task_complete(
            self.turn_id,
            message,
            started_at_ms=self.request.started_at_ms,
            completed_at_ms=now_ms(),
        )
