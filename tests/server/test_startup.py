"""Start-up of ``serve``: ``initialize`` is answered before the domain, or pydantic, is imported.

The default ``serve`` (stdio, built-in agent) loads the CLI, the transport, the rpc layer and the
handshake, which decodes ``initialize``'s params without the wire models when they have the
usual shape (``_handshake.InitializeParamsSpec``) and writes its answer with orjson; pydantic,
the generated models, the handlers, the listener, the mapping, the core models, the sources and
the storage are imported on the first request that needs them (with ``--codex-home``, the
storage index is imported beside ``initialize``: the first ``thread/list`` is read ahead,
``server._first_list``). A module-level import that pulls them in again is named by the first
test.

``serve --script FILE`` answers as soon: before the answer it reads the script's first line only
(checked without the models, ``_scriptfile``); the sources are loaded and the file indexed when a
turn first needs them, so the script's size costs nothing at start-up. ``serve --producer CMD``
checks CMD's program without the models (``_producer_command``) and makes the source after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from codex_app_bridge.conformance.real_codex import write_codex_config
from tests.conftest import DATA_DIR, bridge_command, bridge_env
from tests.e2e._harness import open_bridge

# Runs ``serve`` on a stdin holding one initialize and the end of input; at exit, reports the
# package modules loaded and the generated models created.
PROBE = """
import atexit, json, os, sys
read, write = os.pipe()
os.write(write, sys.argv[1].encode() + b"\\n")
os.close(write)
os.dup2(read, 0)

def report():
    generated = sys.modules.get("codex_app_bridge.protocol.v2._generated")
    print(json.dumps({
        "modules": sorted(
            m for m in sys.modules if m.startswith(("codex_app_bridge", "pydantic"))
        ),
        "models": 0 if generated is None else sum(
            1 for name in generated.__all__ if name in vars(generated)
        ),
    }), file=sys.stderr)

