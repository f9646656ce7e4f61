"""A TOML document as Codex keeps it for edits: every byte of the user's layout, and spans.

Role: the parse tree behind two things Codex 0.163.0 does with ``config.toml`` that a plain
TOML reader cannot: report an error at ``path:line:column`` with the text of the Rust ``toml``
crate (``key with no value, expected `=```, a value's span for a type error), and rewrite the
file after ``config/value/write`` the way its ``toml_edit`` document does (comments, blank lines
and key order kept; a removed key takes the comment lines above it; a new key goes after the last
key of its table, a new table after its siblings).

The model mirrors ``toml_edit``'s: a table maps keys to items (a value, a table, an array of
tables), in insertion order; a key carries its *decor* (the text before and after it: the comment
lines above a key-value are the prefix of its last key), a value its own decor (the spaces after
``=`` and the trailing comment), a table its header decor and the position of its header in the
file. Tables are rendered in header position order (a table that has none takes the position of
the table rendered before it), each with its key-values, which is how new tables land after the
tables near them.

Boundary: text in, text and spans out. The *values* of a document come from ``tomllib`` (the
loader uses this parser for spans and error texts only); this module never interprets them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "ArrayOfTables",
    "Document",
    "Item",
    "Key",
    "Path",
    "Span",
    "Table",
    "TomlSyntaxError",
    "Value",
    "line_col",
    "parse_document",
]

Span = tuple[int, int]
"""``[start, end)`` character offsets in the document text."""
Path = tuple[str | int, ...]
"""Keys (and array indices) from the root to a value."""

_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")
_SCALAR_CHARS: Final = re.compile(r"[A-Za-z0-9_.+:\-]*")
_DATE: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME_AFTER_SPACE: Final = re.compile(r" \d{2}:\d{2}")
_DEC_INT: Final = re.compile(r"[+-]?(0|[1-9](_?\d)*)")
_FLOAT: Final = re.compile(
    r"[+-]?(0|[1-9](_?\d)*)((\.\d(_?\d)*)([eE][+-]?\d(_?\d)*)?|[eE][+-]?\d(_?\d)*)"
)
_PREFIXED_INT: Final = {
    "0x": re.compile(r"[0-9A-Fa-f](_?[0-9A-Fa-f])*"),
    "0o": re.compile(r"[0-7](_?[0-7])*"),
    "0b": re.compile(r"[01](_?[01])*"),
}
_ESCAPES: Final = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
_ESCAPE_EXPECTED: Final = (
    'missing escaped value, expected `b`, `e`, `f`, `n`, `r`, `\\`, `"`, `x`, `u`, `U`'
)


class TomlSyntaxError(ValueError):
    """A document the Rust ``toml`` crate rejects, with its message and span."""

    def __init__(self, message: str, span: Span) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


def line_col(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of ``index`` as ``toml_edit`` reports them (an offset at the end
    of the text counts past the last character of its last line)."""
    if not text:
        return 1, index + 1
    safe = min(index, len(text) - 1)
    extra = index - safe
    line_start = text.rfind("\n", 0, safe) + 1
    line = text.count("\n", 0, line_start)
    return line + 1, safe - line_start + extra + 1


@dataclass(eq=False)
class Key:
    """One key of a table, as written (``raw``) or made by an edit (``raw`` ``None``)."""

    name: str
    raw: str | None = None
    leaf: tuple[str, str] | None = None
    """Decor when it ends a key path (the comment lines above a key-value are its prefix)."""
    dotted: tuple[str, str] | None = None
    """Decor when it is an inner part of a dotted key path or a header."""


@dataclass(eq=False)
class Value:
    """A value as written (its source text) with its decor; ``entries`` for an inline table."""

    raw: str
    prefix: str | None = None
    suffix: str | None = None
    entries: list[tuple[Key, Value]] | None = None


@dataclass(eq=False)
class Table:
    """A table: its items in order, its header decor and position (see the module docstring)."""

    items: dict[str, tuple[Key, Item]] = field(default_factory=dict[str, "tuple[Key, Item]"])
    implicit: bool = False
    dotted: bool = False
    position: int | None = None
    prefix: str | None = None
    suffix: str | None = None

    def get(self, name: str) -> Item | None:
        entry = self.items.get(name)
        return None if entry is None else entry[1]

    def set(self, name: str, item: Item) -> None:
        """Set ``name`` to ``item``, keeping its key (and place) when it exists."""
        entry = self.items.get(name)
        key = Key(name) if entry is None else entry[0]
        self.items[name] = (key, item)

    def remove(self, name: str) -> bool:
        return self.items.pop(name, None) is not None

    def values(self, prefix: tuple[Key, ...] = ()) -> Iterator[tuple[tuple[Key, ...], Value]]:
        """Key-values rendered in this table's body (dotted tables' ones included), in order."""
        for key, item in self.items.values():
            if isinstance(item, Value):
                yield (*prefix, key), item
            elif isinstance(item, Table) and item.dotted:
                yield from item.values((*prefix, key))


