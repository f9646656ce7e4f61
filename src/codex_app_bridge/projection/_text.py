"""Text helpers that behave like the Rust ``str`` methods Codex's matchers use.

* Whitespace is Rust's ``char::is_whitespace`` (Unicode ``White_Space``). Python's
  ``str.strip()`` also strips U+001C..U+001F, which Rust keeps, so trimming uses an explicit set.
* Marker comparison is ``eq_ignore_ascii_case`` on UTF-8 bytes: only ASCII letters fold. Every
  marker is ASCII, so comparing the first/last ``len(marker)`` characters works: a non-ASCII
  character there can never equal an ASCII marker byte, and ASCII characters are one byte each.
  That also makes Rust's char-boundary condition (``str::get`` returning ``None``) moot.
"""

from __future__ import annotations

__all__ = [
    "RUST_WHITESPACE",
    "ascii_ci_endswith",
    "ascii_ci_startswith",
    "rust_trim",
    "rust_trim_end",
    "rust_trim_start",
    "standard_marker_match",
]

#: Characters with the Unicode ``White_Space`` property (Rust ``char::is_whitespace``).
RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def rust_trim(text: str) -> str:
    """``str::trim``."""
    return text.strip(RUST_WHITESPACE)


def rust_trim_start(text: str) -> str:
    """``str::trim_start``."""
    return text.lstrip(RUST_WHITESPACE)


def rust_trim_end(text: str) -> str:
    """``str::trim_end``."""
    return text.rstrip(RUST_WHITESPACE)


def _ascii_lower(text: str) -> str:
    # Callers only pass ASCII strings here, for which str.lower() folds exactly A-Z.
    return text.lower()


def ascii_ci_startswith(text: str, marker: str) -> bool:
    """``text`` starts with the ASCII ``marker``, ASCII case-insensitively (byte semantics)."""
    head = text[: len(marker)]
    return len(head) == len(marker) and head.isascii() and _ascii_lower(head) == marker.lower()


def ascii_ci_endswith(text: str, marker: str) -> bool:
    """``text`` ends with the ASCII ``marker``, ASCII case-insensitively (byte semantics)."""
    if len(text) < len(marker):
        return False
    tail = text[len(text) - len(marker) :]
    return tail.isascii() and _ascii_lower(tail) == marker.lower()


def standard_marker_match(text: str, start: str, end: str) -> bool:
    """Codex's standard contextual-fragment rule.

    Leading whitespace is dropped and the rest must start with ``start``; trailing whitespace is
    dropped and the rest must end with ``end``; both compared ASCII case-insensitively. Nothing in
    between is checked, and the two markers may overlap on short texts.
    """
    trimmed = rust_trim_start(text)
    if not ascii_ci_startswith(trimmed, start):
        return False
    return ascii_ci_endswith(rust_trim_end(trimmed), end)
