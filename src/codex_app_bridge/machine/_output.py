"""Command output as 0.163.0 keeps it and shows it to the model.

* ``HeadTail``: a bounded byte buffer that keeps the first and last halves of its capacity and
  counts what it dropped in between (1 MiB per unified-exec call: 512 KiB each side). Memory is
  bounded whatever a command prints.
* ``retained_text``: the buffer as text, ``\\n... N bytes omitted ...\\n`` where bytes were dropped.
* ``model_text``: the text after ``Output:`` the model gets, cut to a token budget (≈ 4 bytes a
  token) as core cuts it: a ``Warning: truncated output`` header, then the head and tail halves of
  the budget around ``…K tokens truncated…``.
* ``exec_output_text``: the whole unified-exec answer (``Chunk ID``, ``Wall time``, exit or
  session line, ``Original token count``, ``Output:``).
* ``delta_size``: how many bytes of a chunk of output the next ``exec_command_output_delta``
  carries (at most ``DELTA_MAX_BYTES``, cut where core cuts it).

Pure; no I/O.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DELTA_MAX_BYTES",
    "HEAD_TAIL_BYTES",
    "HeadTail",
    "approx_tokens",
    "delta_size",
    "exec_output_text",
    "model_text",
    "truncate_middle",
]

HEAD_TAIL_BYTES: Final = 1024 * 1024
DEFAULT_MAX_OUTPUT_TOKENS: Final = 10_000
BYTES_PER_TOKEN: Final = 4
DELTA_MAX_BYTES: Final = 8192
"""At most this much output per ``exec_command_output_delta`` (core's
``UNIFIED_EXEC_OUTPUT_DELTA_MAX_BYTES``)."""
_DELTA_SPLIT_SLACK: Final = 5


def approx_tokens(byte_count: int) -> int:
    return math.ceil(byte_count / BYTES_PER_TOKEN)


@dataclass(slots=True)
class HeadTail:
    """Keeps the first ``capacity // 2`` and last ``capacity - capacity // 2`` bytes it was
    given; ``total`` counts every byte, ``omitted`` those dropped in between."""

    capacity: int = HEAD_TAIL_BYTES
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def append(self, data: bytes) -> None:
        self.total += len(data)
        head_room = self.capacity // 2 - len(self.head)
        if head_room > 0:
            self.head += data[:head_room]
            data = data[head_room:]
            if not data:
                return
        tail_cap = self.capacity - self.capacity // 2
        if len(data) >= tail_cap:
            self.tail[:] = data[-tail_cap:]
        else:
            self.tail += data
            excess = len(self.tail) - tail_cap
            if excess > 0:
                del self.tail[:excess]

    @property
    def omitted(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def retained_text(self) -> str:
        """The kept bytes as text (invalid UTF-8 replaced), the omission marked in the middle."""
        if self.omitted <= 0:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", errors="replace")
        head = bytes(self.head).decode("utf-8", errors="replace")
        tail = bytes(self.tail).decode("utf-8", errors="replace")
        return f"{head}\n... {self.omitted} bytes omitted ...\n{tail}"

    def clear(self) -> None:
        self.head.clear()
        self.tail.clear()
        self.total = 0


def _floor_boundary(data: bytes, index: int) -> int:
    while 0 < index < len(data) and (data[index] & 0xC0) == 0x80:
        index -= 1
    return index


def _ceil_boundary(data: bytes, index: int) -> int:
    while 0 < index < len(data) and (data[index] & 0xC0) == 0x80:
        index += 1
    return index


def truncate_middle(text: str, max_tokens: int) -> str:
    """``text`` cut to ``4 * max_tokens`` bytes: the head and tail halves around
    ``…K tokens truncated…`` (on character boundaries)."""
    data = text.encode("utf-8")
    budget = max_tokens * BYTES_PER_TOKEN
    if len(data) <= budget:
        return text
    removed = approx_tokens(len(data) - budget)
    left = _floor_boundary(data, budget // 2)
    right = _ceil_boundary(data, len(data) - (budget - budget // 2))
    head = data[:left].decode("utf-8", errors="replace")
    tail = data[right:].decode("utf-8", errors="replace")
    return f"{head}…{removed} tokens truncated…{tail}"


def model_text(buffer: HeadTail, max_tokens: int) -> str:
    """What follows ``Output:`` for the model (see the module docstring)."""
    text = buffer.retained_text()
    if len(text.encode("utf-8")) <= max_tokens * BYTES_PER_TOKEN:
        return text
    if buffer.omitted > 0:
        second = f"... {buffer.omitted} bytes omitted ..."
    else:
        second = f"Total output lines: {len(text.splitlines())}"
    return (
        f"Warning: truncated output (original token count: {approx_tokens(buffer.total)})\n"
        f"{second}\n\n{truncate_middle(text, max_tokens)}"
    )


def delta_size(data: bytes | memoryview, max_bytes: int = DELTA_MAX_BYTES) -> int:
    """Bytes at the start of ``data`` (not empty) that make the next output delta, as core's
    ``split_valid_utf8_prefix``: the longest valid UTF-8 prefix of at most ``max_bytes`` when it
    ends at most 5 bytes short of that, else one byte (binary output goes a byte at a time)."""
    limit = min(len(data), max_bytes)
    try:
        str(data[:limit], "utf-8")
    except UnicodeDecodeError as exc:
        valid = exc.start  # every longer prefix holds the bad or cut sequence
        return valid if valid > 0 and limit - valid <= _DELTA_SPLIT_SLACK else 1
    return limit


def chunk_id() -> str:
    return secrets.token_hex(3)


def exec_output_text(
    buffer: HeadTail,
    *,
    wall_time_s: float,
    exit_code: int | None,
    session_id: int | None,
    max_tokens: int,
) -> str:
    """The unified-exec answer the model gets for one ``exec_command`` / ``write_stdin`` call."""
    lines = [f"Chunk ID: {chunk_id()}", f"Wall time: {wall_time_s:.4f} seconds"]
    if exit_code is not None:
        lines.append(f"Process exited with code {exit_code}")
    elif session_id is not None:
        lines.append(f"Process running with session ID {session_id}")
    lines.append(f"Original token count: {approx_tokens(buffer.total)}")
    lines.append("Output:")
    return "\n".join(lines) + "\n" + model_text(buffer, max_tokens)
