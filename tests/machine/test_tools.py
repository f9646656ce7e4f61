"""The model's local tools (exec_command, write_stdin, apply_patch, view_image) as 0.163.0 runs
them (``spec/machine-tools.md`` §1-§4), without a sandbox (see test_sandbox.py for it)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import anyio
import orjson
import pytest

from codex_app_bridge.machine import ApprovalPolicy, Bubblewrap, MachineTools, TurnCancelled
from codex_app_bridge.machine import _tools as _tools_module
from codex_app_bridge.machine._output import DELTA_MAX_BYTES
from tests.machine.conftest import WAIT_S, FakeHost, pid_alive, wait_gone

pytestmark = pytest.mark.anyio

_HEADER = re.compile(
    r"^Chunk ID: [0-9a-f]{6}\nWall time: \d+\.\d{4} seconds\n(?P<state>Process exited with code "
    r"(?P<code>-?\d+)|Process running with session ID (?P<sid>\d+))\nOriginal token count: "
    r"(?P<tokens>\d+)\nOutput:\n(?P<output>.*)$",
    re.DOTALL,
)


def _tools(tmp_path: Path) -> MachineTools:
    return MachineTools(bubblewrap=Bubblewrap(None), codex_home=str(tmp_path / "home"))


def _args(**kwargs: object) -> str:
    if "cmd" in kwargs:
        # not a login shell: the suite must not depend on this machine's profile scripts
        kwargs.setdefault("login", False)
    return orjson.dumps(kwargs).decode()


def _deltas(host: FakeHost) -> str:
    chunks = host.of_type("exec_command_output_delta")
    return b"".join(base64.b64decode(d["chunk"]) for d in chunks).decode()


async def _exec(tools: MachineTools, host: FakeHost, call_id: str, **args: object) -> re.Match[str]:
    """An ``exec_command`` call with these arguments, its answer's header parsed."""
    return _parse(await tools.call(host, "exec_command", call_id, _args(**args)))


def _parse(text: object) -> re.Match[str]:
    assert isinstance(text, str)
    match = _HEADER.match(text)
    assert match is not None, text
    return match


