"""Real clients, unmodified, against ``codex-app-bridge serve`` over a real subprocess pipe.

Each client runs in its own process (``_official``, ``_app_server_client``) under a hard timeout
and reports what it saw as JSON; these tests judge the reports. The clients spawn the server
themselves, the way an application points them at a custom ``codex app-server``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import bridge_env

pytestmark = pytest.mark.conformance

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 180


def run_client(module: str, *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=bridge_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


def test_the_official_sdk_runs_streams_interrupts_and_continues_a_thread() -> None:
    report = run_client("tests.conformance._official")
    # The SDK splits the user agent at its first "/", as it does with the real server.
    name, version = report["server"]
    assert name == "codex_python_sdk"
    assert version.startswith("0.163.0 (")
    first = report["first_methods"]
    assert first[0] == "turn/started"
    assert first[-1] == "turn/completed"
    assert "item/agentMessage/delta" in first
    # Every notification validated against the SDK's own 0.163.0 models.
    assert report["unknown"] == []
    assert report["streamed"].startswith('You said: "hello from the official sdk".')
    assert report["first_status"] == "completed"
    second = report["second"]
    assert second["status"] == "completed"
    assert second["final"].startswith('You said: "and a second turn". This is turn 2')
    assert second["total_tokens"] > 0
    assert report["interrupt_response"] == {}
    assert report["interrupt_tail"][-1] == "turn/completed"
    assert report["turn_statuses"] == ["completed", "completed", "interrupted"]


def _shim(tmp_path: Path, *serve_args: str) -> Path:
    """An executable a client can take as its codex binary: ignores its argv, runs our server."""
    shim = tmp_path / "codex"
    command = " ".join([sys.executable, "-m", "codex_app_bridge", "serve", *serve_args])
    shim.write_text(f"#!/bin/sh\nexec {command}\n", encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return shim


@pytest.mark.parametrize("launch", ["cli-directly", "shim"])
def test_codex_app_server_client_runs_two_turns_and_an_interrupt(
    tmp_path: Path, launch: str
) -> None:
    if launch == "shim":
        args = [str(_shim(tmp_path, "--pace", "0.01"))]
    else:
        # argv: python -m codex_app_bridge app-server --listen stdio://
        args = [sys.executable, "-m", "codex_app_bridge"]
    report = run_client("tests.conformance._app_server_client", *args)
    assert report["user_agent"].startswith("codex_python_sdk/0.163.0 (")
    first = report["first"]
    assert first["status"] == "completed"
    assert first["final"].startswith('You said: "hello from codex-app-server-client".')
    assert first["streamed"] == first["final"]
    assert first["items"] == ["userMessage", "reasoning", "agentMessage"]
    # Its global handler may still catch the thread/started broadcast: turn events follow.
    methods = [m for m in report["methods"] if m not in ("thread/started",)]
    assert methods[:2] == ["thread/status/changed", "turn/started"]
    assert methods[-1] == "turn/completed"
    assert report["second"]["status"] == "completed"
    assert "This is turn 2" in report["second"]["final"]
    assert report["interrupted"]["status"] == "interrupted"


def test_the_shim_is_executable_on_this_platform(tmp_path: Path) -> None:
    shim = _shim(tmp_path)
    assert os.access(shim, os.X_OK)


def test_the_official_sdk_answers_the_bridges_approval_requests_with_its_own_hook() -> None:
    report = run_client("tests.conformance._official_approvals")
    assert report["command"] == {
        "status": "completed",
        "final": "I ran `echo hi` (approved); it printed: ran: echo hi",
    }
    assert report["patch"] == {"status": "completed", "final": "I created notes.txt."}
    assert report["statuses"] == ["completed", "completed"]
    assert report["thread_status"] == {"type": "idle"}


def test_codex_app_server_client_handlers_answer_the_bridges_requests() -> None:
    report = run_client("tests.conformance._app_server_client_approvals")
    # its default declines approvals; the command is reported as not run
    assert report["declined"] == {
        "status": "completed",
        "final": "You declined `rm -rf /`; I did not run it.",
    }
    assert report["question"] == {"status": "completed", "final": 'You answered: "green".'}
    assert report["tool"] == {"status": "completed", "final": "The tool said: 42"}
    assert report["asked"] == ["item/tool/requestUserInput", "item/tool/call answer"]
