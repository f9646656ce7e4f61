"""Handshake authentication of the websocket listener: ``--ws-auth capability-token``.

The client sends ``Authorization: Bearer <token>`` in the upgrade request; the token is compared
with the configured one in constant time (their SHA-256 digests, through ``hmac.compare_digest``),
so a wrong token is refused with ``401`` before the upgrade and before any JSON-RPC message is read.
The refusal texts and the token file rules (trimmed, must not be empty) are the real server's; the
scheme is case-insensitive and the token is trimmed, as there; a value that is not ASCII (HTTP
carries bytes 0x80-0xFF) is an invalid header there too, never trimmed into a token.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

from websockets.datastructures import Headers, MultipleValuesError

__all__ = ["AuthConfigError", "CapabilityToken"]

_INVALID_HEADER = "invalid authorization header"


class AuthConfigError(ValueError):
    """The auth settings cannot be used (unreadable or empty token file, bad digest)."""


@dataclass(frozen=True, slots=True)
class CapabilityToken:
    """A shared secret a client proves it knows; only its SHA-256 digest is kept."""

    digest: bytes

    @classmethod
    def from_file(cls, path: str | Path) -> CapabilityToken:
        try:
            raw = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise AuthConfigError(
                f"failed to read websocket auth secret {path}: {reason}"
            ) from None
        token = raw.strip()
        if not token:
            raise AuthConfigError(f"websocket auth secret {path} must not be empty")
        return cls(hashlib.sha256(token.encode()).digest())

    @classmethod
    def from_sha256_hex(cls, text: str) -> CapabilityToken:
        try:
            digest = bytes.fromhex(text.strip())
        except ValueError:
            digest = b""
        if len(digest) != 32:
            raise AuthConfigError("`--ws-token-sha256` must be a 64-digit hex SHA-256 digest")
        return cls(digest)

    def check(self, headers: Headers) -> str | None:
        """``None`` if the request carries this token, else the 401 refusal text."""
        try:
            header = headers.get("Authorization")
        except MultipleValuesError:
            return _INVALID_HEADER
        if header is None:
            return "missing websocket bearer token"
        if not header.isascii():
            return _INVALID_HEADER
        scheme, sep, token = header.partition(" ")
        token = token.strip()
        if not sep or scheme.lower() != "bearer" or not token:
            return _INVALID_HEADER
        actual = hashlib.sha256(token.encode()).digest()
        if hmac.compare_digest(actual, self.digest):
            return None
        return "invalid websocket bearer token"
