"""Collaboration modes: the built-in instructions of each mode and how ``turn/start`` fills
them in.

Role: 0.163.0's app server, given a ``turn/start`` ``collaborationMode`` whose
``settings.developer_instructions`` is ``null``, puts in the built-in instructions of that mode
(the presets ``collaborationMode/list`` shows); core then sends non-empty instructions to the
model as the ``<collaboration_mode>`` developer fragment. Modes are ``default`` and ``plan``;
only ``plan`` may ask the user questions (``request_user_input``).

The instruction prose here is the project's own. Boundary: values in and out; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

__all__ = [
    "DEFAULT_MODE_INSTRUCTIONS",
    "MODE_DISPLAY_NAMES",
    "PLAN_MODE_INSTRUCTIONS",
    "collaboration_mode_kind",
    "default_collaboration_mode",
    "normalize_collaboration_mode",
]

PLAN_MODE_INSTRUCTIONS: Final = """\
# Plan mode

The user has switched this conversation to Plan mode. Until they switch back, your job is to \
work out, together with them, a plan they can approve, not to carry it out.

- Explore first: read files, search the code and run commands that only look (listing, \
reading, running existing tests); do not edit files, apply patches or run anything that \
changes the project or the machine.
- When a choice depends on what the user wants (scope, trade-offs, naming, priorities) and you \
cannot settle it from the code, ask with `request_user_input`: one to three short questions, \
each with two or three concrete options, your recommended option first and marked \
"(Recommended)". Say in a short message beforehand what you are about to ask and why.
- Do not ask what the code already answers, and do not ask again what the user has answered.
- Finish with the plan: the goal in one sentence, the steps in order with the files each one \
touches, how the result will be checked, and the risks or open points. Keep it short enough \
to read in a minute.
"""
"""What ``plan`` mode tells the model (the project's own words)."""

DEFAULT_MODE_INSTRUCTIONS: Final = """\
# Default mode

This conversation is in Default mode: carry out what the user asks, end to end, within the \
permissions you have. The `request_user_input` tool does not work in this mode; when you \
truly cannot go on without the user's decision, say so in your reply and stop there, \
otherwise make a reasonable choice, state it, and continue.
"""
"""What ``default`` mode tells the model when a turn selects it without instructions."""

_BUILTIN: Final = {"plan": PLAN_MODE_INSTRUCTIONS, "default": DEFAULT_MODE_INSTRUCTIONS}

MODE_DISPLAY_NAMES: Final = {"default": "Default", "plan": "Plan"}
"""How core names a mode in its messages (``request_user_input is unavailable in Default
mode``)."""


def default_collaboration_mode(model: str, effort: str | None) -> dict[str, Any]:
    """A thread's mode until a turn chooses one (no instructions: no fragment)."""
    return {
        "mode": "default",
        "settings": {"model": model, "reasoning_effort": effort, "developer_instructions": None},
    }


def normalize_collaboration_mode(mode: Mapping[str, Any]) -> dict[str, Any]:
    """A ``turn/start`` ``collaborationMode`` (wire JSON) with ``null`` instructions replaced by
    the mode's built-in ones, as the 0.163.0 app server does."""
    out = dict(mode)
    raw = out.get("settings")
    settings = dict(cast("Mapping[str, Any]", raw)) if isinstance(raw, Mapping) else {}
    kind = out.get("mode")
    if settings.get("developer_instructions") is None and isinstance(kind, str):
        builtin = _BUILTIN.get(kind)
        if builtin:
            settings["developer_instructions"] = builtin
    out["settings"] = settings
    return out


def collaboration_mode_kind(mode: Mapping[str, Any] | None) -> str:
    """The mode's name (``default`` when there is none)."""
    kind = mode.get("mode") if mode is not None else None
    return kind if isinstance(kind, str) else "default"
