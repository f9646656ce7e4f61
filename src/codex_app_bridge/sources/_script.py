"""``--script FILE``: replay recorded core events, one recorded turn per ``turn/start``.

File format: JSON Lines, one core event envelope ``{"id": <turn id>, "msg": <EventMsg>}`` per line
(what ``codex-app-bridge map`` reads); blank lines are skipped. A line may also carry a recording
time for real-time pacing: ``"t"`` (seconds, a number) or ``"timestamp"`` (ISO 8601, as rollout
lines have). Unknown event types are kept and replayed (the listener skips what it cannot map).

Turns: a ``task_started`` event opens a new turn; so does a change of envelope ``id`` when the
current turn has already ended (``task_complete`` / ``turn_aborted``). Lines before the first turn
opener belong to the first turn.

Playing: the *n*-th ``turn/start`` on a thread plays recorded turn *n* of the script (each thread
starts at the first turn, so two threads replay the same recording independently). Every string
equal to the recorded turn id is replaced by the live turn id, and every recorded thread id (the
``thread_id`` values found in the script) by the live thread id, anywhere in the event. When the
script has no turn left, the turn fails with a clear message (``task_started``, ``error``,
``task_complete`` with that error), never a hang.

A recorded event that asks the client (an approval, a question, an elicitation, a dynamic tool
call) is raised live, and the script waits for the client's answer (``TurnRequest.replies``)
before it plays on; what it plays next is what was recorded, whatever the answer.

Pacing (``ScriptPacing``): none (as fast as the client reads), a fixed delay before each event, or
the recorded gaps (``RECORDED``, capped at ``max_gap`` seconds, times ``speed``).

Reading (``load_script``): the file is indexed, not loaded: one pass checks that every line is
an event envelope and records where each turn starts and ends (byte offsets) and the recorded
thread ids; the events themselves are read again, one line at a time, when their turn is played,
and validated then (a line that is not a valid event fails its turn with a message naming the
file and line). Memory is flat in the file's length. ``load_script(path, lazy=True)`` defers the
index pass to the first turn (run in a worker thread), so a server answers ``initialize`` at once
whatever the script's size; the index error, if any, then fails every turn and is logged.
``parse_script`` (bytes in memory) keeps whole validated events, for small scripts and tests.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import anyio
import orjson
from pydantic import ValidationError

from codex_app_bridge._scriptfile import RECORDED, ScriptError, ScriptPacing, unreadable_script
from codex_app_bridge._scriptfile import parse_envelope as _envelope
from codex_app_bridge.protocol.core import (
    EVENT_MSG_ADAPTER,
    EventMsg,
    UnknownEventMsg,
    WarningEvent,
    validate_event_msg,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.sources._base import (
    LEGACY_ONLY_TYPES,
    TURN_END_TYPES,
    TURN_START_TYPES,
    SourceDefaults,
    TurnRequest,
    failed_turn,
    silent_event_note,
    task_started_event,
)
from codex_app_bridge.sources._replies import asks

__all__ = [
    "RECORDED",
    "RecordedEvent",
    "RecordedTurn",
    "ScriptError",
    "ScriptIndex",
    "ScriptPacing",
    "ScriptSource",
    "SilentEvents",
    "TurnGrouper",
    "TurnSpan",
    "exhausted_turn",
    "index_script",
    "invalid_event_error",
    "is_item_event",
    "parse_script",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    msg: dict[str, Any]
    """The event as recorded (raw JSON object; validated at load time)."""
    at: float | None
    """Recording time in seconds, if the line had one."""


@dataclass
class RecordedTurn:
    turn_id: str
    events: list[RecordedEvent] = field(default_factory=list[RecordedEvent])
    opened: bool = False
    """A ``task_started`` was seen (a later one opens the next turn)."""

    @property
    def ended(self) -> bool:
        return bool(self.events) and self.events[-1].msg.get("type") in TURN_END_TYPES

    @property
    def has_items(self) -> bool:
        return any(is_item_event(event.msg.get("type")) for event in self.events)


def is_item_event(kind: object) -> bool:
    """``item_started`` / ``item_completed``: the events 0.163.0 clients see items from."""
    return kind in ("item_started", "item_completed")


class SilentEvents:
    """Notes, once per event type and turn, the events of a script turn that show nothing to a
    client (unknown types; legacy-only events in a turn without item events): a ``warning``
    event naming the line, and the same words on stderr."""

    def __init__(self, name: str, turn_has_items: bool) -> None:
        self.name = name
        self.turn_has_items = turn_has_items
        self.noted: set[str] = set()

    def note(self, event: EventMsg, where: str) -> WarningEvent | None:
        message = self.text(event, where)
        if message is None:
            return None
        logger.warning("%s", message)
        return WarningEvent(message=message)

    def text(self, event: EventMsg, where: str) -> str | None:
        """The note's words (``check`` prints them), or ``None``: nothing to say of it."""
        kind = event.type
        unknown = isinstance(event, UnknownEventMsg)
        if kind in self.noted or not (unknown or kind in LEGACY_ONLY_TYPES):
            return None
        note = silent_event_note(kind, known=not unknown, turn_has_items=self.turn_has_items)
        if note is None:
            return None
        self.noted.add(kind)
        return f"{self.name}: {where}: {note}"


