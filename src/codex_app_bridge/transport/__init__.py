"""Transport layer: bytes <-> messages. Each transport is an async context manager yielding a pair
of anyio memory object streams; it frames and encodes, nothing more.

Per connection a transport yields ``TransportStreams = (read_stream, write_stream)``:

* the read stream yields one decoded JSON value per frame (any JSON value: classifying it as
  JSON-RPC is the rpc layer's job), or a ``DecodeError`` for a frame that is not JSON; a bad frame
  never ends the stream; end of stream is end of input (EOF, socket closed);
* the write stream takes ``bytes`` (one already-encoded JSON message) or an object that orjson
  encodes; its buffer (``OUTBOUND_QUEUE_CAPACITY``) is the connection's outbound queue; a send
  that fails with ``anyio.BrokenResourceError`` means the peer is gone.

Single-connection transports (``stdio_transport``, ``create_memory_transport_pair``) are context
managers yielding that pair. Listening transports (``listen.serve_unix``, ``listen.serve_tcp``,
both WebSocket: ``websocket``; handshake auth: ``auth``) hand one such pair per accepted
connection to a callback, with the same framing contract (one message per text frame), so the rpc
layer serves every kind the same way. ``TransportKind`` tells the rpc
layer which outbound policy applies (stdio waits for a slow reader, socket kinds disconnect it).
"""

import typing as _typing

from codex_app_bridge._reexports import import_reexport as _import_reexport

if _typing.TYPE_CHECKING:
    from codex_app_bridge.transport._framing import (
        DEFAULT_MAX_MESSAGE_BYTES,
        MAX_NESTING,
        DecodeError,
        InboundItem,
        JsonValue,
        LineSplitter,
        OutboundItem,
        OversizedLine,
        decode_line,
        encode_item,
    )
    from codex_app_bridge.transport._streams import (
        OUTBOUND_QUEUE_CAPACITY,
        TransportKind,
        TransportStreams,
    )
    from codex_app_bridge.transport.memory import create_memory_transport_pair
    from codex_app_bridge.transport.stdio import stdio_transport

# where each public name lives: its module is imported on first use, so that a light module of
# this package (what answering ``initialize`` needs) is imported without the rest (anyio)
_SOURCES: dict[str, str] = {
    **dict.fromkeys(
        (
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
        ),
        "codex_app_bridge.transport._framing",
    ),
    **dict.fromkeys(
        ("OUTBOUND_QUEUE_CAPACITY", "TransportKind", "TransportStreams"),
        "codex_app_bridge.transport._streams",
    ),
    **dict.fromkeys(("create_memory_transport_pair",), "codex_app_bridge.transport.memory"),
    **dict.fromkeys(("stdio_transport",), "codex_app_bridge.transport.stdio"),
}

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "MAX_NESTING",
    "OUTBOUND_QUEUE_CAPACITY",
    "DecodeError",
    "InboundItem",
    "JsonValue",
    "LineSplitter",
    "OutboundItem",
    "OversizedLine",
    "TransportKind",
    "TransportStreams",
    "create_memory_transport_pair",
    "decode_line",
    "encode_item",
    "stdio_transport",
]


def __getattr__(name: str) -> object:
    return _import_reexport(__name__, globals(), _SOURCES, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