@dataclass(eq=False)
class ArrayOfTables:
    tables: list[Table] = field(default_factory=list["Table"])


Item = Value | Table | ArrayOfTables


# ------------------------------------------------------------------ rendering

_DEFAULT_TABLE_DECOR: Final = ("\n", "")


def _decor(decor: tuple[str, str] | None, default: tuple[str, str]) -> tuple[str, str]:
    return default if decor is None else decor


def _key_text(key: Key) -> str:
    if key.raw is not None:
        return key.raw
    from codex_app_bridge.config._encode import encode_key

    return encode_key(key.name)


def _key_path(keys: tuple[Key, ...], default: tuple[str, str]) -> str:
    leaf = _decor(keys[-1].leaf, default)
    parts: list[str] = [leaf[0]]
    for index, key in enumerate(keys):
        last = index == len(keys) - 1
        if index:
            parts.append(".")
            parts.append(_decor(key.dotted, ("", ""))[0])
        parts.append(_key_text(key))
        parts.append(leaf[1] if last else _decor(key.dotted, ("", ""))[1])
    return "".join(parts)


def _value_text(value: Value) -> str:
    prefix = " " if value.prefix is None else value.prefix
    suffix = "" if value.suffix is None else value.suffix
    return f"{prefix}{value.raw}{suffix}"


@dataclass(eq=False)
class Document:
    """A parsed (or new) ``config.toml``."""

    root: Table = field(default_factory=lambda: Table(position=0))
    trailing: str = ""
    value_spans: dict[Path, Span] = field(default_factory=dict[Path, Span])
    """Where each value of the parsed text is (inline tables and arrays included)."""
    key_spans: dict[Path, Span] = field(default_factory=dict[Path, Span])
    """Where each key was first written (a header's part for the tables it names)."""

    def render(self) -> str:
        tables: list[tuple[int, Table, tuple[Key, ...], bool]] = []
        last_position = 0

        def visit(table: Table, path: tuple[Key, ...], in_array: bool) -> None:
            nonlocal last_position
            if not table.dotted:
                if table.position is not None:
                    last_position = table.position
                tables.append((last_position, table, path, in_array))
            for key, item in table.items.values():
                if isinstance(item, Table):
                    visit(item, (*path, key), False)
                elif isinstance(item, ArrayOfTables):
                    for member in item.tables:
                        visit(member, (*path, key), True)

        visit(self.root, (), False)
        tables.sort(key=lambda entry: entry[0])
        out: list[str] = []
        first = True
        for _, table, path, in_array in tables:
            children = list(table.values())
            if not path:
                if children:
                    first = False
            elif in_array or not (table.implicit and not children):
                default = ("", _DEFAULT_TABLE_DECOR[1]) if first else _DEFAULT_TABLE_DECOR
                first = False
                open_, close = ("[[", "]]") if in_array else ("[", "]")
                prefix = default[0] if table.prefix is None else table.prefix
                suffix = default[1] if table.suffix is None else table.suffix
                out.append(f"{prefix}{open_}{_key_path(path, ('', ''))}{close}{suffix}\n")
            for keys, value in children:
                out.append(f"{_key_path(keys, ('', ' '))}={_value_text(value)}\n")
        out.append(self.trailing)
        return "".join(out)


