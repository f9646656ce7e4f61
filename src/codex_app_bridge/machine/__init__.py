"""The machine: commands, patches, the sandbox and the files of the user's machine.

A domain package below ``server/``: it knows no connection, JSON-RPC or thread. Pieces:

* ``_patch``: the ``apply_patch`` engine (parse, verify, diffs, atomic per-file writes).
"""

from __future__ import annotations

from codex_app_bridge.machine._patch import (
    AddFile,
    Chunk,
    DeleteFile,
    FileAction,
    PatchError,
    PatchPlan,
    UpdateFile,
    apply_plan,
    parse_patch,
    plan_patch,
    unified_diff,
)

__all__ = [
    "AddFile",
    "Chunk",
    "DeleteFile",
    "FileAction",
    "PatchError",
    "PatchPlan",
    "UpdateFile",
    "apply_plan",
    "parse_patch",
    "plan_patch",
    "unified_diff",
]
