"""Server-sent events over raw bytes: chunks in, the JSON objects of complete events out.

Role: the per-event hot path of a model stream. It frames events the way the SSE standard does
(``data:`` lines joined with ``\\n``, ``event:``/``id:``/``retry:`` and ``:`` comment lines
ignored, LF, CRLF or CR line ends, a blank line dispatches) and decodes each event's data with
orjson. The JSON ``type`` decides what an event is, as in Codex; data that is not a JSON object
with a string ``type`` is skipped, never an error. Boundary: bytes to dicts; it knows nothing of
HTTP or of what the events mean.

Cost: one ``bytes.split`` per chunk, one per event and one ``orjson.loads`` per event; a chunk's
events are all decoded before the caller sees any. An event of any size is fine: the bytes of an
incomplete event wait in one ``bytearray`` and only the new bytes are searched for its end.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["SSEDecoder"]

_BOM = b"\xef\xbb\xbf"


class SSEDecoder:
    """Feed it chunks; it returns the events each chunk completed."""

    __slots__ = ("_buffer", "_cr", "_head", "_started", "dispatched")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._cr = False  # the last chunk ended in CR: it may be the first half of a CRLF
        self._started = False
        self._head = b""  # the first bytes of the stream, while they may be a split BOM
        self.dispatched = 0
        """How many SSE events were dispatched (also those whose data was skipped)."""

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        if not self._started:
            chunk = self._head + chunk
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                self._head = chunk
                return []
            self._head = b""
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
        if self._cr:
            chunk = b"\r" + chunk
            self._cr = False
        if b"\r" in chunk:
            if chunk.endswith(b"\r"):
                chunk = chunk[:-1]
                self._cr = True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buffer = self._buffer
        if buffer:
            start = len(buffer) - 1
            buffer += chunk
            end = buffer.rfind(b"\n\n", start)
            if end < 0:
                return []
            with memoryview(buffer) as view:
                complete = bytes(view[:end])
            del buffer[: end + 2]
        else:
            end = chunk.rfind(b"\n\n")
            if end < 0:
                buffer += chunk
                return []
            complete = chunk[:end]
            buffer += chunk[end + 2 :]
        return self._decode(complete)

    def close(self) -> list[dict[str, Any]]:
        """The end of the stream: an event not closed by a blank line is dropped (the SSE rule),
        but a trailing CR still ends its line."""
        if not self._started and self._head:
            self._started = True
            return []
        if self._cr:
            self._cr = False
            return self.feed(b"\n")
        return []

    def _decode(self, complete: bytes) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        loads = orjson.loads
        for block in complete.split(b"\n\n"):
            if block.startswith(b"event:") and block.count(b"\n") == 1:
                # the Responses API's own framing: ``event: <type>`` then one ``data:`` line
                data = block[block.index(b"\n") + 1 :]
                if data.startswith(b"data:"):
                    self.dispatched += 1
                    payload = data[6:] if data[5:6] == b" " else data[5:]
                    try:
                        event = loads(payload)
                    except orjson.JSONDecodeError:
                        continue
                    if type(event) is dict and type(event.get("type")) is str:  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
                        events.append(event)  # pyright: ignore[reportUnknownArgumentType]
                    continue
            self._decode_lines(block, events)
        return events

    def _decode_lines(self, block: bytes, events: list[dict[str, Any]]) -> None:
        data: list[bytes] = []
        for line in block.split(b"\n"):
            if not line:
                self._dispatch(data, events)
                data = []
            elif line.startswith(b"data"):
                if len(line) == 4:
                    data.append(b"")
                elif line[4:5] == b":":
                    data.append(line[6:] if line[5:6] == b" " else line[5:])
        self._dispatch(data, events)

    def _dispatch(self, data: list[bytes], events: list[dict[str, Any]]) -> None:
        if not data:
            return
        self.dispatched += 1
        try:
            event = orjson.loads(b"\n".join(data))
        except orjson.JSONDecodeError:
            return
        if type(event) is dict and type(event.get("type")) is str:  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            events.append(event)  # pyright: ignore[reportUnknownArgumentType]
