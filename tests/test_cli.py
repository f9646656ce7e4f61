"""The CLI entry point: help, version, and the codex-compatible flags it accepts and ignores."""

from __future__ import annotations

import subprocess

import pytest

from codex_app_bridge.cli import build_parser, main
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
    assert args.codex_config == ["model=x", "a=b"]
    assert args.codex_enable == ["f"]


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
