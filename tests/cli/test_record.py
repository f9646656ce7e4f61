"""``codex-app-bridge record``: between a client and the real ``codex app-server`` (against the
mock model), every line passes unchanged both ways, and the script it writes replays on the
bridge to the same client flow with the same notifications and server requests (conformance
normaliser): every conformance scenario (``SCENARIO_SPECS``), none left out."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from websockets.asyncio.client import connect as ws_connect

from codex_app_bridge.cli import main
from codex_app_bridge.conformance import MockResponses, StdioPeer, codex_env, write_codex_config
from codex_app_bridge.conformance._compare import (
    canonical_order,
    compare,
    delta_checks,
    normalise_stream,
)
from codex_app_bridge.conformance._drive import (
    SCENARIO_SPECS,
    Context,
    ScenarioSpec,
    _without_stdio_listen,  # pyright: ignore[reportPrivateUsage]
    run_session,
)
from codex_app_bridge.conformance._socket_peer import SocketPeer
from codex_app_bridge.conformance.real_codex import (
    bridge_command,
    default_server_request_handler,
    real_codex_command,
    real_codex_path,
)
from tests.conftest import bridge_env

pytestmark = pytest.mark.anyio

TIMEOUT = 90
HELD_OPEN_S = 3.0
"""How long a signal test keeps record's stdin open after the signal (record exits in well under
a second on a quiet machine; the abort it guards against took 1 s more)."""
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


def _lines(transcript: Path, direction: str, conn: int | None = None) -> list[JsonObject]:
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    return [r["line"] for r in records if r["dir"] == direction and r.get("conn") == conn]


def _units(
    received: list[JsonObject], sent: list[JsonObject], paths: dict[str, str], upto: int | None
) -> list[JsonObject]:
    """What the client was sent but answers: notifications and server requests, normalised,
    and whether each streamed item's deltas add up to it."""
    units = normalise_stream(received, sent, paths, upto=upto)
    units = [u for u in canonical_order(units) if "response" not in u]
    return [*units, *delta_checks(units)]


def _layout(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """CODEX_HOME, the recording's directory, the client's cwd and the servers' environment."""
    home = tmp_path / "home" / ".codex"
    work = tmp_path / "work"
    work.mkdir()
    env = codex_env(home, extra={"PYTHONPATH": bridge_env()["PYTHONPATH"]})
    return home, tmp_path / "recording", work, env


def _record(out: Path) -> list[str]:
    """``codex-app-bridge record`` in front of the real binary."""
    record = [sys.executable, "-m", "codex_app_bridge", "record", "--out", str(out), "--"]
    return [*record, *real_codex_command()]


@pytest.mark.parametrize("spec", SCENARIO_SPECS, ids=[s.name for s in SCENARIO_SPECS])
async def test_a_recorded_real_session_passes_through_and_replays_equal_on_the_bridge(
    spec: ScenarioSpec, tmp_path: Path
) -> None:
    home, out, work, env = _layout(tmp_path)
    with MockResponses() as mock:
        mock.set_scenario(spec.mock, **dict(spec.mock_params))
        write_codex_config(home, mock.base_url)
        real = await run_session(
            spec, _record(out), env=env, cwd=work, stderr_path=tmp_path / "real.log"
        )
    log = (tmp_path / "real.log").read_text()
    assert real.error is None, log

    # everything passed through unchanged, both ways, and the transcript holds it all (a
    # listening server: each connection's, in the order the clients opened them)
    transcript = out / "transcript.jsonl"
    clients = [(real.sent, real.received), *((c.sent, c.received) for c in real.clients.values())]
    for conn, (sent, received) in enumerate(clients, start=1):
        number = conn if spec.listen else None
        assert _lines(transcript, "c2s", number) == sent
        assert _lines(transcript, "s2c", number) == received
    assert (out / "script.jsonl").is_file(), log

    pace = ["--pace", spec.bridge_pace] if spec.bridge_pace is not None else []
    argv = bridge_command("--script", str(out / "script.jsonl"), *pace)
    replayed = await run_session(spec, argv, env=env, cwd=work, stderr_path=tmp_path / "bridge.log")
    assert replayed.error is None, (tmp_path / "bridge.log").read_text()
    paths = {str(work): "<cwd>", str(home): "<codex-home>"}
    recorded_units = _units(real.received, real.sent, paths, real.notes.get("reads_from"))
    replayed_units = _units(
        replayed.received, replayed.sent, paths, replayed.notes.get("reads_from")
    )
    result = compare(recorded_units, replayed_units)
    for name, other in real.clients.items():  # each further client of a listening server
        again = replayed.clients[name]
        result.add(
            compare(
                _units(other.received, other.sent, paths, other.reads_from),
                _units(again.received, again.sent, paths, again.reads_from),
            )
        )
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


_AS_FROM_A_TERMINAL = (
    sys.executable,
    "-c",
    "import os, signal, sys\n"
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})\n"
    "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n",
)
"""A prefix that runs a command as a shell in a terminal would: SIGINT at its default action
and neither signal blocked. A process inherits an ignored SIGINT and a blocked signal mask, and
Python leaves an ignored SIGINT ignored: under a runner started as ``cmd &`` by a shell without
job control (which ignores SIGINT in what it starts), the xdist worker and so record ignored
Ctrl-C, unless a test the same worker ran before had removed an asyncio SIGINT handler (asyncio
then puts Python's handler back). So the Ctrl-C case failed now and then, on what the worker
had run (status 0, or a 90 s wait with stdin held open): it tested record's parents, not
record."""


