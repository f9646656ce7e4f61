"""JSON Lines framing shared by the line-oriented transports (stdio and the in-memory twin).

Inbound: bytes are split on ``\\n`` with no length limit (the real server answers 20 MiB lines), each
non-blank line is decoded with orjson into any JSON value, and a line that is not JSON becomes a
``DecodeError`` item carrying the reason and the raw line. Nothing here interprets JSON-RPC.

Outbound: an item is either one already-encoded JSON message (``bytes``; it must not contain a raw
newline, which orjson never emits) or a JSON-able object (``orjson.Fragment`` values allowed inside)
that is encoded here with orjson.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

import orjson

__all__ = [
    "DecodeError",
    "InboundItem",
    "JsonValue",
    "LineSplitter",
    "OutboundItem",
    "decode_line",
    "encode_item",
]

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
"""Any value orjson decodes from a JSON text."""


@dataclass(frozen=True, slots=True)
class DecodeError:
    """An inbound frame that is not valid JSON: why, and the raw frame as received."""

    reason: str
    raw: bytes


InboundItem: TypeAlias = "JsonValue | DecodeError"
"""What a transport's read side yields: one decoded JSON value per frame, or a ``DecodeError``."""

OutboundItem: TypeAlias = "bytes | orjson.Fragment | dict[str, Any] | list[Any]"
"""What a transport's write side accepts: one encoded JSON message, or an object orjson encodes."""


def decode_line(line: bytes) -> InboundItem | None:
    """Decode one frame; ``None`` for a blank (empty or whitespace-only) frame, which is ignored."""
    if not line.strip():
        return None
    try:
        value: JsonValue = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return DecodeError(reason=str(exc), raw=line)
    return value


def encode_item(item: OutboundItem) -> bytes:
    """The JSON bytes of one outbound item (no trailing newline)."""
    if isinstance(item, bytes):
        return item
    return orjson.dumps(item)


class LineSplitter:
    """Incremental ``\\n`` splitter without a line-length limit.

    A long line arriving in many chunks is kept as a list of pieces and joined once, so a 20 MiB
    line costs one copy, not one per chunk.
    """

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        """Complete lines (without their ``\\n``) ended by ``chunk``."""
        lines: list[bytes] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            piece = chunk[start:end]
            if self._pending:
                self._pending.append(piece)
                piece = b"".join(self._pending)
                self._pending.clear()
            lines.append(piece)
            start = end + 1
        if start < len(chunk):
            self._pending.append(chunk[start:])
        return lines

    def finish(self) -> bytes | None:
        """The unterminated last line at end of input, if any (it is still a frame)."""
        if not self._pending:
            return None
        line = b"".join(self._pending)
        self._pending.clear()
        return line
