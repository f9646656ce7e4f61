"""Discriminators for Codex's internally tagged unions that keep unknown variants.

Codex core unions (``ResponseItem``, ``ContentItem``, ``TurnItem``, ``UserInput``, ...) are serde
enums tagged by one field (``type``). Our models keep a variant whose tag we do not know instead of
rejecting it: the discriminator built here sends every known tag to its model and every other
*string* tag to the union's ``Unknown*`` model, which keeps all fields and writes them back
unchanged. A missing or non-string tag is still a validation error, as it is for serde.

Only the tag is inspected; the variant models decide everything else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from pydantic import Discriminator

__all__ = ["UNKNOWN_TAG", "tag_of", "tagged_union_discriminator"]

#: Union tag used for the lossless ``Unknown*`` member of every union.
UNKNOWN_TAG = "<unknown>"

_MISSING = object()


def tag_of(value: Any, field: str = "type") -> str | None:
    """The raw tag of a JSON object or a model instance, or ``None`` when absent or not a string."""
    raw: object
    if isinstance(value, dict):
        raw = cast("dict[str, object]", value).get(field, _MISSING)
    else:
        raw = getattr(value, field, _MISSING)
    return raw if isinstance(raw, str) else None


def tagged_union_discriminator(
    known: Iterable[str],
    *,
    field: str = "type",
    aliases: Mapping[str, str] | None = None,
    union_name: str = "union",
) -> Discriminator:
    """A pydantic ``Discriminator`` for a union tagged by ``field`` with an unknown fallback.

    ``known`` lists the tags that have their own model; ``aliases`` maps extra input tags onto a
    known one (serde ``#[serde(alias)]``). Any other string tag selects :data:`UNKNOWN_TAG`.
    """
    known_tags = frozenset(known)
    alias_map = dict(aliases or {})

    def discriminate(value: Any) -> str | None:
        tag = tag_of(value, field)
        if tag is None:
            return None
        tag = alias_map.get(tag, tag)
        return tag if tag in known_tags else UNKNOWN_TAG

    return Discriminator(
        discriminate,
        custom_error_type="missing_tag",
        custom_error_message=f"{union_name}: expected an object with a string {field!r} tag",
    )
