"""Skills: the ``SKILL.md`` files a session can offer the model, found where Codex 0.163.0
looks, and the ``<skills_instructions>`` fragment that lists them.

Role: Codex core lists every skill it finds in the developer message of a thread's first
context (spec/model-turn.md §3.2, ``captures/plain/model_requests.jsonl``): a heading, an
introduction, a table of skill roots (``r0`` = an absolute directory) and one line per skill
(``- name: description (file: r0/dir/SKILL.md)``). With no skill at all the fragment is left
out. 0.163.0 always has some, because it ships system skills (installed under
``CODEX_HOME/skills/.system``); the bridge ships its own (``agent/skills/``, read in place,
never written into the user's ``CODEX_HOME``) and lists the real binary's system skills too when
that directory exists.

Roots, in Codex's order (each a scope; a name seen in an earlier root wins, then skills sort by
scope, name and path): ``CODEX_HOME/skills`` and ``~/.agents/skills`` (user), the bundled
skills and ``CODEX_HOME/skills/.system`` (system; left out with ``[skills.bundled]
enabled = false``), ``/etc/codex/skills`` (admin), then ``.agents/skills`` in every directory
from the project root (the nearest ``.git`` above the cwd) down to the cwd (repo). Under a root,
directories are searched breadth first, at most 6 deep and 2000 of them, hidden ones skipped; a
``SKILL.md`` needs front matter (``---`` lines) naming ``name`` (<= 64 chars) and
``description`` (<= 1024 chars, one line once whitespace is collapsed); others are skipped.
``[[skills.config]]`` entries with ``enabled = false`` hide the skill at their ``path`` (and
it still shadows later skills of its name).

The introduction is the project's own prose; the layout (headings, root table, line shape) is
the structure clients and models rely on. Boundary: paths in, text out; reads the file system.
"""

from __future__ import annotations

import enum
import logging
import os
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

__all__ = [
    "BUNDLED_SKILLS",
    "Skill",
    "SkillRoot",
    "SkillScope",
    "find_skills",
    "skill_roots",
    "skills_instructions",
]

logger = logging.getLogger(__name__)

BUNDLED_SKILLS: Final = Path(__file__).resolve().parent / "skills"
"""The bridge's own system skills (package data)."""

SKILL_FILE: Final = "SKILL.md"
MAX_NAME_LEN: Final = 64
MAX_DESCRIPTION_LEN: Final = 1024
MAX_SCAN_DEPTH: Final = 6
MAX_DIRS_PER_ROOT: Final = 2000
ADMIN_SKILLS: Final = Path("/etc/codex/skills")


class SkillScope(enum.IntEnum):
    """Where a skill comes from; the value is its rank in the list (repo skills first)."""

    REPO = 0
    USER = 1
    SYSTEM = 2
    ADMIN = 3


@dataclass(frozen=True, slots=True)
class SkillRoot:
    path: Path
    scope: SkillScope


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    path: Path
    """The ``SKILL.md`` file."""
    root: SkillRoot


def _bundled_enabled(config: Mapping[str, Any]) -> bool:
    skills = config.get("skills")
    if not isinstance(skills, dict):
        return True
    bundled = cast(dict[str, Any], skills).get("bundled")
    if not isinstance(bundled, dict):
        return True
    return cast(dict[str, Any], bundled).get("enabled") is not False


def _disabled_paths(config: Mapping[str, Any]) -> frozenset[Path]:
    skills = config.get("skills")
    entries = cast(dict[str, Any], skills).get("config") if isinstance(skills, dict) else None
    if not isinstance(entries, list):
        return frozenset()
    out: set[Path] = set()
    for entry in cast(list[object], entries):
        if isinstance(entry, dict):
            e = cast(dict[str, Any], entry)
            path = e.get("path")
            if isinstance(path, str) and e.get("enabled") is False:
                out.add(Path(os.path.expanduser(path)).resolve())
    return frozenset(out)


def _project_root(cwd: Path) -> Path:
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return cwd


def skill_roots(
    codex_home: Path,
    cwd: Path,
    *,
    home: Path | None = None,
    config: Mapping[str, Any] | None = None,
    bundled: Path | None = BUNDLED_SKILLS,
    admin: Path | None = ADMIN_SKILLS,
) -> list[SkillRoot]:
    """The roots searched, in order, without duplicates (see the module docstring)."""
    roots = [SkillRoot(codex_home / "skills", SkillScope.USER)]
    if home is not None:
        roots.append(SkillRoot(home / ".agents" / "skills", SkillScope.USER))
    if _bundled_enabled(config or {}):
        if bundled is not None:
            roots.append(SkillRoot(bundled, SkillScope.SYSTEM))
        roots.append(SkillRoot(codex_home / "skills" / ".system", SkillScope.SYSTEM))
    if admin is not None:
        roots.append(SkillRoot(admin, SkillScope.ADMIN))
    project = _project_root(cwd)
    chain = [cwd, *(p for p in cwd.parents if p.is_relative_to(project))]
    roots.extend(SkillRoot(d / ".agents" / "skills", SkillScope.REPO) for d in reversed(chain))
    seen: set[Path] = set()
    unique: list[SkillRoot] = []
    for root in roots:
        if root.path not in seen:
            seen.add(root.path)
            unique.append(root)
    return unique


