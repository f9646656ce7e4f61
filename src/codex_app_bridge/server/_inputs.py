"""Client ``UserInput`` (v2 wire, camelCase) to core ``UserInput`` (snake_case), as Codex converts
the ``turn/start`` / ``turn/steer`` input before it reaches core.

``text`` keeps its text elements, ``image`` its URL or file id (and detail), ``localImage`` becomes
``local_image``, ``audio`` / ``localAudio`` become ``audio`` / ``local_audio``, ``skill`` and
``mention`` pass through. Boundary: pure, one function.
"""

from __future__ import annotations

from collections.abc import Sequence

from codex_app_bridge.protocol import core, v2

__all__ = ["core_inputs"]


def _core_input(part: v2.UserInput) -> core.UserInput:
    if isinstance(part, v2.TextUserInput):
        return core.TextUserInput(
            text=part.text,
            text_elements=[
                core.TextElement(
                    byte_range=core.ByteRange(
                        start=element.byte_range.start, end=element.byte_range.end
                    ),
                    placeholder=element.placeholder,
                )
                for element in part.text_elements
            ],
        )
    if isinstance(part, v2.UrlUserInput):
        return core.ImageUserInput(image_url=part.url, detail=part.detail)
    if isinstance(part, v2.FileIdUserInput):
        return core.ImageUserInput(file_id=part.file_id, detail=part.detail)
    if isinstance(part, v2.LocalImageUserInput):
        return core.LocalImageUserInput(path=part.path, detail=part.detail)
    if isinstance(part, v2.AudioUserInput):
        return core.AudioUserInput(audio_url=part.url)
    if isinstance(part, v2.LocalAudioUserInput):
        return core.LocalAudioUserInput(path=part.path)
    if isinstance(part, v2.SkillUserInput):
        return core.SkillUserInput(name=part.name, path=part.path)
    return core.MentionUserInput(name=part.name, path=part.path)


def core_inputs(inputs: Sequence[v2.UserInput]) -> list[core.UserInput]:
    """The core form of a client's input list, in order."""
    return [_core_input(part) for part in inputs]
