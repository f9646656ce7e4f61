"""Child processes as Codex runs them: a process group of their own, a PTY or pipes, killed whole.

Role: the one place the server starts a process on the user's machine (``spawn``) and the one
place it kills one (``ChildProcess.kill``). Every child:

* leads a new session and process group (``setsid``), so a kill reaches the shell and every
  background child it started (``sleep 60 &``) with one ``killpg``; descendants that left the
  group are found through ``/proc`` and killed too;
* is watched by the guard (``_guard``), a small process that SIGKILLs every group still listed
  if the server dies without cleaning up (``kill -9``, a crash). The child is started with no
  code of ours run in it (no ``preexec_fn``), so Python ``vfork``s instead of copying the whole
  server (``fork``): a command's start costs well under a millisecond instead of 5-15 ms. Only
  if the guard cannot run is the child set up the old way (``PR_SET_PDEATHSIG`` in the forked
  child, tied to the spawning thread, which is the event loop's);
* is registered in ``LIVE``, which the server's exit path empties (``kill_all``).

Output is read from non-blocking descriptors on the event loop (``anyio.wait_readable``): no
thread per process, no busy loop. The exit is awaited on a pidfd where the kernel has them.

Boundary: knows nothing of tools, policies or events.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import pty
import signal
import struct
import subprocess
import termios
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import anyio

from codex_app_bridge.machine._guard import Guard, descendants

__all__ = ["LIVE", "ChildProcess", "Output", "SpawnError", "kill_all", "spawn"]

_PR_SET_PDEATHSIG: Final = 1
_READ_SIZE: Final = 256 * 1024
_PIPE_SIZE: Final = 256 * 1024
"""Output pipes are widened to this (Linux ``F_SETPIPE_SZ``; the default is 64 KiB) so a command
that prints fast is read in large chunks: fewer reads, fewer output deltas, less per-chunk cost."""


def _output_pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe()
    with contextlib.suppress(OSError, AttributeError):  # capped by fs.pipe-max-size, or not Linux
        fcntl.fcntl(read_end, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]
    return read_end, write_end


LIVE: Final[dict[int, ChildProcess]] = {}
"""Every child the server started and has not reaped: pid -> process."""


class SpawnError(Exception):
    """The process could not be started; ``os_error`` is the ``OSError`` that said why."""

    def __init__(self, os_error: OSError) -> None:
        super().__init__(str(os_error))
        self.os_error = os_error

    @property
    def rust_text(self) -> str:
        """``No such file or directory (os error 2)``: the message as Rust's io::Error shows it."""
        err = self.os_error
        return f"{err.strerror or os.strerror(err.errno or 0)} (os error {err.errno})"


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - not Linux
        return None


_LIBC: Final = _libc()


def _child_setup() -> None:  # pragma: no cover - runs in the forked child
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:
        os._exit(137)  # the server died before the child got here


class _GuardKeeper:
    """The one guard (``_guard.Guard``) of this server: started at the first child, started
    again (and told every live child) if it died."""

    def __init__(self) -> None:
        self._guard: Guard | None = None
        self._broken = False

    def ready(self) -> bool:
        """Whether a guard runs (started now if needed); ``False`` if none can be started."""
        guard = self._guard
        if guard is not None and guard.process.poll() is None:
            return True
        if self._broken:
            return False
        try:
            guard = Guard()
        except OSError:
            self._broken = True
            return False
        if self._guard is not None:
            self._guard.close()
        self._guard = guard
        for pid in LIVE:
            guard.watch(pid)
        return True

    def watch(self, pid: int) -> None:
        """Tell the guard about ``pid``, already in ``LIVE`` (a guard that died since ``ready``
        is replaced, and the new one learns every live child)."""
        if self._guard is not None and not self._guard.watch(pid):
            self.ready()

    def forget(self, pid: int) -> None:
        if self._guard is not None:
            self._guard.forget(pid)


_GUARD: Final = _GuardKeeper()


def _set_size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _nonblocking(fd: int) -> None:
    os.set_blocking(fd, False)