def _signal_state(pid: int) -> str:
    status = Path(f"/proc/{pid}/status").read_text()
    return "".join(line for line in status.splitlines(keepends=True) if line.startswith("Sig"))


def _signals_handled(pid: int) -> set[int]:
    """The signals process ``pid`` catches, not blocked in its main thread (``/proc``)."""
    fields = dict(line.split(":\t", 1) for line in _signal_state(pid).splitlines())
    caught, blocked = int(fields["SigCgt"], 16), int(fields["SigBlk"], 16)
    return {n for n in range(1, 65) if (caught & ~blocked) >> (n - 1) & 1}


@pytest.mark.parametrize(
    ("signum", "status", "said"),
    [
        (signal.SIGINT, 130, b"record: interrupted"),
        (signal.SIGTERM, 143, b"record: stopped (SIGTERM)"),
    ],
)
def test_a_signal_while_recording_keeps_the_transcript_and_is_one_line(
    signum: signal.Signals, status: int, said: bytes, tmp_path: Path
) -> None:
    """Ctrl-C, or SIGTERM with the client's stdin still open (the official SDK terminates its
    server right after closing stdin): the server ends, the transcript is kept, one line says
    so. Stdin stays open for a while after the signal: record's thread reading it was still
    blocked there when the interpreter shut down, which aborted it (status -6) when the client
    was slower to close stdin than record to exit, as under load. Stdin is closed after that
    while either way (record that has not exited by then ends as before)."""
    out = tmp_path / "r"
    echo = "import sys\nfor line in sys.stdin:\n    print(line, end='', flush=True)\n"
    record = [sys.executable, "-m", "codex_app_bridge", "record", "--out", str(out), "--"]
    proc = subprocess.Popen(
        [*_AS_FROM_A_TERMINAL, *record, sys.executable, "-c", echo],
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
        handled = _signals_handled(proc.pid)
        assert {signal.SIGINT, signal.SIGTERM} <= handled, _signal_state(proc.pid)
        proc.send_signal(signum)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=HELD_OPEN_S)  # stderr holds a few lines only
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=TIMEOUT)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    assert proc.returncode == status, err.decode(errors="replace")
    assert b"Traceback" not in err
    assert err.splitlines()[-1] == said
    assert _lines(out / "transcript.jsonl", "c2s") == [{"id": 1, "method": "ping"}]
    assert _lines(out / "transcript.jsonl", "s2c") == [{"id": 1, "method": "ping"}]