_FRONT_KEY: Final = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$")


def _scalar(raw: str, rest: list[str]) -> str:
    """A YAML scalar of the front matter: plain (continued on indented lines), quoted, or a
    ``|`` / ``>`` block whose lines are the indented ones in ``rest`` (consumed); a nested
    mapping reads as its lines joined (only ``name`` and ``description`` are used)."""
    raw = raw.strip()
    if raw[:1] in ("|", ">"):
        lines: list[str] = []
        while rest and (not rest[0].strip() or rest[0][:1] in (" ", "\t")):
            lines.append(rest.pop(0).strip())
        return " ".join(line for line in lines if line)
    if raw[:1] == '"':
        m = re.match(r'"((?:[^"\\]|\\.)*)"', raw)
        if m is not None:
            return re.sub(r"\\(.)", r"\1", m.group(1))
    if raw[:1] == "'":
        m = re.match(r"'((?:[^']|'')*)'", raw)
        if m is not None:
            return m.group(1).replace("''", "'")
    if " #" in raw:
        raw = raw[: raw.index(" #")]
    more: list[str] = []  # a plain scalar continues on indented lines
    while rest and rest[0][:1] in (" ", "\t") and rest[0].strip():
        more.append(rest.pop(0).strip())
    return " ".join([raw, *more]).strip()


def parse_front_matter(text: str) -> dict[str, str] | None:
    """The top-level scalar keys of a ``SKILL.md``'s front matter, or ``None`` without one."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return None
    body = lines[1:end]
    fields: dict[str, str] = {}
    while body:
        line = body.pop(0)
        if not line.strip() or line.lstrip().startswith("#") or line[:1] in (" ", "\t"):
            continue
        m = _FRONT_KEY.match(line)
        if m is not None:
            fields[m.group(1)] = _scalar(m.group(2), body)
    return fields


def _read_skill(path: Path, root: SkillRoot) -> Skill | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        logger.debug("skill %s: %s", path, exc)
        return None
    fields = parse_front_matter(text)
    if fields is None:
        logger.debug("skill %s: no front matter", path)
        return None
    name = " ".join(fields.get("name", "").split())
    description = " ".join(fields.get("description", "").split())
    if not name or len(name) > MAX_NAME_LEN:
        logger.debug("skill %s: missing or long name", path)
        return None
    if not description or len(description) > MAX_DESCRIPTION_LEN:
        logger.debug("skill %s: missing or long description", path)
        return None
    return Skill(name, description, path, root)


def _discover(root: SkillRoot) -> Iterable[Skill]:
    if not root.path.is_dir():
        return
    queue: deque[tuple[Path, int]] = deque([(root.path, 0)])
    visited = 0
    while queue and visited < MAX_DIRS_PER_ROOT:
        directory, depth = queue.popleft()
        visited += 1
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                if depth < MAX_SCAN_DEPTH:
                    queue.append((Path(entry.path), depth + 1))
            elif entry.name == SKILL_FILE and entry.is_file():
                skill = _read_skill(Path(entry.path), root)
                if skill is not None:
                    yield skill


def find_skills(roots: Sequence[SkillRoot], config: Mapping[str, Any] | None = None) -> list[Skill]:
    """Every usable skill under ``roots``: one per name (the first root's), then sorted by
    scope, name and path."""
    disabled = _disabled_paths(config or {})
    seen: set[str] = set()
    skills: list[Skill] = []
    for root in roots:
        for skill in _discover(root):
            if skill.name in seen:
                continue
            seen.add(skill.name)  # a disabled skill still hides later ones of its name
            if skill.path.resolve() not in disabled:
                skills.append(skill)
    skills.sort(key=lambda s: (s.root.scope, s.name, str(s.path)))
    return skills


_INTRO: Final = (
    "Skills are task-specific instructions kept in `SKILL.md` files. Each entry below gives a "
    "skill's name, what it is for, and its file as a root alias from the table followed by a "
    "path inside that root. When the user names a skill or the task plainly matches one, read "
    "its `SKILL.md` before acting and follow it, opening the other files it mentions only when "
    "they are needed; if a listed file cannot be read, say so and carry on without it."
)


def skills_instructions(skills: Sequence[Skill]) -> str | None:
    """The ``<skills_instructions>`` fragment listing ``skills`` (``None`` for none)."""
    if not skills:
        return None
    aliases: dict[Path, str] = {}
    for skill in skills:  # roots numbered in the order their first skill comes
        aliases.setdefault(skill.root.path, f"r{len(aliases)}")
    lines = ["<skills_instructions>", "## Skills", _INTRO, "### Skill roots"]
    lines.extend(f"- `{alias}` = `{path}`" for path, alias in aliases.items())
    lines.append("### Available skills")
    for skill in skills:
        relative = skill.path.relative_to(skill.root.path).as_posix()
        lines.append(
            f"- {skill.name}: {skill.description} (file: {aliases[skill.root.path]}/{relative})"
        )
    lines.append("</skills_instructions>")
    return "\n".join(lines)
