"""The newcomer's CLI defects (issue 22.5): abbreviated flags refused, a command's bad flag shows
that command's usage, the real app-server's flags accepted, CODEX_HOME / --cwd / LOG_LEVEL
checked before start-up, help without reST markup, --version naming the codex version, offline
tools refusing input of the wrong kind."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import pytest

from codex_app_bridge._version import CODEX_PROTOCOL_VERSION
from codex_app_bridge.cli import build_parser, main
from codex_app_bridge.conformance.real_codex import codex_env, real_codex_path

ROOT = Path(__file__).resolve().parents[2]
ROLLOUT = ROOT / "tests" / "data" / "captures" / "plain" / "rollout.jsonl"


def _exit(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as ended:
        build_parser().parse_args(argv)
    return int(ended.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--list", "stdio://"],  # not --listen
        ["app-server", "--scen", "x.jsonl"],  # not --scenario
        ["replay", "--no-time", "f.jsonl"],  # not --no-timestamps
        ["history", "--thread", "t"],  # not --thread-id
    ],
)
def test_an_abbreviated_flag_is_refused_with_the_command_s_usage(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = _exit(capsys, argv)
    assert status == 2
    assert err.startswith(f"usage: codex-app-bridge {argv[0]} ")
    assert f"codex-app-bridge {argv[0]}: error: unrecognized arguments: {argv[1]}" in err


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["serve", "--bogus"], "serve"),
        (["demo", "--bogus"], "demo"),
        (["check", "x", "--bogus"], "check"),
        (["inspect", "turn-items", "--bogus"], "inspect turn-items"),
    ],
)
def test_a_command_s_bad_flag_shows_that_command_s_usage(
    argv: list[str], usage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = _exit(capsys, argv)
    assert status == 2
    assert err.startswith(f"usage: codex-app-bridge {usage} ")


def _real_app_server_flags(home: Path) -> list[str]:
    """The binary's own ``--help``, run on a CODEX_HOME (and HOME) of the test's: with the
    developer's environment it set up its helpers in the real ``~/.codex/tmp/arg0-linux``, a
    directory every worker and every checkout on the machine shares."""
    shown = subprocess.run(
        [real_codex_path(), "app-server", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=codex_env(home / ".codex"),
    ).stdout
    return sorted(set(re.findall(r"^\s+(?:-\w, )?(--[a-z][a-z0-9-]+)", shown, re.MULTILINE)))


def test_every_flag_of_the_real_app_server_is_accepted(tmp_path: Path) -> None:
    flags = _real_app_server_flags(tmp_path)
    assert {"--analytics-default-enabled", "--code-mode-host", "--strict-config"} <= set(flags)
    values = {
        "--config": "model=x",
        "--enable": "f",
        "--disable": "f",
        "--code-mode-host": "http://127.0.0.1:9",
        "--listen": "stdio://",
        "--ws-auth": "capability-token",
        "--ws-token-file": "/tmp/token",
        "--ws-token-sha256": "00",
        "--ws-shared-secret-file": "/tmp/secret",
        "--ws-issuer": "i",
        "--ws-audience": "a",
        "--ws-max-clock-skew-seconds": "5",
    }
    for flag in flags:
        if flag == "--help":
            continue
        argv = [flag] if flag not in values else [flag, values[flag]]
        build_parser().parse_args(["app-server", *argv])  # SystemExit if refused


def test_a_codex_home_that_is_a_file_stops_start_up_in_the_real_binary_s_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    afile = tmp_path / "home"
    afile.write_text("not a directory")
    assert main(["serve", "--codex-home", str(afile)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f'Error: CODEX_HOME points to "{afile}", but that path is not a directory'
    monkeypatch.setenv("CODEX_HOME", str(afile / "sub"))
    assert main(["serve"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        f'Error: failed to read CODEX_HOME "{afile / "sub"}": Not a directory (os error 20)'
    )


def test_a_cwd_that_is_no_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing"
    assert main(["serve", "--cwd", str(missing)]) == 2
    assert f"--cwd {missing} does not exist" in capsys.readouterr().err


def test_a_log_level_that_names_no_level_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOG_LEVEL", "loud")
    assert main(["check", str(ROLLOUT)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "codex-app-bridge: LOG_LEVEL=loud is not a level: expected one of DEBUG, INFO, "
        "WARNING, ERROR, CRITICAL\n"
    )
    monkeypatch.setenv("LOG_LEVEL", "info")
    assert main(["check", str(ROLLOUT)]) == 0


def _helps() -> list[list[str]]:
    """``--help`` of the program, of every command and of every command's commands."""

    def below(parser: argparse.ArgumentParser, path: list[str]) -> list[list[str]]:
        found = [[*path, "--help"]]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += below(sub, [*path, name])
        return found

    return below(build_parser(), [])


def test_no_help_shows_rest_markup(capsys: pytest.CaptureFixture[str]) -> None:
    helps = _helps()
    assert ["serve", "--help"] in helps
    assert ["inspect", "truncate", "--help"] in helps
    for argv in helps:
        with pytest.raises(SystemExit):
            build_parser().parse_args(argv)
        shown = capsys.readouterr().out
        assert shown.startswith("usage: "), argv
        assert "``" not in shown, (argv, shown)
        assert not re.search(r":[a-z]+:`", shown), (argv, shown)


def test_version_names_the_compatible_codex_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--version"])
    out = capsys.readouterr().out
    assert re.fullmatch(
        rf"codex-app-bridge \S+ \(codex app-server {re.escape(CODEX_PROTOCOL_VERSION)}\)\n", out
    )


def test_a_rollout_given_to_turn_items_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["inspect", "turn-items", str(ROLLOUT)]) == 1
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert len(err) == 1
    assert err[0].startswith("inspect turn-items: line 1: a rollout's 'session_meta' line")
    items = [line for line in ROLLOUT.read_text().splitlines() if '"response_item"' in line]
    assert len(captured.out.splitlines()) == len(items)  # a line out per response item only


def test_an_empty_file_given_to_history_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert main(["history", str(empty)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"history: {empty} is empty: expected a rollout (rollout-*.jsonl)\n"
