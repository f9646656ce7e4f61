"""Codex core ``UserInput``: one piece of what a user sent (``codex-rs/protocol/src/user_input.rs``).

Tagged by ``type`` in snake_case. The 0.163.0 variants are ``text``, ``image``, ``local_image``,
``audio``, ``local_audio``, ``skill`` and ``mention`` (variant and field names read from the 0.163.0
binary; ``audio`` is a real core variant there, next to ``local_audio``). ``UserMessage`` turn items
carry these as their ``content`` and the app-server passes them through to ``userMessage`` items.

Null versus absent, as Codex writes it: ``text_elements`` is always written (``[]`` when empty);
``placeholder`` and ``detail`` are omitted when unset. Images name either an ``image_url`` or (0.163.0
image references) a ``file_id``; the unset one is omitted. An unknown ``type`` parses into
:class:`UnknownUserInput`, which keeps every field.

Boundary: shapes only. Turning model content into ``UserInput`` is ``projection.parse_turn_item``.
"""

from typing import Annotated, Literal, Self, TypeAlias

from pydantic import Field, Tag, TypeAdapter, model_validator

from codex_app_bridge.protocol._base import CoreModel, omit_none, union_adapter
from codex_app_bridge.protocol._tagged import UNKNOWN_TAG, tagged_discriminator

__all__ = [
    "USER_INPUT_ADAPTER",
    "AudioUserInput",
    "ByteRange",
    "ImageDetail",
    "ImageUserInput",
    "LocalAudioUserInput",
    "LocalImageUserInput",
    "MentionUserInput",
    "SkillUserInput",
    "TextElement",
    "TextUserInput",
    "UnknownUserInput",
    "UserInput",
]

#: Image detail level (``ImageDetail``, lowercase on the wire).
ImageDetail = Literal["auto", "low", "high", "original"]


class ByteRange(CoreModel):
    """A byte range ``[start, end)`` in the UTF-8 text it belongs to."""

    start: int
    end: int


class TextElement(CoreModel):
    """A UI-defined span inside a text input (e.g. a mention placeholder)."""

    byte_range: ByteRange
    placeholder: str | None = omit_none()


class TextUserInput(CoreModel):
    """``{"type":"text","text":…,"text_elements":[…]}``."""

    type: Literal["text"] = "text"
    text: str
    text_elements: list[TextElement] = Field(default_factory=list[TextElement])


class ImageUserInput(CoreModel):
    """``{"type":"image","image_url":…,"detail"?:…}`` (or ``file_id`` instead of ``image_url``)."""

    type: Literal["image"] = "image"
    image_url: str | None = omit_none()
    file_id: str | None = omit_none()
    detail: ImageDetail | None = omit_none()

    @model_validator(mode="after")
    def _needs_a_reference(self) -> Self:
        if self.image_url is None and self.file_id is None:
            raise ValueError("image input needs an image_url or a file_id")
        return self


class LocalImageUserInput(CoreModel):
    """``{"type":"local_image","path":…,"detail"?:…}``."""

    type: Literal["local_image"] = "local_image"
    path: str
    detail: ImageDetail | None = omit_none()


class AudioUserInput(CoreModel):
    """``{"type":"audio","audio_url":…}``."""

    type: Literal["audio"] = "audio"
    audio_url: str


class LocalAudioUserInput(CoreModel):
    """``{"type":"local_audio","path":…}``."""

    type: Literal["local_audio"] = "local_audio"
    path: str


class SkillUserInput(CoreModel):
    """``{"type":"skill","name":…,"path":…}``."""

    type: Literal["skill"] = "skill"
    name: str
    path: str


class MentionUserInput(CoreModel):
    """``{"type":"mention","name":…,"path":…}`` (``path`` is e.g. an ``app://`` reference)."""

    type: Literal["mention"] = "mention"
    name: str
    path: str


class UnknownUserInput(CoreModel):
    """A ``UserInput`` whose ``type`` this version does not know; every field is kept."""

    type: str


_UserInputVariants: TypeAlias = (
    Annotated[TextUserInput, Tag("text")]
    | Annotated[ImageUserInput, Tag("image")]
    | Annotated[LocalImageUserInput, Tag("local_image")]
    | Annotated[AudioUserInput, Tag("audio")]
    | Annotated[LocalAudioUserInput, Tag("local_audio")]
    | Annotated[SkillUserInput, Tag("skill")]
    | Annotated[MentionUserInput, Tag("mention")]
    | Annotated[UnknownUserInput, Tag(UNKNOWN_TAG)]
)
UserInput = Annotated[_UserInputVariants, tagged_discriminator(_UserInputVariants, "UserInput")]
"""Core ``UserInput`` union (tagged by ``type``, unknown variants kept)."""

USER_INPUT_ADAPTER: TypeAdapter[UserInput] = union_adapter(UserInput)
