"""Discriminators for tagged unions that keep unknown variants, shared by core and v2 models.

Codex core unions (``ResponseItem``, ``ContentItem``, ``TurnItem``, ``UserInput``, ``EventMsg``,
rollout lines, ...) are serde enums tagged by ``type``; the v2 wire unions (``ServerNotification``,
``ThreadItem``, ...) are tagged by ``method`` or ``type``. Our models keep a variant whose tag we
do not know instead of rejecting it: a discriminator sends every known tag to its model and every
other tag to the union's ``Unknown*`` model (tagged :data:`UNKNOWN_TAG`), which keeps all fields
and writes them back unchanged. :func:`tag_of` reads the tag of a JSON object or a model.

A core union is declared once, as ``Annotated[Model, Tag(...)]`` members with the ``Unknown*``
model tagged :data:`UNKNOWN_TAG`; :func:`tagged_discriminator` reads the tags it knows from those
members (each model's ``type`` Literal), so no list of tags is kept beside the union, and a
missing or non-string tag is a validation error, as it is for serde. The v2 unions are built from
the generated unions at run time (``protocol.v2._adapters``).

Only the tag is inspected; the variant models decide everything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast, get_args

from pydantic import BaseModel, Discriminator, Tag

__all__ = ["UNKNOWN_TAG", "tag_of", "tagged_discriminator", "variant_models", "variant_tags"]

#: Union tag used for the lossless ``Unknown*`` member of every union.
UNKNOWN_TAG = "<unknown>"

_FIELD = "type"
_MISSING = object()


def tag_of(value: Any, field: str = _FIELD) -> str | None:
    """The raw tag of a JSON object or a model instance, or ``None`` when absent or not a string."""
    raw: object
    if isinstance(value, dict):
        raw = cast("dict[str, object]", value).get(field, _MISSING)
    else:
        raw = getattr(value, field, _MISSING)
    return raw if isinstance(raw, str) else None


def variant_tags(variants: Any) -> dict[str, str]:
    """``wire tag -> union Tag`` for each member of a union of ``Annotated[Model, Tag(...)]``.

    A model accepts every value of its ``type`` Literal (serde renames plus aliases); the
    ``Unknown*`` fallback member is skipped.
    """
    mapping: dict[str, str] = {}
    for member in get_args(variants):
        model, tag = get_args(member)
        if not isinstance(tag, Tag):  # pragma: no cover - guards the declarations
            raise TypeError(f"union member {member!r} lacks a Tag")
        if tag.tag == UNKNOWN_TAG:
            continue
        annotation = cast("type[BaseModel]", model).model_fields[_FIELD].annotation
        for literal in get_args(annotation):
            mapping[str(literal)] = tag.tag
    return mapping


def variant_models(variants: Any) -> dict[str, type[BaseModel]]:
    """``wire tag -> member model`` for each known member of a union (the ``Unknown*`` member
    excluded): validating with the member's own model is what the union does for that tag,
    without the discriminator's round trip."""
    models: dict[str, type[BaseModel]] = {}
    for member in get_args(variants):
        model, tag = get_args(member)
        if tag.tag == UNKNOWN_TAG:
            continue
        cls = cast("type[BaseModel]", model)
        for literal in get_args(cls.model_fields[_FIELD].annotation):
            models[str(literal)] = cls
    return models


def tagged_discriminator(
    variants: Any, union_name: str, *, aliases: Mapping[str, str] | None = None
) -> Discriminator:
    """The unknown-preserving ``type`` discriminator of the union of ``variants``.

    The known tags and their input aliases come from the members (:func:`variant_tags`);
    ``aliases`` adds input tags a member's Literal does not name (``compaction_summary``, which a
    validator rewrites). Any other string tag selects :data:`UNKNOWN_TAG`.
    """
    tags = {**variant_tags(variants), **(aliases or {})}
    known = frozenset(tags.values())

    def discriminate(value: Any) -> str | None:
        tag = tag_of(value)
        if tag is None:
            return None
        tag = tags.get(tag, tag)
        return tag if tag in known else UNKNOWN_TAG

    return Discriminator(
        discriminate,
        custom_error_type="missing_tag",
        custom_error_message=f"{union_name}: expected an object with a string {_FIELD!r} tag",
    )
