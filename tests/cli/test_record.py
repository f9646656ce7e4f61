"""``codex-app-bridge record``: between a client and the real ``codex app-server`` (against the
mock model), every line passes unchanged both ways, and the script it writes replays on the
bridge to the same client flow with the same notifications and server requests (conformance
normaliser): every conformance scenario (``SCENARIO_SPECS``), none left out."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codex_app_bridge.cli import main
from codex_app_bridge.conformance import MockResponses, codex_env, write_codex_config
from codex_app_bridge.conformance._compare import (
    canonical_order,
    compare,
    delta_checks,
    normalise_stream,
)
from codex_app_bridge.conformance._drive import SCENARIO_SPECS, ScenarioSpec, Session, run_session
from codex_app_bridge.conformance.real_codex import bridge_command, real_codex_command
from tests.conftest import bridge_env

pytestmark = pytest.mark.anyio

TIMEOUT = 90
JsonObject = dict[str, Any]

# Timing, as in the conformance suite (tests/conformance/test_turn_conformance.py, OPTIONAL): the
# interrupt lands after a number of deltas that depends on the machine's load, and the
# rate-limit token_count Codex emits while aborting sits after the interrupt point of the script.
_TIMING: dict[str, set[tuple[str, str]]] = {
    "interrupt": {
        ("missing", "account/rateLimits/updated"),
        ("changed", "item/agentMessage/delta"),
    },
}


def _lines(transcript: Path, direction: str) -> list[JsonObject]:
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    return [r["line"] for r in records if r["dir"] == direction]


def _units(session: Session, paths: dict[str, str]) -> list[JsonObject]:
    """What the client was sent but answers: notifications and server requests, normalised."""
    units = normalise_stream(
        session.received, session.sent, paths, upto=session.notes.get("reads_from")
    )
    units = [u for u in canonical_order(units) if "response" not in u]
    return [*units, *delta_checks(units)]


# the scenarios with several clients on the server's socket wait for record to listen itself
STDIO_SPECS = [s for s in SCENARIO_SPECS if not s.listen]


@pytest.mark.parametrize("spec", STDIO_SPECS, ids=[s.name for s in STDIO_SPECS])
async def test_a_recorded_real_session_passes_through_and_replays_equal_on_the_bridge(
    spec: ScenarioSpec, tmp_path: Path
) -> None:
    home = tmp_path / "home" / ".codex"
    out = tmp_path / "recording"
    work = tmp_path / "work"
    work.mkdir()
    env = codex_env(home, extra={"PYTHONPATH": bridge_env()["PYTHONPATH"]})
    with MockResponses() as mock:
        mock.set_scenario(spec.mock, **dict(spec.mock_params))
        write_codex_config(home, mock.base_url)
        record = [sys.executable, "-m", "codex_app_bridge", "record", "--out", str(out), "--"]
        argv = [*record, *real_codex_command()]
        real = await run_session(spec, argv, env=env, cwd=work, stderr_path=tmp_path / "real.log")
    log = (tmp_path / "real.log").read_text()
    assert real.error is None, log

    # everything passed through unchanged, both ways, and the transcript holds it all
    transcript = out / "transcript.jsonl"
    assert _lines(transcript, "c2s") == real.sent
    assert _lines(transcript, "s2c") == real.received
    assert (out / "script.jsonl").is_file(), log

    pace = ["--pace", spec.bridge_pace] if spec.bridge_pace is not None else []
    argv = bridge_command("--script", str(out / "script.jsonl"), *pace)
    replayed = await run_session(spec, argv, env=env, cwd=work, stderr_path=tmp_path / "bridge.log")
    assert replayed.error is None, (tmp_path / "bridge.log").read_text()
    paths = {str(work): "<cwd>", str(home): "<codex-home>"}
    recorded_units, replayed_units = _units(real, paths), _units(replayed, paths)
    result = compare(recorded_units, replayed_units)
    differences = {(d.kind, d.label) for d in result.differences}
    assert differences <= _TIMING.get(spec.name, set()), result.differences
    kinds = {u.get("method") for u in recorded_units}
    assert {"turn/started", "turn/completed"} <= kinds


def test_record_without_a_command_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["record", "--out", str(tmp_path / "r"), "--"]) == 2
    assert "no command to record" in capsys.readouterr().err


def test_record_of_a_missing_program_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["record", "--out", str(tmp_path / "r"), "--", str(tmp_path / "nope")]) == 2
    assert f"cannot run {tmp_path / 'nope'}: No such file or directory" in capsys.readouterr().err


def test_ctrl_c_while_recording_keeps_the_transcript_and_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "r"
    echo = "import sys\nfor line in sys.stdin:\n    print(line, end='', flush=True)\n"
    record = [sys.executable, "-m", "codex_app_bridge", "record", "--out", str(out), "--"]
    proc = subprocess.Popen(
        [*record, sys.executable, "-c", echo],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=bridge_env(),
    )
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(b'{"id":1,"method":"ping"}\n')
        proc.stdin.flush()
        assert proc.stdout.readline() == b'{"id":1,"method":"ping"}\n'  # through, unchanged
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=TIMEOUT)
    assert proc.returncode == 130
    assert b"Traceback" not in err
    assert err.splitlines()[-1] == b"record: interrupted"
    assert _lines(out / "transcript.jsonl", "c2s") == [{"id": 1, "method": "ping"}]
    assert _lines(out / "transcript.jsonl", "s2c") == [{"id": 1, "method": "ping"}]
