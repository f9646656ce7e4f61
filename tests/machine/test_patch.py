"""The apply_patch engine against the texts and behaviour probed from 0.163.0
(``spec/machine-tools.md`` §3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_app_bridge.machine import PatchError, apply_plan, parse_patch, plan_patch, unified_diff


def _patch(*lines: str) -> str:
    return "\n".join(("*** Begin Patch", *lines, "*** End Patch")) + "\n"


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hello\n", "invalid patch: The first line of the patch must be '*** Begin Patch'"),
        (
            "*** Begin Patch\n*** Add File: a\n+x\n",
            "invalid patch: The last line of the patch must be '*** End Patch'",
        ),
        (
            _patch("*** Frobnicate File: a.txt"),
            "invalid hunk at line 2, '*** Frobnicate File: a.txt' is not a valid hunk header. "
            "Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', "
            "'*** Update File: {path}'",
        ),
        (
            _patch("*** Update File: upd.txt"),
            "invalid hunk at line 2, Update file hunk for path 'upd.txt' is empty",
        ),
        (
            _patch("*** Update File: upd.txt", "*** Move to: other.txt"),
            "invalid hunk at line 2, Update file hunk for path 'upd.txt' is empty",
        ),
        (
            _patch("*** Update File: upd.txt", "@@", " line2", "-line3", "Xline3"),
            None,  # a line of another kind ends the chunk: the next one must start with @@
        ),
    ],
)
def test_parse_errors_are_cores_words(text: str, message: str | None) -> None:
    if message is None:
        with pytest.raises(
            PatchError,
            match="Expected update hunk to start with a @@ context marker, got: 'Xline3'",
        ) as info:
            parse_patch(text)
        assert info.value.message.startswith("invalid hunk at line 6, ")
        return
    with pytest.raises(PatchError) as info:
        parse_patch(text)
    assert info.value.message == message
    assert info.value.verification_text == f"apply_patch verification failed: {message}"


def test_markers_may_be_padded_and_wrapped_in_a_heredoc(tmp_path: Path) -> None:
    text = "<<'EOF'\n  *** Begin Patch  \n*** Add File: a.txt\n+hi\n *** End Patch\nEOF\n"
    plan = plan_patch(text, str(tmp_path))
    apply_plan(plan)
    assert (tmp_path / "a.txt").read_text() == "hi\n"


def test_begin_and_end_only_is_an_empty_plan(tmp_path: Path) -> None:
    assert plan_patch(_patch(), str(tmp_path)).actions == ()


def test_add_update_move_delete_and_the_success_summary(tmp_path: Path) -> None:
    (tmp_path / "upd.txt").write_text("line1\nline2\nline3\nline4\n")
    (tmp_path / "mv.txt").write_text("a\nb\nc\n")
    (tmp_path / "del.txt").write_text("bye\n")
    text = _patch(
        "*** Add File: new/added.txt",
        "+hello",
        "+world",
        "*** Update File: upd.txt",
        "@@",
        " line2",
        "-line3",
        "+LINE3",
        " line4",
        "*** Update File: mv.txt",
        "*** Move to: moved/mv2.txt",
        "@@",
        " a",
        "-b",
        "+B",
        " c",
        "*** Delete File: del.txt",
    )
    plan = plan_patch(text, str(tmp_path))
    root = str(tmp_path)
    assert plan.changes() == {
        f"{root}/del.txt": {"type": "delete", "content": "bye\n"},
        f"{root}/mv.txt": {
            "type": "update",
            "unified_diff": "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
            "move_path": f"{root}/moved/mv2.txt",
        },
        f"{root}/new/added.txt": {"type": "add", "content": "hello\nworld\n"},
        f"{root}/upd.txt": {
            "type": "update",
            "unified_diff": "@@ -2,3 +2,3 @@\n line2\n-line3\n+LINE3\n line4\n",
            "move_path": None,
        },
    }
    assert list(plan.changes()) == sorted(plan.changes())
    apply_plan(plan)
    assert _files(tmp_path) == {
        "moved/mv2.txt": "a\nB\nc\n",
        "new/added.txt": "hello\nworld\n",
        "upd.txt": "line1\nline2\nLINE3\nline4\n",
    }
    assert plan.success_text() == (
        "Success. Updated the following files:\n"
        "A new/added.txt\nM upd.txt\nM moved/mv2.txt\nD del.txt\n"
    )


def test_a_failing_hunk_writes_nothing_at_all(tmp_path: Path) -> None:
    (tmp_path / "upd.txt").write_text("line1\nline3\n")
    text = _patch(
        "*** Add File: first.txt", "+x", "*** Update File: upd.txt", "@@", "-nope", " line3"
    )
    with pytest.raises(PatchError) as info:
        plan_patch(text, str(tmp_path))
    assert (
        info.value.message == f"Failed to find expected lines in {tmp_path}/upd.txt:\nnope\nline3"
    )
    assert _files(tmp_path) == {"upd.txt": "line1\nline3\n"}


@pytest.mark.parametrize(
    ("hunk", "message"),
    [
        (
            ("*** Update File: missing.txt", "@@", "-a", "+b"),
            "Failed to read file to update {root}/missing.txt: No such file or directory (os error 2)",
        ),
        (
            ("*** Delete File: missing.txt",),
            "Failed to read {root}/missing.txt: No such file or directory (os error 2)",
        ),
        (
            ("*** Update File: f.txt", "@@ def nothere", "-a", "+b"),
            "Failed to find context 'def nothere' in {root}/f.txt",
        ),
    ],
)
def test_verification_errors_name_the_absolute_path(
    tmp_path: Path, hunk: tuple[str, ...], message: str
) -> None:
    (tmp_path / "f.txt").write_text("a\n")
    with pytest.raises(PatchError) as info:
        plan_patch(_patch(*hunk), str(tmp_path))
    assert info.value.message == message.format(root=tmp_path)


def test_matching_forgives_whitespace_and_unicode_punctuation(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("foo  \n  bar\na \u2014 b\nend\n")
    text = _patch("*** Update File: f.txt", "@@", " foo", "-bar", "+BAR", "@@", "-a - b", "+a-b")
    apply_plan(plan_patch(text, str(tmp_path)))
    # as core: the matched lines, context included, are replaced by the chunk's new lines
    assert (tmp_path / "f.txt").read_text() == "foo\nBAR\na-b\nend\n"


def test_context_header_first_chunk_without_marker_eof_and_pure_additions(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("def a():\n    x = 1\ndef b():\n    x = 1\n")
    text = _patch(
        "*** Update File: f.py",
        " def a():",  # first chunk without @@
        "@@ def b():",
        "-    x = 1",
        "+    x = 2",
        "*** End of File",
    )
    apply_plan(plan_patch(text, str(tmp_path)))
    assert (tmp_path / "f.py").read_text() == "def a():\n    x = 1\ndef b():\n    x = 2\n"
    apply_plan(plan_patch(_patch("*** Update File: f.py", "@@", "+# tail"), str(tmp_path)))
    assert (tmp_path / "f.py").read_text().endswith("    x = 2\n# tail\n")


def test_crlf_files_stay_crlf_and_written_files_end_with_a_newline(tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    (tmp_path / "n.txt").write_bytes(b"one\ntwo")
    apply_plan(plan_patch(_patch("*** Update File: w.txt", "@@", "-two", "+TWO"), str(tmp_path)))
    apply_plan(plan_patch(_patch("*** Update File: n.txt", "@@", "-one", "+ONE"), str(tmp_path)))
    assert (tmp_path / "w.txt").read_bytes() == b"one\r\nTWO\r\n"
    assert (tmp_path / "n.txt").read_bytes() == b"ONE\ntwo\n"


def test_add_overwrites_and_keeps_the_mode_of_an_updated_file(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("echo a\n")
    script.chmod(0o755)
    apply_plan(
        plan_patch(_patch("*** Update File: run.sh", "@@", "-echo a", "+echo b"), str(tmp_path))
    )
    assert script.stat().st_mode & 0o777 == 0o755
    apply_plan(plan_patch(_patch("*** Add File: run.sh", "+new"), str(tmp_path)))
    assert script.read_text() == "new\n"


def test_unified_diff_uses_one_line_of_context_and_marks_a_missing_final_newline() -> None:
    assert unified_diff("a\nb\nc\nd\ne\n", "a\nb\nC\nd\ne\n") == "@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n"
    assert unified_diff("x", "y\n") == "@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n"