# ------------------------------------------------------------------ parsing


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.doc = Document()
        self.positions = 1

    # -- low level

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def startswith(self, token: str) -> bool:
        return self.text.startswith(token, self.pos)

    def fail(self, message: str, start: int, end: int | None = None) -> TomlSyntaxError:
        return TomlSyntaxError(message, (start, start if end is None else end))

    def skip_ws(self) -> str:
        start = self.pos
        while self.peek() in (" ", "\t") and self.peek():
            self.pos += 1
        return self.text[start : self.pos]

    def skip_comment(self) -> str:
        if self.peek() != "#":
            return ""
        start = self.pos
        end = self.text.find("\n", start)
        self.pos = len(self.text) if end < 0 else end
        if self.text[self.pos - 1 : self.pos] == "\r":
            self.pos -= 1
        return self.text[start : self.pos]

    def skip_trivia(self) -> str:
        """Blank lines, comments and indentation before the next item."""
        start = self.pos
        while True:
            self.skip_ws()
            self.skip_comment()
            if self.startswith("\r\n"):
                self.pos += 2
            elif self.peek() == "\n":
                self.pos += 1
            else:
                return self.text[start : self.pos]

    def line_end(self, after: int) -> str:
        """Spaces and a comment up to the end of the line; anything else is an error."""
        suffix = self.skip_ws() + self.skip_comment()
        if self.startswith("\r\n"):
            self.pos += 2
        elif self.peek() == "\n":
            self.pos += 1
        elif self.peek():
            end = self.text.find("\n", self.pos)
            end = len(self.text) if end < 0 else end
            stop = len(self.text[after:end].rstrip()) + after
            raise self.fail("string values must be quoted, expected literal string", after, stop)
        return suffix

    # -- keys

    def key(self) -> tuple[str, str, Span]:
        start = self.pos
        char = self.peek()
        if char == '"':
            name = self.basic_string(multiline=False)
        elif char == "'":
            name = self.literal_string(multiline=False)
        else:
            match = _BARE_KEY.match(self.text, self.pos)
            if match is None:
                raise self.fail(
                    "unquoted keys cannot be empty, expected letters, numbers, `-`, `_`", start
                )
            self.pos = match.end()
            name = match.group()
        return name, self.text[start : self.pos], (start, self.pos)

    def key_path(self) -> list[tuple[Key, Span]]:
        keys: list[tuple[Key, Span]] = []
        while True:
            before = self.skip_ws() if keys else ""
            name, raw, span = self.key()
            after = self.skip_ws()
            keys.append((Key(name, raw, dotted=(before, after)), span))
            if self.peek() != ".":
                return keys
            self.pos += 1

    # -- strings

    def basic_string(self, *, multiline: bool) -> str:
        delimiter = '"""' if multiline else '"'
        self.pos += len(delimiter)
        if multiline and self.startswith("\n"):
            self.pos += 1
        elif multiline and self.startswith("\r\n"):
            self.pos += 2
        out: list[str] = []
        kind = "multi-line basic string" if multiline else "basic string"
        while True:
            char = self.peek()
            if not char or (char == "\n" and not multiline):
                raise self.fail(f'invalid {kind}, expected `"`', self.pos)
            if multiline and self.startswith('"""'):
                extra = 0
                while self.peek(3 + extra) == '"' and extra < 2:
                    extra += 1
                out.append('"' * extra)
                self.pos += 3 + extra
                return "".join(out)
            if char == '"' and not multiline:
                self.pos += 1
                return "".join(out)
            if char == "\\":
                self.pos += 1
                out.append(self.escape(multiline))
                continue
            out.append(char)
            self.pos += 1

    def escape(self, multiline: bool) -> str:
        char = self.peek()
        if char in _ESCAPES:
            self.pos += 1
            return _ESCAPES[char]
        if char == "e":
            self.pos += 1
            return "\x1b"
        if multiline and char in (" ", "\t", "\r", "\n"):
            while self.peek() in (" ", "\t", "\r", "\n") and self.peek():
                self.pos += 1
            return ""
        width = {"x": 2, "u": 4, "U": 8}.get(char)
        digits = self.text[self.pos + 1 : self.pos + 1 + width] if width else ""
        if width and len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits):
            self.pos += 1 + width
            return chr(int(digits, 16))
        raise self.fail(_ESCAPE_EXPECTED, self.pos)

    def literal_string(self, *, multiline: bool) -> str:
        delimiter = "'''" if multiline else "'"
        self.pos += len(delimiter)
        if multiline and self.startswith("\n"):
            self.pos += 1
        elif multiline and self.startswith("\r\n"):
            self.pos += 2
        start = self.pos
        kind = "multi-line literal string" if multiline else "literal string"
        while True:
            char = self.peek()
            if not char or (char == "\n" and not multiline):
                raise self.fail(f"invalid {kind}, expected `'`", self.pos)
            if multiline and self.startswith("'''"):
                extra = 0
                while self.peek(3 + extra) == "'" and extra < 2:
                    extra += 1
                text = self.text[start : self.pos] + "'" * extra
                self.pos += 3 + extra
                return text
            if char == "'" and not multiline:
                self.pos += 1
                return self.text[start : self.pos - 1]
            self.pos += 1

    # -- values

    def value(self, path: Path) -> Value:
        start = self.pos
        char = self.peek()
        entries: list[tuple[Key, Value]] | None = None
        if self.startswith('"""'):
            self.basic_string(multiline=True)
        elif char == '"':
            self.basic_string(multiline=False)
        elif self.startswith("'''"):
            self.literal_string(multiline=True)
        elif char == "'":
            self.literal_string(multiline=False)
        elif char == "[":
            self.array(path)
        elif char == "{":
            entries = self.inline_table(path)
        else:
            self.scalar()
        self.doc.value_spans.setdefault(path, (start, self.pos))
        return Value(self.text[start : self.pos], entries=entries)

    def array(self, path: Path) -> None:
        self.pos += 1
        index = 0
        last_end = self.pos
        while True:
            self.skip_trivia()
            if self.peek() == "]":
                self.pos += 1
                return
            if not self.peek():
                raise self.fail("unclosed array, expected `]`", last_end)
            self.value((*path, index))
            index += 1
            last_end = self.pos
            self.skip_trivia()
            if self.peek() == ",":
                self.pos += 1
                last_end = self.pos
                continue
            if self.peek() == "]":
                self.pos += 1
                return
            raise self.fail("unclosed array, expected `]`", last_end)

    def inline_table(self, path: Path) -> list[tuple[Key, Value]]:
        self.pos += 1
        entries: list[tuple[Key, Value]] = []
        seen: set[str] = set()
        while True:
            before = self.skip_ws()
            if self.peek() == "}" and not entries:
                self.pos += 1
                return entries
            if self.peek() in ("\n", "\r", ""):
                raise self.fail("unclosed inline table, expected `}`", self.pos)
            keys = self.key_path()
            if self.peek() != "=":
                raise self.fail("key with no value, expected `=`", self.pos)
            self.pos += 1
            names = [key.name for key, _ in keys]
            full = (*path, *names)
            if names[0] in seen and len(names) == 1:
                raise self.fail("duplicate key", *keys[-1][1])
            seen.add(names[0])
            for depth, (_, span) in enumerate(keys):
                self.doc.key_spans.setdefault((*path, *names[: depth + 1]), span)
            value_prefix = self.skip_ws()
            value = self.value(full)
            value.prefix = value_prefix
            value.suffix = self.skip_ws()
            leaf = keys[-1][0]
            leaf.leaf, leaf.dotted = (before, (leaf.dotted or ("", ""))[1]), None
            entries.append((leaf, value))
            char = self.peek()
            if char == ",":
                self.pos += 1
                continue
            if char == "}":
                self.pos += 1
                return entries
            raise self.fail("unclosed inline table, expected `}`", self.pos)

    def scalar(self) -> None:
        start = self.pos
        match = _SCALAR_CHARS.match(self.text, self.pos)
        assert match is not None
        end = match.end()
        token = match.group()
        date = _DATE.match(token)
        if date and _TIME_AFTER_SPACE.match(self.text, end) and len(token) == 10:
            time_end = _SCALAR_CHARS.match(self.text, end + 1)
            assert time_end is not None
            end = time_end.end()
            token = self.text[start:end]
        self.check_scalar(token, start)
        self.pos = end

    def check_scalar(self, token: str, start: int) -> None:
        end = start + len(token)
        if token in ("true", "false") or token.lstrip("+-") in ("inf", "nan"):
            return
        date = _DATE.match(token)
        if date:
            if not 1 <= int(date.group(2)) <= 12:
                raise self.fail("invalid date, expected month between 01 and 12", start, end)
            return
        if re.fullmatch(r"\d{2}:\d{2}(:\d{2}(\.\d+)?)?", token):
            return
        for prefix, digits in _PREFIXED_INT.items():
            if token.startswith(prefix):
                body = token[2:]
                if not body:
                    raise self.fail("integer number overflowed", start, end)
                if not digits.fullmatch(body):
                    self.underscore(token, start)
                    raise self.fail("invalid integer", start, end)
                return
        if _DEC_INT.fullmatch(token) or _FLOAT.fullmatch(token):
            return
        if token[:1].isdigit() or token[:1] in ("+", "-"):
            self.underscore(token, start)
        line_end = self.text.find("\n", start)
        line_end = len(self.text) if line_end < 0 else line_end
        rest = self.text[start:line_end].split("#", 1)[0].rstrip()
        raise self.fail(
            "string values must be quoted, expected literal string", start, start + len(rest)
        )

    def underscore(self, token: str, start: int) -> None:
        for index, char in enumerate(token):
            if char != "_":
                continue
            before = token[index - 1 : index]
            after = token[index + 1 : index + 2]
            if not (before.isalnum() and after.isalnum()):
                raise self.fail("`_` may only go between digits, expected nothing", start + index)

    # -- structure

    def document(self) -> Document:
        doc = self.doc
        current = doc.root
        current_path: tuple[str, ...] = ()
        while True:
            prefix = self.skip_trivia()
            if not self.peek():
                doc.trailing = prefix
                return doc
            if self.peek() == "[":
                current, current_path = self.header(prefix)
            else:
                self.key_value(current, current_path, prefix)

    def header(self, prefix: str) -> tuple[Table, tuple[str, ...]]:
        array = self.startswith("[[")
        self.pos += 2 if array else 1
        lead = self.skip_ws()
        keys = self.key_path()
        close = "]]" if array else "]"
        if not self.startswith(close):
            what = "array table" if array else "table"
            if array and self.peek() == "]":
                raise self.fail(f"unclosed {what}, expected `]`", self.pos + 1)
            raise self.fail(f"unclosed {what}, expected `]`", self.pos)
        self.pos += len(close)
        suffix = self.line_end(self.pos)
        names = tuple(key.name for key, _ in keys)
        for depth, (_, span) in enumerate(keys):
            self.doc.key_spans.setdefault(names[: depth + 1], span)
        leaf_key = keys[-1][0]
        leaf_key.leaf = (lead, (leaf_key.dotted or ("", ""))[1])
        leaf_key.dotted = None
        table = self.doc.root
        for key, span in keys[:-1]:
            item = table.get(key.name)
            if item is None:
                child = Table(implicit=True)
                table.items[key.name] = (key, child)
                table = child
            elif isinstance(item, Table):
                table = item
            elif isinstance(item, ArrayOfTables) and item.tables:
                table = item.tables[-1]
            else:
                raise self.fail("duplicate key", *span)
        name, span = leaf_key.name, keys[-1][1]
        existing = table.get(name)
        position = self.positions
        self.positions += 1
        if array:
            if existing is None:
                aot = ArrayOfTables()
                table.items[name] = (leaf_key, aot)
            elif isinstance(existing, ArrayOfTables):
                aot = existing
            else:
                raise self.fail("duplicate key", *span)
            member = Table(position=position, prefix=prefix, suffix=suffix)
            aot.tables.append(member)
            return member, names
        if existing is None:
            created = Table(position=position, prefix=prefix, suffix=suffix)
            table.items[name] = (leaf_key, created)
            return created, names
        if isinstance(existing, Table) and existing.implicit and not existing.dotted:
            existing.implicit = False
            existing.position = position
            existing.prefix, existing.suffix = prefix, suffix
            return existing, names
        raise self.fail("duplicate key", *span)

    def key_value(self, table: Table, table_path: tuple[str, ...], prefix: str) -> None:
        keys = self.key_path()
        if self.peek() != "=":
            raise self.fail("key with no value, expected `=`", self.pos)
        self.pos += 1
        names = tuple(key.name for key, _ in keys)
        full = (*table_path, *names)
        for depth, (_, span) in enumerate(keys):
            self.doc.key_spans.setdefault((*table_path, *names[: depth + 1]), span)
        target = table
        for key, span in keys[:-1]:
            item = target.get(key.name)
            if item is None:
                child = Table(implicit=True, dotted=True)
                target.items[key.name] = (key, child)
                target = child
            elif isinstance(item, Table) and item.dotted:
                target = item
            else:
                raise self.fail("duplicate key", *span)
        leaf, span = keys[-1]
        if leaf.name in target.items:
            raise self.fail("duplicate key", *span)
        leaf.leaf, leaf.dotted = (prefix, (leaf.dotted or ("", ""))[1]), None
        value_prefix = self.skip_ws()
        value_start = self.pos
        value = self.value(full)
        value.prefix = value_prefix
        value.suffix = self.line_end(value_start)
        target.items[leaf.name] = (leaf, value)


def parse_document(text: str) -> Document:
    """Parse ``text``; raises :class:`TomlSyntaxError` with the Rust crate's wording."""
    return _Parser(text).document()
