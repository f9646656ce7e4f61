"""``_scriptfile``: what ``serve --script`` checks before it answers, without the models: the
same verdict and message as the full index pass gives for the file's first line (that nothing is
read past it is shown by ``tests/server/test_startup.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_app_bridge._scriptfile import ScriptError, check_script, read_head
from codex_app_bridge.sources import ScriptError as SourcesScriptError
from codex_app_bridge.sources import index_rollout, index_script, load_script
from tests.conftest import DATA_DIR

ENVELOPE = b'{"id":"a","msg":{"type":"warning","message":"x"}}\n'
ROLLOUT = b'{"timestamp":"2025-01-01T00:00:00.000Z","type":"session_meta","payload":{"id":"t"}}\n'


def test_sources_raise_the_same_script_error() -> None:
    assert SourcesScriptError is ScriptError


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n \n",
        b"{oops\n",
        b"\n\n[1]\n",
        b'"text"\n',
        b'{"id":1,"msg":{}}\n',
        b'{"id":"a","msg":[]}\n',
        b'{"msg":{"type":"warning"}}\n',
    ],
)
def test_a_bad_head_gets_the_message_of_the_index_pass(tmp_path: Path, data: bytes) -> None:
    script = tmp_path / "bad.jsonl"
    script.write_bytes(data)
    with pytest.raises(ScriptError) as indexed:
        index_script(script)
    with pytest.raises(ScriptError) as checked:
        check_script(script)
    assert str(checked.value) == str(indexed.value)


def test_an_unreadable_file_gets_the_message_of_the_loader(tmp_path: Path) -> None:
    for path in (tmp_path / "missing.jsonl", tmp_path):
        with pytest.raises(ScriptError) as loaded:
            load_script(path, lazy=True)
        with pytest.raises(ScriptError) as checked:
            check_script(path)
        assert str(checked.value) == str(loaded.value)
        assert "cannot read the script" in str(checked.value)


def test_a_good_head_passes_whatever_follows_and_says_whether_it_is_a_rollout(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.jsonl"
    script.write_bytes(b"\n" + ENVELOPE + b"{a bad line further on\n")
    assert check_script(script) is False
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_bytes(ROLLOUT + b"not a rollout line\n")
    assert check_script(rollout) is True
    with pytest.raises(ScriptError, match="line 2"):
        index_rollout(rollout)
    assert check_script(DATA_DIR / "scripts" / "two_turns.jsonl") is False


def test_the_head_is_the_first_non_empty_line_with_its_number(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_bytes(b"\n  \n" + ENVELOPE + ENVELOPE)
    head = read_head(script)
    assert head is not None
    assert (head.number, head.raw) == (3, ENVELOPE)
    script.write_bytes(b"\n\n")
    assert read_head(script) is None
