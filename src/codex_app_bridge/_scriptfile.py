"""What ``--script FILE`` needs before the models: its error, its pacing, a look at its head.

Role: the part of a script (``sources._script``) or rollout (``sources._rollout``) file that can
be judged without the core models, so that ``serve --script`` can refuse a bad file or a bad
``--pace`` (exit 2) before it answers ``initialize``, and load ``sources`` only when a turn needs
it. ``ScriptError`` and ``ScriptPacing`` live here and ``sources`` re-exports them; so does the
shape check of one line (``parse_envelope``), which the head check and the index pass share, so
both refuse a line in the same words.

Boundary: ``orjson`` and the file's first non-empty line only; it never reads further, so its
cost does not grow with the file (the index pass and the validation of each event stay in
``sources``, on the first turn).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import orjson

__all__ = [
    "RECORDED",
    "ScriptError",
    "ScriptHead",
    "ScriptPacing",
    "check_script",
    "is_rollout_head",
    "is_rollout_line",
    "parse_envelope",
    "read_head",
    "unreadable_script",
]

RECORDED = "recorded"


class ScriptError(ValueError):
    """A script that cannot be used; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class ScriptPacing:
    """How long to wait before each replayed event (see ``sources._script``)."""

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


def is_rollout_line(value: object) -> bool:
    """Whether a decoded JSON line has the shape of a rollout line (``type`` and ``payload``)."""
    return isinstance(value, dict) and "type" in value and "payload" in value


@dataclass(frozen=True, slots=True)
class ScriptHead:
    """A file's first non-empty line."""

    number: int
    """Its 1-based line number."""
    raw: bytes


def is_rollout_head(head: ScriptHead | None) -> bool:
    """Whether a file's first non-empty line is a rollout line (one that is not JSON is not)."""
    if head is None:
        return False
    try:
        return is_rollout_line(orjson.loads(head.raw))
    except orjson.JSONDecodeError:
        return False


def unreadable_script(path: str | Path, exc: OSError) -> ScriptError:
    """The error of a script that cannot be read (at start-up or by the index pass)."""
    return ScriptError(f"{path}: cannot read the script: {exc.strerror or exc}")


def parse_envelope(
    raw: bytes, number: int, name: str
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(turn id, msg, envelope)`` of one script line; ``ScriptError`` (naming the file and
    line) if it is not an event envelope ``{id: string, msg: object}``."""
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
    return turn_id, cast(dict[str, Any], msg), envelope


def read_head(path: str | Path) -> ScriptHead | None:
    """The first non-empty line of ``path`` (``None``: it has none); ``ScriptError`` if the file
    cannot be read."""
    script = Path(path)
    try:
        with script.open("rb") as stream:
            for number, raw in enumerate(stream, start=1):
                if raw.strip():
                    return ScriptHead(number, raw)
    except OSError as exc:
        raise unreadable_script(script, exc) from None
    return None


def check_script(path: str | Path) -> bool:
    """Check what can be known of a script from its head; whether it is a Codex rollout.

    ``ScriptError`` (with the message the full index pass would give) when the file cannot be
    read, holds no events, or its first line is neither an event envelope ``{id, msg}`` nor a
    rollout line ``{type, payload}``. A bad line further on is found on the first turn.
    """
    name = str(Path(path))
    head = read_head(path)
    if head is None:
        raise ScriptError(f"{name}: the script holds no events")
    if is_rollout_head(head):
        return True
    parse_envelope(head.raw, head.number, name)  # the index pass's words for a bad line
    return False
