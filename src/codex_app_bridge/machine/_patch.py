"""The ``apply_patch`` engine: Codex's patch grammar, its matching, its texts and its diffs.

Role: turn a patch text into a verified plan (every hunk parsed and matched against the files
before anything is written), then write the plan one file at a time, each file atomically (a
temporary file beside it, renamed over it). The texts are 0.163.0's (probed; ``spec/
machine-tools.md`` §3): the parse errors, the verification errors, the success summary.

Grammar (lenient as core's parser): ``*** Begin Patch`` / ``*** End Patch`` lines (surrounding
whitespace ignored, an ``<<'EOF'`` heredoc wrapper stripped), then hunks: ``*** Add File: p``
with ``+`` lines, ``*** Delete File: p``, ``*** Update File: p`` with an optional ``*** Move to:
q`` and chunks (``@@`` or ``@@ context``, then `` ``/``-``/``+`` lines, an optional ``*** End of
File``; the first chunk may omit ``@@``).

Matching per chunk, from where the previous chunk ended: exact, then ignoring trailing
whitespace, then ignoring surrounding whitespace, then with Unicode dashes, quotes and spaces
read as their ASCII forms. A chunk of only ``+`` lines appends at the end of the file.

Boundary: pure file I/O on absolute paths; it knows nothing of policies (``_policy`` decides
whether a plan may be written) nor of events.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

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

BEGIN: Final = "*** Begin Patch"
END: Final = "*** End Patch"
ADD: Final = "*** Add File: "
DELETE: Final = "*** Delete File: "
UPDATE: Final = "*** Update File: "
MOVE: Final = "*** Move to: "
EOF_MARK: Final = "*** End of File"
_HEREDOC_OPENERS: Final = frozenset({"<<EOF", "<<'EOF'", '<<"EOF"'})


class PatchError(Exception):
    """A patch that cannot be parsed or applied; ``str(exc)`` is core's text without the
    ``apply_patch verification failed: `` prefix (``verification_text`` adds it)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def verification_text(self) -> str:
        return f"apply_patch verification failed: {self.message}"


def _invalid_patch(message: str) -> PatchError:
    return PatchError(f"invalid patch: {message}")


def _invalid_hunk(message: str, line_number: int) -> PatchError:
    return PatchError(f"invalid hunk at line {line_number}, {message}")


@dataclass(frozen=True, slots=True)
class Chunk:
    context: str | None
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    end_of_file: bool = False


@dataclass(frozen=True, slots=True)
class AddFile:
    path: str
    contents: str


@dataclass(frozen=True, slots=True)
class DeleteFile:
    path: str


@dataclass(frozen=True, slots=True)
class UpdateFile:
    path: str
    move_path: str | None
    chunks: tuple[Chunk, ...]


Hunk = AddFile | DeleteFile | UpdateFile


def _lines(text: str) -> list[str]:
    # Rust's str::lines: split on \n, a trailing \r of each line dropped, no last empty line
    out = text.split("\n")
    if out and out[-1] == "":
        out.pop()
    return [line[:-1] if line.endswith("\r") else line for line in out]


def _check_boundaries(lines: list[str]) -> list[str]:
    first = lines[0].strip() if lines else None
    last = lines[-1].strip() if lines else None
    if first == BEGIN and last == END and len(lines) >= 2:
        return lines[1:-1]
    if first != BEGIN:
        raise _invalid_patch("The first line of the patch must be '*** Begin Patch'")
    raise _invalid_patch("The last line of the patch must be '*** End Patch'")


def _body_lines(lines: list[str]) -> list[str]:
    try:
        return _check_boundaries(lines)
    except PatchError as strict:
        if len(lines) >= 4 and lines[0] in _HEREDOC_OPENERS and lines[-1].endswith("EOF"):
            return _check_boundaries(lines[1:-1])
        raise strict from None


def parse_patch(text: str) -> list[Hunk]:
    """The hunks of ``text``, or ``PatchError`` with core's words and line numbers."""
    body = _body_lines(_lines(text.strip()))
    hunks: list[Hunk] = []
    line_number = 2
    rest = body
    while rest:
        hunk, used = _parse_hunk(rest, line_number)
        hunks.append(hunk)
        line_number += used
        rest = rest[used:]
    return hunks


def _parse_hunk(lines: list[str], line_number: int) -> tuple[Hunk, int]:
    first = lines[0].strip()
    if first.startswith(ADD):
        contents: list[str] = []
        used = 1
        for line in lines[1:]:
            if not line.startswith("+"):
                break
            contents.append(line[1:] + "\n")
            used += 1
        return AddFile(first[len(ADD) :], "".join(contents)), used
    if first.startswith(DELETE):
        return DeleteFile(first[len(DELETE) :]), 1
    if first.startswith(UPDATE):
        path = first[len(UPDATE) :]
        rest = lines[1:]
        used = 1
        move_path: str | None = None
        if rest and rest[0].startswith(MOVE):
            move_path = rest[0][len(MOVE) :]
            rest = rest[1:]
            used += 1
        chunks: list[Chunk] = []
        while rest:
            if not rest[0].strip():
                used += 1
                rest = rest[1:]
                continue
            if rest[0].startswith("*"):
                break
            chunk, chunk_used = _parse_chunk(rest, line_number + used, not chunks)
            chunks.append(chunk)
            used += chunk_used
            rest = rest[chunk_used:]
        if not chunks:
            raise _invalid_hunk(f"Update file hunk for path '{path}' is empty", line_number)
        return UpdateFile(path, move_path, tuple(chunks)), used
    raise _invalid_hunk(
        f"'{first}' is not a valid hunk header. Valid hunk headers: '*** Add File: {{path}}', "
        "'*** Delete File: {path}', '*** Update File: {path}'",
        line_number,
    )


