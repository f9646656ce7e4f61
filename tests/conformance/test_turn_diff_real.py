"""``turn/diff/updated`` side by side: the real 0.163.0 binary and the bridge each run one model
turn against the mock whose answers apply four patches and run one shell command (through the
tools each server offers the fallback model: ``apply_patch`` heredocs through ``exec_command``),
in a plain directory and in a subdirectory of a git repository.

Compared: every ``turn/diff/updated`` text (scratch paths written ``<base>``) and where each one
comes in the stream (after the fileChange item that caused it, after every model response's
token usage). Covered by the steps: update with context, add, delete, move with a change, a
second edit of the same file (net diff from the turn's start), a file outside the cwd
(``a//abs/path``), a shell command that edits a tracked file (not re-read), a second move and
an add over a file added earlier, an add over an existing file, a file added then deleted, a
file moved back to where it started.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from codex_app_bridge.conformance._model_mode import ModelContext, ModelScenario
from tests.conformance._side_by_side import run_on

pytestmark = pytest.mark.conformance

P1 = """*** Begin Patch
*** Update File: a.txt
@@
 one
-two
+TWO
 three
*** Add File: new/b.txt
+bee
*** Delete File: del.txt
*** Update File: mv.txt
*** Move to: moved/mv2.txt
@@
-m1
+M1
*** End Patch"""
P2 = """*** Begin Patch
*** Update File: a.txt
@@
 three
-four
+FOUR
*** Add File: ../outside.txt
+out
*** End Patch"""
P3 = """*** Begin Patch
*** Update File: moved/mv2.txt
@@
-M1
+M1b
*** Add File: new/b.txt
+bee2
*** End Patch"""
P4 = """*** Begin Patch
*** Add File: over.txt
+replaced
*** Delete File: new/b.txt
*** Update File: moved/mv2.txt
*** Move to: mv.txt
@@
-M1b
+m1
*** End Patch"""
STEPS = [
    {"patch": P1},
    {"cmd": "echo shell >> a.txt; echo x > untracked.txt"},
    {"patch": P2},
    {"patch": P3},
    {"patch": P4},
]
RUN_TIMEOUT_S = 180.0
WATCHED = ("item/completed", "turn/diff/updated", "thread/tokenUsage/updated", "turn/completed")


def _play(layout: str) -> Any:
    async def play(ctx: ModelContext) -> None:
        root = Path(ctx.cwd)
        if layout == "git":
            repo = root.parent / "repo"
            with anyio.fail_after(30):
                await anyio.run_process(["git", "init", "-q", str(repo)])
            root = repo / "sub"
            root.mkdir()
            ctx.cwd = str(root)
        (root / "a.txt").write_text("one\ntwo\nthree\nfour\nfive\nsix\nseven\n")
        (root / "del.txt").write_text("gone\n")
        (root / "mv.txt").write_text("m1\nm2\n")
        (root / "over.txt").write_text("before\n")
        thread_id = await ctx.start_thread()
        _, completed = await ctx.run_turn(thread_id, "Edit the files.")
        ctx.notes["status"] = completed["params"]["turn"]["status"]

    return play


def _run(server: str, layout: str, base: Path) -> tuple[list[str], list[str], str]:
    spec = ModelScenario(f"turn_diff_{layout}", "steps", {"steps": STEPS}, "", _play(layout))
    run = run_on(server, spec, base, RUN_TIMEOUT_S)
    diffs: list[str] = []
    order: list[str] = []
    for segment in run.segments:
        for message in segment.received:
            method = message.get("method")
            if method not in WATCHED:
                continue
            params = message["params"]
            if method == "turn/diff/updated":
                diffs.append(str(params["diff"]).replace(str(base), "<base>"))
            if method == "item/completed":
                method = f"{method} {params['item']['type']}"
            order.append(method)
    return diffs, order, str(run.notes.get("status"))


@pytest.fixture(scope="module", params=["plain", "git"])
def runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[list[str], list[str], str]]:
    layout = str(request.param)
    out: dict[str, tuple[list[str], list[str], str]] = {}
    for server in ("real", "bridge"):
        base = tmp_path_factory.mktemp(f"{server}-{layout}")
        out[server] = _run(server, layout, base)
    return out


def test_the_turn_diffs_are_the_real_binarys(
    runs: dict[str, tuple[list[str], list[str], str]],
) -> None:
    real_diffs, _, real_status = runs["real"]
    bridge_diffs, _, bridge_status = runs["bridge"]
    assert real_status == bridge_status == "completed"
    # one after each of the four patches, one after each of the six responses
    assert len(real_diffs) == 10
    assert bridge_diffs == real_diffs


def test_the_turn_diffs_come_where_the_real_binary_sends_them(
    runs: dict[str, tuple[list[str], list[str], str]],
) -> None:
    assert runs["bridge"][1] == runs["real"][1]


def test_the_last_diff_is_the_net_change_of_the_turn(
    runs: dict[str, tuple[list[str], list[str], str]],
) -> None:
    last = runs["real"][0][-1]
    heads = [line for line in last.splitlines() if line.startswith("diff --git")]
    # mv.txt moved away and back unchanged, new/b.txt added then deleted: neither shows;
    # the shell's line in a.txt came before the second patch read the file, so it shows
    assert len(heads) == 4
    assert "+shell" in last
    assert re.search(r"diff --git a/(sub/)?over\.txt b/(sub/)?over\.txt\nindex ", last)
    assert "-before\n+replaced\n" in last
    assert runs["bridge"][0][-1] == last
