"""The model catalog bundled in Codex 0.163.0, as ``model/list`` reports it.

Role: the eleven models of the binary (eight visible, ``gpt-6.1-sol`` the default), probed with
``model/list {includeHidden: true}`` and shipped as ``catalog.json``, and the paging rules of
``model/list`` (the cursor is a decimal offset; ``limit`` 0 counts as 1; a cursor past the end is
refused). A slug outside the catalog runs on fallback metadata, which Codex warns about.

Boundary: data and pure functions.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Final, cast

__all__ = [
    "DEFAULT_MODEL",
    "CatalogPageError",
    "catalog",
    "catalog_model",
    "fallback_model_warning",
    "model_page",
]

DEFAULT_MODEL: Final = "gpt-6.1-sol"


class CatalogPageError(ValueError):
    """A ``model/list`` cursor the real server refuses (``-32600`` with this text)."""


@cache
def catalog() -> tuple[dict[str, Any], ...]:
    """Every model, hidden ones included, in the binary's order."""
    data = json.loads(
        resources.files("codex_app_bridge.config").joinpath("catalog.json").read_text("utf-8")
    )
    return tuple(cast("list[dict[str, Any]]", data))


def catalog_model(slug: str) -> dict[str, Any] | None:
    """The catalog entry of ``slug`` (exact match), or ``None`` (fallback metadata)."""
    for model in catalog():
        if model["model"] == slug:
            return model
    return None


def fallback_model_warning(slug: str) -> str:
    return (
        f"Model metadata for `{slug}` not found. Defaulting to fallback metadata; this can "
        "degrade performance and cause issues."
    )


def _parse_cursor(cursor: str) -> int:
    # Rust's ``usize`` parsing: ASCII digits with an optional leading ``+``
    digits = cursor[1:] if cursor.startswith("+") else cursor
    if not digits or not digits.isascii() or not digits.isdigit() or int(digits) >= 2**64:
        raise CatalogPageError(f"invalid cursor: {cursor}")
    return int(digits)


def model_page(
    cursor: str | None, limit: int | None, include_hidden: bool
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of ``model/list``: the models and the next cursor."""
    models = [m for m in catalog() if include_hidden or not m["hidden"]]
    total = len(models)
    start = 0 if cursor is None else _parse_cursor(cursor)
    if start > total:
        raise CatalogPageError(f"cursor {start} exceeds total models {total}")
    size = max(1, total if limit is None else limit)
    end = min(total, start + size)
    return models[start:end], (str(end) if end < total else None)
