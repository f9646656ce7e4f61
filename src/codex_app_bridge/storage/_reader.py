"""Reading one rollout file, tolerantly.

* A last line without its newline that does not parse is a *torn tail* (a writer died
  mid-line): it is reported (``torn_tail``, a warning in the log) and skipped, never fatal, and
  the file is not modified. A last line without a newline that does parse is kept.
* Any other line that is not valid JSON, or not a JSON object with a string ``type``, is skipped
  and reported (``bad_lines``, 1-based).
* A line of a type this bridge does not know (a newer Codex) is kept as ``UnknownRolloutLine``;
  a known type whose payload does not validate is kept the same way, so nothing a newer writer
  wrote is lost and the history builder simply does not use it.

Boundary: one file's bytes -> rollout lines; no layout, no history.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson
from pydantic import ValidationError

from codex_app_bridge.protocol.core import (
    RolloutLine,
    SessionMetaLine,
    UnknownRolloutLine,
    parse_rollout_line,
)

__all__ = ["LoadedRollout", "load_rollout", "parse_rollout_bytes"]

_log = logging.getLogger(__name__)


@dataclass
class LoadedRollout:
    """The usable lines of one rollout file and what had to be skipped."""

    path: Path
    lines: list[RolloutLine]
    torn_tail: bool = False
    bad_lines: list[int] = field(default_factory=list[int])

    @property
    def session_meta(self) -> SessionMetaLine | None:
        """The file's first ``session_meta`` line, if any."""
        for line in self.lines:
            if isinstance(line, SessionMetaLine):
                return line
        return None

    @property
    def next_ordinal(self) -> int:
        """The ordinal the next appended line gets: one past the highest one present."""
        highest = -1
        for position, line in enumerate(self.lines):
            ordinal = position if line.ordinal is None else line.ordinal
            highest = max(highest, ordinal)
        return highest + 1


def _parse(raw: bytes) -> RolloutLine | None:
    try:
        return parse_rollout_line(raw)
    except ValidationError:
        pass
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    record = cast("dict[str, Any]", data)
    if not isinstance(record.get("type"), str):
        return None
    return UnknownRolloutLine.model_validate(record)


def parse_rollout_bytes(path: Path, data: bytes) -> LoadedRollout:
    """Parse a rollout's bytes (see the module docstring)."""
    loaded = LoadedRollout(path=path, lines=[])
    raw_lines = data.split(b"\n")
    last = len(raw_lines) - 1  # after a final newline the last piece is empty
    for index, raw in enumerate(raw_lines):
        if not raw.strip():
            continue
        line = _parse(raw)
        if line is not None:
            loaded.lines.append(line)
        elif index == last:
            loaded.torn_tail = True
            _log.warning("%s: torn last line (%d bytes) skipped", path, len(raw))
        else:
            loaded.bad_lines.append(index + 1)
            _log.warning("%s: line %d is not a rollout line; skipped", path, index + 1)
    return loaded


def load_rollout(path: Path) -> LoadedRollout:
    """Read and parse one rollout file (``OSError`` if it cannot be read)."""
    return parse_rollout_bytes(path, path.read_bytes())
