"""The guard: a small process that kills the server's children when the server dies uncleanly.

Why a process and not ``PR_SET_PDEATHSIG``: setting that signal needs code in the forked child
(``preexec_fn``), which makes Python ``fork`` the whole server instead of ``vfork``-ing it: 5 to
15 ms per command on a 60 MB server (copying its page tables), the largest part of a
``command/exec``. And the signal only reaches the direct child, not the ``sleep 60 &`` its shell
left in the group. The guard costs one write per child and kills whole groups.

Protocol (``Guard``, the server's side): the server writes ASCII lines to the guard's stdin,
``+PGID`` when a child (leader of its own group) starts and ``-PGID`` once it is reaped (its pid
may be reused after that). When stdin ends, because the server exited or was killed (its end of
the pipe is closed by the kernel), the guard SIGKILLs every group still listed, and every
descendant found under its leader, then exits. The guard leads a session of its own, so a
Ctrl-C or a signal to the server's group does not reach it first.

``main`` runs in the guard (``python -I -S`` on this file: stdlib only, no package import);
``descendants`` is shared with ``_proc``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
from typing import Final

__all__ = ["Guard", "descendants", "main"]


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (by parent pid, read from ``/proc``)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        rest = stat[stat.rfind(b")") + 2 :].split()
        if len(rest) >= 2:
            children.setdefault(int(rest[1]), []).append(int(name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def kill_group(pgid: int) -> None:
    """SIGKILL group ``pgid`` and every descendant of its leader (those that left the group)."""
    victims = descendants(pgid)
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)
    for pid in victims:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def main() -> None:  # pragma: no cover - runs in the guard process (tested through it)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    groups: set[int] = set()
    pending = b""
    while chunk := os.read(0, 65536):
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            if line.startswith(b"+"):
                groups.add(int(line[1:]))
            elif line.startswith(b"-"):
                groups.discard(int(line[1:]))
    for pgid in groups:
        kill_group(pgid)


class Guard:
    """The server's side: the guard process and the write end of its stdin."""

    _ARGV: Final = (sys.executable, "-I", "-S", "-B", os.path.abspath(__file__))

    def __init__(self) -> None:
        """Start the guard; ``OSError`` if it cannot be."""
        read_end, self._fd = os.pipe()
        try:
            self.process = subprocess.Popen(
                self._ARGV,
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        except BaseException:
            os.close(self._fd)
            raise
        finally:
            os.close(read_end)
        os.set_blocking(self._fd, False)
        self._unsent = bytearray()

    def watch(self, pgid: int) -> bool:
        """Tell the guard about a new group; ``False`` if the guard is gone."""
        return self._send(b"+%d\n" % pgid)

    def forget(self, pgid: int) -> bool:
        """Tell the guard the group's leader was reaped; ``False`` if the guard is gone."""
        return self._send(b"-%d\n" % pgid)

    def _send(self, line: bytes) -> bool:
        # never blocks the event loop: what a stalled guard has not taken waits in ``_unsent``
        self._unsent += line
        try:
            while self._unsent:
                del self._unsent[: os.write(self._fd, self._unsent)]
        except BlockingIOError:
            pass
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                return False
            raise
        return True

    def close(self) -> None:
        """Close the pipe (the guard kills what is still listed, then exits) and reap it."""
        with contextlib.suppress(OSError):
            os.close(self._fd)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)


if __name__ == "__main__":
    main()
