"""How a command is read for an approval request's proposed exec-policy amendment (0.163.0,
recorded in ``tests/data/model_mode``: ``shell_denied`` proposes ``["true"]`` for ``true &&
sleep 0.5 && touch ../outside.txt``, ``shell_approval`` the whole argv for a script with a
redirection)."""

from __future__ import annotations

import pytest

from codex_app_bridge.machine._commands import plain_commands, proposed_prefix, shell_argv


@pytest.mark.parametrize(
    ("cmd", "commands"),
    [
        ("ls -la", [["ls", "-la"]]),
        ("true && sleep 0.5 && touch ../x", [["true"], ["sleep", "0.5"], ["touch", "../x"]]),
        ("a | b; c || d", [["a"], ["b"], ["c"], ["d"]]),
        ("echo 'a b' \"c d\"", [["echo", "a b", "c d"]]),
        ("echo approved > approved.txt && cat approved.txt", None),
        ("(cd sub && ls)", None),
        ("echo $HOME", None),
        ("echo `id`", None),
        ("sleep 1 &", None),
        ("ls &&", None),
        ("make 2>&1", None),
        ("echo 'unclosed", None),
        ("ls\npwd", None),
    ],
)
def test_a_script_of_plain_commands_is_read_as_its_commands(
    cmd: str, commands: list[list[str]] | None
) -> None:
    assert plain_commands(cmd) == commands


def test_the_proposed_amendment_is_the_rule_else_the_first_plain_command_else_the_argv() -> None:
    script = "true && sleep 0.5 && touch ../outside.txt"
    assert proposed_prefix(script, shell_argv(script), None) == ["true"]
    assert proposed_prefix(script, shell_argv(script), ["touch"]) == ["touch"]
    complex_script = "echo approved > approved.txt && cat approved.txt"
    argv = shell_argv(complex_script, shell="/bin/bash")
    assert proposed_prefix(complex_script, argv, None) == argv