async def test_a_quick_command_answers_its_exit_output_and_item(tmp_path: Path, work: Path) -> None:
    host = FakeHost(str(work))
    async with _tools(tmp_path) as tools:
        out = await _exec(tools, host, "c1", cmd="echo hello; pwd")
    assert out["code"] == "0"
    assert out["output"] == f"hello\n{work}\n"
    assert out["tokens"] == str(-(-len(out["output"]) // 4))
    started = host.of_type("item_started")[0]["item"]
    completed = host.of_type("item_completed")[0]["item"]
    assert started["status"] == "in_progress"
    assert started["command"][1:] == ["-c", "echo hello; pwd"]
    assert started["source"] == "unified_exec_startup"
    assert started["cwd"] == f"file://{work}"
    assert completed["status"] == "completed"
    assert completed["exit_code"] == 0
    assert completed["aggregated_output"] == f"hello\n{work}\n"
    assert completed["process_id"] == started["process_id"]


async def test_a_long_command_becomes_a_session_polled_until_it_exits(
    tmp_path: Path, work: Path
) -> None:
    host = FakeHost(str(work))
    (work / "go").write_text("")
    async with _tools(tmp_path) as tools:
        cmd = "echo first; while [ -e go ]; do sleep 0.05; done; echo second; exit 3"
        first = await _exec(tools, host, "c1", cmd=cmd, yield_time_ms=250)
        assert first["sid"] is not None
        sid = int(first["sid"])
        assert 1000 <= sid <= 99999
        (work / "go").unlink()
        second = _parse(
            await tools.call(host, "write_stdin", "c2", _args(session_id=sid, yield_time_ms=30000))
        )
        assert second["code"] == "3"
        # output is reported once, by the call during which it was read
        assert first["output"] + second["output"] == "first\nsecond\n"
        gone = await tools.call(host, "write_stdin", "c3", _args(session_id=sid))
        assert gone == f"write_stdin failed: Unknown process id {sid}"
    completed = host.of_type("item_completed")[0]["item"]
    assert completed["status"] == "failed"
    assert completed["exit_code"] == 3
    assert completed["aggregated_output"] == "first\nsecond\n"


async def test_a_tty_session_takes_input_and_reports_the_interaction(
    tmp_path: Path, work: Path
) -> None:
    host = FakeHost(str(work))
    async with _tools(tmp_path) as tools:
        first = await _exec(
            tools, host, "c1", cmd="read line; echo got:$line", tty=True, yield_time_ms=250
        )
        sid = int(first["sid"])
        out = _parse(
            await tools.call(
                host, "write_stdin", "c2", _args(session_id=sid, chars="hi\n", yield_time_ms=30000)
            )
        )
        assert out["code"] == "0"
        assert "got:hi\r\n" in out["output"]
    assert host.of_type("terminal_interaction") == [
        {"type": "terminal_interaction", "call_id": "c1", "process_id": str(sid), "stdin": "hi\n"}
    ]


async def test_without_tty_stdin_is_closed(tmp_path: Path, work: Path) -> None:
    host = FakeHost(str(work))
    async with _tools(tmp_path) as tools:
        out = await _exec(
            tools, host, "c1", cmd="sleep 0.3; read x; echo rc=$?; sleep 30", yield_time_ms=250
        )
        await host.wait_for(lambda: "rc=1\n" in _deltas(host))
        said = await tools.call(
            host, "write_stdin", "c2", _args(session_id=int(out["sid"]), chars="x")
        )
        assert said == (
            "write_stdin failed: stdin is closed for this session; rerun exec_command with "
            "tty=true to keep stdin open"
        )


async def test_big_output_is_truncated_for_the_model_and_bounded_in_the_item(
    tmp_path: Path, work: Path
) -> None:
    host = FakeHost(str(work))
    async with _tools(tmp_path) as tools:
        out = await _exec(tools, host, "c1", cmd="seq 1 200000", yield_time_ms=30000)
    assert out["tokens"] == "322224"  # ceil(1288895 / 4), as probed
    body = out["output"]
    assert body.startswith(
        "Warning: truncated output (original token count: 322224)\n... 240319 bytes omitted ...\n\n1\n2\n"
    )
    assert len(body.encode()) < 40_000 + 200
    assert "tokens truncated…" in body
    assert body.endswith("199999\n200000\n")
    item = host.of_type("item_completed")[0]["item"]
    assert len(item["aggregated_output"]) <= 1024 * 1024 + 100
    assert "\n... 240319 bytes omitted ...\n" in item["aggregated_output"]


async def test_output_lines_header_when_nothing_was_omitted(tmp_path: Path, work: Path) -> None:
    host = FakeHost(str(work))
    async with _tools(tmp_path) as tools:
        out = await _exec(tools, host, "c1", cmd="seq 1 20000", yield_time_ms=30000)
    assert out["tokens"] == "27224"
    assert out["output"].startswith(
        "Warning: truncated output (original token count: 27224)\nTotal output lines: 20000\n\n"
    )
    assert "…17224 tokens truncated…" in out["output"]


async def test_unload_kills_the_command_and_its_background_children(
    tmp_path: Path, work: Path
) -> None:
    host = FakeHost(str(work))
    async with _tools(tmp_path) as tools:
        out = await _exec(
            tools,
            host,
            "c1",
            cmd="sleep 600 & echo $! > pids; echo $$ >> pids; wait",
            yield_time_ms=250,
        )
        assert out["sid"] is not None
        await host.wait_for(
            lambda: (work / "pids").exists() and len((work / "pids").read_text().split()) == 2
        )
        pids = [int(p) for p in (work / "pids").read_text().split()]
        assert all(pid_alive(p) for p in pids)
        await tools.aclose()
        with anyio.fail_after(WAIT_S):
            for pid in pids:
                await wait_gone(pid)
    completed = host.of_type("item_completed")[0]["item"]
    assert completed["status"] == "failed"
    assert completed["exit_code"] == -1


async def test_tool_call_failures_are_cores_texts(tmp_path: Path, work: Path) -> None:
    host = FakeHost(str(work))
    async with _tools(tmp_path) as tools:
        assert await tools.call(host, "no_such_tool", "c", "{}") == "unsupported call: no_such_tool"
        missing = await tools.call(host, "exec_command", "c", '{"workdir": "x"}')
        assert (
            missing == "failed to parse function arguments: missing field `cmd` at line 1 column 16"
        )
        bad = await tools.call(host, "write_stdin", "c", '{"session_id": "7"}')
        assert isinstance(bad, str)
        assert bad.startswith(
            'failed to parse function arguments: invalid type: string "7", expected i32'
        )
        nodir = await tools.call(host, "exec_command", "c", _args(cmd="true", workdir="nope"))
        assert nodir == (
            'exec_command failed: CreateProcess { message: "Rejected(\\"Failed to create unified '
            'exec process: No such file or directory (os error 2)\\")" }'
        )
    assert host.events == []


async def test_apply_patch_through_the_shell_is_intercepted(tmp_path: Path, work: Path) -> None:
    host = FakeHost(str(work))
    (work / "sub").mkdir()
    cmd = "cd sub && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\nEOF"
    async with _tools(tmp_path) as tools:
        out = await tools.call(host, "exec_command", "call_patch_1", _args(cmd=cmd))
    assert isinstance(out, str)
    assert re.fullmatch(
        r"Wall time: \d\.\d{4} seconds\nOutput:\nExit code: 0\nWall time: \d(\.\d)? seconds\nOutput:\n"
        r"Success\. Updated the following files:\nA hello\.txt\n",
        out,
    ), out
    assert (work / "sub" / "hello.txt").read_text() == "hi\n"
    kinds = [e.type for e in host.events]
    assert kinds == [
        "item_started",
        "patch_apply_begin",
        "patch_apply_end",
        "item_completed",
        "turn_diff",
    ]
    item = host.of_type("item_completed")[0]["item"]
    assert item["type"] == "FileChange"
    assert item["status"] == "completed"
    assert item["changes"] == {f"{work}/sub/hello.txt": {"type": "add", "content": "hi\n"}}


async def test_untrusted_asks_first_and_a_decline_runs_nothing(tmp_path: Path, work: Path) -> None:
    host = FakeHost(str(work), approval_policy=ApprovalPolicy("untrusted"), decisions=["denied"])
    async with _tools(tmp_path) as tools:
        out = await tools.call(host, "exec_command", "c1", _args(cmd="touch approved.txt"))
    assert (
        out == 'exec_command failed: CreateProcess { message: "Rejected(\\"rejected by user\\")" }'
    )
    assert not (work / "approved.txt").exists()
    request = host.requests[0].model_dump(mode="json", by_alias=True)
    assert request["type"] == "exec_approval_request"
    assert request["proposed_execpolicy_amendment"] == ["touch", "approved.txt"]
    # core records no item for a refused command (0.163.0's thread/read has none); the
    # app-server alone completes the approval's item as declined for the client
    assert host.of_type("item_completed") == []


async def test_cancel_ends_the_turn_and_accept_for_session_covers_the_same_command(
    tmp_path: Path, work: Path
) -> None:
    host = FakeHost(str(work), approval_policy=ApprovalPolicy("untrusted"), decisions=["abort"])
    async with _tools(tmp_path) as tools:
        with pytest.raises(TurnCancelled):
            await tools.call(host, "exec_command", "c1", _args(cmd="touch a.txt"))
        assert not (work / "a.txt").exists()
        host.decisions.append("approved_for_session")
        await _exec(tools, host, "c2", cmd="touch a.txt")
        await _exec(tools, host, "c3", cmd="touch a.txt")
        assert len(host.requests) == 2  # the identical command did not ask again
        host.decisions.append("denied")
        await tools.call(host, "exec_command", "c4", _args(cmd="touch b.txt"))
        assert len(host.requests) == 3
    assert (work / "a.txt").exists()
    assert not (work / "b.txt").exists()


async def test_view_image_attaches_the_image_or_says_why_not(tmp_path: Path, work: Path) -> None:
    host = FakeHost(str(work))
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
    (work / "a.png").write_bytes(png)
    (work / "notimg").write_text("hello")
    async with _tools(tmp_path) as tools:
        ok = await tools.call(host, "view_image", "v1", _args(path="a.png"))
        assert isinstance(ok, list)
        assert ok[0]["image_url"].startswith("data:image/png;base64,")
        assert ok[0]["detail"] == "high"
        assert await tools.call(host, "view_image", "v2", _args(path="missing.png")) == (
            f"unable to locate image at `{work}/missing.png`: No such file or directory (os error 2)"
        )
        assert await tools.call(host, "view_image", "v3", _args(path="notimg")) == (
            "unable to process image: invalid or unsupported image data"
        )
        assert await tools.call(host, "view_image", "v4", _args(path=".")) == (
            f"image path `{work}` is not a file"
        )
    assert [e["item"]["type"] for e in host.of_type("item_completed")] == ["ImageView"]


async def test_output_deltas_wait_for_room_and_stay_small(tmp_path: Path, work: Path) -> None:
    """Each read's deltas (at most 64 KiB read, at most 8 KiB a delta, as core) are followed by a
    wait for room (the thread's event queue is bounded: output faster than the client reads
    waits in the pipe)."""
    host = FakeHost(str(work))
    cmd = "sleep 0.3; head -c 3000000 /dev/zero"
    async with _tools(tmp_path) as tools:
        out = await _exec(tools, host, "c1", cmd=cmd)
    assert out["code"] == "0"
    chunks = [base64.b64decode(d["chunk"]) for d in host.of_type("exec_command_output_delta")]
    assert sum(map(len, chunks)) == 3_000_000
    assert max(map(len, chunks)) <= DELTA_MAX_BYTES == 8192
    assert len(chunks) <= 8 * host.room_waits <= 8 * len(chunks)


async def test_a_process_streams_at_most_its_cap_of_deltas_and_keeps_the_rest(
    tmp_path: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``MAX_DELTAS_PER_CALL`` (10,000 in core; 3 here) nothing more is streamed nor waits
    for the client, and the output still reaches the model's text and the item."""
    monkeypatch.setattr(_tools_module, "MAX_DELTAS_PER_CALL", 3)
    host = FakeHost(str(work))
    cmd = "sleep 0.3; head -c 3000000 /dev/zero; echo END"
    async with _tools(tmp_path) as tools:
        out = await _exec(tools, host, "c1", cmd=cmd)
    assert out["code"] == "0"
    assert out["tokens"] == str(-(-3_000_004 // 4))
    assert out["output"].endswith("END\n")
    chunks = [base64.b64decode(d["chunk"]) for d in host.of_type("exec_command_output_delta")]
    assert len(chunks) == 3
    assert max(map(len, chunks)) <= DELTA_MAX_BYTES
    assert 1 <= host.room_waits <= 3  # one per read until the cap, none after it
    (completed,) = host.of_type("item_completed")
    assert completed["item"]["aggregated_output"].endswith("END\n")
