"""A stdio tee in front of a server: ``python -m codex_app_bridge.conformance.tee LOG -- ARGV...``

Role: lets a client library that spawns its own "codex binary" be watched on the wire. It runs
``ARGV``, copies its stdin to the child and the child's stdout to its own, line by line, and
appends every line to ``LOG`` as ``{"dir": "c2s" | "s2c", "line": <parsed JSON or the raw
text>}`` (a ``{"dir": "start", "argv": [...]}`` line first, so several processes can share one
log). stderr is inherited. The exit status is the child's. Boundary: bytes and lines only.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from typing import IO, Any

__all__ = ["main"]


class _Log:
    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._file.write(json.dumps(record) + "\n")
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def _parsed(raw: bytes) -> object:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace").rstrip("\n")


def _pump(source: IO[bytes], sink: IO[bytes], log: _Log, direction: str) -> None:
    try:
        for raw in iter(source.readline, b""):
            if raw.strip():
                log.write({"dir": direction, "line": _parsed(raw)})
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
    log = _Log(args[0])
    command = args[2:]
    log.write({"dir": "start", "argv": command})
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None
    assert child.stdout is not None
    to_child = threading.Thread(
        target=_pump, args=(sys.stdin.buffer, child.stdin, log, "c2s"), daemon=True
    )
    to_child.start()
    _pump(child.stdout, sys.stdout.buffer, log, "s2c")
    code = child.wait()
    log.close()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