class _HeldAnswer:
    """Answers the default way, but only after holding every server request a while: what the
    server sent meanwhile is kept, so a test sees that nothing of the turn played on before the
    client's answer."""

    def __init__(self) -> None:
        self.peer: StdioPeer | None = None
        self.while_held: list[JsonObject] = []
        self.asked: list[str] = []

    async def __call__(self, message: JsonObject) -> JsonObject:
        assert self.peer is not None
        self.asked.append(str(message.get("method")))
        seen = len(self.peer.received)
        await anyio.sleep(HOLD_S)  # the time a server that does not wait would play on in
        self.while_held.extend(self.peer.received[seen:])
        return await default_server_request_handler(message)


HOLD_S = 1.0

APPROVAL_FLOWS: dict[str, tuple[str, dict[str, str], str]] = {
    # what is asked -> (mock scenario, its params, the prompt); the thread is read-only and
    # untrusted, so both the command and the patch are asked about
    "command": ("shell", {"cmd": "touch approved.txt"}, "Create approved.txt with touch."),
    "patch": ("apply_patch", {}, "Create hello.txt with apply_patch."),
}


async def _approval_flow(
    argv: list[str], env: dict[str, str], cwd: Path, log: Path, prompt: str
) -> tuple[StdioPeer, _HeldAnswer]:
    held = _HeldAnswer()
    with anyio.fail_after(TIMEOUT):
        async with StdioPeer.spawn(argv, env=env, cwd=cwd, stderr_path=log, handler=held) as peer:
            held.peer = peer
            await peer.initialize()
            params = {
                "cwd": str(cwd),
                "approvalPolicy": "untrusted",
                "sandbox": "read-only",
                "model": "mock-model",
                "modelProvider": "mock",
            }
            started = await peer.request("thread/start", params)
            thread_id = started["thread"]["id"]
            done = peer.expect(lambda m: m.get("method") == "turn/completed")
            text = [{"type": "text", "text": prompt}]
            await peer.request("turn/start", {"threadId": thread_id, "input": text})
            await peer.wait(done, TIMEOUT)
    return peer, held


@pytest.mark.parametrize("flow", APPROVAL_FLOWS)
async def test_a_recorded_approval_is_asked_again_and_the_replay_waits_for_the_answer(
    flow: str, tmp_path: Path
) -> None:
    mock_name, mock_params, prompt = APPROVAL_FLOWS[flow]
    home, out, work, env = _layout(tmp_path)
    with MockResponses() as mock:
        mock.set_scenario(mock_name, **mock_params)
        write_codex_config(home, mock.base_url)
        real, real_held = await _approval_flow(
            _record(out), env, work, tmp_path / "real.log", prompt
        )
    assert "record: script:" not in (tmp_path / "real.log").read_text()  # each request derived
    argv = bridge_command("--script", str(out / "script.jsonl"))
    replayed, held = await _approval_flow(argv, env, work, tmp_path / "bridge.log", prompt)

    assert real_held.asked == held.asked
    assert held.asked == [
        f"item/{'commandExecution' if flow == 'command' else 'fileChange'}/requestApproval"
    ]
    # the replay waited for the answer, as the real server did: no item completed meanwhile
    for side in (real_held, held):
        assert "item/completed" not in [m.get("method") for m in side.while_held]
    paths = {str(work): "<cwd>", str(home): "<codex-home>"}
    recorded_units = _units(real.received, real.sent, paths, None)
    replayed_units = _units(replayed.received, replayed.sent, paths, None)
    assert compare(recorded_units, replayed_units).differences == []
    assert "serverRequest/resolved" in {u.get("method") for u in replayed_units}


_LISTENING = re.compile(rb"listening on:? (ws://\S+)\n")