def _parse_chunk(
    lines: list[str], line_number: int, allow_missing_context: bool
) -> tuple[Chunk, int]:
    context: str | None
    if lines[0] == "@@":
        context, start = None, 1
    elif lines[0].startswith("@@ "):
        context, start = lines[0][3:], 1
    elif allow_missing_context:
        context, start = None, 0
    else:
        raise _invalid_hunk(
            f"Expected update hunk to start with a @@ context marker, got: '{lines[0]}'",
            line_number,
        )
    if start >= len(lines):
        raise _invalid_hunk("Update hunk does not contain any lines", line_number + 1)
    old: list[str] = []
    new: list[str] = []
    parsed = 0
    end_of_file = False
    for line in lines[start:]:
        if line == EOF_MARK:
            if parsed == 0:
                raise _invalid_hunk("Update hunk does not contain any lines", line_number + 1)
            end_of_file = True
            parsed += 1
            break
        if not line:
            old.append("")
            new.append("")
        elif line[0] == " ":
            old.append(line[1:])
            new.append(line[1:])
        elif line[0] == "+":
            new.append(line[1:])
        elif line[0] == "-":
            old.append(line[1:])
        else:
            if parsed == 0:
                raise _invalid_hunk(
                    f"Unexpected line found in update hunk: '{line}'. Every line should start "
                    "with ' ' (context line), '+' (added line), or '-' (removed line)",
                    line_number + 1,
                )
            break
        parsed += 1
    return Chunk(context, tuple(old), tuple(new), end_of_file), parsed + start


# --- matching -----------------------------------------------------------------------------

_PUNCTUATION: Final = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "
        ),
    }
)


def _normalise(line: str) -> str:
    return line.strip().translate(_PUNCTUATION)


def _exact(line: str) -> str:
    return line


def _rstrip(line: str) -> str:
    return line.rstrip()


def _strip(line: str) -> str:
    return line.strip()


_PASSES: Final[tuple[Callable[[str], str], ...]] = (_exact, _rstrip, _strip, _normalise)


def _seek(lines: list[str], pattern: tuple[str, ...], start: int, eof: bool) -> int | None:
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    first = len(lines) - len(pattern) if eof else start
    last = len(lines) - len(pattern)
    for norm in _PASSES:
        want = [norm(p) for p in pattern]
        for i in range(first, last + 1):
            if all(norm(lines[i + k]) == want[k] for k in range(len(pattern))):
                return i
    return None


def _new_contents(path: str, original: str, chunks: tuple[Chunk, ...]) -> str:
    lines = original.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    replacements: list[tuple[int, int, tuple[str, ...]]] = []
    index = 0
    for chunk in chunks:
        if chunk.context is not None:
            found = _seek(lines, (chunk.context,), index, False)
            if found is None:
                raise PatchError(f"Failed to find context '{chunk.context}' in {path}")
            index = found + 1
        if not chunk.old_lines:
            replacements.append((len(lines), 0, chunk.new_lines))
            continue
        pattern, new = chunk.old_lines, chunk.new_lines
        found = _seek(lines, pattern, index, chunk.end_of_file)
        if found is None and pattern[-1] == "":
            pattern = pattern[:-1]
            if new and new[-1] == "":
                new = new[:-1]
            found = _seek(lines, pattern, index, chunk.end_of_file)
        if found is None:
            old_text = "\n".join(chunk.old_lines)
            raise PatchError(f"Failed to find expected lines in {path}:\n{old_text}")
        replacements.append((found, len(pattern), new))
        index = found + len(pattern)
    replacements.sort(key=lambda r: r[0])
    for start, length, new in reversed(replacements):
        lines[start : start + length] = new
    if not lines or lines[-1] != "":
        lines.append("")
    return "\n".join(lines)


