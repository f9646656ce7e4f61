"""JSON Lines over stdin/stdout: in-process over pipes, and through a real subprocess boundary."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import orjson
import pytest

from codex_app_bridge.transport import DecodeError, stdio_transport
from codex_app_bridge.transport import stdio as stdio_module
from tests.conftest import bridge_env

TIMEOUT = 60
SERVER = Path(__file__).with_name("stdio_server_main.py")
TWENTY_MIB = 20 * 1024 * 1024
F_GETPIPE_SZ = 1032


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_until_eof(fd: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture
def pipes() -> Iterator[tuple[int, int, int, int]]:
    """(server stdin read end, client write end, client read end, server stdout write end)."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    yield in_r, in_w, out_r, out_w
    for fd in (in_r, in_w, out_r, out_w):
        with contextlib.suppress(OSError):
            os.close(fd)


@pytest.mark.anyio
async def test_lines_in_become_values_and_values_out_become_lines(
    pipes: tuple[int, int, int, int],
) -> None:
    in_r, in_w, out_r, out_w = pipes
    with anyio.fail_after(TIMEOUT):
        async with stdio_transport(stdin_fd=in_r, stdout_fd=out_w) as (read, write):
            _write_all(in_w, b'{"id":1,"method":"a"}\n\n{"id":2,\n[1]\nlast')
            os.close(in_w)
            received: list[Any] = [item async for item in read]
            await write.send({"id": 1, "result": {}})
            await write.send(b'{"method":"n","params":{},"emittedAtMs":1}')
        os.close(out_w)
        output = await anyio.to_thread.run_sync(_read_until_eof, out_r)
    assert received[0] == {"id": 1, "method": "a"}
    assert isinstance(received[1], DecodeError)
    assert received[1].raw == b'{"id":2,'
    assert received[2:] == [[1], DecodeError(received[3].reason, b"last")]
    assert output == b'{"id":1,"result":{}}\n{"method":"n","params":{},"emittedAtMs":1}\n'


@pytest.mark.anyio
async def test_a_20_mib_line_is_read_whole(pipes: tuple[int, int, int, int]) -> None:
    in_r, in_w, _out_r, out_w = pipes
    line = orjson.dumps({"id": 1, "method": "m", "params": {"junk": "x" * TWENTY_MIB}})
    with anyio.fail_after(TIMEOUT):
        async with (
            stdio_transport(stdin_fd=in_r, stdout_fd=out_w) as (read, _write),
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(anyio.to_thread.run_sync, _write_all, in_w, line + b"\n")
            item = await read.receive()
    assert isinstance(item, dict)
    assert len(item["params"]["junk"]) == TWENTY_MIB


@pytest.mark.anyio
async def test_writes_fail_once_the_reader_of_stdout_is_gone(
    pipes: tuple[int, int, int, int],
) -> None:
    in_r, _in_w, out_r, out_w = pipes
    os.close(out_r)
    with anyio.fail_after(TIMEOUT):
        async with stdio_transport(stdin_fd=in_r, stdout_fd=out_w, capacity=1) as (_read, write):
            with pytest.raises(anyio.BrokenResourceError):  # noqa: PT012
                for index in range(100):
                    await write.send({"n": index})


def _run_server(stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, str(SERVER)],
        input=stdin,
        capture_output=True,
        env=bridge_env(),
        timeout=120,
        check=False,
    )


def test_stdio_server_exits_0_on_eof_and_writes_only_protocol_lines() -> None:
    requests = [
        b'{"id":1,"method":"test/echo","params":{"a":1}}',
        b'{"id":2,"method":',  # malformed: no reply
        b'[{"id":3,"method":"test/echo","params":{}}]',  # batch: no reply
        b'{"id":"p","method":"test/print","params":{}}',
        b'{"jsonrpc":"2.0","id":4,"method":"test/echo","params":{}}',
        b'{"id":5,"method":"nope","params":{}}',
    ]
    proc = _run_server(b"\n".join(requests) + b"\n")
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.splitlines()
    replies = {reply["id"]: reply for reply in map(orjson.loads, lines)}
    assert len(lines) == len(replies) == 4, proc.stderr.decode()
    assert replies[1] == {"id": 1, "result": {"a": 1}}
    assert replies["p"] == {"id": "p", "result": "printed"}
    assert replies[4] == {"id": 4, "result": {}}
    assert replies[5]["error"]["code"] == -32600
    stderr = proc.stderr.decode()
    assert "stray print output" in stderr
    assert "stray fd 1 output" in stderr
    assert "Failed to deserialize JSONRPCMessage" in stderr


def test_stdio_server_answers_a_20_mib_line_and_keeps_answering() -> None:
    big = orjson.dumps({"id": 1, "method": "test/size", "params": {"junk": "y" * TWENTY_MIB}})
    after = b'{"id":2,"method":"test/echo","params":{"after":true}}'
    proc = _run_server(big + b"\n" + after + b"\n")
    assert proc.returncode == 0, proc.stderr.decode()
    replies = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert sorted(replies, key=lambda reply: reply["id"]) == [
        {"id": 1, "result": TWENTY_MIB},
        {"id": 2, "result": {"after": True}},
    ]


def test_stdio_server_with_no_input_exits_0_silently() -> None:
    proc = _run_server(b"")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == b""