@dataclass(eq=False)
class ChildProcess:
    """A started child: its group, its output descriptors and its stdin."""

    popen: subprocess.Popen[bytes]
    tty: bool
    stdout_fd: int | None
    """Read end of stdout (the PTY master when ``tty``; stdout+stderr merged when asked)."""
    stderr_fd: int | None
    stdin_fd: int | None
    """Write end of stdin (the PTY master when ``tty``), ``None`` once closed."""
    pidfd: int | None = None
    returncode: int | None = None
    killed: bool = False
    _exited: anyio.Event = field(default_factory=anyio.Event)

    @property
    def pid(self) -> int:
        return self.popen.pid

    # --- output ---------------------------------------------------------------------------

    async def read(self, fd: int, size: int = _READ_SIZE) -> bytes:
        """The next chunk of ``fd``'s output (at most ``size`` bytes), ``b""`` at its end (EOF
        or PTY hang-up)."""
        while True:
            try:
                return os.read(fd, size)
            except BlockingIOError:
                await anyio.wait_readable(fd)
            except OSError as exc:
                if exc.errno == errno.EIO:  # PTY master after the last slave closed
                    return b""
                raise

    # --- stdin ----------------------------------------------------------------------------

    async def write(self, data: bytes) -> None:
        """Write ``data`` to stdin; ``BrokenPipeError`` if it is closed."""
        fd = self.stdin_fd
        if fd is None:
            raise BrokenPipeError(errno.EPIPE, "stdin is closed")
        view = memoryview(data)
        while view:
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                await anyio.wait_writable(fd)
                continue
            view = view[written:]

    def close_stdin(self) -> None:
        fd, self.stdin_fd = self.stdin_fd, None
        if fd is not None and fd != self.stdout_fd:
            with contextlib.suppress(OSError):
                os.close(fd)

    def resize(self, rows: int, cols: int) -> None:
        if not self.tty or self.stdout_fd is None:
            raise OSError(errno.ENOTTY, "process is not attached to a PTY")
        _set_size(self.stdout_fd, rows, cols)

    # --- exit -----------------------------------------------------------------------------

    async def wait(self) -> int:
        """The exit code (``-signal`` when killed by one), once the process has exited."""
        if self.returncode is not None:
            return self.returncode
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                await anyio.wait_readable(self.pidfd)
            self._reap(self.popen.wait())
        else:
            self._reap(await anyio.to_thread.run_sync(self.popen.wait, abandon_on_cancel=True))
        return self.returncode if self.returncode is not None else -1

    def _reap(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = code
            if LIVE.pop(self.pid, None) is not None:
                _GUARD.forget(self.pid)
            if self.pidfd is not None:
                with contextlib.suppress(OSError):
                    os.close(self.pidfd)
                self.pidfd = None
            self._exited.set()

    def poll(self) -> int | None:
        if self.returncode is None:
            code = self.popen.poll()
            if code is not None:
                self._reap(code)
        return self.returncode

    def kill(self) -> None:
        """SIGKILL the whole group and every descendant still found under the child."""
        if self.returncode is not None and not _group_alive(self.pid):
            return
        self.killed = True
        victims = descendants(self.pid)
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)
        for pid in victims:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if self.returncode is None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)

    def close(self) -> None:
        """Close every descriptor the server holds for this child."""
        fds = {self.stdout_fd, self.stderr_fd, self.stdin_fd}
        self.stdout_fd = self.stderr_fd = self.stdin_fd = None
        for fd in fds:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


