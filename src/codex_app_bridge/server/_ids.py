"""Identifiers as the real server makes and reads them: UUIDv7 ids and thread-id parsing.

New thread, turn and user-message ids are UUIDv7 strings (time-ordered, lowercase, hyphenated), as
0.163.0 mints them. A thread id sent by a client is parsed the way the real server parses it (the
Rust ``uuid`` crate): the simple (32 hex digits), hyphenated, braced (``{…}``) and URN
(``urn:uuid:…``) forms are accepted and normalized to the lowercase hyphenated form; anything else
is refused with the crate's own wording, prefixed ``invalid thread id: ``, e.g.
``invalid thread id: invalid length: expected length 32 for simple format, found 3``.

Boundary: pure functions; time and random bits from ``codex_app_bridge._clock``.
"""

from __future__ import annotations

import uuid

from codex_app_bridge._clock import uuid7
from codex_app_bridge.rpc import RpcError, invalid_request

__all__ = ["new_uuid7", "parse_thread_id", "thread_id_error"]

_HEX = frozenset("0123456789abcdefABCDEF")
_GROUP_STARTS = (0, 9, 14, 19, 24)
_GROUP_LENGTHS = (8, 4, 4, 4, 12)
_URN_PREFIX = "urn:uuid:"


def new_uuid7(now_ms: int | None = None) -> str:
    """A fresh UUIDv7: 48 bits of Unix milliseconds, version 7, variant RFC 4122, random rest
    (the process clock's: ``codex_app_bridge._clock``)."""
    return str(uuid7(now_ms))


def _parse_ok(text: str) -> str | None:
    # The crate's accepted lengths: 32 (simple), 36 (hyphenated), 38 ({hyphenated}) and 45
    # (urn:uuid:hyphenated); any non-hex digit or misplaced hyphen fails.
    size = len(text.encode())
    if size == 32:
        digits = text
    else:
        if size == 36:
            body = text
        elif size == 38 and text.startswith("{") and text.endswith("}"):
            body = text[1:-1]
        elif size == 45 and text.startswith(_URN_PREFIX):
            body = text[len(_URN_PREFIX) :]
        else:
            return None
        if any(body[start - 1] != "-" for start in _GROUP_STARTS[1:]):
            return None
        digits = body.replace("-", "")
    if len(digits) != 32 or any(ch not in _HEX for ch in digits):
        return None
    return str(uuid.UUID(hex=digits))


def _uuid_error(text: str) -> str:
    """The ``uuid`` crate's diagnostic for a string it failed to parse."""
    if text.startswith("{") and text.endswith("}") and len(text) >= 2:
        body, offset, simple = text[1:-1], 1, False
    elif text.startswith(_URN_PREFIX):
        body, offset, simple = text[len(_URN_PREFIX) :], len(_URN_PREFIX), False
    else:
        body, offset, simple = text, 0, True
    hyphens = 0
    bounds = [0, 0, 0, 0]
    index = 0  # a byte index into the UTF-8 body, as Rust's char_indices gives it
    for ch in body:
        if ch == "-":
            if hyphens < 4:
                bounds[hyphens] = index
            hyphens += 1
        elif ord(ch) > 0x7F or ch not in _HEX:
            return (
                "invalid character: expected an optional prefix of `urn:uuid:` followed by "
                f"[0-9a-fA-F-], found `{ch}` at {index + offset + 1}"
            )
        index += len(ch.encode())
    if hyphens == 0 and simple:
        return f"invalid length: expected length 32 for simple format, found {len(text.encode())}"
    if hyphens != 4:
        return f"invalid group count: expected 5, found {hyphens + 1}"
    for group in range(4):
        if bounds[group] != _GROUP_STARTS[group + 1] - 1:
            length = bounds[group] - _GROUP_STARTS[group]
            return (
                f"invalid group length in group {group}: expected {_GROUP_LENGTHS[group]}, "
                f"found {length}"
            )
    length = len(text.encode()) - _GROUP_STARTS[4]
    return f"invalid group length in group 4: expected 12, found {length}"


def thread_id_error(text: str) -> RpcError:
    """``-32600 invalid thread id: <uuid crate diagnostic>``."""
    return invalid_request(f"invalid thread id: {_uuid_error(text)}")


def parse_thread_id(text: str) -> str:
    """The canonical form of a client-sent thread id; raises ``RpcError`` as the real server."""
    canonical = _parse_ok(text)
    if canonical is None:
        raise thread_id_error(text)
    return canonical
