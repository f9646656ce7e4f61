"""Edits of a ``config.toml`` document, as Codex 0.163.0 applies ``config/value/write``.

Role: two operations on a :class:`~codex_app_bridge.config._document.Document`, with the rules
of Codex's ``toml_edit`` writer:

* :func:`set_path` walks to the parent table (creating implicit tables, turning an inline table
  on the way into a ``[table]``, replacing a non-table value), then sets the key; an existing
  key keeps its place and its decor (the comment after the value, the comments above it); a
  table value becomes ``[a.b]`` sections, a nested table a sub-section, arrays and tables in
  arrays stay inline;
* :func:`clear_path` removes a key and the comment lines above it.

Boundary: the document tree only; which edits to make is ``_service``'s business.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from codex_app_bridge.config._document import ArrayOfTables, Document, Item, Key, Table, Value
from codex_app_bridge.config._encode import encode_value

__all__ = ["clear_path", "item_from_value", "set_path"]


def item_from_value(value: Any) -> Item:
    """A new item for a TOML value (a table as a ``[section]``, the rest inline)."""
    if isinstance(value, dict):
        table = Table()
        for key, member in cast("dict[str, Any]", value).items():
            table.items[key] = (Key(key), item_from_value(member))
        return table
    return Value(encode_value(value))


def _table_from_inline(value: Value) -> Table:
    table = Table(implicit=True)
    for key, member in value.entries or []:
        table.items[key.name] = (
            Key(key.name),
            Value(member.raw, member.prefix, "", member.entries),
        )
    return table


def _descend(doc: Document, segments: Sequence[str], *, create: bool) -> Table | None:
    current = doc.root
    for segment in segments:
        item = current.get(segment)
        if item is None:
            if not create:
                return None
            item = Table(implicit=True)
            current.set(segment, item)
        if isinstance(item, Value):
            if item.entries is not None:
                item = _table_from_inline(item)
            elif create:
                item = Table(implicit=True)
            else:
                return None
            current.set(segment, item)
        if isinstance(item, ArrayOfTables):
            return None
        current = item
    return current


def _preserve_decor(existing: Item, replacement: Item) -> None:
    if isinstance(existing, Table) and isinstance(replacement, Table):
        replacement.prefix, replacement.suffix = existing.prefix, existing.suffix
        for name, (old_key, old_item) in existing.items.items():
            entry = replacement.items.get(name)
            if entry is None:
                continue
            new_key, new_item = entry
            new_key.leaf, new_key.dotted = old_key.leaf, old_key.dotted
            _preserve_decor(old_item, new_item)
    elif isinstance(existing, Value) and isinstance(replacement, Value):
        replacement.prefix, replacement.suffix = existing.prefix, existing.suffix


def set_path(doc: Document, segments: Sequence[str], item: Item) -> bool:
    """Set the key at ``segments`` (see the module docstring); whether anything changed."""
    parent = _descend(doc, segments[:-1], create=True)
    if parent is None:
        return False
    last = segments[-1]
    existing = parent.get(last)
    if existing is not None:
        _preserve_decor(existing, item)
    parent.set(last, item)
    return True


def clear_path(doc: Document, segments: Sequence[str]) -> bool:
    """Remove the key at ``segments``; whether it was there."""
    parent = _descend(doc, segments[:-1], create=False)
    return parent is not None and parent.remove(segments[-1])
