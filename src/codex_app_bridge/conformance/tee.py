"""A stdio tee in front of a server: ``python -m codex_app_bridge.conformance.tee LOG -- ARGV...``

Role: lets a client library that spawns its own "codex binary" be watched on the wire. It runs
``ARGV``, copies its stdin to the child and the child's stdout to its own, line by line, and
appends every line to ``LOG`` as ``{"dir": "c2s" | "s2c", "line": <parsed JSON or the raw
text>}`` (a ``{"dir": "start", "argv": [...]}`` line first, so several processes can share one
log). stderr is inherited. The exit status is the child's. Boundary: bytes and lines only.

``run(LOG, ARGV)`` is the same in process (``codex-app-bridge record`` sits on it).
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
from typing import IO, Any

__all__ = ["EXIT_TERMINATED", "TranscriptLog", "main", "parsed", "pump", "run"]

EXIT_TERMINATED = 143
"""``run``'s status after SIGTERM (128 + 15, as a shell reports it)."""


class TranscriptLog:
    """The tee's log: one JSON record per line, written whole under a lock (two pumps share it)."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._file.write(json.dumps(record) + "\n")
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def parsed(raw: bytes) -> object:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace").rstrip("\n")


def pump(source: IO[bytes], sink: IO[bytes], log: TranscriptLog, direction: str) -> None:
    try:
        for raw in iter(source.readline, b""):
            if raw.strip():
                log.write({"dir": direction, "line": parsed(raw)})
            try:
                sink.write(raw)
                sink.flush()
            except (BrokenPipeError, ValueError):
                break
    finally:
        with contextlib.suppress(BrokenPipeError, OSError):
            sink.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m codex_app_bridge.conformance.tee LOG -- ARGV...", file=sys.stderr)
        return 2
    return run(args[0], args[2:])


def run(log_path: str, command: list[str]) -> int:
    """Run ``command`` between this process's stdin/stdout and the child's, logging every line
    to ``log_path`` (appended); the child's exit status once its stdout closed. SIGTERM (in the
    main thread) is passed on to the child, and the status is then ``EXIT_TERMINATED``."""
    log = TranscriptLog(log_path)
    try:
        log.write({"dir": "start", "argv": command})
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert child.stdin is not None
        assert child.stdout is not None
        terminated: list[int] = []

        def on_sigterm(signum: int, _frame: object) -> None:
            terminated.append(signum)  # the child ends its output, then this returns
            child.terminate()

        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, on_sigterm) if main else None
        # a reader of its own on descriptor 0, not sys.stdin.buffer: this daemon thread may
        # still be blocked in its readline (the client keeps stdin open) when the interpreter
        # shuts down, holding that reader's lock, and the shutdown closes sys.stdin: it waited
        # 1 s for the lock and aborted ("Fatal Python error: _enter_buffered_busy", status -6
        # instead of 143 after SIGTERM). Nothing at shutdown closes this one.
        from_client = open(sys.stdin.fileno(), "rb", closefd=False)  # noqa: SIM115
        to_server = child.stdin

        def client_to_child() -> None:
            # SIGINT and SIGTERM go to the main thread: taken by this one, blocked in its read,
            # the main thread's read of the child's output is not interrupted and the signal's
            # handler waits for output that may never come
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
            pump(from_client, to_server, log, "c2s")

        to_child = threading.Thread(target=client_to_child, daemon=True)
        to_child.start()
        try:
            pump(child.stdout, sys.stdout.buffer, log, "s2c")
            status = child.wait()
            return EXIT_TERMINATED if terminated else status
        except KeyboardInterrupt:
            _stop(child)  # it had the same Ctrl-C: give it the time to finish its files
            raise
        finally:
            if main:
                signal.signal(signal.SIGTERM, previous)
    finally:
        log.close()


def _stop(child: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """Wait for ``child`` to exit, terminating and then killing it if it takes too long."""
    for end in (None, child.terminate, child.kill):
        if end is not None:
            end()
        try:
            child.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


if __name__ == "__main__":
    raise SystemExit(main())
