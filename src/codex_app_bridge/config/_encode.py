"""Values written the way Codex 0.163.0 writes them: TOML for config edits, JSON for versions.

Role: the encoders the Rust crates behind Codex use, in their own rules:

* :func:`encode_string` / :func:`encode_key` choose the TOML string form as ``toml_writer`` does
  (a plain ``"basic"`` string when nothing needs escaping, else ``'literal'``, else a
  triple-quoted one, else escapes with upper-case ``\\uXXXX``); a key is bare when it can be;
* :func:`encode_value` writes a value as ``toml_edit`` renders a new one (``[1, "a"]``,
  ``{ k = 1 }``, floats with a ``.0``);
* :func:`to_json` turns a TOML value into the JSON Codex reports (a date-time becomes
  ``{"$__toml_private_datetime": "..."}``; ``inf``/``nan`` become ``null``) and
  :func:`layer_version` hashes it as Codex does (``sha256:`` of the compact JSON with sorted
  keys), so ``config/read`` versions match the real server's.

Boundary: pure functions on Python values.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any, Final

# decimal and hashlib are imported where used: ``serve`` loads this module before it answers
# ``initialize`` and needs neither (floats and layer versions are written later, if ever)

__all__ = [
    "DATETIME_FIELD",
    "encode_key",
    "encode_string",
    "encode_value",
    "json_text",
    "layer_version",
    "to_json",
    "toml_datetime",
]

DATETIME_FIELD: Final = "$__toml_private_datetime"
"""How the Rust ``toml`` crate hands a date-time to serde (Codex's JSON keeps it)."""


def _string_metrics(text: str) -> tuple[int, int, bool, bool, bool]:
    max_single = max_double = run_single = run_double = 0
    escape_codes = escape = newline = False
    for char in text:
        run_single = run_single + 1 if char == "'" else 0
        run_double = run_double + 1 if char == '"' else 0
        max_single = max(max_single, run_single)
        max_double = max(max_double, run_double)
        if char == "\\":
            escape = True
        elif char == "\n":
            newline = True
        elif char != "\t" and (ord(char) <= 0x1F or char == "\x7f"):
            escape_codes = True
    return max_single, max_double, escape_codes, escape, newline


def _escaped(text: str, *, multiline: bool) -> str:
    out: list[str] = []
    run = 0
    for char in text:
        run = run + 1 if char == '"' else 0
        if char == '"' and run > (2 if multiline else 0):
            out.append('\\"')
            run = 0
        elif char == "\n" and multiline:
            out.append(char)
        elif char in "\b\t\n\f\r\\":
            out.append(
                {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}.get(char, "\\\\")
            )
        elif ord(char) <= 0x1F or char == "\x7f":
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return "".join(out)


def encode_string(text: str) -> str:
    """A TOML string value for ``text`` (``toml_writer``'s default choice)."""
    max_single, max_double, escape_codes, escape, newline = _string_metrics(text)
    if not (escape_codes or escape or max_double or newline):
        return f'"{text}"'
    if not (escape_codes or max_single or newline):
        return f"'{text}'"
    lead = "\n" if newline else ""
    if not (escape_codes or escape or max_double > 2):
        return f'"""{lead}{_escaped(text, multiline=True)}"""'
    if not (escape_codes or max_single > 2):
        return f"'''{lead}{text}'''"
    if newline:
        return f'"""{lead}{_escaped(text, multiline=True)}"""'
    return f'"{_escaped(text, multiline=False)}"'


def encode_key(name: str) -> str:
    """A TOML key for ``name``: bare when it can be, else quoted."""
    if name and all(c.isascii() and (c.isalnum() or c in "-_") for c in name):
        return name
    control = any((ord(c) <= 0x1F and c != "\t") or c == "\x7f" for c in name)
    if not (control or "\\" in name or '"' in name):
        return f'"{name}"'
    if not (control or "'" in name):
        return f"'{name}'"
    return f'"{_escaped(name, multiline=False)}"'


def rust_float(value: float) -> str:
    """``f64`` as Rust's ``Display`` writes it, with ``.0`` on whole numbers (``toml_edit``)."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    import decimal

    text = format(decimal.Decimal(repr(value)), "f")
    if "." not in text:
        text += ".0"
    return text


def toml_datetime(value: dt.datetime | dt.date | dt.time) -> str:
    """A ``tomllib`` date-time back in TOML's text form."""
    if isinstance(value, dt.datetime):
        text = value.replace(tzinfo=None).isoformat()
        offset = value.utcoffset()
        if offset is None:
            return text
        if not offset:
            return text + "Z"
        minutes = int(offset.total_seconds()) // 60
        sign = "-" if minutes < 0 else "+"
        minutes = abs(minutes)
        return f"{text}{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    return value.isoformat()


def encode_value(value: Any) -> str:
    """A TOML value as ``toml_edit`` renders a new one (tables are inline here)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return rust_float(value)
    if isinstance(value, str):
        return encode_string(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return toml_datetime(value)
    if isinstance(value, list):
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return "[" + ", ".join(encode_value(item) for item in items) + "]"
    if isinstance(value, dict):
        table: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        if not table:
            return "{}"
        body = ", ".join(f"{encode_key(k)} = {encode_value(v)}" for k, v in table.items())
        return "{ " + body + " }"
    raise TypeError(f"not a TOML value: {value!r}")


def to_json(value: Any) -> Any:
    """A TOML value (``tomllib``'s) as the JSON Codex reports."""
    if isinstance(value, dict):
        table: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return {k: to_json(v) for k, v in table.items()}
    if isinstance(value, list):
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return [to_json(item) for item in items]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return {DATETIME_FIELD: toml_datetime(value)}
    return value


def _ryu(value: float) -> str:
    """A float as ``serde_json`` (ryu) writes it."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    import decimal

    sign = "-" if value < 0 else ""
    parts = decimal.Decimal(repr(abs(value))).as_tuple()
    digits = "".join(str(d) for d in parts.digits)
    k = int(parts.exponent)
    stripped = digits.rstrip("0")
    k += len(digits) - len(stripped)
    digits = stripped.lstrip("0") or "0"
    length = len(digits)
    kk = length + k
    if k >= 0 and kk <= 16:
        return f"{sign}{digits}{'0' * k}.0"
    if 0 < kk <= 16:
        return f"{sign}{digits[:kk]}.{digits[kk:]}"
    if -5 < kk <= 0:
        return f"{sign}0.{'0' * -kk}{digits}"
    if length == 1:
        return f"{sign}{digits}e{kk - 1}"
    return f"{sign}{digits[0]}.{digits[1:]}e{kk - 1}"


def _json_parts(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        table: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        out.append("{")
        for index, key in enumerate(sorted(table)):
            if index:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _json_parts(table[key], out)
        out.append("}")
    elif isinstance(value, list):
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        out.append("[")
        for index, item in enumerate(items):
            if index:
                out.append(",")
            _json_parts(item, out)
        out.append("]")
    elif isinstance(value, float):
        out.append(_ryu(value) if math.isfinite(value) else "null")
    else:
        out.append(json.dumps(value, ensure_ascii=False))


def json_text(value: Any) -> str:
    """Compact JSON with sorted keys, as ``serde_json`` writes a ``toml::Value``."""
    out: list[str] = []
    _json_parts(to_json(value), out)
    return "".join(out)


def layer_version(config: dict[str, Any]) -> str:
    """A layer's version as ``config/read`` reports it."""
    import hashlib

    return "sha256:" + hashlib.sha256(json_text(config).encode("utf-8")).hexdigest()
