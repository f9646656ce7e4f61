"""Every problem of a scenario, script or rollout file, found without serving it (``check``).

The file's first line that is neither blank nor a ``#`` comment says what it is: a rollout line
``{type, payload}``, an event envelope ``{id, msg}`` (a script), else a scenario rule. Then every
line is judged by the code that plays it, so ``check`` and ``serve`` say the same words:

* a scenario: ``parse_scenario`` (it reports every problem of every line already);
* a script: the envelope shape (``parse_envelope``), the event's validation (``invalid_event_error``)
  and, per turn as ``TurnGrouper`` cuts them, the notes a replay logs for the events a client
  never sees (``SilentEvents``: unknown types, legacy-only events in a turn without items);
* a rollout: the line shape (``rollout_line``) and ``RolloutReader``'s rules, plus the note for an
  unknown event type.

Unlike playing, which stops at the first bad line, every line is judged. A script or rollout is
read line by line (memory flat in its length); a scenario is read whole (it is small).

Boundary: files and the sources' parsers; it prints nothing (the ``check`` command does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

import orjson
from pydantic import ValidationError

from codex_app_bridge._scriptfile import ScriptError, is_rollout_line, parse_envelope
from codex_app_bridge.protocol.core import EventMsg, UnknownEventMsg, validate_event_msg
from codex_app_bridge.sources._base import LEGACY_ONLY_TYPES
from codex_app_bridge.sources._rollout import (
    RolloutEntry,
    RolloutLineError,
    RolloutReader,
    no_turn_error,
    rollout_line,
)
from codex_app_bridge.sources._scenario import ScenarioError, looks_like_scenario, parse_scenario
from codex_app_bridge.sources._script import (
    SilentEvents,
    TurnGrouper,
    invalid_event_error,
    is_item_event,
)

__all__ = ["FileCheck", "FileKind", "check_file"]

FileKind = Literal["scenario", "script", "rollout", "unknown"]

_SHAPES: Final = (
    "a scenario rule (match / regex / default and steps), a script event envelope {id, msg} "
    "or a rollout line {type, payload}"
)


@dataclass(slots=True)
class FileCheck:
    """What ``check_file`` found: ``problems`` (the file cannot be played as written) and
    ``notes`` (lines that will show a client nothing), each ``(line number, one line of text)``
    (line 0: the whole file), and what the file holds."""

    name: str
    kind: FileKind = "unknown"
    problems: list[tuple[int, str]] = field(default_factory=list[tuple[int, str]])
    notes: list[tuple[int, str]] = field(default_factory=list[tuple[int, str]])
    count: int | None = None
    """Rules of a scenario, turns of a script or rollout (``None``: not known)."""

    @property
    def what(self) -> str:
        """``kind, N rules`` / ``kind, N turns`` (the kind alone when N is not known)."""
        if self.count is None:
            return self.kind
        unit = "rule" if self.kind == "scenario" else "turn"
        return f"{self.kind}, {self.count} {unit}{'' if self.count == 1 else 's'}"


def check_file(path: str | Path) -> FileCheck:
    """Judge every line of ``path``; ``OSError`` if it cannot be read."""
    name = str(path)
    data_path = Path(path)
    head = _head(data_path)
    result = FileCheck(name)
    if head is None:
        result.problems.append((0, f"{name}: the file is empty: expected {_SHAPES}"))
        return result
    number, raw = head
    try:
        value: object = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        result.problems.append((number, f"{name}: line {number}: not JSON: {exc}"))
        return result
    if is_rollout_line(value):
        result.kind = "rollout"
        _check_rollout(data_path, result)
    elif looks_like_scenario(value):
        result.kind = "scenario"
        _check_scenario(data_path.read_bytes(), result)
    elif isinstance(value, dict) and "msg" in value:
        result.kind = "script"
        _check_script(data_path, result)
    else:
        result.problems.append((number, f"{name}: line {number}: expected {_SHAPES}"))
    return result


def _head(path: Path) -> tuple[int, bytes] | None:
    """The first line that is neither blank nor a ``#`` comment, with its number."""
    with path.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            text = raw.strip()
            if text and not text.startswith(b"#"):
                return number, text
    return None


def _check_scenario(data: bytes, result: FileCheck) -> None:
    try:
        scenario = parse_scenario(data, name=result.name)
    except ScenarioError as exc:
        for number, problem in exc.problems:
            where = f"line {number}: " if number else ""
            result.problems.append((number, f"{result.name}: {where}{problem}"))
        return
    result.count = len(scenario.matched) + len(scenario.sequence) + (scenario.default is not None)


class _Turn:
    """The events of one script turn that may show nothing: judged once the turn is whole
    (a legacy-only event is silent only in a turn without item events)."""

    def __init__(self) -> None:
        self.has_items = False
        self.candidates: list[tuple[int, EventMsg]] = []

    def notes(self, name: str) -> list[tuple[int, str]]:
        silent = SilentEvents(name, self.has_items)
        found: list[tuple[int, str]] = []
        for number, event in self.candidates:
            text = silent.text(event, f"line {number}")
            if text is not None:
                found.append((number, text))
        return found


def _check_script(path: Path, result: FileCheck) -> None:
    name = result.name
    grouper = TurnGrouper()
    turn: _Turn | None = None
    result.count = 0
    with path.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            if not raw.strip():
                continue
            try:
                turn_id, event, _ = parse_envelope(raw, number, name)
            except ScriptError as exc:
                result.problems.append((number, str(exc)))
                continue
            if grouper.feed(turn_id, event.get("type")) or turn is None:
                if turn is not None:
                    result.notes.extend(turn.notes(name))
                turn = _Turn()
                result.count = (result.count or 0) + 1
            try:
                msg = validate_event_msg(event)
            except ValidationError as exc:
                result.problems.append((number, str(invalid_event_error(event, exc, number, name))))
                continue
            turn.has_items = turn.has_items or is_item_event(msg.type)
            if isinstance(msg, UnknownEventMsg) or msg.type in LEGACY_ONLY_TYPES:
                turn.candidates.append((number, msg))
    if turn is not None:
        result.notes.extend(turn.notes(name))
    if result.count == 0 and not result.problems:
        result.problems.append((0, f"{name}: the script holds no events"))


def _check_rollout(path: Path, result: FileCheck) -> None:
    name = result.name
    reader = RolloutReader()
    result.count = 0
    silent = SilentEvents(name, turn_has_items=True)  # a rollout's items come with its events
    with path.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            if not raw.strip():
                continue
            try:
                line = rollout_line(raw, number, name)
                entries = reader.feed(number, line)
            except ScriptError as exc:
                result.problems.append((number, str(exc)))
                continue
            except RolloutLineError as exc:
                result.problems.append((number, f"{name}: line {number}: {exc}"))
                continue
            silent = _note_rollout_entries(entries, silent, result)
    _note_rollout_entries(reader.flush(), silent, result)
    if result.count == 0 and not result.problems:
        result.problems.append((0, str(no_turn_error(name))))


def _note_rollout_entries(
    entries: list[RolloutEntry], silent: SilentEvents, result: FileCheck
) -> SilentEvents:
    """Count the turns among ``entries`` and note their unknown events; the notes of the turn
    that is open after them."""
    for entry in entries:
        if entry.envelope is None:
            continue
        event = entry.envelope.msg
        if event.type == "task_started":
            result.count = (result.count or 0) + 1
            silent = SilentEvents(result.name, turn_has_items=True)
        text = silent.text(event, f"line {entry.number}")
        if text is not None:
            result.notes.append((entry.number, text))
    return silent
