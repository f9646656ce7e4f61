"""``thread/shellCommand``'s run (``machine._user_shell``): the item, streamed output, the
model's text, and where the bridge is safer than 0.163.0 (the thread's sandbox, a sandbox that
cannot be made, timeouts and interrupts kill the whole process group). The wire against the
real binary: ``tests/conformance/test_shell_command_real.py``."""

from __future__ import annotations

import base64
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from codex_app_bridge.machine import (
    Bubblewrap,
    SandboxPolicy,
    UserShellResult,
    _user_shell,
    user_shell_text,
)
from codex_app_bridge.machine._user_shell import run_user_shell
from codex_app_bridge.protocol.core import EventMsg
from tests.machine.conftest import WAIT_S, pid_alive, usable_bubblewrap, wait_gone

pytestmark = pytest.mark.anyio

FULL = SandboxPolicy("danger-full-access")


async def _run(
    command: str,
    cwd: Path,
    events: list[EventMsg],
    *,
    sandbox: SandboxPolicy = FULL,
    bubblewrap: Bubblewrap | None = None,
    timeout_ms: int | None = None,
    room: Callable[[], Awaitable[None]] = anyio.lowlevel.checkpoint,
) -> UserShellResult:
    with anyio.fail_after(WAIT_S):
        return await run_user_shell(
            command,
            thread_id="thread-1",
            turn_id="turn-1",
            cwd=str(cwd),
            sandbox=sandbox,
            bubblewrap=bubblewrap or Bubblewrap(None),
            env=dict(os.environ),
            emit=events.append,
            room=room,
            timeout_ms=timeout_ms,
        )


def _dumped(events: list[EventMsg], kind: str) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json") for e in events if e.type == kind]


async def test_the_item_the_deltas_and_the_model_text(tmp_path: Path) -> None:
    events: list[EventMsg] = []
    result = await _run("echo out; echo err >&2; exit 3", tmp_path, events)
    assert result.exit_code == 3
    assert result.output == "out\nerr\n"  # stdout, then stderr
    kinds = [e.type for e in events]
    assert kinds[0] == "item_started"
    assert kinds[-1] == "item_completed"
    (started,) = _dumped(events, "item_started")
    (completed,) = _dumped(events, "item_completed")
    assert started["item"]["source"] == "user_shell"
    assert started["item"].get("process_id") is None
    assert started["item"]["command"][1:] == ["-lc", "echo out; echo err >&2; exit 3"]
    assert completed["item"]["status"] == "failed"
    assert completed["item"]["exit_code"] == 3
    assert completed["item"]["aggregated_output"] == "out\nerr\n"
    assert len(_dumped(events, "exec_command_output_delta")) >= 2  # nothing held back
    text = user_shell_text("echo out; echo err >&2; exit 3", result)
    assert text.startswith("<user_shell_command>\n<command>\necho out; echo err >&2; exit 3\n")
    assert "<result>\nExit code: 3\nDuration: " in text
    assert text.endswith(" seconds\nOutput:\nout\nerr\n\n</result>\n</user_shell_command>")


async def test_output_streams_in_small_chunks_each_read_waiting_for_room_up_to_a_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As core's ``read_output``: deltas of at most 8 KiB, at most a cap of them per stream
    (10,000 in core; 5 here); each read waits for room in the thread's queue (so a client slower
    than the command holds the command back, not the server's memory); past the cap the output
    still reaches the item."""
    monkeypatch.setattr(_user_shell, "MAX_DELTAS_PER_STREAM", 5)
    events: list[EventMsg] = []
    waits = 0

    async def room() -> None:
        nonlocal waits
        waits += 1

    command = "head -c 3000000 /dev/zero; echo END; echo oops >&2"
    result = await _run(command, tmp_path, events, room=room)
    assert result.exit_code == 0
    assert result.output.endswith("END\noops\n")
    deltas = _dumped(events, "exec_command_output_delta")
    stdout = [len(base64.b64decode(d["chunk"])) for d in deltas if d["stream"] == "stdout"]
    assert len(stdout) == 5
    assert max(stdout) <= _user_shell.READ_CHUNK_BYTES == 8192
    assert [d["stream"] for d in deltas].count("stderr") == 1  # a cap of its own
    assert waits >= 2  # the reads up to the cap, on each stream


async def test_a_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    events: list[EventMsg] = []
    pids = tmp_path / "pids"
    result = await _run(
        f"sleep 60 & echo $! > {pids}; echo $$ >> {pids}; wait", tmp_path, events, timeout_ms=5000
    )
    assert result.exit_code == -1
    assert result.output.endswith("command timed out after 5000 ms\n")
    for pid in map(int, pids.read_text().split()):
        with anyio.fail_after(WAIT_S):
            await wait_gone(pid)
        assert not pid_alive(pid)
    assert _dumped(events, "item_completed")[0]["item"]["status"] == "failed"


async def test_an_interrupt_kills_it_and_still_completes_the_item(tmp_path: Path) -> None:
    events: list[EventMsg] = []
    printed = anyio.Event()

    def emit(event: EventMsg) -> None:
        events.append(event)
        if event.type == "exec_command_output_delta":
            printed.set()

    async def run() -> None:
        await run_user_shell(
            "echo $$; exec sleep 60",
            thread_id="thread-1",
            turn_id="turn-1",
            cwd=str(tmp_path),
            sandbox=FULL,
            bubblewrap=Bubblewrap(None),
            env=dict(os.environ),
            emit=emit,
            room=anyio.lowlevel.checkpoint,
        )

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        with anyio.fail_after(WAIT_S):
            await printed.wait()
        group.cancel_scope.cancel()
    (completed,) = _dumped(events, "item_completed")
    output = completed["item"]["aggregated_output"]
    assert output.endswith("command interrupted\n")
    with anyio.fail_after(WAIT_S):
        await wait_gone(int(output.split()[0]))
    assert completed["item"]["exit_code"] == -1


async def test_without_a_usable_sandbox_nothing_runs(tmp_path: Path) -> None:
    events: list[EventMsg] = []
    result = await _run("touch made.txt", tmp_path, events, sandbox=SandboxPolicy("read-only"))
    assert result.exit_code == -1
    assert result.output.startswith("sandbox unavailable: ")
    assert not (tmp_path / "made.txt").exists()
    assert _dumped(events, "item_completed")[0]["item"]["status"] == "failed"


async def test_the_threads_sandbox_confines_it(tmp_path: Path) -> None:
    bubblewrap = usable_bubblewrap()
    events: list[EventMsg] = []
    result = await _run(
        "touch made.txt; echo rc=$?",
        tmp_path,
        events,
        sandbox=SandboxPolicy("read-only"),
        bubblewrap=bubblewrap,
    )
    assert "Read-only file system" in result.output
    assert not (tmp_path / "made.txt").exists()


def test_output_pipes_are_widened_for_large_reads(tmp_path: Path) -> None:
    import fcntl

    from codex_app_bridge.machine import spawn

    get_size = getattr(fcntl, "F_GETPIPE_SZ", None)
    if get_size is None:
        pytest.skip("no F_GETPIPE_SZ here")
    child = spawn(["true"], cwd=str(tmp_path), env=dict(os.environ), tty=False, merge_stderr=False)
    try:
        assert child.stdout_fd is not None
        assert child.stderr_fd is not None
        for fd in (child.stdout_fd, child.stderr_fd):
            assert fcntl.fcntl(fd, get_size) >= 256 * 1024
    finally:
        child.kill()
        child.close()
