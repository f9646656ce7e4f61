"""``--producer "CMD ARGS..."``: a process per thread that speaks Codex core's queues as JSONL.

The contract is the one the former ``codex proto`` mode spoke (Codex core's submission and event
queues, one JSON object per line):

* the bridge writes each ``Submission`` ``{"id": ..., "op": {...}}`` on the producer's **stdin**
  (Codex ``Op`` shapes: ``user_turn`` with the turn id as submission id, ``user_input`` to steer
  the running turn, ``interrupt``, approval decisions, ``shutdown``);
* the producer writes event envelopes ``{"id": <turn id>, "msg": <EventMsg>}`` on its **stdout**,
  each validated once (``parse_event_envelope``); a line that is not one is logged with its
  content (cut to ``CUT`` characters) and reported to the thread's clients as a ``warning``, and
  the turn goes on;
* its **stderr** goes to the bridge's log, line by line (logger
  ``codex_app_bridge.sources.producer``, level WARNING, so that it shows by default).

The process is started with the bridge's working directory and environment plus
``CODEX_APP_BRIDGE_THREAD_ID`` (the thread's id, for the ``thread_id`` fields of item events),
``CODEX_APP_BRIDGE_MODEL``, ``CODEX_APP_BRIDGE_CWD`` (the thread's settings when it was opened)
and ``CODEX_APP_BRIDGE_FIRST_TURN_INDEX``.

One process per thread (``open_session``), started when the thread's first turn is submitted:
threads are isolated (a producer that dies or floods touches its own thread only) and a producer
needs no multiplexing. Faults, and what the thread's runtime sees:

* it exits or is killed (mid-turn or not): ``run`` returns; a turn still running first gets an
  ``error`` event and a failed ``task_complete`` saying the producer stopped and with what exit
  status; the next submission opens a new session, hence a new process;
* it cannot be started (``open_process`` fails): the same, with the OS error;
* it floods: reading stops while ``EVENT_HIGH_WATER`` events wait for the runtime, so the pipe
  fills and the producer blocks; memory stays bounded by that, one pipe buffer and ``LINE_LIMIT``;
* a line longer than ``LINE_LIMIT`` is skipped up to its end and reported like a bad line;
* it ignores an ``interrupt``: the runtime aborts the turn itself after its grace period and
  drops the session, which kills the process; a session that ends (exit, kill, stdout closed)
  after the running turn was interrupted ends it ``interrupted`` (``turn_aborted``), as core
  does with an interrupted task, not failed;
* ``shutdown``: written, then stdin is closed; the process has ``stop_grace`` seconds to exit
  before it is killed. A session cancelled (the server stops) kills its process at once.

``ProducerSource.check()`` verifies that the command's program exists and is executable
(``ProducerError`` otherwise). ``serve`` runs the same check (``_producer_command``) at start-up,
before it loads this module, and exits 2 when it fails.

Boundary: no connections, no JSON-RPC, no thread state beyond what the turn in flight needs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import subprocess
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import anyio
import anyio.abc
from pydantic import ValidationError

from codex_app_bridge._producer_command import ProducerError, check_program, parse_command
from codex_app_bridge.protocol._base import dump_json
from codex_app_bridge.protocol.core import (
    EventEnvelope,
    InterruptOp,
    ShutdownOp,
    Submission,
    UserInputOp,
    UserTurnOp,
    WarningEvent,
    parse_event_envelope,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.sources._base import TURN_END_TYPES, SourceDefaults, aborted_turn, failed_turn
from codex_app_bridge.sources._session import EventQueue, SessionConfig

__all__ = [
    "CUT",
    "LINE_LIMIT",
    "STOP_GRACE",
    "ProducerError",
    "ProducerSession",
    "ProducerSource",
    "parse_command",
]

logger = logging.getLogger(__name__)

LINE_LIMIT: Final = 16 * 1024 * 1024
"""Longest stdout line (bytes) taken as an event; a longer one is skipped and reported."""
CUT: Final = 200
"""Characters of a bad line quoted in the log and in the warning."""
STOP_GRACE: Final = 2.0
"""Seconds a producer has to exit after ``shutdown`` (stdin closed) before it is killed."""

_ENV_PREFIX = "CODEX_APP_BRIDGE_"


def _cut(text: str | bytes) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return text if len(text) <= CUT else text[:CUT] + f"... ({len(text)} characters)"


def _exit_status(code: int | None) -> str:
    if code is None:
        return "is gone (exit status unknown)"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with code {code}"


class ProducerSource:
    """Spawns ``command`` once per thread (see the module docstring)."""

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stop_grace: float = STOP_GRACE,
        model: str = "codex-app-bridge-producer",
        model_provider: str = "codex-app-bridge",
    ) -> None:
        self.argv = parse_command(command)
        self.env = dict(os.environ if env is None else env)
        self.stop_grace = stop_grace
        self._defaults = SourceDefaults(model=model, model_provider=model_provider)

    @property
    def name(self) -> str:
        return shlex.join(self.argv)

    @property
    def defaults(self) -> SourceDefaults:
        return self._defaults

    def check(self) -> None:
        """``ProducerError`` unless the command's program exists and may be executed."""
        check_program(self.argv, self.env.get("PATH"))

    def open_session(self, config: SessionConfig) -> ProducerSession:
        return ProducerSession(self, config)


