"""Commands and patches in model mode, on their own (the whole suite is
``test_model_mode_bridge``): the bridge's model turns that run the model's ``exec_command`` and
``apply_patch`` calls against the real binary's recorded ones (issue 21's acceptance), same mock.

``shell``: workspace-write / never, the command runs confined without a prompt (its
``touch ../outside.txt`` is refused by the sandbox, in both servers); ``shell_approval`` and
``shell_declined``: untrusted, the client accepts (the command runs, still confined) or
declines (nothing runs, the model is told, and no item is left in ``thread/read``);
``shell_cancelled``: the client cancels, the turn ends interrupted (the response's usage still
counted); ``shell_for_session``: accepted for the session, the same command again runs without
a prompt; ``shell_escalated``: on-request, the model asks for ``require_escalated`` with a justification,
the client accepts, the command runs outside the sandbox; ``shell_denied``: untrusted, accepted,
the sandbox refuses the write (the approval proposes the script's first command as the rule);
``shell_session``: the command outlives its yield, ``write_stdin`` polls the session until it
exits; ``shell_read_only``: read-only / never, the command can write neither in the cwd nor
outside it (in both servers); ``shell_network``: a TCP connection to the loopback from a
command without network, refused by the seccomp filter (``socket: Operation not permitted``,
the same text in both servers); ``apply_patch_edit``: one patch updates, deletes, adds and moves files a command wrote;
``apply_patch`` and ``apply_patch_approval``: the fallback model's ``apply_patch`` heredoc
through ``exec_command``, applied at once or after the client accepted it, with the file-change
item and the turn's diff; ``apply_patch_escape``: patches leaving the cwd through ``..``
(refused before anything starts) and through a symlink the model made (judged by name as
inside, as core judges it, then refused at the write as core's sandbox refuses it: a failed
file-change item, ``Failed to write file``), and nothing written outside; ``apply_patch_freeform``:
gpt-5.5, whose metadata gives it the freeform ``apply_patch`` tool (and ``tool_search``, the
detailed ``view_image``, its default effort and verbosity): the model's ``custom_tool_call``
answered by a ``custom_tool_call_output``. The notifications, the final reads, the number of requests the mock
got and every request's masked input (the function call outputs included: only their chunk
id, wall time and session id are masked) must equal the real binary's, but for the rows of
``test_model_mode_bridge.KNOWN``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_app_bridge.conformance._model_mode import ModelResult, load_reference
from tests.conformance.conftest import REFERENCE, BridgeModelRuns
from tests.conformance.test_model_mode_bridge import known

MACHINE_SCENARIOS = [
    "shell",
    "shell_approval",
    "shell_declined",
    "shell_cancelled",
    "shell_for_session",
    "shell_escalated",
    "shell_denied",
    "shell_session",
    "shell_read_only",
    "shell_network",
    "apply_patch",
    "apply_patch_edit",
    "apply_patch_approval",
    "apply_patch_escape",
    "apply_patch_freeform",
]


Run = tuple[Path, dict[str, ModelResult]]


@pytest.fixture(scope="module")
def run(bridge_model_runs: BridgeModelRuns) -> Run:
    return bridge_model_runs.scratch, bridge_model_runs.results(MACHINE_SCENARIOS)


@pytest.mark.parametrize("name", MACHINE_SCENARIOS)
def test_commands_and_patches_match_the_real_binarys(run: Run, name: str) -> None:
    result = run[1][name]
    assert result.notes == []
    real, bridge = result.request_counts
    assert bridge == real >= (1 if name == "shell_cancelled" else 2)
    parts = (result.stream, result.reads, result.inputs, result.fields)
    assert [d for part in parts for d in part.differences if not known(name, d)] == []
    assert result.stream.compared > 20
    assert result.inputs.equal == result.inputs.compared == real


def _outputs(name: str) -> list[str]:
    return [
        str(item["output"])
        for unit in load_reference(REFERENCE, name).inputs
        for item in unit["input"]
        if item.get("type") == "function_call_output"
    ]


def test_the_real_binary_wrote_nothing_under_read_only_when_it_was_recorded() -> None:
    (output,) = _outputs("shell_read_only")
    assert output.endswith(
        "touch: cannot touch 'inside.txt': Read-only file system\nrefused\n"
        "touch: cannot touch '../outside.txt': Read-only file system\nrefused\n"
    )


@pytest.mark.parametrize("name", ["shell", "shell_approval"])
def test_the_real_binary_ran_the_command_confined_when_it_was_recorded(name: str) -> None:
    # a reference recorded where the real binary cannot sandbox would hold "bwrap: execvp
    # codex-linux-sandbox" (exit 1), or, under untrusted, an unconfined re-run
    (output,) = _outputs(name)
    assert "Process exited with code 0\n" in output
    assert "touch: cannot touch '../outside.txt': Read-only file system\nrefused\n" in output


def test_what_the_bridge_left_on_disk(run: Run) -> None:
    scratch = run[0]

    def base(name: str) -> Path:
        return scratch / name / "bridge"

    assert (base("shell") / "work" / "listed.txt").read_text() == "one\ntwo\n"
    assert (base("shell_approval") / "work" / "approved.txt").read_text() == "approved\n"
    for name in ("shell", "shell_approval", "shell_denied"):
        assert not (base(name) / "outside.txt").exists(), name
    assert (base("shell_escalated") / "outside.txt").exists()  # accepted: unsandboxed
    for name in ("shell_declined", "shell_cancelled"):
        assert not (base(name) / "work" / "approved.txt").exists(), name
    assert (base("shell_for_session") / "work" / "twice.txt").exists()
    edited = base("apply_patch_edit") / "work"
    assert (edited / "upd.txt").read_text() == "a\nB\nc\n"
    assert (edited / "moved" / "mv2.txt").read_text() == "1\ntwo\n"
    assert (edited / "new" / "added.txt").read_text() == "hello\nworld\n"
    assert not (edited / "del.txt").exists()
    assert not (edited / "mv.txt").exists()
    for name in ("apply_patch", "apply_patch_approval"):
        hello = base(name) / "work" / "hello.txt"
        assert hello.read_text() == "hello from apply_patch\nsecond line\n", name
    read_only = base("shell_read_only")
    assert not (read_only / "outside.txt").exists()
    assert list((read_only / "work").iterdir()) == []
    escape = base("apply_patch_escape")
    assert (escape / "work" / "up").is_symlink()
    assert not (escape / "outside.txt").exists()
    assert not (escape / "escaped.txt").exists()


def test_the_real_binary_refused_both_escapes_when_it_was_recorded() -> None:
    outputs = [
        str(item["output"])
        for unit in load_reference(REFERENCE, "apply_patch_escape").inputs[-1:]
        for item in unit["input"]
        if item.get("type") == "function_call_output"
    ]
    assert outputs[1] == (
        "patch rejected: writing outside of the project; rejected by user approval settings"
    )
    assert outputs[2].endswith("Output:\nFailed to write file <cwd>/up/escaped.txt\n")
    assert outputs[3].endswith("No such file or directory\nnone\n")
