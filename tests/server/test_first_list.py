"""The first ``thread/list`` s of a ``serve`` on stdio, answered before the server starts.

Once ``serve`` has answered the first ``initialize`` itself (``_first_initialize``), the
``thread/list`` requests that follow are answered by the list handler over the stored threads
alone, before the event loop and the server are imported (``server._first_list``); any other
line goes to the server with every byte read. What is checked: those answers are the server's
(the same input, its first line blank so that the server answers everything, gives the same
output), on a home the process never indexed and on one it did; every other kind of line after
``initialize`` reaches the server as it is; and nothing of the event loop, the server or the
models is loaded when a first list is answered.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from codex_app_bridge.server import _apart, _first_list
from codex_app_bridge.server._first_initialize import answer_first_initialize
from codex_app_bridge.server._first_list import ListReadAhead, answer_first_lists
from tests.conftest import bridge_command, bridge_env
from tests.e2e._harness import open_bridge

TIMEOUT = 60
ANSWERED_HERE = "answered before the server started"
"""What ``_first_list`` logs (debug) for each list it answers."""

INITIALIZE = {
    "id": 1,
    "method": "initialize",
    "params": {"clientInfo": {"name": "c", "version": "1"}},
}
INITIALIZED = {"method": "initialized"}


def _stored_home(home: Path, texts: tuple[str, ...] = ("older", "newer", "newest")) -> list[str]:
    """Threads stored under ``home`` by the bridge itself, one turn each; their ids, newest
    first."""
    return anyio.run(_store, home, texts)


async def _store(home: Path, texts: tuple[str, ...]) -> list[str]:
    async with open_bridge("memory", codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        ids: list[str] = []
        for text in texts:
            thread_id = await client.start_thread()
            await client.run_turn(thread_id, text)
            ids.append(thread_id)
    return ids[::-1]


def _serve(home: Path, lines: list[bytes]) -> tuple[list[dict[str, Any]], str]:
    """``serve --codex-home HOME`` on stdin holding ``lines`` then the end of input: what it
    wrote (the home's path replaced by ``HOME``, ``emittedAtMs`` dropped) and its log."""
    result = subprocess.run(
        [*bridge_command(), "serve", "--seed", "7", "--codex-home", str(home)],
        input=b"".join(line + b"\n" for line in lines),
        env=bridge_env({"LOG_LEVEL": "DEBUG"}),
        capture_output=True,
        timeout=TIMEOUT,
        check=True,
    )
    out = result.stdout.replace(str(home.absolute()).encode(), b"HOME")
    messages = [orjson.loads(line) for line in out.splitlines()]
    for message in messages:
        message.pop("emittedAtMs", None)
    return messages, result.stderr.decode()


def _in_order(
    messages: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The answers by id and the notifications in order (the server may answer concurrent
    lists in another order than they came)."""
    answers = sorted((m for m in messages if "id" in m), key=lambda m: json.dumps(m["id"]))
    return answers, [m for m in messages if "id" not in m]


def _lines(*messages: object) -> list[bytes]:
    return [m if isinstance(m, bytes) else orjson.dumps(m) for m in messages]


def _same_as_the_server(
    tmp_path: Path, source: Path, lines: list[bytes], runs: int = 1
) -> list[tuple[list[dict[str, Any]], str]]:
    """Serve ``lines`` on two copies of ``source``: as they are, and after a blank first line
    (which ``serve`` leaves to the server, and with it everything after); the outputs are the
    same, run after run on the same copies. What the first copy's runs wrote and logged."""
    early, late = tmp_path / "early" / ".codex", tmp_path / "late" / ".codex"
    for copy in (early, late):
        shutil.copytree(source, copy)
    runs_of_early: list[tuple[list[dict[str, Any]], str]] = []
    for _ in range(runs):
        answered, log = _serve(early, lines)
        by_server, _ = _serve(late, [b"", *lines])
        assert _in_order(answered) == _in_order(by_server)
        assert answered[0]["id"] == 1
        runs_of_early.append((answered, log))
    return runs_of_early


def test_the_first_lists_are_answered_as_the_server_answers_them(tmp_path: Path) -> None:
    """First start (no index yet) then next start (the index the first one made)."""
    source = tmp_path / "source"
    ids = _stored_home(source)
    lines = _lines(
        INITIALIZE,
        INITIALIZED,
        {"id": 2, "method": "thread/list", "params": {}},
        {"id": 3, "method": "thread/list", "params": {"limit": 1, "sortKey": "updated_at"}},
        {"id": "a", "method": "thread/list", "params": {"searchTerm": "NEWER", "cwd": None}},
        {"id": 4, "method": "thread/list", "params": {"archived": True}},
        {"id": 5, "method": "thread/list", "params": {"sortDirection": "asc", "limit": 2}},
        {"id": 6, "method": "thread/read", "params": {"threadId": ids[1]}},
        {"id": 7, "method": "thread/list", "params": {}},
    )
    runs = _same_as_the_server(tmp_path, source, lines, runs=2)
    for answered, log in runs:
        by_id = {m["id"]: m for m in answered if "id" in m}
        assert [t["id"] for t in by_id[2]["result"]["data"]] == ids
        assert [t["id"] for t in by_id[3]["result"]["data"]] == ids[:1]
        assert [t["id"] for t in by_id["a"]["result"]["data"]] == ids[1:2]
        assert by_id[4]["result"]["data"] == []
        assert [t["id"] for t in by_id[5]["result"]["data"]] == ids[::-1][:2]
        assert by_id[6]["result"]["thread"]["id"] == ids[1]
        assert [t["id"] for t in by_id[7]["result"]["data"]] == ids
        # the five lists before the thread/read were answered before the server
        assert log.count(ANSWERED_HERE) == 5


@pytest.mark.parametrize(
    "line",
    [
        pytest.param({"id": 2, "method": "thread/list"}, id="no params"),
        pytest.param({"id": 2, "method": "thread/list", "params": []}, id="positional params"),
        pytest.param({"id": 2, "method": "thread/list", "params": {"limit": "x"}}, id="bad limit"),
        pytest.param(
            {"id": 2, "method": "thread/list", "params": {"cursor": "nowhere"}}, id="bad cursor"
        ),
        pytest.param(
            {"id": 2, "method": "thread/list", "params": {"modelProviders": ["mock"]}},
            id="needs the source",
        ),
        pytest.param(
            {"id": 2, "method": "thread/list", "params": {"projectId": "p"}}, id="experimental"
        ),
        pytest.param({"id": 2, "method": "thread/loaded/list", "params": {}}, id="other method"),
        pytest.param({"id": 1, "method": "initialize", "params": INITIALIZE["params"]}, id="again"),
        pytest.param({"id": 2, "result": {}}, id="a response"),
        pytest.param(b"", id="blank line"),
        pytest.param(b'{"id": 2, "method": "thread/list", "params": {', id="bad JSON"),
    ],
)
def test_any_other_line_after_initialize_goes_to_the_server(tmp_path: Path, line: object) -> None:
    source = tmp_path / "source"
    _stored_home(source, ("only",))
    lines = _lines(INITIALIZE, INITIALIZED, line, {"id": 9, "method": "thread/list", "params": {}})
    ((_, log),) = _same_as_the_server(tmp_path, source, lines)
    assert ANSWERED_HERE not in log


# Runs ``serve`` on a stdin holding the lines given and the end of input; notes what is
# imported when the answer to request 2 is written.
AT_ANSWER_PROBE = """
import atexit, json, os, sys
read, write = os.pipe()
os.write(write, sys.argv[1].encode())
os.close(write)
os.dup2(read, 0)

at_answer = {}
os_write = os.write

def write_out(fd, data):
    if not at_answer and bytes(data).startswith(b'{"id":2,"result"'):
        at_answer["modules"] = sorted(sys.modules)
    return os_write(fd, data)

os.write = write_out
atexit.register(lambda: print(json.dumps(at_answer), file=sys.stderr))
from codex_app_bridge.cli import main
sys.exit(main(["serve", *sys.argv[2:]]))
"""

HEAVY = (
    "asyncio",
    "anyio",
    "socket",  # the welcome's serverName is uname's
    "hashlib",  # read states' revisions (OpenSSL's set-up)
    "importlib.resources.readers",  # the config's defaults, read for the welcome's warnings
    "importlib.abc",  # (it loads importlib.resources' readers) _apart's finder is its own
    "calendar",  # (and locale) a day directory's seconds are counted without it
    "pydantic",
    "codex_app_bridge.rpc.connection",
    "codex_app_bridge.rpc._context",  # (and the outbox) a first answer is encoded by rpc._encode
    "codex_app_bridge.rpc.outbox",
    "codex_app_bridge.server._shared",  # a cluster's threads: a first list has none
    "codex_app_bridge.transport.stdio",
    "codex_app_bridge.server._server",
    "codex_app_bridge.server._handlers",
    "codex_app_bridge.server._registry",
    "codex_app_bridge.server._runtime",
    "codex_app_bridge.listener._hub",
    "codex_app_bridge.protocol.core",
    "codex_app_bridge.protocol.v2._generated",
    "codex_app_bridge.sources",
    "codex_app_bridge.mapping",
)


def test_a_first_list_is_answered_before_the_event_loop_and_the_server(
    tmp_path: Path,
) -> None:
    home = tmp_path / ".codex"
    ids = _stored_home(home)
    stdin = b"".join(
        line + b"\n"
        for line in _lines(
            INITIALIZE, INITIALIZED, {"id": 2, "method": "thread/list", "params": {}}
        )
    )
    result = subprocess.run(
        [sys.executable, "-c", AT_ANSWER_PROBE, stdin.decode(), "--codex-home", str(home)],
        env=bridge_env({"LOG_LEVEL": "ERROR"}),
        capture_output=True,
        timeout=TIMEOUT,
        check=True,
    )
    answers = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [m.get("id", m.get("method")) for m in answers] == [
        1,
        "remoteControl/status/changed",
        2,
    ]
    assert [thread["id"] for thread in answers[2]["result"]["data"]] == ids
    report = json.loads(result.stderr.decode().strip().splitlines()[-1])
    loaded = [m for m in report["modules"] if any(m == h or m.startswith(f"{h}.") for h in HEAVY)]
    assert loaded == []
    assert "codex_app_bridge.storage._catalog" in report["modules"]


def test_nothing_after_initialize_leaves_the_connection_to_the_server(tmp_path: Path) -> None:
    """A client that writes nothing more (its input still open): the server gets the
    connection, nothing answered before it."""
    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    try:
        os.write(write_in, orjson.dumps(INITIALIZE) + b"\n" + orjson.dumps(INITIALIZED) + b"\n")
        first, rest = answer_first_initialize(
            str(tmp_path), None, list, in_fd=read_in, out_fd=write_out
        )
        assert first is not None
        handed, data = answer_first_lists(
            first, rest, ListReadAhead(tmp_path), (), limit=None, in_fd=read_in, out_fd=write_out
        )
        assert (handed.answered, data) == (0, b"")
        os.close(write_out)
        write_out = -1
        written = os.read(read_out, 1 << 16).splitlines()
        assert [orjson.loads(line).get("id") for line in written] == [1, None]
    finally:
        for fd in (read_in, write_in, read_out, write_out):
            if fd >= 0:
                os.close(fd)


def test_a_list_answered_first_makes_the_catalog_itself_and_no_read_ahead_follows(
    tmp_path: Path,
) -> None:
    """``ListReadAhead.take`` (a list answered before the server): the catalog is made in the
    calling thread, and the read-ahead, which would read the same page again, never begins;
    the server then lists through that catalog."""
    ahead = ListReadAhead(tmp_path)
    catalog = ahead.take()
    assert catalog is not None
    try:
        assert ahead.started
        ahead.start()
        assert ahead.catalog() is catalog
        assert ahead.take() is catalog
        assert ahead._thread.ident is None  # pyright: ignore[reportPrivateUsage]
    finally:
        catalog.close()


RELEASE = threading.Event()
"""Ends the import ``test_the_server_import_waits_while_a_list_is_answered`` holds."""


def test_the_server_import_waits_while_a_list_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's modules, imported once a first list is answered, wait while the next lists
    are answered (``_apart.Handling``: each begun when its line is taken, ended once answered),
    instead of sharing the interpreter with them."""
    home = tmp_path / ".codex"
    ids = _stored_home(home)
    (tmp_path / "first_list_probe_server.py").write_text(
        "from tests.server.test_first_list import RELEASE\nRELEASE.wait(60)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    events: list[str] = []

    class Recorded(_apart.Handling):
        def begin(self) -> None:
            events.append("begin")
            super().begin()

        def end(self) -> None:
            if events and events[-1] != "end":
                events.append("end")
            super().end()

    answer = _first_list._FirstLists.answer  # pyright: ignore[reportPrivateUsage]

    def recorded_answer(lists: Any, request: Any) -> bytes | None:
        events.append("answer")
        if events.count("answer") == 2:
            RELEASE.set()
        return answer(lists, request)

    monkeypatch.setattr(_apart, "Handling", Recorded)
    monkeypatch.setattr(_first_list._FirstLists, "answer", recorded_answer)  # pyright: ignore[reportPrivateUsage]
    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    lines = _lines(INITIALIZE, *({"id": n, "method": "thread/list", "params": {}} for n in (2, 3)))
    try:
        os.write(write_in, b"".join(line + b"\n" for line in lines))
        os.close(write_in)
        write_in = -1
        first, rest = answer_first_initialize(
            str(home), None, list, in_fd=read_in, out_fd=write_out
        )
        assert first is not None
        handed, data = answer_first_lists(
            first,
            rest,
            ListReadAhead(home),
            ("first_list_probe_server",),
            limit=None,
            in_fd=read_in,
            out_fd=write_out,
        )
        assert (handed.answered, data) == (2, b"")
        os.close(write_out)
        write_out = -1
        written = [orjson.loads(line) for line in os.read(read_out, 1 << 20).splitlines()]
        assert [t["id"] for t in written[-1]["result"]["data"]] == ids
    finally:
        RELEASE.set()
        for fd in (read_in, write_in, read_out, write_out):
            if fd >= 0:
                os.close(fd)
    assert sys.modules.pop("first_list_probe_server", None) is not None
    assert events[:6] == ["begin", "answer", "end", "begin", "answer", "end"]