def recorded_time(line: dict[str, Any]) -> float | None:
    t = line.get("t")
    if isinstance(t, int | float) and not isinstance(t, bool):
        return float(t)
    stamp = line.get("timestamp")
    if isinstance(stamp, str):
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _collect_thread_ids(value: object, found: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in cast(dict[str, object], value).items():
            if key == "thread_id" and isinstance(item, str) and item:
                found.add(item)
            else:
                _collect_thread_ids(item, found)
    elif isinstance(value, list):
        for item in cast(list[object], value):
            _collect_thread_ids(item, found)


class TurnGrouper:
    """The turn grouping rule, line by line (shared by ``parse_script`` and ``index_script``)."""

    def __init__(self) -> None:
        self.turn_id: str | None = None
        self.opened = False
        self.ended = False

    def feed(self, turn_id: str, kind: object) -> bool:
        """Whether this line opens a new turn; then the line is added to the current turn."""
        opener = kind in TURN_START_TYPES
        new = (
            self.turn_id is None
            or (opener and (self.opened or self.ended))
            or (self.ended and turn_id != self.turn_id)
        )
        if new:
            self.turn_id, self.opened, self.ended = turn_id, False, False
        if opener and not self.opened:
            self.opened = True
            self.turn_id = turn_id
        self.ended = kind in TURN_END_TYPES
        return new


def _validated(event: dict[str, Any], number: int, name: str) -> EventMsg:
    try:
        return validate_event_msg(event)
    except ValidationError as exc:
        raise invalid_event_error(event, exc, number, name) from None


def invalid_event_error(
    event: dict[str, Any], exc: ValidationError, number: int, name: str
) -> ScriptError:
    return ScriptError(
        f"{name}: line {number}: invalid {event.get('type')!r} event: {describe_errors(exc)}"
    )


def describe_errors(exc: ValidationError, limit: int = 6) -> str:
    """Every problem of an invalid event on one line (all of them: a script's author fixes a
    line once, not once per missing field): ``loc: msg; loc: msg``."""
    details = exc.errors(include_url=False)
    parts = [f"{'.'.join(str(p) for p in d['loc']) or '<root>'}: {d['msg']}" for d in details]
    more = f" (+{len(parts) - limit} more)" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more


# events whose only thread id is a top-level field (the bulk of a stream): no deep walk
_FLAT_TYPES = frozenset(
    {
        "agent_message_content_delta",
        "reasoning_content_delta",
        "reasoning_raw_content_delta",
        "plan_delta",
        "agent_reasoning_section_break",
        "exec_command_output_delta",
    }
)


def note_thread_ids(event: dict[str, Any], found: set[str]) -> None:
    if event.get("type") in _FLAT_TYPES:
        thread_id = event.get("thread_id")
        if isinstance(thread_id, str) and thread_id:
            found.add(thread_id)
    else:
        _collect_thread_ids(event, found)


def parse_script(data: bytes, *, name: str = "<script>") -> tuple[list[RecordedTurn], set[str]]:
    """Turns and recorded thread ids of a script's bytes; ``ScriptError`` on the first bad line."""
    turns: list[RecordedTurn] = []
    thread_ids: set[str] = set()
    grouper = TurnGrouper()
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        turn_id, event, envelope = _envelope(raw, number, name)
        _validated(event, number, name)
        note_thread_ids(event, thread_ids)
        if grouper.feed(turn_id, event.get("type")):
            turns.append(RecordedTurn(turn_id))
        current = turns[-1]
        current.turn_id = cast(str, grouper.turn_id)
        current.opened = grouper.opened
        current.events.append(RecordedEvent(event, recorded_time(envelope)))
    return turns, thread_ids


@dataclass(frozen=True, slots=True)
class TurnSpan:
    """Where one recorded turn lies in a script file."""

    turn_id: str
    start: int
    """Byte offset of the turn's first line."""
    end: int
    """Byte offset just past its last line."""
    first_line: int
    """1-based number of the line at ``start``."""
    has_items: bool = True
    """Whether the turn has an ``item_started`` / ``item_completed`` event."""


@dataclass(frozen=True, slots=True)
class ScriptIndex:
    """A script file's turns (as offsets) and recorded thread ids."""

    path: Path
    spans: list[TurnSpan]
    thread_ids: set[str]


def index_script(path: str | Path) -> ScriptIndex:
    """One pass over a script file: every line an envelope, turns as offsets; ``ScriptError``."""
    script = Path(path)
    name = str(script)
    spans: list[TurnSpan] = []
    thread_ids: set[str] = set()
    grouper = TurnGrouper()
    current: tuple[str, int, int] | None = None  # turn id, start offset, first line
    items = False  # the current turn has an item event
    offset = 0
    try:
        with script.open("rb") as stream:
            for number, raw in enumerate(stream, start=1):
                here = offset
                offset += len(raw)
                if not raw.strip():
                    continue
                turn_id, event, _ = _envelope(raw, number, name)
                note_thread_ids(event, thread_ids)
                kind = event.get("type")
                if grouper.feed(turn_id, kind):
                    if current is not None:
                        spans.append(TurnSpan(current[0], current[1], here, current[2], items))
                    current, items = (turn_id, here, number), False
                elif current is not None and grouper.turn_id != current[0]:
                    current = (cast(str, grouper.turn_id), current[1], current[2])
                items = items or is_item_event(kind)
    except OSError as exc:
        raise unreadable_script(script, exc) from None
    if current is not None:
        spans.append(TurnSpan(current[0], current[1], offset, current[2], items))
    if not spans:
        raise ScriptError(f"{script}: the script holds no events")
    return ScriptIndex(script, spans, thread_ids)


def _rewrite(value: object, mapping: dict[str, str]) -> object:
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, dict):
        return {k: _rewrite(v, mapping) for k, v in cast(dict[str, object], value).items()}
    if isinstance(value, list):
        return [_rewrite(v, mapping) for v in cast(list[object], value)]
    return value


