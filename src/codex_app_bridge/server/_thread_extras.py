"""Fields the real 0.163.0 sends on threads and thread/start-like answers beyond its own schema.

Role: the generated models (``protocol.v2``, from the 0.163.0 JSON Schema) lack seven fields the
real binary writes whatever ``capabilities.experimentalApi`` says (probed; see
``tests/conformance/KNOWN_DIFFERENCES.md``). The models keep unknown fields, so these are passed
as extras under their wire names:

- ``thread/start``, ``thread/resume``, ``thread/fork`` answers: ``runtimeWorkspaceRoots``
  (``[cwd]``), ``activePermissionProfile`` (``null``), ``multiAgentMode``
  (``"explicitRequestOnly"``);
- ``thread/resume`` answers also: ``initialTurnsPage`` (``null`` when no page was asked for);
- the ``Thread`` object: ``environments``, ``extra`` (``null``), ``canAcceptDirectInput``,
  ``daybreakEnabled`` (``null``). A loaded thread has one ``local`` environment at its cwd and
  accepts direct input (``true``), except in a ``thread/list`` entry, where the real binary
  says ``canAcceptDirectInput: null``; a thread that is not loaded (read from its rollout) has
  ``environments: null`` and ``canAcceptDirectInput: null``;
- ``thread/read``'s ``readState`` and ``thread/list``'s ``readStates`` (in the schema of later
  versions, not of 0.163.0's answers): :func:`read_state_json`.

Boundary: pure; values only.
"""

from __future__ import annotations

from typing import Any, Final

from codex_app_bridge.listener import ReadState

__all__ = [
    "LOCAL_ENVIRONMENT_ID",
    "list_extras",
    "read_extras",
    "read_state_json",
    "response_extras",
    "resume_extras",
    "thread_extras",
]

LOCAL_ENVIRONMENT_ID: Final = "local"
MULTI_AGENT_MODE: Final = "explicitRequestOnly"


def response_extras(cwd: str) -> dict[str, Any]:
    """The extra fields of a thread/start, thread/resume or thread/fork answer."""
    return {
        "runtimeWorkspaceRoots": [cwd],
        "activePermissionProfile": None,
        "multiAgentMode": MULTI_AGENT_MODE,
    }


def resume_extras() -> dict[str, Any]:
    """The extra fields of a thread/resume answer, beyond :func:`response_extras`."""
    return {"initialTurnsPage": None}


def thread_extras(cwd: str, *, loaded: bool = True, listed: bool = False) -> dict[str, Any]:
    """The extra fields of a ``Thread``: of a loaded thread (``listed``: as a thread/list
    entry), or of one that is not loaded (``loaded=False``)."""
    environments = (
        [{"environmentId": LOCAL_ENVIRONMENT_ID, "cwd": cwd, "runtimeWorkspaceRoots": [cwd]}]
        if loaded
        else None
    )
    return {
        "environments": environments,
        "extra": None,
        "canAcceptDirectInput": True if loaded and not listed else None,
        "daybreakEnabled": None,
    }


def read_state_json(thread_id: str, read_state: ReadState | None) -> dict[str, Any]:
    """A thread's ``readState`` as JSON (``None``: the initial one)."""
    return (read_state or ReadState()).wire_json(thread_id)


def read_extras(read_state: dict[str, Any]) -> dict[str, Any]:
    """The extra field of a thread/read answer."""
    return {"readState": read_state}


def list_extras(read_states: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The extra field of a thread/list answer: each listed thread's read state, by id."""
    return {"readStates": read_states}
