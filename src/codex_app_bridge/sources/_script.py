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

Pacing (``ScriptPacing``): none (as fast as the client reads), a fixed delay before each event, or
the recorded gaps (``RECORDED``, capped at ``max_gap`` seconds, times ``speed``).

Boundary: reading and validating the file happens once, at start-up (``load_script``, which reports
the first bad line with its number); playing never touches the file again.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import anyio
import orjson
from pydantic import ValidationError

from codex_app_bridge.protocol.core import EVENT_MSG_ADAPTER, ErrorEvent, EventMsg
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.sources._base import (
    TURN_END_TYPES,
    TURN_START_TYPES,
    SourceDefaults,
    TurnRequest,
    failed_task_complete,
    task_started_event,
)

__all__ = [
    "RECORDED",
    "RecordedEvent",
    "RecordedTurn",
    "ScriptError",
    "ScriptPacing",
    "ScriptSource",
    "load_script",
    "parse_script",
]

RECORDED = "recorded"


class ScriptError(ValueError):
    """A script that cannot be used; the message names the file and line."""


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


@dataclass(frozen=True, slots=True)
class ScriptPacing:
    """How long to wait before each replayed event (see the module docstring)."""

    delay: float | None = None
    """Fixed seconds before each event; ``None`` with ``recorded=False`` means no pacing."""
    recorded: bool = False
    speed: float = 1.0
    max_gap: float = 5.0

    @classmethod
    def parse(cls, text: str) -> ScriptPacing:
        """``recorded``, ``recorded:<speed>`` or a number of seconds."""
        if text == RECORDED:
            return cls(recorded=True)
        if text.startswith(RECORDED + ":"):
            speed = _number(text.split(":", 1)[1])
            if speed is None or not speed > 0:
                raise ValueError(f"invalid pace speed {text!r}: expected a positive number")
            return cls(recorded=True, speed=speed)
        seconds = _number(text)
        if seconds is None or not seconds >= 0:
            raise ValueError(f"invalid pace {text!r}: expected seconds >= 0 or 'recorded'")
        return cls(delay=seconds)

    def wait_before(self, previous: float | None, current: float | None) -> float:
        if self.recorded:
            if previous is None or current is None:
                return 0.0
            return min(max(0.0, current - previous), self.max_gap) / self.speed
        return self.delay or 0.0


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isinf(value) or math.isnan(value) else value


def _recorded_time(line: dict[str, Any]) -> float | None:
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


def parse_script(data: bytes, *, name: str = "<script>") -> tuple[list[RecordedTurn], set[str]]:
    """Turns and recorded thread ids of a script's bytes; ``ScriptError`` on the first bad line."""
    turns: list[RecordedTurn] = []
    thread_ids: set[str] = set()
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ScriptError(f"{name}: line {number}: not JSON: {exc}") from None
        if not isinstance(line, dict):
            raise ScriptError(f"{name}: line {number}: expected an object {{id, msg}}")
        envelope = cast(dict[str, Any], line)
        turn_id, msg = envelope.get("id"), envelope.get("msg")
        if not isinstance(turn_id, str) or not isinstance(msg, dict):
            raise ScriptError(
                f"{name}: line {number}: expected an event envelope {{id: string, msg: object}}"
            )
        event = cast(dict[str, Any], msg)
        try:
            EVENT_MSG_ADAPTER.validate_python(event)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ScriptError(
                f"{name}: line {number}: invalid {event.get('type')!r} event: "
                f"{where}: {first['msg']}"
            ) from None
        _collect_thread_ids(event, thread_ids)
        opener = event.get("type") in TURN_START_TYPES
        current = turns[-1] if turns else None
        if (
            current is None
            or (opener and (current.opened or current.ended))
            or (current.ended and turn_id != current.turn_id)
        ):
            current = RecordedTurn(turn_id)
            turns.append(current)
        if opener and not current.opened:
            current.opened = True
            current.turn_id = turn_id
        current.events.append(RecordedEvent(event, _recorded_time(envelope)))
    return turns, thread_ids


def load_script(path: str | Path) -> ScriptSource:
    """Read and validate a script file; ``ScriptError`` names the problem and the line."""
    script = Path(path)
    try:
        data = script.read_bytes()
    except OSError as exc:
        raise ScriptError(f"{script}: cannot read the script: {exc.strerror or exc}") from None
    turns, thread_ids = parse_script(data, name=str(script))
    if not turns:
        raise ScriptError(f"{script}: the script holds no events")
    return ScriptSource(turns, thread_ids, name=str(script))


def _rewrite(value: object, mapping: dict[str, str]) -> object:
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, dict):
        return {k: _rewrite(v, mapping) for k, v in cast(dict[str, object], value).items()}
    if isinstance(value, list):
        return [_rewrite(v, mapping) for v in cast(list[object], value)]
    return value


class ScriptSource:
    """Replays a parsed script (see the module docstring)."""

    def __init__(
        self,
        turns: Sequence[RecordedTurn],
        thread_ids: set[str] | None = None,
        *,
        pacing: ScriptPacing | None = None,
        name: str = "<script>",
        model: str = "codex-app-bridge-script",
        model_provider: str = "codex-app-bridge",
    ) -> None:
        self.turns = list(turns)
        self.thread_ids = set(thread_ids or ())
        self.pacing = pacing or ScriptPacing()
        self.name = name
        self._defaults = SourceDefaults(model=model, model_provider=model_provider)

    @property
    def defaults(self) -> SourceDefaults:
        return self._defaults

    def with_pacing(self, pacing: ScriptPacing) -> ScriptSource:
        return ScriptSource(
            self.turns,
            self.thread_ids,
            pacing=pacing,
            name=self.name,
            model=self._defaults.model,
            model_provider=self._defaults.model_provider,
        )

    async def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        if request.turn_index >= len(self.turns):
            for event in self._exhausted(request):
                yield event
            return
        recorded = self.turns[request.turn_index]
        mapping = {recorded.turn_id: request.turn_id}
        mapping.update(dict.fromkeys(self.thread_ids, request.thread_id))
        previous: float | None = None
        for index, event in enumerate(recorded.events):
            wait = self.pacing.wait_before(previous, event.at) if index else 0.0
            if wait > 0:
                await anyio.sleep(wait)
            if event.at is not None:
                previous = event.at
            yield EVENT_MSG_ADAPTER.validate_python(_rewrite(event.msg, mapping))

    def _exhausted(self, request: TurnRequest) -> list[EventMsg]:
        now = now_ms()
        count = len(self.turns)
        message = (
            f"codex-app-bridge: the script {self.name} has no turn left to play "
            f"(it recorded {count} turn{'s' if count != 1 else ''}; this is turn "
            f"{request.turn_index + 1} of the thread)"
        )
        return [
            task_started_event(request.turn_id, now),
            ErrorEvent(message=message, codex_error_info="other"),
            failed_task_complete(request.turn_id, message, started_at_ms=now, completed_at_ms=now),
        ]
