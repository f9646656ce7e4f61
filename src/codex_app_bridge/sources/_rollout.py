"""Codex rollouts as core events: the rules ``map`` applies and ``--script ROLLOUT`` replays.

A rollout (``rollout-*.jsonl``) holds lines ``{"timestamp", "type", "payload"}``:

* ``event_msg``: a core event. Its envelope id is the event's own ``turn_id`` (``turnId`` for
  goals) when it carries one, else the current turn (the last ``task_started``'s).
* ``session_meta``: the thread's id (``payload.id``).
* ``response_item``: a history item. A 0.163.0 rollout persists each visible item twice, as a
  ``response_item`` and as an ``item_completed`` event; the event is what the live server maps, so
  there the response item only becomes the ``raw_response_item`` event (seen by raw-event
  clients). An older rollout has no ``item_completed`` events; in a turn that recorded no
  ``item_started``/``item_completed`` event at all, each response item is recorded the way Codex
  core records one (``recorded_item_events``: the raw event plus ``item_started`` and
  ``item_completed`` for the items ``parse_turn_item`` recognises). Such an item is a
  ``RolloutEntry`` with ``item`` set, for the consumer to record.
* every other kind (``turn_context``, ``world_state``, ``token_usage_record``, ...) carries no
  event and is passed over.

``RolloutReader`` applies these rules line by line (what ``codex-app-bridge map`` does): since
the response-item rule depends on the whole turn, it buffers a turn (from ``task_started``) until
the rule is decided: at its first item event (0.163.0 rollouts: early in the turn; from then on
every line goes as it comes) or at its end (``task_complete``/``turn_aborted``: older rollouts).

Replay (``RolloutSource``, ``--script ROLLOUT``): ``index_rollout`` makes one pass that records
where each turn starts (byte offsets, a turn per ``task_started``), whether it holds item events
(so that playing it needs no buffering) and the recorded thread ids; each ``turn/start`` then
reads the next recorded turn from the file, line by line, and plays it with the recorded turn and
thread ids replaced by the live ones (as scripts are). Events recorded before the first
``task_started`` (a fork's ``thread_settings_applied``) are played right after it. A payload that
is not a valid event or item fails its turn with a message naming the file and line. Memory is
flat in the file's length.

Boundary: pure line-to-event rules plus file reading; no listener, no connections.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import orjson
from pydantic import ValidationError

from codex_app_bridge._scriptfile import is_rollout_line
from codex_app_bridge.projection import parse_turn_item
from codex_app_bridge.protocol.core import (
    EVENT_MSG_ADAPTER,
    RESPONSE_ITEM_ADAPTER,
    EventEnvelope,
    EventMsg,
    ItemCompletedEvent,
    ItemStartedEvent,
    RawResponseItemEvent,
    ResponseItem,
    TaskCompleteEvent,
    TaskStartedEvent,
    TurnAbortedEvent,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.sources._base import TURN_END_TYPES, SourceDefaults, TurnRequest
from codex_app_bridge.sources._script import (
    ScriptError,
    ScriptPacing,
    TurnSpan,
    exhausted_turn,
    note_thread_ids,
    quoted,
    recorded_time,
    span_lines,
)

__all__ = [
    "RolloutEntry",
    "RolloutIndex",
    "RolloutLineError",
    "RolloutReader",
    "RolloutSource",
    "index_rollout",
    "is_rollout_line",
    "no_turn_error",
    "passthrough_turn_id",
    "payload_turn_id",
    "recorded_item_events",
    "rollout_line",
]

logger = logging.getLogger(__name__)

_ITEM_EVENT_TYPES = frozenset({"item_started", "item_completed"})


def _as_object(value: object) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def payload_turn_id(value: object) -> str | None:
    """The turn id an event payload carries itself (``turn_id``, or ``turnId`` for goals)."""
    payload = _as_object(value)
    for key in ("turn_id", "turnId"):
        turn_id = payload.get(key)
        if isinstance(turn_id, str) and turn_id:
            return turn_id
    return None


def passthrough_turn_id(value: object) -> str | None:
    """The turn id Codex 0.163.0 stamps into a response item's metadata, if any."""
    meta = _as_object(_as_object(value).get("internal_chat_message_metadata_passthrough"))
    turn_id = meta.get("turn_id")
    return turn_id if isinstance(turn_id, str) and turn_id else None


def recorded_item_events(
    item: ResponseItem, *, thread_id: str, turn_id: str, at_ms: int
) -> list[EventMsg]:
    """What Codex core emits when it records a history item: the ``raw_response_item`` event,
    then ``item_started`` and ``item_completed`` of the turn item ``parse_turn_item`` gives."""
    events: list[EventMsg] = [RawResponseItemEvent(item=item)]
    turn_item = parse_turn_item(item)
    if turn_item is not None:
        events.append(
            ItemStartedEvent(
                thread_id=thread_id, turn_id=turn_id, item=turn_item, started_at_ms=at_ms
            )
        )
        events.append(
            ItemCompletedEvent(
                thread_id=thread_id,
                turn_id=turn_id,
                item=turn_item,
                started_at_ms=at_ms,
                completed_at_ms=at_ms,
            )
        )
    return events


