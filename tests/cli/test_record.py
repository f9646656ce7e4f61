"""``codex-app-bridge record``: between a client and the real ``codex app-server`` (against the
mock model), every line passes unchanged both ways, and the script it writes replays on the
bridge to the same client flow with the same turn notifications (conformance normaliser)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from codex_app_bridge.cli import main
from codex_app_bridge.conformance import MockResponses, StdioPeer, codex_env, write_codex_config
from codex_app_bridge.conformance._compare import normalise_stream
from codex_app_bridge.conformance.real_codex import real_codex_command
from tests.conftest import bridge_env

pytestmark = pytest.mark.anyio

TIMEOUT = 90
JsonObject = dict[str, Any]


def _turn_unit(message: JsonObject) -> bool:
    """A notification of the turn (what a replayed script must reproduce)."""
    method = str(message.get("method", ""))
    params = message.get("params")
    return (
        "id" not in message and isinstance(params, dict) and "turnId" in params
    ) or method.startswith(("turn/", "item/"))


async def _flow(argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> StdioPeer:
    """initialize, thread/start, one turn to its end; the peer once the server exited."""
    with anyio.fail_after(TIMEOUT):
        async with StdioPeer.spawn(argv, env=env, cwd=cwd, stderr_path=log) as peer:
            await peer.initialize()
            started = await peer.request("thread/start", {"cwd": str(cwd)})
            thread_id = started["thread"]["id"]
            done = peer.expect(lambda m: m.get("method") == "turn/completed")
            text = [{"type": "text", "text": "hello there"}]
            await peer.request("turn/start", {"threadId": thread_id, "input": text})
            await peer.wait(done, TIMEOUT)
    return peer


def _lines(transcript: Path, direction: str) -> list[JsonObject]:
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    return [r["line"] for r in records if r["dir"] == direction]


@pytest.mark.parametrize(
    "scenario",
    ["plain", "reasoning", "shell", "plan", "web_search", "error_retry", "error_fatal"],
)
async def test_a_recorded_real_session_passes_through_and_replays_equal_on_the_bridge(
    scenario: str, tmp_path: Path
) -> None:
    home = tmp_path / "home" / ".codex"
    out = tmp_path / "recording"
    work = tmp_path / "work"
    work.mkdir()
    env = codex_env(home, extra={"PYTHONPATH": bridge_env()["PYTHONPATH"]})
    with MockResponses() as mock:
        mock.set_scenario(scenario)
        write_codex_config(home, mock.base_url)
        record = [sys.executable, "-m", "codex_app_bridge", "record", "--out", str(out), "--"]
        real = await _flow([*record, *real_codex_command()], env, work, tmp_path / "real.log")

    # everything passed through unchanged, both ways, and the transcript holds it all
    transcript = out / "transcript.jsonl"
    assert _lines(transcript, "c2s") == real.sent
    assert _lines(transcript, "s2c") == real.received
    assert (out / "script.jsonl").is_file(), (tmp_path / "real.log").read_text()

    bridge = [sys.executable, "-m", "codex_app_bridge", "serve", "--script"]
    replayed = await _flow([*bridge, str(out / "script.jsonl")], env, work, tmp_path / "bridge.log")
    paths = {str(work): "<cwd>", str(home): "<codex-home>"}
    recorded_units = normalise_stream([m for m in real.received if _turn_unit(m)], real.sent, paths)
    replayed_units = normalise_stream(
        [m for m in replayed.received if _turn_unit(m)], replayed.sent, paths
    )
    methods = [u.get("method") for u in replayed_units]
    assert methods == [u.get("method") for u in recorded_units]
    assert replayed_units == recorded_units
    kinds = {cast(str, u.get("method")) for u in recorded_units}
    assert {"turn/started", "item/completed", "turn/completed"} <= kinds


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