@dataclass(eq=False)
class Output:
    """One output descriptor of a child, read by one consumer; ``caught_up`` is set once
    everything the child wrote before its exit has been read, or the consumer ``stop``-ped
    (which it does whatever ends its reading).

    Why: a consumer that waits for its client (backpressure) reads behind the child; when the
    child exits, up to a pipe's worth of its output is still unread. Waiting a fixed time for
    it lost that tail when the client was slow; waiting for the output's end hangs when a
    background child holds the pipe open. At the exit (``child_exited``) the bytes still in the
    pipe are counted (``FIONREAD``): the output written before the exit is exactly those."""

    child: ChildProcess
    fd: int | None
    caught_up: anyio.Event = field(default_factory=anyio.Event)
    _owed: int | None = None

    async def read(self, size: int = _READ_SIZE) -> bytes:
        """The next chunk (``b""`` at the end), as ``ChildProcess.read``."""
        if self.fd is None:
            self.caught_up.set()
            return b""
        chunk = await self.child.read(self.fd, size)
        if not chunk:
            self.caught_up.set()
        elif self._owed is not None:
            self._owed -= len(chunk)
            if self._owed <= 0:
                self.caught_up.set()
        return chunk

    def stop(self) -> None:
        """The consumer reads no more (its end, an error): nobody waits for the rest."""
        self.caught_up.set()

    def child_exited(self) -> None:
        """Count what the child left unread; call once its exit is known."""
        if self._owed is not None or self.caught_up.is_set():
            return
        self._owed = _unread(self.fd)
        if self._owed <= 0:
            self.caught_up.set()


def _unread(fd: int | None) -> int:
    if fd is None:
        return 0
    try:
        raw = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    except OSError:
        return 0
    return struct.unpack("i", raw)[0]


def _close_all(fds: Sequence[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except OSError:
        return False
    return True


def spawn(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    tty: bool = False,
    merge_stderr: bool = False,
    stdin_open: bool = True,
    size: tuple[int, int] | None = None,
    hand_over: Sequence[int] = (),
) -> ChildProcess:
    """Start ``argv`` in a new session and process group (see the module docstring).

    ``tty``: one PTY for stdin/stdout/stderr (``size`` rows, cols). Otherwise pipes: stdout, and
    stderr apart or ``merge_stderr`` into stdout; stdin a pipe, or ``/dev/null`` when not
    ``stdin_open``. ``hand_over``: descriptors the child keeps under their numbers, closed here
    once it started (or failed to). ``SpawnError`` when the program or ``cwd`` cannot be used."""
    close_after: list[int] = list(hand_over)
    if not argv:
        _close_all(close_after)
        raise SpawnError(OSError(errno.ENOENT, os.strerror(errno.ENOENT)))
    setup = None if _GUARD.ready() else _child_setup
    try:
        if tty:
            master, slave = pty.openpty()
            rows, cols = size or (24, 80)
            _set_size(master, rows, cols)
            close_after.append(slave)
            popen = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=slave,
                stdout=slave,
                stderr=slave,
                start_new_session=True,
                preexec_fn=setup,
                close_fds=True,
                pass_fds=tuple(hand_over),
            )
            _nonblocking(master)
            child = ChildProcess(popen, True, master, None, master)
        else:
            out_r, out_w = _output_pipe()
            close_after.append(out_w)
            err_r: int | None = None
            err_w = out_w
            if not merge_stderr:
                err_r, err_w = _output_pipe()
                close_after.append(err_w)
            in_r: int | None = None
            in_w: int | None = None
            if stdin_open:
                in_r, in_w = os.pipe()
                close_after.append(in_r)
            popen = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=in_r if in_r is not None else subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
                start_new_session=True,
                preexec_fn=setup,
                close_fds=True,
                pass_fds=tuple(hand_over),
            )
            for fd in (out_r, err_r, in_w):
                if fd is not None:
                    _nonblocking(fd)
            child = ChildProcess(popen, False, out_r, err_r, in_w)
    except OSError as exc:
        _close_all(close_after)
        raise SpawnError(exc) from None
    _close_all(close_after)
    try:
        child.pidfd = os.pidfd_open(child.pid)
    except (AttributeError, OSError):
        child.pidfd = None
    LIVE[child.pid] = child
    if setup is None:
        _GUARD.watch(child.pid)
    return child


def kill_all() -> None:
    """Kill every child the server started (server exit)."""
    for child in list(LIVE.values()):
        child.kill()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            child._reap(child.popen.wait(timeout=5))  # pyright: ignore[reportPrivateUsage]
        child.close()
    LIVE.clear()