atexit.register(report)
from codex_app_bridge.cli import main
sys.exit(main(["serve", *sys.argv[2:]]))
"""

DOMAIN = (
    "pydantic",
    "codex_app_bridge.protocol._base",
    "codex_app_bridge.protocol.v2._generated",
    "codex_app_bridge.protocol.v2._adapters",
    "codex_app_bridge.rpc._serde",
    "codex_app_bridge.cli._common",
    "codex_app_bridge.listener",
    "codex_app_bridge.mapping",
    "codex_app_bridge.projection",
    "codex_app_bridge.protocol.core",
    "codex_app_bridge.sources",
    "codex_app_bridge.storage",
    "codex_app_bridge.server._handlers",
    "codex_app_bridge.server._registry",
    "codex_app_bridge.server._runtime",
    "codex_app_bridge.transport.listen",
    "codex_app_bridge.cli._demo",
    "codex_app_bridge.cluster",
)


LIST_PATH = (
    "codex_app_bridge.storage",
    "codex_app_bridge.listener._read_state",
    "codex_app_bridge.listener",
)
"""What ``serve --codex-home`` imports beside ``initialize`` of ``DOMAIN`` (``_first_list``)."""


def _serve(
    *lines: dict[str, object], args: Sequence[str] = ()
) -> tuple[list[dict[str, object]], dict[str, object]]:
    stdin = "\n".join(json.dumps(line) for line in lines)
    result = subprocess.run(
        [sys.executable, "-c", PROBE, stdin, *args],
        env=bridge_env({"LOG_LEVEL": "ERROR"}),
        capture_output=True,
        timeout=60,
        check=True,
    )
    answers = [orjson.loads(line) for line in result.stdout.splitlines()]
    return answers, json.loads(result.stderr.decode().strip().splitlines()[-1])


INITIALIZE = {
    "id": 1,
    "method": "initialize",
    "params": {"clientInfo": {"name": "c", "version": "1"}},
}


def _domain_loaded(report: dict[str, object]) -> list[str]:
    modules = report["modules"]
    assert isinstance(modules, list)
    return [
        m
        for m in modules
        if isinstance(m, str) and any(m == d or m.startswith(f"{d}.") for d in DOMAIN)
    ]


def _assert_answered_without_the_domain(
    answers: list[dict[str, object]], report: dict[str, object]
) -> None:
    """``initialize`` (id 1) answered, nothing of the domain loaded, not a model created."""
    assert answers[0]["id"] == 1
    assert "result" in answers[0]
    assert _domain_loaded(report) == []
    assert report["models"] == 0


def test_serve_answers_initialize_without_importing_the_domain() -> None:
    answers, report = _serve(INITIALIZE)
    _assert_answered_without_the_domain(answers, report)
    assert set(answers[0]["result"]) == {"userAgent", "codexHome", "platformFamily", "platformOs"}
    assert answers[1]["method"] == "remoteControl/status/changed"


def test_the_first_other_request_loads_the_rest_and_is_answered() -> None:
    answers, report = _serve(
        INITIALIZE, {"id": 2, "method": "thread/start", "params": {}}, {"id": 3, "method": "x/y"}
    )
    by_id = {answer.get("id"): answer for answer in answers}
    result = by_id[2]["result"]
    assert isinstance(result, dict)
    assert "thread" in result
    error = by_id[3]["error"]
    assert isinstance(error, dict)
    assert "unknown variant `x/y`" in str(error["message"])
    modules = report["modules"]
    assert isinstance(modules, list)
    assert "codex_app_bridge.server._handlers" in modules


def test_an_unknown_method_before_initialize_loads_nothing_more() -> None:
    answers, report = _serve({"id": 1, "method": "x/y"}, INITIALIZE)
    assert "unknown variant `x/y`" in str(answers[0]["error"])
    assert answers[1]["id"] == 1
    assert "result" in answers[1]
    assert _domain_loaded(report) == []


FIRST_LINE = b'{"id":"a","msg":{"type":"warning","message":"recorded"}}\n'


@pytest.mark.parametrize("pace", [None, "0.5", "recorded:2"])
def test_serve_with_a_script_answers_initialize_without_the_sources_or_core_models(
    tmp_path: Path, pace: str | None
) -> None:
    script = tmp_path / "script.jsonl"
    script.write_bytes(FIRST_LINE + b"{a bad line further on is found by the first turn\n")
    args = ["--script", str(script), *(["--pace", pace] if pace else [])]
    answers, report = _serve(INITIALIZE, args=args)
    _assert_answered_without_the_domain(answers, report)
    assert "codex_app_bridge._scriptfile" in str(report["modules"])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a named pipe")
def test_serve_with_a_script_reads_nothing_past_its_first_line_before_the_answer(
    tmp_path: Path,
) -> None:
    """The script is a pipe that gives its first line and then nothing, as if it went on
    forever: ``initialize`` is still answered (and the server exits at end of input)."""
    endless = tmp_path / "endless.jsonl"
    os.mkfifo(endless)
    # held open for reading and writing: the server's reads never see an end of file
    holder = os.open(endless, os.O_RDWR)
    try:
        os.write(holder, b"\n" + FIRST_LINE)
        answers, report = _serve(INITIALIZE, args=["--script", str(endless)])
    finally:
        os.close(holder)
    _assert_answered_without_the_domain(answers, report)


@pytest.mark.anyio
async def test_the_script_is_indexed_on_its_first_turn_not_at_start_up(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_bytes(FIRST_LINE)
    async with open_bridge("stdio", script=script) as bridge:
        client = await bridge.connect()
        await client.initialize()
        # what the server plays is what the file holds when the first turn needs it
        script.write_bytes((DATA_DIR / "scripts" / "two_turns.jsonl").read_bytes())
        thread_id = await client.start_thread()
        _, messages = await client.run_turn(thread_id, "go")
        turn = messages[-1]["params"]["turn"]
        assert turn["status"] == "completed"
        assert turn["items"][0]["text"].startswith('You said: "first recorded question".')


@pytest.mark.anyio
async def test_a_script_gone_after_start_up_fails_every_turn_with_a_clear_error(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.jsonl"
    script.write_bytes(FIRST_LINE)
    async with open_bridge("stdio", script=script) as bridge:
        client = await bridge.connect()
        await client.initialize()
        script.unlink()
        thread_id = await client.start_thread()
        for _ in range(2):
            _, messages = await client.run_turn(thread_id, "go")
            turn = messages[-1]["params"]["turn"]
            assert turn["status"] == "failed"
            assert f"{script}: cannot read the script" in turn["error"]["message"]
    assert f"{script}: cannot read the script" in bridge.stderr.decode()


def test_serve_with_a_producer_answers_initialize_without_the_sources_or_core_models() -> None:
    # The program is checked (found, executable) before the answer; the source that spawns it
    # per thread is made when a thread first needs it.
    answers, report = _serve(INITIALIZE, args=["--producer", f"{sys.executable} -c pass"])
    _assert_answered_without_the_domain(answers, report)
    assert "codex_app_bridge._producer_command" in str(report["modules"])


def test_serve_allowing_injection_answers_initialize_without_the_domain_then_injects() -> None:
    answers, report = _serve(
        {"id": 0, "method": "x/y"},
        INITIALIZE,
        {"id": 2, "method": "bridge/inject/claim", "params": {}},
        args=["--allow-inject"],
    )
    by_id = {answer.get("id"): answer for answer in answers}
    # unknown before the table is built: the inject methods are listed last, as the full table
    unknown = str(by_id[0]["error"])
    assert "unknown variant `x/y`" in unknown
    assert unknown.rstrip("`'\"}").endswith("bridge/inject/end")
    assert "result" in by_id[1]
    # the first inject request builds the table with the inject methods and reaches them
    assert by_id[2]["error"] == {
        "code": -32600,
        "message": "bridge/inject: params.threadId must be a string",
    }
    assert "codex_app_bridge.server._inject" in str(report["modules"])


def test_serve_allowing_injection_loads_nothing_more_for_initialize() -> None:
    answers, report = _serve(INITIALIZE, args=["--allow-inject"])
    _assert_answered_without_the_domain(answers, report)


def test_serve_with_codex_home_reports_that_home_in_initialize(tmp_path: Path) -> None:
    # issue 23.4: the answer named ~/.codex (CODEX_HOME unset) instead of --codex-home's DIR
    home = tmp_path / "home"
    home.mkdir()
    answers, report = _serve(INITIALIZE, args=["--codex-home", str(home)])
    assert answers[0]["id"] == 1
    # beside it, the first thread/list is read ahead (``server._first_list``): its storage index
    # and the listener's read states, never pydantic, the models or the rest of the domain
    assert _domain_loaded(report) == [m for m in _domain_loaded(report) if m.startswith(LIST_PATH)]
    assert "codex_app_bridge.storage._catalog" in _domain_loaded(report)
    assert report["models"] == 0
    result = answers[0]["result"]
    assert isinstance(result, dict)
    assert result["codexHome"] == str(home.absolute())


def test_the_default_control_socket_lives_under_codex_home(tmp_path: Path) -> None:
    from codex_app_bridge.cli._serve import default_unix_socket_path

    expected = tmp_path / "app-server-control" / "app-server-control.sock"
    assert default_unix_socket_path(str(tmp_path)) == str(expected)


# Runs ``serve`` as ``PROBE`` does, and notes what is imported and which threads were started
# when the answer to ``initialize`` (id 1; ``ANSWER_ID``: another) is written.
AT_ANSWER_PROBE = """
import atexit, gc, json, os, sys, threading
read, write = os.pipe()
os.write(write, sys.argv[1].encode() + b"\\n")
os.close(write)
os.dup2(read, 0)

