r"""Serde's words for a JSON value and for a list of names, as the real server writes them in
its params errors: ``null``, ``boolean `true` ``, ``integer `5` ``, ``floating point `1.5` ``,
``string "x"``, ``sequence``, ``map``; a list of names as ``one of`` and backquoted names.

Boundary: pure text; the model-driven half of a message (what was expected) is ``_serde``'s,
which needs the params models; this half needs nothing, so that errors without a model
(unknown methods, params that are not an object) cost no import.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["format_float", "one_of", "rust_debug_str", "unexpected", "unknown_variant"]

_SIMPLE_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}


def rust_debug_str(text: str) -> str:
    """``text`` as Rust's ``{:?}`` writes a ``str``: quoted, escapes, ``\\u{..}`` for unprintables."""
    out = ['"']
    for ch in text:
        escaped = _SIMPLE_ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch != " " and not ch.isprintable():
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def format_float(value: float) -> str:
    """A float as the real server prints it: ``1.5``, ``1.0``, ``1e+16``, ``2.5e-10``, ``-0.0``."""
    text = repr(value)
    mantissa, sep, exponent = text.partition("e")
    if not sep:
        return text
    sign = exponent[0] if exponent[0] in "+-" else "+"
    digits = exponent.lstrip("+-").lstrip("0") or "0"
    return f"{mantissa}e{sign}{digits}"


def unexpected(value: object) -> str:
    """How serde names the input it did not expect."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{format_float(value)}`"
    if isinstance(value, str):
        return f"string {rust_debug_str(value)}"
    if isinstance(value, list | tuple):
        return "sequence"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


def one_of(names: Sequence[str]) -> str:
    """Serde's list of alternatives: ``\\`a\\```, ``\\`a\\` or \\`b\\```, ``one of \\`a\\`, …``."""
    if len(names) == 1:
        return f"`{names[0]}`"
    if len(names) == 2:
        return f"`{names[0]}` or `{names[1]}`"
    return "one of " + ", ".join(f"`{name}`" for name in names)


def unknown_variant(variant: str, names: Sequence[str]) -> str:
    """``unknown variant `x`, expected …`` (or ``there are no variants``)."""
    if not names:
        return f"unknown variant `{variant}`, there are no variants"
    return f"unknown variant `{variant}`, expected {one_of(names)}"
