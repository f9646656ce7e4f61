"""The turn's diff: what every patch applied in a turn changed, as one git-style unified diff
(``turn_diff`` -> ``turn/diff/updated``), kept as 0.163.0 keeps it (probed,
``tests/conformance/test_turn_diff_real.py``):

* in memory, from the patches alone: the first content seen of a path is its baseline, the
  content a patch wrote is its current text; the files are not read again, so a shell command
  that edits a file does not change the diff (a later patch of that file starts from what the
  command left);
* net: a file added then deleted in the turn shows nothing, a move shows as one
  ``diff --git a/old b/new`` with the content change, an add over an existing file as an
  update of it;
* paths relative to the git root enclosing the turn's cwd, else to the cwd; a path outside that
  root keeps its absolute form (``a//abs/path``, as the binary prints it); files sorted by that
  path; git blob ids of the contents; ``100644`` modes; hunks with 3 lines of context.

The rendered text is cached until the next patch: the agent asks for it after every model
response of the turn.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

from codex_app_bridge.machine._patch import PatchPlan, unified_diff

__all__ = ["TurnDiff", "git_blob_id", "prior_contents"]

_ZERO_OID = "0" * 40
_DEV_NULL = "/dev/null"
_MODE = "100644"
_CONTEXT = 3


def git_blob_id(text: str) -> str:
    """The git object id of ``text`` as a blob (``git hash-object``)."""
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _git_root(cwd: str) -> str | None:
    current = os.path.abspath(cwd)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def prior_contents(plan: PatchPlan) -> dict[str, str]:
    """What the files ``plan`` overwrites without reading them hold now: an ``Add File`` over an
    existing file, a ``Move to`` onto one. Read before the plan is applied."""
    out: dict[str, str] = {}
    for action in plan.actions:
        if action.kind == "add":
            target = action.path
        elif action.move_path is not None and action.move_path != action.path:
            target = action.move_path
        else:
            continue
        try:
            with open(target, encoding="utf-8", newline="") as f:
                out[target] = f.read()
        except (OSError, UnicodeDecodeError):
            continue
    return out


class TurnDiff:
    """One turn's net changes (see the module docstring)."""

    __slots__ = ("_baseline", "_cache", "_current", "_origin", "_root")

    def __init__(self, cwd: str) -> None:
        self._root = _git_root(cwd) or os.path.abspath(cwd)
        self._baseline: dict[str, str] = {}
        """Path -> its content before the turn first changed it (absent: it did not exist)."""
        self._current: dict[str, str] = {}
        """Path -> its content now (absent: deleted, or never written)."""
        self._origin: dict[str, str] = {}
        """Current path of a moved file -> the path it had at the turn's start."""
        self._cache: str | None = None

    def track(self, plan: PatchPlan, prior: Mapping[str, str]) -> None:
        """Record a patch that was applied; ``prior``: :func:`prior_contents` of it."""
        self._cache = None
        for action in plan.actions:
            path = action.path
            if action.kind == "add":
                self._origin.pop(path, None)
                overwritten = prior.get(path)
                if overwritten is not None and not self._known(path):
                    self._baseline[path] = overwritten
                self._current[path] = action.new or ""
            elif action.kind == "delete":
                if self._current.pop(path, None) is None and path not in self._baseline:
                    self._baseline[path] = action.old or ""
                self._origin.pop(path, None)
            else:
                if not self._known(path):
                    self._baseline[path] = action.old or ""
                dest = action.move_path
                new = action.new or ""
                if dest is None:
                    self._current[path] = new
                    continue
                overwritten = prior.get(dest)
                if overwritten is not None and not self._known(dest):
                    self._baseline[dest] = overwritten
                origin = self._origin.pop(path, path)
                self._current.pop(path, None)
                self._current[dest] = new
                self._origin.pop(dest, None)
                if dest != origin:
                    self._origin[dest] = origin

    def _known(self, path: str) -> bool:
        return path in self._current or path in self._baseline

    def unified_diff(self) -> str | None:
        """The turn's diff, or ``None`` when the turn changed nothing (yet)."""
        if self._cache is None:
            self._cache = self._render()
        return self._cache or None

    def _display(self, path: str) -> str:
        root = self._root
        if path == root:
            return ""
        prefix = root if root.endswith("/") else root + "/"
        return path[len(prefix) :] if path.startswith(prefix) else path

    def _renames(self) -> dict[str, str]:
        """Origin -> destination of the moves that read as renames."""
        pairs: dict[str, str] = {}
        for dest, origin in self._origin.items():
            if (
                dest == origin
                or origin in self._current
                or dest not in self._current
                or origin not in self._baseline
                or dest in self._baseline
            ):
                continue
            pairs[origin] = dest
        return pairs

    def _render(self) -> str:
        renames = self._renames()
        destinations = set(renames.values())
        paths = sorted({*self._baseline, *self._current}, key=self._display)
        out: list[str] = []
        for path in paths:
            if path in destinations:
                continue
            dest = renames.get(path, path)
            text = self._file_diff(path, self._baseline.get(path), dest, self._current.get(dest))
            if text:
                out.append(text if text.endswith("\n") else text + "\n")
        return "".join(out)

    def _file_diff(self, left: str, old: str | None, right: str, new: str | None) -> str:
        if old == new:
            return ""
        a, b = self._display(left), self._display(right)
        lines = [f"diff --git a/{a} b/{b}\n"]
        if old is None:
            lines.append(f"new file mode {_MODE}\n")
        elif new is None:
            lines.append(f"deleted file mode {_MODE}\n")
        left_id = _ZERO_OID if old is None else git_blob_id(old)
        right_id = _ZERO_OID if new is None else git_blob_id(new)
        lines.append(f"index {left_id}..{right_id}\n")
        hunks = unified_diff(old or "", new or "", context=_CONTEXT)
        if hunks:
            lines.append(f"--- {_DEV_NULL if old is None else 'a/' + a}\n")
            lines.append(f"+++ {_DEV_NULL if new is None else 'b/' + b}\n")
            lines.append(hunks)
        return "".join(lines)
