"""JSON Lines framing shared by the line-oriented transports (stdio and the in-memory twin).

Inbound: bytes are split on ``\\n`` with no length limit (the real server answers 20 MiB lines), each
non-blank line is decoded with orjson into any JSON value, and a line that is not JSON becomes a
``DecodeError`` item carrying the reason and the raw line. Nothing here interprets JSON-RPC.

Two refusals follow the real server (whose JSON parser is serde_json): a value nested
``MAX_NESTING`` (128) levels deep or more is refused like invalid JSON ("recursion limit exceeded
at line L column C", the bracket that opens level 128), never handed on; and a frame that is not
UTF-8 is refused naming the first bad byte and its position (the real server, reading stdin as
text, stops reading there; the bridge drops that frame only).

Outbound: an item is either one already-encoded JSON message (``bytes``; it must not contain a raw
newline, which orjson never emits) or a JSON-able object (``orjson.Fragment`` values allowed inside)
that is encoded here with orjson.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias

import orjson

__all__ = [
    "MAX_NESTING",
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


MAX_NESTING = 128
"""Arrays and objects nested this deep are refused (serde_json's recursion limit)."""

_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def _position(data: bytes, offset: int) -> str:
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return f"line {line} column {column}"


def _too_deep(value: JsonValue) -> bool:
    """Whether ``value`` nests arrays/objects ``MAX_NESTING`` levels deep (iteratively)."""
    stack: list[tuple[JsonValue, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth >= MAX_NESTING:
            return True
        children: Iterable[JsonValue] = (
            node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        )
        for child in children:
            if isinstance(child, list | dict):
                stack.append((child, depth + 1))
    return False


def _nesting_error(line: bytes) -> str:
    depth = 0
    for match in _TOKENS.finditer(line):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth >= MAX_NESTING:
                return f"recursion limit exceeded at {_position(line, match.start())}"
        elif token in (b"]", b"}"):
            depth -= 1
    return "recursion limit exceeded"


def _too_deep_reason(line: bytes) -> str:
    return f"{_nesting_error(line)} (JSON nested {MAX_NESTING} levels deep or more)"


def _decode_failure(line: bytes, exc: orjson.JSONDecodeError) -> str:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        return (
            f"invalid UTF-8 (byte 0x{line[bad.start]:02x}) at {_position(line, bad.start)}; "
            "messages must be UTF-8 JSON"
        )
    if str(exc).startswith("depth limit exceeded"):  # orjson's own limit, far beyond ours
        return _too_deep_reason(line)
    return str(exc)


def decode_line(line: bytes) -> InboundItem | None:
    """Decode one frame; ``None`` for a blank (empty or whitespace-only) frame, which is ignored."""
    if not line.strip():
        return None
    try:
        value: JsonValue = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return DecodeError(reason=_decode_failure(line, exc), raw=line)
    if (
        isinstance(value, list | dict)
        and line.count(b"[") + line.count(b"{") >= MAX_NESTING
        and _too_deep(value)
    ):
        return DecodeError(reason=_too_deep_reason(line), raw=line)
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