class RolloutLineError(ValueError):
    """A rollout line whose payload is not what its kind says (the message says why)."""


def _event(payload: object) -> EventMsg:
    try:
        return EVENT_MSG_ADAPTER.validate_python(payload)
    except ValidationError as exc:
        raise RolloutLineError(f"invalid event_msg payload: {_describe(exc)}") from None


def _item(payload: object) -> ResponseItem:
    try:
        return RESPONSE_ITEM_ADAPTER.validate_python(payload)
    except ValidationError as exc:
        raise RolloutLineError(f"invalid response_item payload: {_describe(exc)}") from None


def _describe(error: ValidationError, limit: int = 3) -> str:
    details = error.errors(include_url=False)
    parts = [
        f"{'.'.join(str(p) for p in d['loc']) or '<root>'}: {d['msg']}" for d in details[:limit]
    ]
    more = f" (+{len(details) - limit} more)" if len(details) > limit else ""
    return "; ".join(parts) + more


@dataclass(frozen=True, slots=True)
class RolloutEntry:
    """One thing a rollout line gives: an event, or a response item to record as core does."""

    number: int
    envelope: EventEnvelope | None = None
    item: ResponseItem | None = None
    turn_id: str = ""
    """The turn a recorded ``item`` belongs to."""


@dataclass(slots=True)
class RolloutReader:
    """The rollout rules, line by line, one turn buffered (see the module docstring).

    ``stateless``: every event at once and response items passed over (``map --stateless``).
    ``feed`` raises ``RolloutLineError`` for a line whose payload is invalid (the line is
    dropped, the rest goes on).
    """

    stateless: bool = False
    thread_id: str | None = None
    """The latest non-empty ``session_meta`` id."""
    current_turn: str | None = None
    _segment: list[RolloutEntry] = field(default_factory=list[RolloutEntry])
    _first_class: bool = False

    def feed(self, number: int, line: dict[str, Any]) -> list[RolloutEntry]:
        """The entries ready after this line (a whole turn when it ends)."""
        kind, payload = line["type"], line["payload"]
        if kind == "session_meta":
            meta_id = _as_object(payload).get("id")
            if isinstance(meta_id, str) and meta_id:
                self.thread_id = meta_id
            return []
        if kind == "event_msg":
            return self._event(number, payload)
        if kind == "response_item" and not self.stateless:
            item = _item(payload)
            turn_id = self.current_turn or passthrough_turn_id(payload) or ""
            self._segment.append(RolloutEntry(number, item=item, turn_id=turn_id))
            if self._first_class:
                return self._release()
        return []

    def _event(self, number: int, payload: object) -> list[RolloutEntry]:
        msg = _event(payload)
        ready: list[RolloutEntry] = []
        if isinstance(msg, TaskStartedEvent):
            ready = self.flush()
            self.current_turn = msg.turn_id
        own = payload_turn_id(payload)
        entry = RolloutEntry(number, EventEnvelope(id=own or self.current_turn or "", msg=msg))
        if self.stateless:
            return [*ready, entry]
        self._segment.append(entry)
        if isinstance(msg, ItemStartedEvent | ItemCompletedEvent):
            self._first_class = True
        if isinstance(msg, TaskCompleteEvent | TurnAbortedEvent):
            ready += self.flush()
        elif self._first_class:
            ready += self._release()
        return ready

    def flush(self) -> list[RolloutEntry]:
        """The buffered turn's entries (response items resolved by the rule); the buffer empties."""
        ready = self._release()
        self._first_class = False
        return ready

    def _release(self) -> list[RolloutEntry]:
        # Once the turn has an item event the rule is decided: what is buffered goes, and every
        # later line of the turn goes as it comes (memory flat in the turn's length).
        segment = self._segment
        self._segment = []
        if not self._first_class:
            return segment
        return [
            RolloutEntry(
                entry.number,
                EventEnvelope(id=entry.turn_id, msg=RawResponseItemEvent(item=entry.item)),
            )
            if entry.item is not None
            else entry
            for entry in segment
        ]


# --- replay ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RolloutIndex:
    """A rollout file's turns (as offsets), which of them hold item events, its thread ids."""

    path: Path
    spans: list[TurnSpan]
    first_class: list[bool]
    """Per turn: it recorded ``item_started``/``item_completed`` events (0.163.0 rollouts)."""
    thread_ids: set[str]


def rollout_line(raw: bytes, number: int, name: str) -> dict[str, Any]:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ScriptError(f"{name}: line {number}: not JSON: {exc}") from None
    if not is_rollout_line(value):
        raise ScriptError(f"{name}: line {number}: expected a rollout line {{type, payload}}")
    return cast(dict[str, Any], value)


def no_turn_error(name: str) -> ScriptError:
    """The error of a rollout in which no turn starts (nothing for ``turn/start`` to play)."""
    return ScriptError(f"{name}: the rollout holds no turn (no task_started event)")


