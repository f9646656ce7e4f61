"""Skills the model is offered (``agent/_skills.py``): where they are found, which are kept, and
the ``<skills_instructions>`` fragment's layout as 0.163.0 sends it (captures/plain)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from codex_app_bridge.agent._skills import (
    BUNDLED_SKILLS,
    SkillRoot,
    SkillScope,
    find_skills,
    parse_front_matter,
    skill_roots,
    skills_instructions,
)

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"


def _skill(root: Path, folder: str, name: str, description: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n\nBody.\n")
    return path


def _roots(tmp_path: Path, cwd: Path | None = None, **config: object) -> list[SkillRoot]:
    return skill_roots(
        tmp_path / "codex",
        cwd or tmp_path / "work",
        home=tmp_path / "home",
        config=config,
        admin=tmp_path / "etc" / "skills",
    )


def test_front_matter_scalars_plain_quoted_and_folded() -> None:
    text = (
        "---\n"
        "name: 'demo'\n"
        'description: "Say \\"hi\\" # in quotes" # a comment\n'
        "other: >\n  folded\n  lines\n"
        "metadata:\n  nested: ignored\n"
        "---\nbody\n"
    )
    assert parse_front_matter(text) == {
        "name": "demo",
        "description": 'Say "hi" # in quotes',
        "other": "folded lines",
        "metadata": "nested: ignored",
    }
    assert parse_front_matter("no front matter") is None
    assert parse_front_matter("---\nname: x\n") is None


def test_roots_follow_codex_order_and_the_project_chain(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    cwd = project / "a" / "b"
    cwd.mkdir(parents=True)
    roots = _roots(tmp_path, cwd)
    assert [(r.path, r.scope) for r in roots] == [
        (tmp_path / "codex" / "skills", SkillScope.USER),
        (tmp_path / "home" / ".agents" / "skills", SkillScope.USER),
        (BUNDLED_SKILLS, SkillScope.SYSTEM),
        (tmp_path / "codex" / "skills" / ".system", SkillScope.SYSTEM),
        (tmp_path / "etc" / "skills", SkillScope.ADMIN),
        (project / ".agents" / "skills", SkillScope.REPO),
        (project / "a" / ".agents" / "skills", SkillScope.REPO),
        (cwd / ".agents" / "skills", SkillScope.REPO),
    ]
    # `[skills.bundled] enabled = false` drops both system roots
    off = _roots(tmp_path, cwd, skills={"bundled": {"enabled": False}})
    assert all(r.scope is not SkillScope.SYSTEM for r in off)


def test_skills_are_kept_once_per_name_and_sorted_by_scope_then_name(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    user = tmp_path / "codex" / "skills"
    _skill(user, "zeta", "zeta", "User zeta.")
    _skill(user, "nested/deeper/alpha", "alpha", "User alpha.")
    _skill(user, ".hidden/x", "hidden", "Never listed.")
    _skill(user, "bad", "bad", "x" * 1025)  # description too long: skipped
    _skill(tmp_path / "codex" / "skills" / ".system", "sys", "zeta", "Shadowed by the user's.")
    _skill(work / ".agents" / "skills", "r", "repo-skill", "From the repo.")
    skills = find_skills(_roots(tmp_path, work))
    assert [(s.name, s.root.scope) for s in skills] == [
        ("repo-skill", SkillScope.REPO),
        ("alpha", SkillScope.USER),
        ("zeta", SkillScope.USER),
        ("codex-app-bridge", SkillScope.SYSTEM),
        ("skill-authoring", SkillScope.SYSTEM),
    ]
    disabled = {"skills": {"config": [{"path": str(user / "zeta" / "SKILL.md"), "enabled": False}]}}
    names = [s.name for s in find_skills(_roots(tmp_path, work), disabled)]
    assert names == ["repo-skill", "alpha", "codex-app-bridge", "skill-authoring"]


def test_the_fragment_has_the_real_binarys_layout(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    _skill(tmp_path / "codex" / "skills", "mine", "mine", "Mine,\n  on two lines.")
    text = skills_instructions(find_skills(_roots(tmp_path, work)))
    assert text is not None
    real = json.loads((CAPTURES / "plain" / "model_requests.jsonl").read_text().splitlines()[0])
    real_text = real["body"]["input"][1]["content"][0]["text"]

    def layout(fragment: str) -> list[str]:
        """Every line but the introduction, with paths, names and descriptions abstracted."""
        lines = fragment.splitlines()
        return [
            re.sub(
                r"^- `r\d+` = `/.*`$",
                "root",
                re.sub(r"^- [\w-]+: .* \(file: r\d+/.+\)$", "skill", line),
            )
            for n, line in enumerate(lines)
            if n != 2
        ]

    assert layout(text) == [
        "<skills_instructions>",
        "## Skills",
        "### Skill roots",
        "root",
        "root",
        "### Available skills",
        "skill",
        "skill",
        "skill",
        "</skills_instructions>",
    ]
    assert layout(real_text)[:3] == layout(text)[:3]
    assert set(layout(real_text)) == set(layout(text))
    assert f"- `r0` = `{tmp_path / 'codex' / 'skills'}`" in text
    assert f"- `r1` = `{BUNDLED_SKILLS}`" in text
    assert "- mine: Mine, on two lines. (file: r0/mine/SKILL.md)" in text
    assert "(file: r1/skill-authoring/SKILL.md)" in text
    assert skills_instructions([]) is None


def test_the_bundled_skills_parse() -> None:
    skills = find_skills([SkillRoot(BUNDLED_SKILLS, SkillScope.SYSTEM)])
    assert [s.name for s in skills] == ["codex-app-bridge", "skill-authoring"]
    assert all(10 < len(s.description) <= 1024 for s in skills)
