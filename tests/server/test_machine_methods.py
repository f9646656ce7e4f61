"""The methods that act on the machine — command/exec (+ write, terminate, resize), fs/*,
fuzzyFileSearch — shaped and erroring as 0.163.0 (``spec/machine-tools.md`` §7), every answer
and notification checked against the 0.163.0 JSON Schemas."""

from __future__ import annotations

import base64
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from codex_app_bridge.sources import DefaultAgent
from tests.e2e._harness import Session, open_bridge
from tests.e2e._schemas import check_server_message

pytestmark = pytest.mark.anyio

FULL = {"type": "dangerFullAccess"}


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


@asynccontextmanager
async def _client(cwd: Path) -> AsyncIterator[Session]:
    async with open_bridge("memory", source=DefaultAgent()) as bridge:
        assert bridge.server is not None
        bridge.server.default_cwd = str(cwd)
        client = await bridge.connect()
        await client.initialize(experimentalApi=True)
        yield client


async def _ok(client: Session, method: str, params: dict[str, Any]) -> Any:
    reply = await client.call(method, params)
    assert "result" in reply, reply
    assert check_server_message(reply, method) == []
    return reply["result"]


async def _err(client: Session, method: str, params: dict[str, Any]) -> tuple[int, str]:
    reply = await client.call(method, params)
    assert "error" in reply, reply
    return reply["error"]["code"], reply["error"]["message"]


async def test_command_exec_runs_argv_and_answers_at_exit(tmp_path: Path) -> None:
    async with _client(tmp_path) as client:
        result = await _ok(
            client,
            "command/exec",
            {"command": ["sh", "-c", "echo out; echo err >&2; pwd; exit 3"], "sandboxPolicy": FULL},
        )
        assert result == {"exitCode": 3, "stdout": f"out\n{tmp_path}\n", "stderr": "err\n"}
        sub = tmp_path / "sub"
        sub.mkdir()
        env = await _ok(
            client,
            "command/exec",
            {
                "command": ["sh", "-c", 'pwd; echo "$FOO-${HOME:-unset}"'],
                "cwd": "sub",
                "env": {"FOO": "bar", "HOME": None},
                "sandboxPolicy": FULL,
            },
        )
        assert env["stdout"] == f"{sub}\nbar-unset\n"
        capped = await _ok(
            client,
            "command/exec",
            {
                "command": ["sh", "-c", "echo 0123456789abcdef"],
                "outputBytesCap": 10,
                "sandboxPolicy": FULL,
            },
        )
        assert capped["stdout"] == "0123456789"
        timed = await _ok(
            client,
            "command/exec",
            {
                "command": ["sh", "-c", "echo started; exec sleep 600"],
                "timeoutMs": 300,
                "sandboxPolicy": FULL,
            },
        )
        assert timed["exitCode"] == 124


@pytest.mark.parametrize(
    ("params", "code", "message"),
    [
        ({"command": []}, -32600, "command must not be empty"),
        (
            {"command": ["/no/such/binary"]},
            -32603,
            "failed to spawn command: No such file or directory (os error 2)",
        ),
        (
            {"command": ["true"], "outputBytesCap": 1, "disableOutputCap": True},
            -32602,
            "command/exec cannot set both outputBytesCap and disableOutputCap",
        ),
        (
            {"command": ["true"], "timeoutMs": 1, "disableTimeout": True},
            -32602,
            "command/exec cannot set both timeoutMs and disableTimeout",
        ),
        (
            {"command": ["true"], "tty": True},
            -32600,
            "command/exec tty or streaming requires a client-supplied processId",
        ),
        (
            {"command": ["true"], "size": {"rows": 1, "cols": 1}},
            -32602,
            "command/exec size requires tty: true",
        ),
    ],
)
async def test_command_exec_errors_are_the_real_servers(
    tmp_path: Path, params: dict[str, Any], code: int, message: str
) -> None:
    async with _client(tmp_path) as client:
        assert await _err(client, "command/exec", {**params, "sandboxPolicy": FULL}) == (
            code,
            message,
        )
        for method in ("command/exec/write", "command/exec/terminate"):
            assert await _err(client, method, {"processId": "nope"}) == (
                -32600,
                'no active command/exec for process id "nope"',
            )


async def _until_active(client: Session, method: str, params: dict[str, Any]) -> Any:
    """``method`` answered once the exec sent before it has registered its process id (the two
    requests are handled concurrently: each try is one round trip to the server)."""
    with anyio.fail_after(60):
        while True:
            reply = await client.call(method, params)
            if "result" in reply:
                return reply["result"]
            assert reply["error"]["message"].startswith("no active command/exec"), reply