async def _ws_flow(
    argv: list[str], env: dict[str, str], cwd: Path, spec: ScenarioSpec
) -> tuple[SocketPeer, int, bytes]:
    """``argv`` listening on ``ws://127.0.0.1:0``: one websocket client plays ``spec``; then
    SIGTERM. The client, the exit status and everything the process wrote on stderr."""
    process = await anyio.open_process(
        [*_without_stdio_listen(argv), "--listen", "ws://127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=str(cwd),
        env=env,
    )
    err = b""
    peer: SocketPeer | None = None
    status: int | None = None
    async with process, anyio.create_task_group() as tg:
        assert process.stderr is not None
        stderr = process.stderr
        with anyio.fail_after(TIMEOUT):
            while (found := _LISTENING.search(err)) is None:
                err += await stderr.receive()

        async def drain() -> None:  # the server's log must never fill the pipe
            nonlocal err
            async for chunk in stderr:
                err += chunk

        tg.start_soon(drain)
        ws = await ws_connect(found.group(1).decode(), max_size=None)
        peer = SocketPeer(process, ws, default_server_request_handler)
        peer.start_reading(tg)
        with anyio.fail_after(TIMEOUT):
            await peer.initialize()
            await spec.play(Context(peer, str(cwd)))
            await peer.close()
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(TIMEOUT):
            status = await process.wait()
    assert peer is not None
    assert status is not None
    return peer, status, err


async def test_record_stands_in_for_a_websocket_server_and_its_recording_replays_equal(
    tmp_path: Path,
) -> None:
    """``record -- codex app-server --listen ws://127.0.0.1:0``: record listens there itself,
    runs the server on a private socket and passes the client's frames through."""
    spec = next(s for s in SCENARIO_SPECS if s.name == "shell_approval")
    home, out, work, env = _layout(tmp_path)
    with MockResponses() as mock:
        mock.set_scenario(spec.mock, **dict(spec.mock_params))
        write_codex_config(home, mock.base_url)
        real, status, err = await _ws_flow(_record(out), env, work, spec)
    assert status == 143, err.decode()  # stopped by SIGTERM
    assert err.decode().splitlines()[-1] == "record: stopped (SIGTERM)"
    transcript = out / "transcript.jsonl"
    assert _lines(transcript, "c2s", 1) == real.sent
    assert _lines(transcript, "s2c", 1) == real.received

    replayed, status, err = await _ws_flow(
        bridge_command("--script", str(out / "script.jsonl")), env, work, spec
    )
    assert status == 0, err.decode()
    paths = {str(work): "<cwd>", str(home): "<codex-home>"}
    recorded_units = _units(real.received, real.sent, paths, None)
    replayed_units = _units(replayed.received, replayed.sent, paths, None)
    assert compare(recorded_units, replayed_units).differences == []
    assert any(u.get("request") == "item/commandExecution/requestApproval" for u in replayed_units)


def test_record_refuses_to_stand_in_for_a_server_that_asks_for_a_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """record's own listener has no authentication: it must not open one where the server
    would have asked clients for a token."""
    command = [
        "codex",
        "app-server",
        "--listen",
        "ws://127.0.0.1:0",
        "--ws-auth",
        "capability-token",
    ]
    assert main(["record", "--out", str(tmp_path / "r"), "--", *command]) == 2
    assert "--ws-auth" in capsys.readouterr().err


def test_the_readme_example_records_an_sdk_session_and_replays_it(tmp_path: Path) -> None:
    """examples/record_and_replay.py, as the README gives it: the official SDK's flow through
    record against the real binary (the mock model standing in for a paid one), then on the
    bridge serving the recording: the same final answer."""
    example = Path(__file__).resolve().parents[2] / "examples" / "record_and_replay.py"
    home, out, work, env = _layout(tmp_path)
    answer = "Hello from the recorded model."
    bridge = [sys.executable, "-m", "codex_app_bridge"]
    real = [str(real_codex_path()), "app-server"]

    def run_example(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(example), *bridge, *args],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )

    with MockResponses() as mock:
        mock.set_scenario("plain", text=answer)
        write_codex_config(home, mock.base_url)
        recorded = run_example("record", "--out", str(out), "--", *real)
    assert (recorded.returncode, recorded.stdout) == (0, answer + "\n"), recorded.stderr
    replayed = run_example("serve", "--script", str(out / "script.jsonl"))
    assert (replayed.returncode, replayed.stdout) == (0, answer + "\n"), replayed.stderr
