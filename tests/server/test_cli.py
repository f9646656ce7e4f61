"""``codex-app-bridge serve`` / ``app-server`` and ``demo`` as processes and commands: the flags
clients pass, refused listen URLs, auth flags and scripts, signals, end of input, stderr-only logging."""

from __future__ import annotations

import io
import json
import signal
import subprocess
from pathlib import Path

import anyio
import orjson
import pytest

from codex_app_bridge.cli import main
from tests.conftest import DATA_DIR, bridge_command, bridge_env
from tests.transport._serving import serve_process

TIMEOUT = 60
INIT = b'{"id":1,"method":"initialize","params":{"clientInfo":{"name":"cli","version":"1"}}}\n'
LIST = b'{"id":2,"method":"thread/loaded/list","params":{}}\n'
FIRST_LINE = "reading the first line of stdin"
"""What ``serve`` logs (at DEBUG) before it blocks on stdin's first line."""


def run(args: list[str], stdin: bytes = b"", **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*bridge_command(), *args],
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT,
        env=bridge_env(env),
        check=False,
    )


def replies(stdout: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_it_runs_as_a_codex_binary_with_every_flag_clients_pass() -> None:
    proc = run(
        [
            "-c",
            "model=x",
            "app-server",
            "--enable",
            "guardian_approval",
            "-c",
            'web_search="live"',
            "--disable",
            "f",
            "--profile",
            "p",
            "--listen",
            "stdio://",
        ],
        INIT + LIST,
    )
    assert proc.returncode == 0, proc.stderr
    answers = replies(proc.stdout)
    assert [m.get("id") or m.get("method") for m in answers] == [
        1,
        "configWarning",  # `--disable f` is `-c features.f=false`: no such feature
        "remoteControl/status/changed",
        2,
    ]
    warning = answers[1]["params"]
    assert isinstance(warning, dict)
    assert warning["summary"] == (
        "Codex is ignoring 1 unrecognized configuration setting. Check for typos or deprecated "
        "settings.\n  session-flags: `features.f` is ignored."
    )
    assert answers[3] == {"id": 2, "result": {"data": [], "nextCursor": None}}


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "foo://x",
            "unsupported --listen URL `foo://x`; expected `stdio://`, `unix://`, `unix://PATH`, "
            "`ws://IP:PORT`, or `off`",
        ),
        ("stdio", "unsupported --listen URL `stdio`"),
        ("ws://bad", "invalid websocket --listen URL `ws://bad`; expected `ws://IP:PORT`"),
        ("ws://localhost:4500", "invalid websocket --listen URL `ws://localhost:4500`"),
        ("ws://127.0.0.1", "invalid websocket --listen URL `ws://127.0.0.1`"),
        ("ws://[127.0.0.1]:1", "invalid websocket --listen URL `ws://[127.0.0.1]:1`"),
    ],
)
def test_bad_listen_urls_are_refused_with_the_real_message(url: str, message: str) -> None:
    proc = run(["serve", "--listen", url])
    assert proc.returncode == 2
    assert message in proc.stderr.decode()
    assert proc.stdout == b""


def test_listen_off_has_no_transport_and_exits_1() -> None:
    proc = run(["serve", "--listen", "off"])
    assert proc.returncode == 1
    assert "no transport configured; use --listen or enable remote control" in (
        proc.stderr.decode()
    )


def test_bad_scripts_and_paces_stop_before_serving(tmp_path: object) -> None:
    missing = run(["serve", "--script", "/nonexistent/script.jsonl"], INIT)
    assert missing.returncode == 2
    assert "cannot read the script" in missing.stderr.decode()
    pace = run(["serve", "--pace", "recorded"], INIT)
    assert pace.returncode == 2
    assert "'recorded' needs --script" in pace.stderr.decode()
    bad_pace = run(
        ["serve", "--script", str(DATA_DIR / "scripts" / "two_turns.jsonl"), "--pace", "fast"], INIT
    )
    assert bad_pace.returncode == 2
    assert "invalid pace 'fast'" in bad_pace.stderr.decode()
    assert missing.stdout == pace.stdout == bad_pace.stdout == b""


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the script holds no events"),
        (b"\n  \n", "the script holds no events"),
        (b"\n{oops\n", "line 2: not JSON"),
        (b"[1]\n", "line 1: expected an object {id, msg}"),
        (b'{"id":1,"msg":{}}\n', "line 1: expected an event envelope {id: string, msg: object}"),
    ],
)
def test_a_script_whose_first_line_is_bad_stops_before_serving(
    tmp_path: object, data: bytes, message: str
) -> None:
    from pathlib import Path

    script = Path(str(tmp_path)) / "bad.jsonl"
    script.write_bytes(data)
    proc = run(["serve", "--script", str(script)], INIT)
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith(f"codex-app-bridge serve: {script}: {message}")
    assert proc.stdout == b""