class ScriptSource:
    """Replays a script (see the module docstring): parsed turns, or an indexed file."""

    def __init__(
        self,
        turns: Sequence[RecordedTurn] = (),
        thread_ids: set[str] | None = None,
        *,
        index: ScriptIndex | None = None,
        script_path: Path | None = None,
        pacing: ScriptPacing | None = None,
        name: str = "<script>",
        model: str = "codex-app-bridge-script",
        model_provider: str = "codex-app-bridge",
    ) -> None:
        self.turns = list(turns)
        self._thread_ids = set(thread_ids or ())
        self._index = index
        self._path = script_path if index is None else index.path
        self._index_error: ScriptError | None = None
        self._index_lock = threading.Lock()
        self.pacing = pacing or ScriptPacing()
        self.name = name
        self._defaults = SourceDefaults(model=model, model_provider=model_provider)

    @property
    def defaults(self) -> SourceDefaults:
        return self._defaults

    @property
    def thread_ids(self) -> set[str]:
        if self._index is not None:
            return self._index.thread_ids
        return self._thread_ids

    def with_pacing(self, pacing: ScriptPacing) -> ScriptSource:
        return ScriptSource(
            self.turns,
            self._thread_ids,
            index=self._index,
            script_path=self._path,
            pacing=pacing,
            name=self.name,
            model=self._defaults.model,
            model_provider=self._defaults.model_provider,
        )

    def ensure_index(self) -> ScriptIndex | None:
        """Index the file now if it is not yet (blocking); ``ScriptError`` if it cannot be."""
        if self._path is None:
            return None
        with self._index_lock:
            if self._index is None and self._index_error is None:
                try:
                    self._index = index_script(self._path)
                except ScriptError as exc:
                    logger.error("%s", exc)
                    self._index_error = exc
            if self._index_error is not None:
                raise self._index_error
            return self._index

    def turn_count(self) -> int:
        """How many turns the script recorded (indexes the file first if needed: blocking)."""
        return self._turn_count(self.ensure_index())

    def _turn_count(self, index: ScriptIndex | None) -> int:
        return len(index.spans) if index is not None else len(self.turns)

    async def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        index = self._index
        if self._path is not None and index is None:
            index = await anyio.to_thread.run_sync(self.ensure_index)
        if request.turn_index >= self._turn_count(index):
            for event in exhausted_turn(self.name, request, self._turn_count(index)):
                yield event
            return
        if index is None:
            async for event in self._play_parsed(self.turns[request.turn_index], request):
                yield event
            return
        span = index.spans[request.turn_index]
        replacements = [(quoted(span.turn_id), quoted(request.turn_id))]
        replacements += [(quoted(t), quoted(request.thread_id)) for t in index.thread_ids]
        previous: float | None = None
        first = True
        recorded = self.pacing.recorded
        paced = recorded or bool(self.pacing.delay)
        name = self.name
        silent = SilentEvents(name, span.has_items)
        for number, raw in span_lines(index.path, span):
            for old, new in replacements:
                raw = raw.replace(old, new)
            _, msg, envelope = _envelope(raw, number, name)
            if paced:
                at = recorded_time(envelope) if recorded else None
                wait = 0.0 if first else self.pacing.wait_before(previous, at)
                first = False
                if wait > 0:
                    await anyio.sleep(wait)
                if at is not None:
                    previous = at
            try:
                event = validate_event_msg(msg)
            except ValidationError as exc:
                raise invalid_event_error(msg, exc, number, name) from None
            warning = silent.note(event, f"line {number}")
            if warning is not None:
                yield warning
            yield event
            if asks(event):
                await request.replies.wait_for(event)  # a recorded request waits for its answer

    async def _play_parsed(
        self, recorded: RecordedTurn, request: TurnRequest
    ) -> AsyncIterator[EventMsg]:
        mapping = {recorded.turn_id: request.turn_id}
        mapping.update(dict.fromkeys(self._thread_ids, request.thread_id))
        previous: float | None = None
        silent = SilentEvents(self.name, recorded.has_items)
        for index, event in enumerate(recorded.events):
            wait = self.pacing.wait_before(previous, event.at) if index else 0.0
            if wait > 0:
                await anyio.sleep(wait)
            if event.at is not None:
                previous = event.at
            msg = EVENT_MSG_ADAPTER.validate_python(_rewrite(event.msg, mapping))
            warning = silent.note(msg, f"event {index + 1} of turn {recorded.turn_id}")
            if warning is not None:
                yield warning
            yield msg
            if asks(msg):
                await request.replies.wait_for(msg)  # a recorded request waits for its answer


def exhausted_turn(name: str, request: TurnRequest, count: int) -> list[EventMsg]:
    """The events of a turn asked of a recording that has no turn left: it fails, saying so."""
    now = now_ms()
    message = (
        f"codex-app-bridge: the script {name} has no turn left to play "
        f"(it recorded {count} turn{'s' if count != 1 else ''}; this is turn "
        f"{request.turn_index + 1} of the thread)"
    )
    return [
        task_started_event(request.turn_id, now),
        *failed_turn(request.turn_id, message, started_at_ms=now, completed_at_ms=now),
    ]


def quoted(text: str) -> bytes:
    """``text`` as a JSON string token: replacing it replaces whole strings only."""
    return orjson.dumps(text)


def span_lines(path: Path, span: TurnSpan) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as stream:
        stream.seek(span.start)
        offset, number = span.start, span.first_line
        while offset < span.end:
            raw = stream.readline()
            if not raw:
                return
            offset += len(raw)
            if raw.strip():
                yield number, raw
            number += 1