def unified_diff(old: str, new: str, context: int = 1) -> str:
    """Hunks of ``old`` -> ``new`` with ``context`` lines around each, no file headers (core's
    unified diff: ``@@ -2,3 +2,3 @@``, ``\\ No newline at end of file``)."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    out: list[str] = []
    for n, line in enumerate(difflib.unified_diff(a, b, n=context, lineterm="")):
        if n < 2:
            continue  # the ---/+++ file headers
        if line.startswith("@@"):
            out.append(line + "\n")
        elif line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


# --- plans --------------------------------------------------------------------------------

Kind = Literal["add", "delete", "update"]


@dataclass(frozen=True, slots=True)
class FileAction:
    """One file of a verified patch: absolute paths, and the contents before and after."""

    kind: Kind
    path: str
    """Absolute path the hunk names (resolved against the cwd)."""
    written_as: str
    """The path as written in the patch (the success summary lists these)."""
    old: str | None
    new: str | None
    move_path: str | None = None
    move_written_as: str | None = None

    @property
    def diff(self) -> str:
        if self.kind == "update":
            old = (self.old or "").replace("\r\n", "\n")
            return unified_diff(old, (self.new or "").replace("\r\n", "\n"))
        return (self.new if self.kind == "add" else self.old) or ""

    def core_change(self) -> dict[str, Any]:
        """The core ``FileChange`` value (``patch_apply_begin.changes[path]``)."""
        if self.kind == "add":
            return {"type": "add", "content": self.new or ""}
        if self.kind == "delete":
            return {"type": "delete", "content": self.old or ""}
        return {"type": "update", "unified_diff": self.diff, "move_path": self.move_path}

    def written_paths(self) -> tuple[str, ...]:
        """Every path this action writes or removes."""
        if self.move_path is not None:
            return (self.path, self.move_path)
        return (self.path,)


@dataclass(frozen=True, slots=True)
class PatchPlan:
    cwd: str
    actions: tuple[FileAction, ...] = field(default_factory=tuple[FileAction, ...])

    def changes(self) -> dict[str, dict[str, Any]]:
        """``path -> core FileChange``, sorted by path (core's map is ordered)."""
        return {a.path: a.core_change() for a in sorted(self.actions, key=lambda a: a.path)}

    def paths(self) -> list[str]:
        out: list[str] = []
        for action in self.actions:
            out.extend(action.written_paths())
        return out

    def success_text(self) -> str:
        """``Success. Updated the following files:`` then ``A``/``M``/``D`` lines (as written)."""
        added = [f"A {a.written_as}" for a in self.actions if a.kind == "add"]
        modified = [
            f"M {a.move_written_as or a.written_as}" for a in self.actions if a.kind == "update"
        ]
        deleted = [f"D {a.written_as}" for a in self.actions if a.kind == "delete"]
        return "Success. Updated the following files:\n" + "".join(
            line + "\n" for line in (*added, *modified, *deleted)
        )


def _resolve(cwd: str, path: str) -> str:
    return os.path.normpath(os.path.join(cwd, path))


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def _os_message(exc: OSError) -> str:
    return f"{exc.strerror} (os error {exc.errno})"


def plan_patch(text: str, cwd: str) -> PatchPlan:
    """Parse ``text`` and match every hunk against the files under ``cwd``; nothing is written.

    ``PatchError`` says what failed (core's words); an empty patch is a plan with no action
    (the caller rejects it: ``patch rejected: empty patch``)."""
    actions: list[FileAction] = []
    for hunk in parse_patch(text):
        path = _resolve(cwd, hunk.path)
        if isinstance(hunk, AddFile):
            actions.append(FileAction("add", path, hunk.path, None, hunk.contents))
        elif isinstance(hunk, DeleteFile):
            try:
                old = _read_text(path)
            except (OSError, UnicodeDecodeError) as exc:
                detail = (
                    _os_message(exc)
                    if isinstance(exc, OSError)
                    else "stream did not contain valid UTF-8"
                )
                raise PatchError(f"Failed to read {path}: {detail}") from None
            actions.append(FileAction("delete", path, hunk.path, old, None))
        else:
            try:
                raw = _read_text(path)
            except (OSError, UnicodeDecodeError) as exc:
                detail = (
                    _os_message(exc)
                    if isinstance(exc, OSError)
                    else "stream did not contain valid UTF-8"
                )
                raise PatchError(f"Failed to read file to update {path}: {detail}") from None
            crlf = _is_crlf(raw)
            original = raw.replace("\r\n", "\n") if crlf else raw
            new = _new_contents(path, original, hunk.chunks)
            move = _resolve(cwd, hunk.move_path) if hunk.move_path is not None else None
            actions.append(
                FileAction(
                    "update",
                    path,
                    hunk.path,
                    raw,
                    new.replace("\n", "\r\n") if crlf else new,
                    move,
                    hunk.move_path,
                )
            )
    return PatchPlan(cwd, tuple(actions))


def _is_crlf(text: str) -> bool:
    crlf = text.count("\r\n")
    return crlf > 0 and crlf >= text.count("\n") - crlf


def _write_atomic(path: str, data: str) -> None:
    parent = os.path.dirname(path) or "."
    os.makedirs(parent, exist_ok=True)
    mode: int | None
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=".apply_patch.", dir=parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def apply_plan(plan: PatchPlan) -> None:
    """Write ``plan``: each file atomically, in the patch's order (core's write phase is
    sequential too). An ``OSError`` stops at the file that failed."""
    for action in plan.actions:
        if action.kind == "add":
            _write_atomic(action.path, action.new or "")
        elif action.kind == "delete":
            os.remove(action.path)
        elif action.move_path is not None:
            _write_atomic(action.move_path, action.new or "")
            if action.move_path != action.path:
                os.remove(action.path)
        else:
            _write_atomic(action.path, action.new or "")