def index_rollout(path: str | Path) -> RolloutIndex:
    """One pass over a rollout file: every line a rollout line, turns as offsets; ``ScriptError``."""
    rollout = Path(path)
    name = str(rollout)
    spans: list[TurnSpan] = []
    first_class: list[bool] = []
    thread_ids: set[str] = set()
    current: tuple[str, int, int] | None = None  # turn id, start offset, first line
    has_items = False
    offset = 0
    try:
        with rollout.open("rb") as stream:
            for number, raw in enumerate(stream, start=1):
                here = offset
                offset += len(raw)
                if not raw.strip():
                    continue
                line = rollout_line(raw, number, name)
                kind, payload = line["type"], _as_object(line["payload"])
                if kind == "session_meta":
                    meta_id = payload.get("id")
                    if isinstance(meta_id, str) and meta_id:
                        thread_ids.add(meta_id)
                    continue
                if kind != "event_msg":
                    continue
                note_thread_ids(payload, thread_ids)
                event_type = payload.get("type")
                if event_type == "task_started":
                    turn_id = payload_turn_id(payload) or ""
                    if current is None:
                        current = (turn_id, 0, 1)  # the lines before it belong to the first turn
                    else:
                        spans.append(TurnSpan(current[0], current[1], here, current[2]))
                        first_class.append(has_items)
                        current, has_items = (turn_id, here, number), False
                elif event_type in _ITEM_EVENT_TYPES:
                    has_items = True
    except OSError as exc:
        raise ScriptError(f"{rollout}: cannot read the rollout: {exc.strerror or exc}") from None
    if current is None:
        raise no_turn_error(name)
    spans.append(TurnSpan(current[0], current[1], offset, current[2]))
    first_class.append(has_items)
    return RolloutIndex(rollout, spans, first_class, thread_ids)


class RolloutSource:
    """Replays a rollout, one recorded turn per ``turn/start`` (see the module docstring)."""

    def __init__(
        self,
        path: str | Path,
        *,
        index: RolloutIndex | None = None,
        pacing: ScriptPacing | None = None,
        model: str = "codex-app-bridge-script",
        model_provider: str = "codex-app-bridge",
    ) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        self._index = index
        self._index_error: ScriptError | None = None
        self._index_lock = threading.Lock()
        self.pacing = pacing or ScriptPacing()
        self._defaults = SourceDefaults(model=model, model_provider=model_provider)

    @property
    def defaults(self) -> SourceDefaults:
        return self._defaults

    def with_pacing(self, pacing: ScriptPacing) -> RolloutSource:
        return RolloutSource(
            self.path,
            index=self._index,
            pacing=pacing,
            model=self._defaults.model,
            model_provider=self._defaults.model_provider,
        )

    def ensure_index(self) -> RolloutIndex:
        """Index the file now if it is not yet (blocking); ``ScriptError`` if it cannot be."""
        with self._index_lock:
            if self._index is None and self._index_error is None:
                try:
                    self._index = index_rollout(self.path)
                except ScriptError as exc:
                    logger.error("%s", exc)
                    self._index_error = exc
            if self._index_error is not None:
                raise self._index_error
            assert self._index is not None
            return self._index

    def turn_count(self) -> int:
        """How many turns the rollout recorded (indexes the file first if needed: blocking)."""
        return len(self.ensure_index().spans)

    async def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        index = self._index or await anyio.to_thread.run_sync(self.ensure_index)
        if request.turn_index >= len(index.spans):
            for event in exhausted_turn(self.name, request, len(index.spans)):
                yield event
            return
        span = index.spans[request.turn_index]
        first_class = index.first_class[request.turn_index]
        replacements = [(quoted(span.turn_id), quoted(request.turn_id))] if span.turn_id else []
        replacements += [(quoted(t), quoted(request.thread_id)) for t in index.thread_ids]
        held: list[EventMsg] = []
        opened = False
        previous: float | None = None
        for number, raw in span_lines(index.path, span):
            for old, new in replacements:
                raw = raw.replace(old, new)
            line = rollout_line(raw, number, self.name)
            events = self._events(line, number, request, first_class=first_class)
            if not events:
                continue
            at = recorded_time(line)
            wait = self.pacing.wait_before(previous, at) if opened else 0.0
            if wait > 0:
                await anyio.sleep(wait)
            if at is not None:
                previous = at
            for event in events:
                if not opened:
                    if not isinstance(event, TaskStartedEvent):
                        held.append(event)  # recorded before the turn: played right after it
                        continue
                    opened = True
                    yield event
                    for early in held:
                        yield early
                    held = []
                    continue
                yield event
                if event.type in TURN_END_TYPES:
                    return
        for event in held:
            yield event

    def _events(
        self, line: dict[str, Any], number: int, request: TurnRequest, *, first_class: bool
    ) -> list[EventMsg]:
        kind, payload = line["type"], line["payload"]
        try:
            if kind == "event_msg":
                return [_event(payload)]
            if kind == "response_item":
                item = _item(payload)
                if first_class:
                    return [RawResponseItemEvent(item=item)]
                return recorded_item_events(
                    item, thread_id=request.thread_id, turn_id=request.turn_id, at_ms=now_ms()
                )
        except RolloutLineError as exc:
            raise ScriptError(f"{self.name}: line {number}: {exc}") from None
        return []