async def test_command_exec_streams_takes_stdin_and_terminates(tmp_path: Path) -> None:
    async with _client(tmp_path) as client:
        await client.send(
            {
                "id": "exec-1",
                "method": "command/exec",
                "params": {
                    "processId": "s1",
                    "command": ["sh", "-c", "read line; echo got:$line; exec sleep 600"],
                    "streamStdin": True,
                    "streamStdoutStderr": True,
                    "sandboxPolicy": FULL,
                },
            }
        )
        hi = base64.b64encode(b"hi\n").decode()
        assert (
            await _until_active(
                client, "command/exec/write", {"processId": "s1", "deltaBase64": hi}
            )
            == {}
        )
        delta = await client.until(lambda m: m.get("method") == "command/exec/outputDelta")
        assert delta[-1]["params"] == {
            "processId": "s1",
            "stream": "stdout",
            "deltaBase64": base64.b64encode(b"got:hi\n").decode(),
            "capReached": False,
        }
        dup = await client.call(
            "command/exec", {"processId": "s1", "command": ["true"], "sandboxPolicy": FULL}
        )
        assert dup["error"] == {
            "code": -32600,
            "message": 'duplicate active command/exec process id: "s1"',
        }
        assert await _err(
            client, "command/exec/resize", {"processId": "s1", "size": {"rows": 5, "cols": 5}}
        ) == (
            -32600,
            "failed to resize PTY: process is not attached to a PTY",
        )
        assert await _ok(client, "command/exec/terminate", {"processId": "s1"}) == {}
        answer = await client.until(lambda m: m.get("id") == "exec-1")
    assert answer[-1]["result"] == {"exitCode": 137, "stdout": "", "stderr": ""}


async def test_command_exec_in_a_tty_resizes(tmp_path: Path) -> None:
    async with _client(tmp_path) as client:
        await client.send(
            {
                "id": "exec-1",
                "method": "command/exec",
                "params": {
                    "processId": "t1",
                    "tty": True,
                    "size": {"rows": 24, "cols": 80},
                    "command": ["sh", "-c", "stty size; read x; stty size"],
                    "streamStdoutStderr": True,
                    "sandboxPolicy": FULL,
                },
            }
        )
        await client.until(
            lambda m: (
                m.get("method") == "command/exec/outputDelta"
                and b"24 80" in base64.b64decode(m["params"]["deltaBase64"])
            )
        )
        size = {"processId": "t1", "size": {"rows": 50, "cols": 132}}
        assert await _ok(client, "command/exec/resize", size) == {}
        newline = base64.b64encode(b"\n").decode()
        assert (
            await _ok(client, "command/exec/write", {"processId": "t1", "deltaBase64": newline})
            == {}
        )
        seen = await client.until(lambda m: m.get("id") == "exec-1")
    assert seen[-1]["result"] == {"exitCode": 0, "stdout": "", "stderr": ""}
    deltas = [m for m in seen if m.get("method") == "command/exec/outputDelta"]
    assert b"50 132" in b"".join(base64.b64decode(m["params"]["deltaBase64"]) for m in deltas)


