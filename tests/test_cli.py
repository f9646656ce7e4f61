"""The CLI entry point: help, version, and the codex-compatible flags it accepts and ignores."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codex_app_bridge.cli import EXIT_STDOUT_CLOSED, build_parser, main
from tests.conftest import bridge_command, bridge_env


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "codex-app-bridge" in captured.err


def test_codex_compat_flags_are_accepted_before_the_command() -> None:
    args = build_parser().parse_args(
        ["-c", "model=x", "--config", "a=b", "--enable", "f", "--disable", "g", "--profile", "p"]
    )
    assert args.top_config == ["model=x", "a=b"]
    assert args.top_enable == ["f"]
    assert args.top_disable == ["g"]


def test_module_entry_point_reports_version() -> None:
    proc = subprocess.run(
        [*bridge_command(), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env=bridge_env(),
        check=False,
    )
    assert proc.returncode == 0
    assert proc.stdout.startswith("codex-app-bridge ")


_DELTA = (
    b'{"id":"turn-1","msg":{"type":"agent_message_content_delta","thread_id":"t",'
    b'"turn_id":"turn-1","item_id":"msg_1","delta":"Hello"}}\n'
)


@pytest.mark.parametrize("args", [["demo"], ["map", "{big}"], ["map", "--stateless", "{big}"]])
def test_a_reader_that_stops_early_ends_the_command_quietly(
    args: list[str], tmp_path: Path
) -> None:
    # `codex-app-bridge demo | head -1`: the command notices, exits 141 (128 + SIGPIPE) and
    # prints no traceback. The map input is far larger than a pipe's buffer, so the command is
    # still writing when the reader goes away.
    big = tmp_path / "deltas.jsonl"
    big.write_bytes(_DELTA * 20_000)
    proc = subprocess.Popen(
        [*bridge_command(), *(a.replace("{big}", str(big)) for a in args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=bridge_env({"LOG_LEVEL": "WARNING"}),
    )
    assert proc.stdout is not None
    assert proc.stdout.readline()
    proc.stdout.close()
    try:
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == EXIT_STDOUT_CLOSED
    assert b"Traceback" not in stderr
    assert b"Broken pipe" not in stderr


def test_help_lists_serve_and_hides_the_app_server_alias(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    commands = [line.split()[0] for line in out.splitlines() if line.startswith("    ")]
    assert commands[0] == "serve"
    assert "app-server" not in commands
    assert "SUPPRESS" not in out
