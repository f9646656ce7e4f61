"""JSON Lines over the process's stdin/stdout: the single-client transport of ``--listen stdio://``.

One JSON value per ``\\n``-terminated line in each direction, no line-length limit. A blocking
read or write on a pipe must never hold up the event loop, a cancellation or interpreter exit; the
event loop side decodes, encodes and batches. Where the kernel reads and writes a pipe or socket
without waiting for that one call (Linux ``RWF_NOWAIT``, the descriptor's own flags untouched:
another process may share it), the event loop moves the bytes itself: it reads what has arrived
when the descriptor is readable, and writes a batch that fits in the pipe at once. A request and
its answer then cross no thread, which would cost each of them a few wake-ups of another thread
and hand-offs of the interpreter. What the kernel cannot take at once (a full pipe, a batch over
:data:`_DIRECT_WRITE_MAX`), and everything on a descriptor that cannot be read or written so (a
regular file, a terminal, an older kernel), goes through two daemon threads doing blocking reads
and writes. A daemon thread still blocked on a pipe whose peer neither writes nor reads is
abandoned at exit instead of being joined.

Stdout only ever carries protocol lines: while the transport is open, file descriptor 1 points at
stderr (stray ``print`` or child-process output lands there) and descriptor 0 at ``/dev/null``;
the wire is served from private duplicates, and both descriptors are restored on exit. Passing
explicit ``stdin_fd`` / ``stdout_fd`` skips that diversion (tests use pipes this way).

On exit, messages already written to the write stream are flushed, for as long as the peer keeps
reading: only ``flush_timeout`` seconds without a byte written ends the wait (a busy machine may
take seconds per batch; a peer that stopped reading must not keep the process), so closing the
write stream after the last response is enough to deliver it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import select
import stat
import sys
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Final

import anyio
from anyio.from_thread import BlockingPortal
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from codex_app_bridge.transport._framing import (
    DEFAULT_MAX_MESSAGE_BYTES,
    InboundItem,
    LineSplitter,
    OutboundItem,
    decode_line,
    encode_item,
)
from codex_app_bridge.transport._streams import OUTBOUND_QUEUE_CAPACITY, TransportStreams

__all__ = ["stdio_transport"]

logger = logging.getLogger(__name__)

_READ_CHUNK = 1 << 20
_WRITE_BATCH = 1 << 20  # bytes joined into one write when several messages are queued
_PIPE_CHUNK = 1 << 16  # bytes per write call: a Linux pipe's default buffer
_WIDE_PIPE = 1 << 20
"""Stdout, when it is a pipe, is widened to this (Linux ``F_SETPIPE_SZ``; the default is 64 KiB,
the usual ``fs.pipe-max-size`` 1 MiB): a client reading a fast stream (``command/exec`` output,
a turn's deltas) is woken once per MiB instead of once per 64 KiB, which counts on a loaded
machine, where every wake-up waits for a core. Kernel memory, not the server's. Writes still go
``_PIPE_CHUNK`` at a time (the exit flush watches their progress)."""
_F_SETPIPE_SZ = 1031


def _widen_pipe(fd: int) -> None:
    with contextlib.suppress(OSError):  # not a pipe, capped by fs.pipe-max-size, or not Linux
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            fcntl.fcntl(fd, _F_SETPIPE_SZ, _WIDE_PIPE)


_DIRECT_WRITE_MAX = _PIPE_CHUNK
"""Largest batch the event loop writes itself (``RWF_NOWAIT``): answers and short bursts. A larger
one (a fast stream's backlog) goes to the writer thread, which writes while the loop makes more."""
_NOWAIT: Final = getattr(os, "RWF_NOWAIT", 0)
_UNSUPPORTED: Final = frozenset({errno.EOPNOTSUPP, errno.EINVAL, errno.ESPIPE, errno.ENOSYS})
"""Errors of a ``RWF_NOWAIT`` call that mean the descriptor (or kernel) does not support it."""


def _pollable(fd: int) -> bool:
    """Whether the event loop may move ``fd``'s bytes itself: a pipe or a socket, on a system
    whose ``preadv``/``pwritev`` take ``RWF_NOWAIT``."""
    if not _NOWAIT or not hasattr(os, "preadv") or not hasattr(os, "pwritev"):
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


_LOOP_READ = _PIPE_CHUNK
"""Bytes the event loop reads at most at a time (a pipe's default buffer): its buffer is kept
for the connection's life, resident (a 1 MiB one would add as much to the process's RSS); a long
line takes several reads."""

_INBOUND_CAPACITY = 256  # decoded lines waiting for the connection (a chunk's worth, no hop each)


def _read_some(fd: int) -> bytes:
    while True:
        try:
            return os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            # The descriptor was inherited in non-blocking mode: wait for data instead of spinning.
            select.select([fd], [], [])


def _write_all(fd: int, data: bytes, progress: list[int]) -> None:
    """Write all of ``data``, adding each write's byte count to ``progress[0]`` (at most a pipe
    buffer per write, so that a slow reader's progress shows while a big batch is written)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view[:_PIPE_CHUNK])
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        progress[0] += written
        view = view[written:]


def _call(portal: BlockingPortal, func: Callable[..., object], *args: object) -> bool:
    """Run ``func(*args)`` on the event loop from a thread; False once the loop side is gone."""
    try:
        portal.call(func, *args)
    except BaseException:
        return False
    return True


def _reader_thread(fd: int, portal: BlockingPortal, chunks: MemoryObjectSendStream[bytes]) -> None:
    try:
        while True:
            try:
                chunk = _read_some(fd)
            except OSError as exc:
                logger.warning("stdin read failed, treating it as end of input: %s", exc)
                chunk = b""
            if not chunk:
                return
            if not _call(portal, chunks.send, chunk):
                return
    finally:
        _call(portal, chunks.close)


def _writer_thread(
    fd: int,
    portal: BlockingPortal,
    next_batch: Callable[[], Awaitable[bytes | None]],
    on_broken: Callable[[], None],
    on_done: Callable[[], None],
    progress: list[int],
) -> None:
    try:
        while True:
            try:
                batch = portal.call(next_batch)
            except BaseException:
                return
            if batch is None:
                return
            try:
                _write_all(fd, batch, progress)
            except OSError as exc:
                logger.info("stdout closed by the peer: %s", exc)
                _call(portal, on_broken)
                return
    finally:
        _call(portal, on_done)


class _LoopReader:
    """Reads ``fd`` on the event loop: what has arrived, once it is readable (``RWF_NOWAIT``,
    so a read never waits for more). ``broken``: the descriptor turned out not to support such
    reads (the caller reads the rest from a thread)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.broken = False
        self._buffer = bytearray(_LOOP_READ)

    async def chunks(self) -> AsyncIterator[bytes]:
        buffer = self._buffer
        view = memoryview(buffer)
        while True:
            try:
                count = os.preadv(self.fd, [buffer], -1, _NOWAIT)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            except OSError as exc:
                if exc.errno in _UNSUPPORTED:
                    self.broken = True
                else:
                    logger.warning("stdin read failed, treating it as end of input: %s", exc)
                return
            if not count:
                return
            yield bytes(view[:count])


async def _decode_chunks(
    chunks: MemoryObjectReceiveStream[bytes],
    inbound: MemoryObjectSendStream[InboundItem],
    limit: int | None,
    prefix: bytes,
    loop_reader: _LoopReader | None,
    start_thread: Callable[[], None],
) -> None:
    splitter = LineSplitter(limit)

    async def every_chunk() -> AsyncIterator[bytes]:
        if loop_reader is not None:
            async for chunk in loop_reader.chunks():
                yield chunk
            if not loop_reader.broken:
                return
            start_thread()  # the rest from the reader thread
        async for chunk in chunks:
            yield chunk

    async with chunks, inbound:
        try:
            for line in splitter.feed(prefix) if prefix else ():
                item = decode_line(line)
                if item is not None:
                    await inbound.send(item)
            async for chunk in every_chunk():
                for line in splitter.feed(chunk):
                    item = decode_line(line)
                    if item is not None:
                        try:
                            inbound.send_nowait(item)
                        except anyio.WouldBlock:
                            await inbound.send(item)
            tail = splitter.finish()
            item = None if tail is None else decode_line(tail)
            if item is not None:
                await inbound.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return


class _StdDiversion:
    """Points fd 0 at /dev/null and fd 1 at stderr, keeping private duplicates for the wire."""

    def __init__(self, divert_stdin: bool, divert_stdout: bool) -> None:
        self.wire_in: int | None = None
        self.wire_out: int | None = None
        if divert_stdin:
            self.wire_in = os.dup(0)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)
        if divert_stdout:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            self.wire_out = os.dup(1)
            os.dup2(2, 1)

    def restore(self, reader_alive: bool, writer_alive: bool) -> None:
        if self.wire_out is not None:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            os.dup2(self.wire_out, 1)
            # A thread still blocked on the duplicate must never see its number recycled.
            if not writer_alive:
                os.close(self.wire_out)
        if self.wire_in is not None:
            os.dup2(self.wire_in, 0)
            if not reader_alive:
                os.close(self.wire_in)


@asynccontextmanager
async def stdio_transport(
    *,
    stdin_fd: int | None = None,
    stdout_fd: int | None = None,
    capacity: int = OUTBOUND_QUEUE_CAPACITY,
    flush_timeout: float = 5.0,
    max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
    prefix: bytes = b"",
) -> AsyncGenerator[TransportStreams]:
    """Serve JSON Lines on stdin/stdout (or the given descriptors); yields ``(read, write)``.
    A line past ``max_message_bytes`` is refused without being kept (``None``: no limit).
    ``prefix``: bytes of the input read before (``serve``'s first line), read first."""
    diversion = _StdDiversion(stdin_fd is None, stdout_fd is None)
    in_fd = stdin_fd if stdin_fd is not None else diversion.wire_in
    out_fd = stdout_fd if stdout_fd is not None else diversion.wire_out
    assert in_fd is not None
    assert out_fd is not None
    _widen_pipe(out_fd)

    inbound_send, inbound_recv = anyio.create_memory_object_stream[InboundItem](_INBOUND_CAPACITY)
    outbound_send, outbound_recv = anyio.create_memory_object_stream[OutboundItem](capacity)
    chunks_send, chunks_recv = anyio.create_memory_object_stream[bytes](0)
    flushed = anyio.Event()
    written = [0]  # bytes written (by the loop or the writer thread, never both at once)
    direct = [_pollable(out_fd)]  # whether the loop may still write a batch itself

    def write_now(batch: bytes) -> bytes:
        """What is left of ``batch`` once the loop wrote what the pipe takes at once."""
        try:
            count = os.pwritev(out_fd, [batch], -1, _NOWAIT)
        except BlockingIOError:
            return batch
        except OSError as exc:
            if exc.errno in _UNSUPPORTED:
                direct[0] = False
            return batch  # the writer thread meets the error again, and reports it
        written[0] += count
        return batch[count:]

    async def next_batch() -> bytes | None:
        """The next bytes for the writer thread to write (``None``: the stream ended); the
        batches the pipe takes at once are written here meanwhile, on the loop."""
        while True:
            try:
                first = await outbound_recv.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return None
            parts = [encode_item(first), b"\n"]
            size = len(parts[0])
            while size < _WRITE_BATCH:
                try:
                    item = outbound_recv.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                    break
                data = encode_item(item)
                parts += (data, b"\n")
                size += len(data)
            batch = b"".join(parts)
            if direct[0] and len(batch) <= _DIRECT_WRITE_MAX:
                batch = write_now(batch)
                if not batch:
                    continue
            return batch

    reader: threading.Thread | None = None
    writer: threading.Thread | None = None
    loop_reader = _LoopReader(in_fd) if _pollable(in_fd) else None
    try:
        async with BlockingPortal() as portal, anyio.create_task_group() as tg:

            def start_reader() -> None:
                nonlocal reader
                reader = threading.Thread(
                    target=_reader_thread,
                    args=(in_fd, portal, chunks_send),
                    name="codex-app-bridge stdin",
                    daemon=True,
                )
                reader.start()

            tg.start_soon(
                _decode_chunks,
                chunks_recv,
                inbound_send,
                max_message_bytes,
                prefix,
                loop_reader,
                start_reader,
            )
            writer = threading.Thread(
                target=_writer_thread,
                args=(out_fd, portal, next_batch, outbound_recv.close, flushed.set, written),
                name="codex-app-bridge stdout",
                daemon=True,
            )
            if loop_reader is None:
                start_reader()
            writer.start()
            try:
                yield inbound_recv, outbound_send
            finally:
                # Deliver what the caller queued, then stop reading.
                outbound_send.close()
                seen = -1
                while not flushed.is_set() and written[0] != seen:
                    seen = written[0]
                    with anyio.move_on_after(flush_timeout, shield=True):
                        await flushed.wait()
                outbound_recv.close()
                inbound_recv.close()
                chunks_recv.close()
                # The reader thread may still be blocked on a read that never returns.
                chunks_send.close()
                tg.cancel_scope.cancel()
    finally:
        diversion.restore(
            reader_alive=reader is not None and reader.is_alive(),
            writer_alive=writer is not None and writer.is_alive(),
        )