async def test_fs_methods_and_their_errors(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    async with _client(tmp_path) as client:
        assert (
            await _ok(
                client,
                "fs/writeFile",
                {"path": str(f), "dataBase64": base64.b64encode(b"hi").decode()},
            )
            == {}
        )
        assert await _ok(client, "fs/readFile", {"path": str(f)}) == {
            "dataBase64": base64.b64encode(b"hi").decode()
        }
        assert await _err(client, "fs/readFile", {"path": "rel.txt"}) == (
            -32600,
            "Invalid request: AbsolutePathBuf deserialized without a base path",
        )
        assert await _err(client, "fs/readFile", {"path": str(tmp_path)}) == (
            -32600,
            f"path `{tmp_path}` is not a file",
        )
        assert await _err(client, "fs/readFile", {"path": str(tmp_path / "missing")}) == (
            -32603,
            "No such file or directory (os error 2)",
        )
        assert await _err(
            client, "fs/writeFile", {"path": str(tmp_path / "no" / "x"), "dataBase64": ""}
        ) == (
            -32603,
            "No such file or directory (os error 2)",
        )
        assert await _err(client, "fs/writeFile", {"path": str(f), "dataBase64": "!!"}) == (
            -32600,
            "fs/writeFile requires valid base64 dataBase64: Invalid symbol 33, offset 0.",
        )
        d = tmp_path / "d" / "e"
        assert await _ok(client, "fs/createDirectory", {"path": str(d)}) == {}
        assert await _ok(client, "fs/createDirectory", {"path": str(d)}) == {}
        assert await _err(
            client, "fs/createDirectory", {"path": str(tmp_path / "x" / "y"), "recursive": False}
        ) == (
            -32603,
            "No such file or directory (os error 2)",
        )
        assert await _err(client, "fs/createDirectory", {"path": str(f)}) == (
            -32603,
            "File exists (os error 17)",
        )
        meta = await _ok(client, "fs/getMetadata", {"path": str(f)})
        assert (meta["isFile"], meta["isDirectory"], meta["isSymlink"]) == (True, False, False)
        (tmp_path / "link").symlink_to(f)
        meta = await _ok(client, "fs/getMetadata", {"path": str(tmp_path / "link")})
        assert (meta["isFile"], meta["isSymlink"]) == (True, True)
        listing = await _ok(client, "fs/readDirectory", {"path": str(tmp_path)})
        assert sorted(e["fileName"] for e in listing["entries"]) == ["a.txt", "d", "link"]
        assert await _err(client, "fs/readDirectory", {"path": str(f)}) == (
            -32603,
            "Not a directory (os error 20)",
        )
        assert await _err(
            client,
            "fs/copy",
            {"sourcePath": str(tmp_path / "d"), "destinationPath": str(tmp_path / "c")},
        ) == (
            -32600,
            "fs/copy requires recursive: true when sourcePath is a directory",
        )
        assert await _err(
            client,
            "fs/copy",
            {
                "sourcePath": str(tmp_path / "d"),
                "destinationPath": str(d / "in"),
                "recursive": True,
            },
        ) == (-32600, "fs/copy cannot copy a directory to itself or one of its descendants")
        assert (
            await _ok(
                client,
                "fs/copy",
                {"sourcePath": str(f), "destinationPath": str(tmp_path / "b.txt")},
            )
            == {}
        )
        assert (tmp_path / "b.txt").read_bytes() == b"hi"
        assert await _err(
            client, "fs/remove", {"path": str(tmp_path / "d"), "recursive": False}
        ) == (
            -32603,
            "Directory not empty (os error 39)",
        )
        assert await _ok(client, "fs/remove", {"path": str(tmp_path / "missing")}) == {}
        assert await _err(
            client, "fs/remove", {"path": str(tmp_path / "missing"), "force": False}
        ) == (
            -32603,
            "No such file or directory (os error 2)",
        )
        assert await _ok(client, "fs/remove", {"path": str(tmp_path / "link")}) == {}
        assert f.exists()
        assert await _ok(client, "fs/remove", {"path": str(tmp_path / "d")}) == {}
        assert not (tmp_path / "d").exists()


async def test_fs_watch_reports_changes_from_inotify(tmp_path: Path) -> None:
    watched = tmp_path / "w"
    watched.mkdir()
    async with _client(tmp_path) as client:
        assert await _ok(client, "fs/watch", {"path": str(watched), "watchId": "w1"}) == {
            "path": str(watched)
        }
        assert await _err(client, "fs/watch", {"path": str(watched), "watchId": "w1"}) == (
            -32600,
            "watchId already exists: w1",
        )
        (watched / "hello.txt").write_text("x")
        with anyio.fail_after(60):
            got = await client.until(lambda m: m.get("method") == "fs/changed")
        note = got[-1]
        assert check_server_message(note, None) == []
        assert note["params"] == {"watchId": "w1", "changedPaths": [str(watched / "hello.txt")]}
        assert await _ok(client, "fs/unwatch", {"watchId": "w1"}) == {}
        assert await _ok(client, "fs/unwatch", {"watchId": "w1"}) == {}


async def test_fuzzy_file_search_finds_files_by_their_letters(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main_window.py").write_text("")
    (tmp_path / "README.md").write_text("")
    async with _client(tmp_path) as client:
        found = await _ok(client, "fuzzyFileSearch", {"query": "mwin", "roots": [str(tmp_path)]})
        assert [(f["path"], f["match_type"], f["file_name"]) for f in found["files"]] == [
            ("src/main_window.py", "file", "main_window.py")
        ]
        hit = found["files"][0]
        assert hit["root"] == str(tmp_path)
        assert ["src/main_window.py"[i] for i in hit["indices"]] == list("mwin")
        assert await _ok(client, "fuzzyFileSearch", {"query": "", "roots": [str(tmp_path)]}) == {
            "files": []
        }
        assert await _ok(client, "fuzzyFileSearch", {"query": "x", "roots": []}) == {"files": []}


async def test_a_sandboxed_command_exec_cannot_write(tmp_path: Path) -> None:
    from tests.machine.conftest import usable_bubblewrap

    usable_bubblewrap()
    async with _client(tmp_path) as client:
        result = await _ok(
            client,
            "command/exec",
            {"command": ["sh", "-c", "touch x; echo rc=$?"], "sandboxPolicy": {"type": "readOnly"}},
        )
    assert result["stdout"] == "rc=1\n"
    assert not _exists(tmp_path / "x")


async def test_shell_command_on_a_thread_that_runs_nothing_fails_its_turn(tmp_path: Path) -> None:
    # the default agent is no model source: nothing runs on the machine, the turn says why
    async with _client(tmp_path) as client:
        thread_id = await client.start_thread(cwd=str(tmp_path))
        await client.drain_pending()
        command = {"threadId": thread_id, "command": "touch made.txt"}
        assert await _ok(client, "thread/shellCommand", command) == {}
        seen = await client.until(lambda m: m.get("method") == "turn/completed")
        completed = seen[-1]
        turn = completed["params"]["turn"]
        assert turn["status"] == "failed"
        assert "runs no commands" in turn["error"]["message"]
        assert not _exists(tmp_path / "made.txt")
        empty = {"threadId": thread_id, "command": " "}
        assert await _err(client, "thread/shellCommand", empty) == (
            -32600,
            "command must not be empty",
        )
        unknown = {"threadId": "00000000-0000-0000-0000-000000000000", "command": "ls"}
        assert await _err(client, "thread/shellCommand", unknown) == (
            -32600,
            "thread not found: 00000000-0000-0000-0000-000000000000",
        )