@pytest.mark.anyio
async def test_the_exit_flush_waits_for_a_slow_reader_that_keeps_reading(
    pipes: tuple[int, int, int, int],
) -> None:
    # A busy machine (or a slow client) may take longer than flush_timeout to read everything
    # queued at exit: as long as batches keep being written, nothing is dropped.
    in_r, in_w, out_r, out_w = pipes
    message = {"method": "n", "params": {"pad": "z" * 60_000}}
    count = 40  # ~2.4 MB in 1 MiB batches: dozens of pipe-buffer fills, read 40 ms apart
    received = bytearray()

    def slow_reader() -> None:
        while chunk := os.read(out_r, 1 << 16):
            received.extend(chunk)
            time.sleep(0.04)

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, slow_reader)
            async with stdio_transport(
                stdin_fd=in_r, stdout_fd=out_w, capacity=count, flush_timeout=0.3
            ) as (_read, write):
                for _ in range(count):
                    await write.send(message)
            os.close(out_w)
    os.close(in_w)
    lines = bytes(received).splitlines()
    assert len(lines) == count
    assert all(orjson.loads(line) == message for line in lines)


def _pipe_max_size() -> int:
    return int(Path("/proc/sys/fs/pipe-max-size").read_text())


@pytest.mark.anyio
async def test_a_stdout_pipe_is_widened_so_a_fast_stream_wakes_its_reader_less_often(
    pipes: tuple[int, int, int, int],
) -> None:
    if _pipe_max_size() < 1 << 20:
        pytest.skip("fs.pipe-max-size is below 1 MiB here")
    in_r, in_w, _, out_w = pipes
    with anyio.fail_after(TIMEOUT):
        async with stdio_transport(stdin_fd=in_r, stdout_fd=out_w):
            assert fcntl.fcntl(out_w, F_GETPIPE_SZ) == 1 << 20
            os.close(in_w)


def _threads_named(name: str) -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == name]


@pytest.fixture
def thread_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the batches the writer thread wrote (the real writes, recorded)."""
    sizes: list[int] = []
    real = stdio_module._write_all

    def recorded(fd: int, data: bytes, progress: list[int]) -> None:
        sizes.append(len(data))
        real(fd, data, progress)

    monkeypatch.setattr(stdio_module, "_write_all", recorded)
    return sizes


@pytest.mark.anyio
@pytest.mark.skipif(not hasattr(os, "RWF_NOWAIT"), reason="no RWF_NOWAIT on this system")
@pytest.mark.parametrize("kind", ["pipe", "socket"])
async def test_on_a_pipe_or_socket_the_event_loop_reads_requests_and_writes_answers_itself(
    kind: str, thread_writes: list[int]
) -> None:
    # A request and its answer cross no thread: no reader thread is started, and the answers
    # are written by the loop, not handed to the writer thread.
    if kind == "pipe":
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        ends = [in_r, in_w, out_r, out_w]
    else:
        server_in, client_out = socket.socketpair()
        ends = [server_in, client_out]
        in_r = out_w = server_in.fileno()
        in_w = out_r = client_out.fileno()
    try:
        with anyio.fail_after(TIMEOUT):
            async with stdio_transport(stdin_fd=in_r, stdout_fd=out_w) as (read, write):
                for index in range(3):
                    _write_all(in_w, orjson.dumps({"id": index, "method": "m"}) + b"\n")
                    assert await read.receive() == {"id": index, "method": "m"}
                    await write.send({"id": index, "result": {}})
                    line = await anyio.to_thread.run_sync(os.read, out_r, 1 << 16)
                    assert orjson.loads(line) == {"id": index, "result": {}}
                assert not _threads_named("codex-app-bridge stdin")
    finally:
        for end in ends:
            with contextlib.suppress(OSError):
                end.close() if isinstance(end, socket.socket) else os.close(end)
    assert thread_writes == []


@pytest.mark.anyio
async def test_what_a_full_pipe_cannot_take_goes_through_the_writer_thread_in_order(
    pipes: tuple[int, int, int, int], thread_writes: list[int]
) -> None:
    # The client reads nothing until more than a pipe's worth is queued: the loop writes what
    # the pipe takes, the writer thread waits with the rest; every line arrives, in order.
    in_r, in_w, out_r, out_w = pipes
    count = 3000  # ~3 MB of small messages, the pipe holds 1 MiB at most
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            async with stdio_transport(stdin_fd=in_r, stdout_fd=out_w, capacity=count) as (
                _read,
                write,
            ):
                for index in range(count):
                    await write.send({"n": index, "pad": "p" * 1000})
                await anyio.wait_all_tasks_blocked()
                assert thread_writes  # the pipe filled up: the rest waits in the thread
                received: list[bytes] = []

                async def read_all() -> None:
                    received.append(await anyio.to_thread.run_sync(_read_until_eof, out_r))

                tg.start_soon(read_all)
            os.close(out_w)
    os.close(in_w)
    lines = b"".join(received).splitlines()
    assert [orjson.loads(line)["n"] for line in lines] == list(range(count))


@pytest.mark.anyio
async def test_a_regular_file_as_stdin_is_read_whole(tmp_path: Path) -> None:
    # A file cannot be waited on by the event loop: it is read by the reader thread.
    requests = [{"id": index, "method": "m", "params": {"i": index}} for index in range(50)]
    source = tmp_path / "requests.jsonl"
    source.write_bytes(b"".join(orjson.dumps(request) + b"\n" for request in requests))
    out_r, out_w = os.pipe()
    in_fd = os.open(source, os.O_RDONLY)
    try:
        with anyio.fail_after(TIMEOUT):
            async with stdio_transport(stdin_fd=in_fd, stdout_fd=out_w) as (read, _write):
                received = [item async for item in read]
    finally:
        for fd in (in_fd, out_r, out_w):
            os.close(fd)
    assert received == requests
