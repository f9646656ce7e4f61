"""The turn's diff (``turn_diff`` -> ``turn/diff/updated``): what ``TurnDiff`` keeps and renders,
and when the tools send it. The binary's own texts for the same patches are compared in
``tests/conformance/test_turn_diff_real.py``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codex_app_bridge.machine import (
    ApprovalPolicy,
    Bubblewrap,
    MachineTools,
    SandboxPolicy,
    TurnDiff,
    apply_plan,
    plan_patch,
)
from codex_app_bridge.machine._turn_diff import git_blob_id, prior_contents
from tests.machine.conftest import FakeHost


def _apply(diff: TurnDiff, cwd: Path, body: str) -> None:
    plan = plan_patch(f"*** Begin Patch\n{body}\n*** End Patch", str(cwd))
    prior = prior_contents(plan)
    apply_plan(plan)
    diff.track(plan, prior)


def test_blob_ids_are_gits(tmp_path: Path) -> None:
    for text in ("", "hello\n", "ünïcode\r\nlines\n", "no newline"):
        path = tmp_path / "f"
        path.write_bytes(text.encode())
        out = subprocess.run(
            ["git", "hash-object", str(path)], capture_output=True, text=True, timeout=30
        )
        if out.returncode != 0:
            pytest.skip("git is not usable here")
        assert git_blob_id(text) == out.stdout.strip()


def test_an_update_renders_with_three_lines_of_context_relative_to_the_cwd(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("".join(f"l{i}\n" for i in range(1, 11)))
    diff = TurnDiff(str(tmp_path))
    assert diff.unified_diff() is None
    _apply(diff, tmp_path, "*** Update File: a.txt\n@@\n l4\n-l5\n+L5\n l6")
    old = "".join(f"l{i}\n" for i in range(1, 11))
    new = old.replace("l5\n", "L5\n")
    assert diff.unified_diff() == (
        "diff --git a/a.txt b/a.txt\n"
        f"index {git_blob_id(old)}..{git_blob_id(new)}\n"
        "--- a/a.txt\n+++ b/a.txt\n"
        "@@ -2,7 +2,7 @@\n l2\n l3\n l4\n-l5\n+L5\n l6\n l7\n l8\n"
    )


def test_net_changes_only(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("k\n")
    (tmp_path / "over.txt").write_text("before\n")
    diff = TurnDiff(str(tmp_path))
    _apply(diff, tmp_path, "*** Add File: tmp.txt\n+x\n*** Update File: keep.txt\n@@\n-k\n+K")
    _apply(diff, tmp_path, "*** Delete File: tmp.txt\n*** Update File: keep.txt\n@@\n-K\n+k")
    assert diff.unified_diff() is None  # added then deleted, changed then changed back
    _apply(diff, tmp_path, "*** Add File: over.txt\n+after")
    text = diff.unified_diff()
    assert text is not None
    assert text.startswith("diff --git a/over.txt b/over.txt\nindex ")  # an update, not an add
    assert "-before\n+after\n" in text


def test_a_move_is_one_rename_diff_and_a_move_back_is_nothing(tmp_path: Path) -> None:
    (tmp_path / "mv.txt").write_text("m1\nm2\n")
    diff = TurnDiff(str(tmp_path))
    _apply(diff, tmp_path, "*** Update File: mv.txt\n*** Move to: d/mv2.txt\n@@\n-m1\n+M1")
    text = diff.unified_diff()
    assert text is not None
    assert text.splitlines()[0] == "diff --git a/mv.txt b/d/mv2.txt"
    assert "--- a/mv.txt\n+++ b/d/mv2.txt\n@@ -1,2 +1,2 @@\n-m1\n+M1\n m2\n" in text
    _apply(diff, tmp_path, "*** Update File: d/mv2.txt\n*** Move to: mv.txt\n@@\n-M1\n+m1")
    assert diff.unified_diff() is None


def test_paths_are_relative_to_the_git_root_and_outside_ones_stay_absolute(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    cwd = repo / "sub"
    cwd.mkdir()
    diff = TurnDiff(str(cwd))
    _apply(diff, cwd, "*** Add File: x.txt\n+x\n*** Add File: ../../out.txt\n+o")
    text = diff.unified_diff()
    assert text is not None
    heads = [line for line in text.splitlines() if line.startswith("diff --git")]
    out = tmp_path / "out.txt"
    # sorted by the shown path: an absolute one first
    assert heads == [f"diff --git a/{out} b/{out}", "diff --git a/sub/x.txt b/sub/x.txt"]
    assert "new file mode 100644\nindex 0000000000000000000000000000000000000000.." in text


@pytest.mark.anyio
async def test_the_tools_send_the_diff_after_each_applied_patch_only(
    tmp_path: Path, work: Path
) -> None:
    host = FakeHost(str(work))
    tools = MachineTools(bubblewrap=Bubblewrap(None), codex_home=str(tmp_path / "home"))
    async with tools:
        ok = "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch"
        first = await tools.call(host, "apply_patch", "p1", ok)
        assert str(first).startswith("Exit code: 0")
        bad = "*** Begin Patch\n*** Update File: missing.txt\n@@\n-x\n+y\n*** End Patch"
        await tools.call(host, "apply_patch", "p2", bad)
        declined = FakeHost(
            str(work),
            approval_policy=ApprovalPolicy("untrusted"),
            sandbox_policy=SandboxPolicy("danger-full-access"),
            decisions=["denied"],
        )
        out = await tools.call(declined, "apply_patch", "p3", ok.replace("a.txt", "b.txt"))
        assert out == "patch rejected by user"
    assert isinstance(out, str)
    kinds = [e.type for e in host.events]
    assert kinds[-2:] == ["item_completed", "turn_diff"]
    assert kinds.count("turn_diff") == 1
    (event,) = host.of_type("turn_diff")
    assert str(event["unified_diff"]).startswith(
        "diff --git a/a.txt b/a.txt\nnew file mode 100644\n"
    )
    assert not [e for e in declined.events if e.type == "turn_diff"]
    assert declined.diff.unified_diff() is None