def test_a_bad_script_line_fails_the_turn_and_is_named(tmp_path: anyio.Path | object) -> None:
    """The script is indexed after start-up (initialize never waits for it); a bad line fails
    every turn with a message naming the file and line, and is logged on stderr."""
    import threading
    from pathlib import Path

    script = Path(str(tmp_path)) / "bad.jsonl"
    script.write_bytes(b'{"id":"a","msg":{"type":"warning","message":"ok"}}\n{oops\n')
    requests = [
        INIT,
        b'{"method":"initialized"}\n',
        b'{"id":2,"method":"thread/start","params":{}}\n',
    ]
    with subprocess.Popen(
        [*bridge_command(), "serve", "--script", str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=bridge_env({}),
    ) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        watchdog = threading.Timer(TIMEOUT, proc.kill)
        watchdog.start()
        try:
            proc.stdin.write(b"".join(requests))
            proc.stdin.flush()
            thread_id = None
            completed: dict[str, object] | None = None
            for line in proc.stdout:
                message = json.loads(line)
                if message.get("id") == 2:
                    thread_id = message["result"]["thread"]["id"]
                    start = {"id": 3, "method": "turn/start", "params": {"threadId": thread_id}}
                    start["params"]["input"] = [{"type": "text", "text": "go"}]  # type: ignore[index]
                    proc.stdin.write(json.dumps(start).encode() + b"\n")
                    proc.stdin.flush()
                if message.get("method") == "turn/completed":
                    completed = message["params"]["turn"]
                    break
            proc.stdin.close()
            stderr = proc.stderr.read().decode() if proc.stderr else ""
            proc.wait(TIMEOUT)
        finally:
            watchdog.cancel()
    assert completed is not None
    assert completed["status"] == "failed"
    error = completed["error"]
    assert isinstance(error, dict)
    assert f"{script}: line 2: not JSON" in str(error["message"])  # pyright: ignore[reportUnknownArgumentType]
    assert f"{script}: line 2: not JSON" in stderr
    assert proc.returncode == 0


def test_logs_go_to_stderr_as_json_lines_and_stdout_carries_only_protocol() -> None:
    proc = run(["serve"], INIT + LIST, LOG_FORMAT="json", LOG_LEVEL="INFO")
    assert proc.returncode == 0
    for message in replies(proc.stdout):
        assert "id" in message or "method" in message
    logs = [json.loads(line) for line in proc.stderr.splitlines()]
    assert logs
    assert all({"ts", "level", "logger", "message"} <= set(entry) for entry in logs)


@pytest.mark.anyio
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_sigterm_and_sigint_stop_the_server_cleanly(signum: signal.Signals) -> None:
    # serve_process sends the signal when the block ends and holds the exit status to 0
    server = serve_process([], ready=FIRST_LINE, stop=signum, log_level="DEBUG", stdio=True)
    async with server as (process, _):
        assert process.stdin is not None
        assert process.stdout is not None
        with anyio.fail_after(TIMEOUT):
            await process.stdin.send(INIT)
            received = b""
            while b"\n" not in received:
                received += await process.stdout.receive()
            assert orjson.loads(received.split(b"\n")[0])["id"] == 1


@pytest.mark.anyio
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_while_serve_waits_for_its_first_line_stops_it_cleanly(
    signum: signal.Signals,
) -> None:
    # ``serve`` reads stdin's first line (held open, never written) before it starts the event
    # loop (``_first_initialize``): the signal comes once it says so
    async with serve_process([], ready=FIRST_LINE, stop=signum, log_level="DEBUG", stdio=True):
        pass


@pytest.mark.anyio
async def test_end_of_input_during_a_turn_exits_0_without_finishing_the_turn() -> None:
    process = await anyio.open_process(
        [*bridge_command(), "serve", "--pace", "0.05"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=bridge_env(),
    )
    async with process:
        assert process.stdin is not None
        assert process.stdout is not None
        with anyio.fail_after(TIMEOUT):
            await process.stdin.send(INIT + b'{"id":2,"method":"thread/start","params":{}}\n')
            output = b""
            while b'"id":2' not in output:
                output += await process.stdout.receive()
            thread_id = orjson.loads(
                next(line for line in output.split(b"\n") if b'"id":2' in line)
            )["result"]["thread"]["id"]
            turn = {
                "id": 3,
                "method": "turn/start",
                "params": {
                    "threadId": thread_id,
                    "input": [{"type": "text", "text": "long " * 200}],
                },
            }
            await process.stdin.send(orjson.dumps(turn) + b"\n")
            while b"item/agentMessage/delta" not in output:
                output += await process.stdout.receive()
            await process.stdin.aclose()
            async for chunk in process.stdout:
                output += chunk
            assert await process.wait() == 0
    assert b"turn/completed" not in output


def test_demo_prints_the_exchange_readably(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--pace", "0", "Hi demo"]) == 0
    out = capsys.readouterr().out
    assert ">>> initialize" in out
    assert ">>> turn/start" in out
    assert '    assistant: You said: "Hi demo".' in out
    assert "    reasoning: **Reading the request**" in out
    assert "  . turn/completed" in out
    assert ">>> thread/read" in out


def test_demo_json_is_a_transcript_of_both_directions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--json", "--pace", "0"]) == 0
    records = [json.loads(line) for line in io.StringIO(capsys.readouterr().out) if line.strip()]
    assert {record["dir"] for record in records} == {"c2s", "s2c"}
    sent = [r["msg"]["method"] for r in records if r["dir"] == "c2s"]
    assert sent == [
        "initialize",
        "initialized",
        "thread/start",
        "turn/start",
        "turn/start",
        "thread/read",
    ]
    completed = [r for r in records if r["msg"].get("method") == "turn/completed"]
    assert len(completed) == 2


START = b'{"id":2,"method":"thread/start","params":{}}\n'


def test_without_a_codex_home_serve_says_threads_live_in_memory() -> None:
    proc = run(["serve"], INIT + START)
    assert proc.returncode == 0, proc.stderr
    assert b"threads live in memory only" in proc.stderr
    started = replies(proc.stdout)[2]
    assert started["result"]["thread"]["path"] is None  # type: ignore[index]


@pytest.mark.parametrize("how", ["flag", "env"])
def test_codex_home_from_the_flag_or_the_environment_stores_threads(
    how: str, tmp_path: anyio.Path | object
) -> None:
    home = str(tmp_path)
    args, env = (
        (["serve", "--codex-home", home], {})
        if how == "flag"
        else (["serve"], {"CODEX_HOME": home})
    )
    proc = run(args, INIT + START, **env)
    assert proc.returncode == 0, proc.stderr
    assert b"threads live in memory only" not in proc.stderr
    path = replies(proc.stdout)[2]["result"]["thread"]["path"]  # type: ignore[index]
    assert isinstance(path, str)
    assert path.startswith(f"{home}/sessions/")


@pytest.mark.parametrize(
    ("args", "config", "message"),
    [
        (
            ["-c", "model=5"],
            None,
            "Error: invalid type: integer `5`, expected a string\nin `model`",
        ),
        (
            ["-c", "novalue"],
            None,
            "Error: error parsing -c overrides: Invalid override (missing '='): novalue",
        ),
        (
            [],
            'approval_policy = "untrusted"\n',
            'Error: approval_policy = "untrusted" is no longer supported; remove this setting',
        ),
        (
            ["--strict-config"],
            "stray = 1\n",
            "Error: <home>/config.toml:1:1: unknown configuration field `stray`",
        ),
    ],
)
def test_serve_exits_1_before_reading_stdin_where_codex_refuses_its_config(
    tmp_path: Path, args: list[str], config: str | None, message: str
) -> None:
    if config is not None:
        (tmp_path / "config.toml").write_text(config, encoding="utf-8")
    proc = run(["serve", "--codex-home", str(tmp_path), *args], INIT + LIST)
    assert proc.returncode == 1
    assert proc.stdout == b""
    assert proc.stderr.decode().replace(str(tmp_path), "<home>").strip() == message


def test_serve_with_a_broken_config_starts_and_warns_after_initialize(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("model = \n", encoding="utf-8")
    proc = run(["serve", "--codex-home", str(tmp_path)], INIT + LIST)
    assert proc.returncode == 0, proc.stderr
    answers = replies(proc.stdout)
    assert answers[1] == {
        "method": "configWarning",
        "params": {
            "summary": "Invalid configuration; using defaults.",
            "details": f"{tmp_path}/config.toml:1:9: string values must be quoted, expected "
            "literal string",
            "path": f"{tmp_path}/config.toml",
            "range": {"start": {"line": 1, "column": 9}, "end": {"line": 1, "column": 9}},
        },
        "emittedAtMs": answers[1]["emittedAtMs"],
    }
