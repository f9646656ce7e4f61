"""JSON Lines framing shared by the line-oriented transports (stdio and the in-memory twin).

Inbound: bytes are split on ``\\n`` with no length limit (the real server answers 20 MiB lines), each
non-blank line is decoded with orjson into any JSON value, and a line that is not JSON becomes a
``DecodeError`` item carrying the reason and the raw line. Nothing here interprets JSON-RPC.

Two refusals follow the real server (whose JSON parser is serde_json): a value nested
``MAX_NESTING`` (128) levels deep or more is refused like invalid JSON ("recursion limit exceeded
at line L column C", the bracket that opens level 128), never handed on; and a frame that is not
UTF-8 is refused naming the first bad byte and its position (the real server, reading stdin as
text, stops reading there; the bridge drops that frame only).

Two more refusals, for a server that runs for weeks: a message with a duplicate envelope member
(``id``, ``method``, ``params``, ``result``, ``error``) is refused like invalid JSON (``duplicate
field `id` ``: the real server's serde drops it unanswered, probed), while duplicate keys inside
params keep the last, as serde does; and a frame longer than the transport's maximum message size
(``LineSplitter(limit=...)``, ``decode_line(..., limit=...)``) is never buffered nor parsed: it
becomes a ``DecodeError`` saying how large it was, carrying the request id read from its first
bytes when it has one (the connection answers that request with the error).

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
    "DEFAULT_MAX_MESSAGE_BYTES",
    "MAX_NESTING",
    "DecodeError",
    "InboundItem",
    "JsonValue",
    "LineSplitter",
    "OutboundItem",
    "OversizedLine",
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
    request_id: int | str | None = None
    """The id of the request this frame was, when it could be told without parsing it (an
    oversized frame): the connection answers it with ``reason``."""


@dataclass(frozen=True, slots=True)
class OversizedLine:
    """A line past the splitter's limit: its size and first bytes (the rest was dropped)."""

    size: int
    head: bytes
    limit: int


InboundItem: TypeAlias = "JsonValue | DecodeError"
"""What a transport's read side yields: one decoded JSON value per frame, or a ``DecodeError``."""

OutboundItem: TypeAlias = "bytes | orjson.Fragment | dict[str, Any] | list[Any]"
"""What a transport's write side accepts: one encoded JSON message, or an object orjson encodes."""


MAX_NESTING = 128
"""Arrays and objects nested this deep are refused (serde_json's recursion limit)."""

DEFAULT_MAX_MESSAGE_BYTES = 64 << 20
"""The line transports' default maximum message size (``serve --max-message-size``): well past
what a client sends (the real server answers 20 MiB lines), short of what would stall a server."""

_HEAD = 4096
"""Bytes of an oversized frame kept to tell its request id."""

_ENVELOPE_KEYS = (b'"id"', b'"method"', b'"params"', b'"result"', b'"error"')

_HEAD_ID = re.compile(
    rb'\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"(?:[^"\\]|\\.)*"\s*,)*\s*"id"\s*:\s*'
    rb'(-?\d+|"(?:[^"\\]|\\.)*")\s*[,}]'
)

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


def _head_request_id(head: bytes) -> int | str | None:
    match = _HEAD_ID.match(head)
    if match is None:
        return None
    try:
        value = orjson.loads(match.group(1))
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, int | str) else None


def oversized(size: int, limit: int, head: bytes) -> DecodeError:
    """The refusal of a frame of ``size`` bytes past ``limit`` (``head``: its first bytes)."""
    return DecodeError(
        reason=f"message of {size} bytes exceeds the maximum message size of {limit} bytes",
        raw=head[:_HEAD],
        request_id=_head_request_id(head[:_HEAD]),
    )


def _duplicate_envelope_key(line: bytes) -> str | None:
    """The first envelope member the top-level object repeats (slow path: only when one of
    their names occurs twice in the frame)."""
    if not any(line.count(key) > 1 for key in _ENVELOPE_KEYS):
        return None
    import json

    top: list[list[tuple[str, object]]] = []

    def keep(pairs: list[tuple[str, object]]) -> object:
        top[:] = [pairs]
        return None  # the values are not needed; the last object hooked is the top one

    try:
        json.loads(line, object_pairs_hook=keep)
    except ValueError:
        return None
    seen: set[str] = set()
    for key, _value in top[0] if top else ():
        if key in seen and f'"{key}"'.encode() in _ENVELOPE_KEYS:
            return key
        seen.add(key)
    return None


def decode_line(line: bytes | OversizedLine, *, limit: int | None = None) -> InboundItem | None:
    """Decode one frame; ``None`` for a blank (empty or whitespace-only) frame, which is ignored.
    A frame past ``limit`` bytes (or cut by the splitter) is refused unparsed."""
    if isinstance(line, OversizedLine):
        return oversized(line.size, line.limit, line.head)
    if limit is not None and len(line) > limit:
        return oversized(len(line), limit, line[:_HEAD])
    if not line.strip():
        return None
    try:
        value: JsonValue = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return DecodeError(reason=_decode_failure(line, exc), raw=line)
    if isinstance(value, dict):
        duplicate = _duplicate_envelope_key(line)
        if duplicate is not None:
            return DecodeError(reason=f"duplicate field `{duplicate}`", raw=line)
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

    __slots__ = ("_limit", "_pending", "_size")

    def __init__(self, limit: int | None = None) -> None:
        """``limit``: a line longer than this is not kept: it comes out as an ``OversizedLine``
        (its size and first bytes), so memory stays bounded by the limit."""
        self._pending: list[bytes] = []
        self._size = 0
        self._limit = limit

    def _add(self, piece: bytes) -> None:
        limit = self._limit
        if limit is not None and self._size + len(piece) > limit:
            if self._size <= limit:  # just went past it: keep the head only
                head = b"".join(self._pending)[:_HEAD]
                self._pending = [head + piece[: max(0, _HEAD - len(head))]]
        else:
            self._pending.append(piece)
        self._size += len(piece)

    def _take(self) -> bytes | OversizedLine:
        pending, size = self._pending, self._size
        self._pending = []
        self._size = 0
        if self._limit is not None and size > self._limit:
            return OversizedLine(size, b"".join(pending), self._limit)
        return pending[0] if len(pending) == 1 else b"".join(pending)

    def feed(self, chunk: bytes) -> list[bytes | OversizedLine]:
        """Complete lines (without their ``\\n``) ended by ``chunk``."""
        lines: list[bytes | OversizedLine] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            piece = chunk[start:end]
            if self._pending or self._size:
                self._add(piece)
                lines.append(self._take())
            elif self._limit is not None and len(piece) > self._limit:
                lines.append(OversizedLine(len(piece), piece[:_HEAD], self._limit))
            else:
                lines.append(piece)
            start = end + 1
        if start < len(chunk):
            self._add(chunk[start:])
        return lines

    def finish(self) -> bytes | OversizedLine | None:
        """The unterminated last line at end of input, if any (it is still a frame)."""
        if not self._pending and not self._size:
            return None
        return self._take()