started = []
thread_start = threading.Thread.start

def start(self):
    started.append(self.name)
    thread_start(self)

threading.Thread.start = start
at_answer = {}
os_write = os.write

answer = b'{"id":%s,"result"' % os.environ.get("ANSWER_ID", "1").encode()

os_pwritev = os.pwritev

collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info))
collected = {}

def note(data):
    lines = b"\\n" + bytes(data)
    if "initialize" not in collected and b'\\n{"id":1,"result"' in lines:
        collected["initialize"] = len(collections)
    if not at_answer and b"\\n" + answer in lines:
        at_answer["modules"] = sorted(sys.modules)
        at_answer["threads"] = list(started)
        collected["answer"] = len(collections)

def write_out(fd, data):
    note(data)
    return os_write(fd, data)

def pwritev_out(fd, buffers, *args):
    note(b"".join(buffers))
    return os_pwritev(fd, buffers, *args)

os.write = write_out
os.pwritev = pwritev_out
atexit.register(
    lambda: print(
        json.dumps(
            {**at_answer, "at_exit": started, "collected": collected, "collector": gc.isenabled()}
        ),
        file=sys.stderr,
    )
)
sys.argv = ["codex-app-bridge", "serve", *sys.argv[2:]]  # the process's own command
from codex_app_bridge.cli import main
sys.exit(main())
"""

BACKGROUND = ("thread/list read-ahead", "warm-model")
"""The threads of the start-up work begun once ``initialize`` is answered (``_first_list``, the
model source's warm-up)."""

HEAVY = (
    "asyncio",
    "anyio",
    "codex_app_bridge.rpc.connection",
    "codex_app_bridge.transport.stdio",
    "codex_app_bridge.server._server",
    "pydantic",
    "httpx",
    "sqlite3",
    "tomlkit",
    "codex_app_bridge.protocol.core",
    "codex_app_bridge.protocol.v2._generated",
    "codex_app_bridge.storage",
    "codex_app_bridge.agent",
    "codex_app_bridge.machine",
)


def test_initialize_is_answered_before_the_event_loop_and_the_start_up_work(
    tmp_path: Path,
) -> None:
    """On stdio the first ``initialize`` is answered before the event loop, the rpc connection
    and the server are imported (``_first_initialize``). With a stored-threads home whose config
    names a model provider, ``serve`` also has two pieces of start-up work (the first list's
    read-ahead, the model source's warm-up): both begin once ``initialize`` is answered, so
    nothing they import is loaded for the answer."""
    home = tmp_path / ".codex"
    write_codex_config(home, "http://127.0.0.1:9/v1")
    result = subprocess.run(
        [sys.executable, "-c", AT_ANSWER_PROBE, json.dumps(INITIALIZE), "--codex-home", str(home)],
        env=bridge_env({"LOG_LEVEL": "ERROR"}),
        capture_output=True,
        timeout=60,
        check=True,
    )
    answers = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert answers[0]["id"] == 1
    assert "result" in answers[0]
    report = json.loads(result.stderr.decode().strip().splitlines()[-1])
    loaded = [m for m in report["modules"] if any(m == h or m.startswith(f"{h}.") for h in HEAVY)]
    assert loaded == []
    assert [name for name in report["threads"] if name in BACKGROUND] == []
    # and begun after it, not dropped
    assert [name for name in report["at_exit"] if name in BACKGROUND] == list(BACKGROUND)


def _thread_start_behind_initialize(tmp_path: Path) -> dict[str, Any]:
    """``AT_ANSWER_PROBE`` on ``initialize``, ``initialized`` and ``thread/start`` at once, with
    a home whose config names a model provider: its report at the ``thread/start`` answer."""
    home = tmp_path / ".codex"
    write_codex_config(home, "http://127.0.0.1:9/v1")
    work = tmp_path / "work"
    work.mkdir()
    start = {"id": 2, "method": "thread/start", "params": {"cwd": str(work)}}
    stdin = "\n".join(json.dumps(line) for line in (INITIALIZE, {"method": "initialized"}, start))
    result = subprocess.run(
        [sys.executable, "-c", AT_ANSWER_PROBE, stdin, "--codex-home", str(home)],
        env=bridge_env({"LOG_LEVEL": "ERROR", "ANSWER_ID": "2"}),
        capture_output=True,
        timeout=60,
        check=False,
    )
    # what the process said is kept: it died once with SIGABRT in a loaded CI run, and a
    # CalledProcessError shows neither stream
    assert result.returncode == 0, (result.returncode, result.stderr.decode(errors="replace"))
    answers = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [answer.get("id") for answer in answers if "result" in answer] == [1, 2]
    report: dict[str, Any] = json.loads(result.stderr.decode().strip().splitlines()[-1])
    return report


def test_the_start_up_work_waits_for_the_requests_that_came_with_initialize(
    tmp_path: Path,
) -> None:
    """A ``thread/start`` that came right behind ``initialize`` is answered before the start-up
    work begins: its threads (the first list's read-ahead, the model source's warm-up) would
    share the interpreter with the request's own imports (the handlers, the listener, the core
    models), which then took longer (bench/startup.py: spawn -> ``thread/start`` 430 -> 365 ms
    at load ~1). They begin once no request is being handled."""
    report = _thread_start_behind_initialize(tmp_path)
    assert "codex_app_bridge.server._handlers_threads" in report["modules"]
    assert [name for name in report["threads"] if name in BACKGROUND] == []


def test_no_collection_runs_between_initialize_and_the_request_behind_it(
    tmp_path: Path,
) -> None:
    """The cyclic collector is held from the first line read until the server has answered a
    request or idles (``_gc.hold_collector``): what a ``thread/start`` right behind
    ``initialize`` makes (modules, models) lives as long as the process, and about 5
    collections among it took 10-15 ms of that request's ~270 ms of CPU. The collector runs
    again after (what exists then frozen)."""
    report = _thread_start_behind_initialize(tmp_path)
    collected = report["collected"]
    assert collected["answer"] == collected["initialize"]
    assert report["collector"] is True


@pytest.mark.parametrize(
    "capabilities",
    [None, {"experimentalApi": True, "optOutNotificationMethods": ["thread/started"]}],
)
def test_the_first_initialize_is_answered_as_the_server_answers_it(
    tmp_path: Path, capabilities: dict[str, object] | None
) -> None:
    """``serve`` answers a first ``initialize`` line itself (``_first_initialize``); after a
    blank first line, which it leaves to the server, the server answers the same line: both
    answers, and what follows them, are the same."""
    params: dict[str, object] = {"clientInfo": {"name": "c", "version": "1"}}
    if capabilities is not None:
        params["capabilities"] = capabilities
    initialize = json.dumps({"id": 1, "method": "initialize", "params": params})
    start = json.dumps({"id": 2, "method": "thread/start", "params": {}})
    outputs: list[list[dict[str, object]]] = []
    for first in ("", "\n"):
        result = subprocess.run(
            [
                *bridge_command(),
                "serve",
                "--seed",
                "7",
                "--codex-home",
                str(tmp_path / first.strip()),
            ],
            input=f"{first}{initialize}\n{start}\n".encode(),
            env=bridge_env({"LOG_LEVEL": "ERROR"}),
            capture_output=True,
            timeout=60,
            check=True,
        )
        outputs.append([orjson.loads(line) for line in result.stdout.splitlines()])
    early, late = outputs
    assert early[0] == late[0]
    assert early[0]["id"] == 1
    assert [m.get("method", m.get("id")) for m in early] == [
        m.get("method", m.get("id")) for m in late
    ]