class ProducerSession:
    """One thread's producer process as a ``CoreSession`` (see the module docstring)."""

    def __init__(self, source: ProducerSource, config: SessionConfig) -> None:
        self._source = source
        self._config = config
        self._to_write: deque[bytes] = deque()
        self._closing = False
        """``shutdown`` was submitted: stdin is closed once it is written."""
        self._queue = EventQueue()
        self._wake: anyio.Event | None = None
        self._turn: tuple[str, int] | None = None
        """The turn in flight (id, submitted at ms): started, without a terminal event yet."""
        self._interrupted = False
        """The turn in flight was interrupted: if the producer ends, it ends interrupted."""
        self._lines = 0
        self.process: anyio.abc.Process | None = None

    # --- the contract -------------------------------------------------------------------------

    def submit(self, submission: Submission) -> None:
        op = submission.op
        if self._closing:
            logger.debug("%s: %s after shutdown, not sent", self._source.name, op.type)
            return
        if isinstance(op, UserTurnOp | UserInputOp) and self._turn is None:
            self._turn = (submission.id, now_ms())
            self._interrupted = False
        if isinstance(op, InterruptOp) and self._turn is not None:
            self._interrupted = True
        if isinstance(op, ShutdownOp):
            self._closing = True
        self._to_write.append(dump_json(submission) + b"\n")
        if self._wake is not None:
            self._wake.set()

    def take_events(self) -> list[EventEnvelope]:
        return self._queue.take()

    async def run(self, ready: Callable[[], None]) -> None:
        self._queue.attach(ready)
        source = self._source
        config = self._config
        env = dict(source.env)
        env[_ENV_PREFIX + "THREAD_ID"] = config.thread_id
        env[_ENV_PREFIX + "MODEL"] = config.model
        env[_ENV_PREFIX + "CWD"] = config.cwd
        env[_ENV_PREFIX + "FIRST_TURN_INDEX"] = str(config.first_turn_index)
        try:
            process = await anyio.open_process(
                source.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
        except OSError as exc:
            reason = f"cannot start the producer `{source.name}`: {exc.strerror or exc}"
            logger.error("thread %s: %s", config.thread_id, reason)
            self._fail(f"codex-app-bridge: {reason}")
            return
        self.process = process
        logger.info(
            "thread %s: producer `%s` started (pid %s)", config.thread_id, source.name, process.pid
        )
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._write, process)
                tg.start_soon(self._log_stderr, process)
                await self._read(process)
                # stdout is closed: the process is exiting (or closed it and lingers)
                with anyio.move_on_after(source.stop_grace):
                    await process.wait()
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await _reap(process)
        status = _exit_status(process.returncode)
        if self._closing:
            logger.info("thread %s: producer %s after shutdown", config.thread_id, status)
            if self._turn is None:
                return
        self._fail(f"codex-app-bridge: the producer `{source.name}` {status} before the turn ended")

    # --- the process --------------------------------------------------------------------------

    async def _write(self, process: anyio.abc.Process) -> None:
        stdin = process.stdin
        assert stdin is not None
        try:
            while True:
                while self._to_write:
                    await stdin.send(self._to_write.popleft())
                if self._closing:
                    break
                self._wake = anyio.Event()
                await self._wake.wait()
                self._wake = None
            await stdin.aclose()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._to_write.clear()  # the producer closed its stdin or exited: stdout tells
            return
        # after shutdown: a producer that does not exit in time is killed
        await anyio.sleep(self._source.stop_grace)
        if process.returncode is None:
            logger.warning(
                "thread %s: producer did not exit %.1f s after shutdown; killing it",
                self._config.thread_id,
                self._source.stop_grace,
            )
            process.kill()

    async def _log_stderr(self, process: anyio.abc.Process) -> None:
        stream = process.stderr
        assert stream is not None
        pending = bytearray()
        prefix = f"producer[{process.pid}] thread {self._config.thread_id}"
        try:
            async for chunk in stream:
                pending += chunk
                *lines, rest = pending.split(b"\n")
                pending = bytearray(rest)
                for line in lines:
                    logger.warning("%s: %s", prefix, line.decode("utf-8", errors="replace"))
                if len(pending) > LINE_LIMIT:
                    logger.warning("%s: %s", prefix, _cut(bytes(pending)))
                    pending.clear()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        if pending.strip():
            logger.warning("%s: %s", prefix, pending.decode("utf-8", errors="replace"))

    async def _read(self, process: anyio.abc.Process) -> None:
        stream = process.stdout
        assert stream is not None
        pending = bytearray()
        skipping = False
        try:
            async for chunk in stream:
                start = 0
                while True:
                    end = chunk.find(b"\n", start)
                    if end < 0:
                        if not skipping:
                            pending += chunk[start:]
                            if len(pending) > LINE_LIMIT:
                                self._lines += 1
                                self._bad_line(
                                    bytes(pending[:CUT]), f"longer than {LINE_LIMIT} bytes"
                                )
                                pending.clear()
                                skipping = True
                        break
                    if skipping:
                        skipping = False
                    else:
                        pending += chunk[start:end]
                        self._lines += 1
                        self._line(bytes(pending))
                        pending.clear()
                    start = end + 1
                    if self._queue.full:
                        await self._queue.wait_for_room()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        if pending.strip() and not skipping:
            self._lines += 1
            self._line(bytes(pending))

    # --- events -------------------------------------------------------------------------------

    def _line(self, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            envelope = parse_event_envelope(raw)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            self._bad_line(raw, f"{where}: {first['msg']}" if where else first["msg"])
            return
        except ValueError as exc:
            reason = str(exc)
            self._bad_line(raw, reason)
            return
        turn = self._turn
        if turn is not None and envelope.id == turn[0] and envelope.msg.type in TURN_END_TYPES:
            self._turn = None
        self._emit(envelope)

    def _bad_line(self, raw: bytes, reason: str) -> None:
        text = _cut(raw)
        logger.warning(
            "thread %s: producer stdout line %d is not an event envelope {id, msg} (%s), "
            "skipped: %s",
            self._config.thread_id,
            self._lines,
            reason,
            text,
        )
        message = (
            f"codex-app-bridge: skipped producer output line {self._lines}, not an event "
            f"envelope ({reason}): {text}"
        )
        turn_id = self._turn[0] if self._turn is not None else ""
        self._emit(EventEnvelope(id=turn_id, msg=WarningEvent(message=message)))

    def _emit(self, envelope: EventEnvelope) -> None:
        self._queue.emit(envelope)

    def _fail(self, message: str) -> None:
        """End the turn in flight, if any, failed with ``message``."""
        turn = self._turn
        if turn is None:
            logger.warning("thread %s: %s (no turn was running)", self._config.thread_id, message)
            return
        self._turn = None
        turn_id, started_at_ms = turn
        if self._interrupted:
            logger.info("thread %s: %s (the turn was interrupted)", self._config.thread_id, message)
            aborted = aborted_turn(turn_id, started_at_ms, now_ms())
            self._emit(EventEnvelope(id=turn_id, msg=aborted))
            return
        ending = failed_turn(
            turn_id, message, started_at_ms=started_at_ms, completed_at_ms=now_ms()
        )
        for event in ending:
            self._emit(EventEnvelope(id=turn_id, msg=event))


async def _reap(process: anyio.abc.Process) -> None:
    """Kill ``process`` if it still runs, wait for it, close its pipes (never blocks long)."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    await process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            await stream.aclose()
