"""Shared pieces of the process-level benchmarks: spawning the servers under test, sampling their
CPU and memory from ``/proc``, a JSON-RPC client over the child's stdio whose reader is cheap
enough not to be the bottleneck, and the event scripts the bridge plays.

The reader (``StdioClient``) reads the child's stdout in large ``os.read`` chunks. Outside a
stream it splits lines and parses them (handshake, responses); while a stream runs
(``stream_until``) it only keeps the raw chunks and looks for the end marker, so its cost per
line is a fraction of a microsecond; the lines are parsed and checked after the clock stopped
(``check_deltas``). ``throughput.py`` proves the ceiling by reading a fake server that writes
pre-encoded lines.

Servers under test: ``bridge_argv`` (``python -m codex_app_bridge`` of this checkout),
``_real.real_servers`` (the real ``codex app-server`` 0.163.0 from the ``openai-codex-cli-bin``
wheel, in a scratch ``CODEX_HOME`` pointed at the project's mock Responses endpoint) and
``fake_server_argv`` (the bare Python passthrough and the pre-encoded fake of
``_fake_server.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
BENCH = Path(__file__).resolve().parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))  # the bench measures this checkout, installed or not
READ_SIZE = 1 << 20

Message = dict[str, Any]

THREAD_ID = "01a2aaaa-0000-7000-8000-000000000001"
TURN_ID = "01a2aaaa-0000-7000-8000-0000000000a1"
ITEM_ID = "msg_bench"
DELTA_METHOD = b'"method":"item/agentMessage/delta"'
TURN_COMPLETED = b'"method":"turn/completed"'


# ---------------------------------------------------------------------------- /proc sampling


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _status_kb(pid: int, key: bytes) -> int:
    with open(f"/proc/{pid}/status", "rb") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    return 0


def peak_rss_kb(pid: int) -> int:
    """VmHWM: the peak resident set size of a process so far."""
    return _status_kb(pid, b"VmHWM:")


def rss_kb(pid: int) -> int:
    """VmRSS: the resident set size of a process now."""
    return _status_kb(pid, b"VmRSS:")


# ---------------------------------------------------------------------------- servers under test


def bridge_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment that makes ``python -m codex_app_bridge`` import this checkout's ``src``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    env.setdefault("LOG_LEVEL", "WARNING")
    if extra:
        env.update(extra)
    return env


def bridge_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "codex_app_bridge", *args]


def fake_server_argv(mode: str, script: Path) -> list[str]:
    """``passthrough``: reads the script's event lines and rewrites each into its notification
    while streaming; ``preencoded``: writes lines encoded before the turn (the client's ceiling)."""
    return [sys.executable, str(BENCH / "_fake_server.py"), mode, str(script)]


# ---------------------------------------------------------------------------- the client


class StdioClient:
    """A server child process and a JSON-RPC client on its stdio (see the module docstring)."""

    def __init__(
        self,
        argv: Sequence[str],
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        *,
        read_log: bool = False,
    ) -> None:
        """``read_log``: the child's stderr is a pipe that ``read_both_within`` reads too
        (otherwise it is inherited)."""
        self.spawned_at = time.perf_counter()
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if read_log else None,
            env=env,
            cwd=cwd,
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.pid = self.proc.pid
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self._err = self.proc.stderr.fileno() if self.proc.stderr is not None else None
        self._buf = b""
        self._next_id = 0

    # -- sending

    def send_bytes(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._in, view) :]

    def send(self, message: Message) -> None:
        self.send_bytes(orjson.dumps(message) + b"\n")

    def request(self, method: str, params: Any = None) -> int:
        request_id = self._next_id
        self._next_id += 1
        message: Message = {"id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return request_id

    # -- reading

    def read_chunk(self) -> bytes:
        chunk = os.read(self._out, READ_SIZE)
        if not chunk:
            raise EOFError(f"server {self.pid} closed its stdout")
        return chunk

    def read_both_within(self, timeout: float) -> tuple[bytes, bytes] | None:
        """The next chunks of stdout and of the log (stderr, with ``read_log``; either may be
        empty), or None if nothing arrives within ``timeout`` seconds."""
        fds = [self._out] if self._err is None else [self._out, self._err]
        ready, _, _ = select.select(fds, [], [], max(timeout, 0.0))
        if not ready:
            return None
        out = self.read_chunk() if self._out in ready else b""
        log = os.read(self._err, READ_SIZE) if self._err is not None and self._err in ready else b""
        if self._err is not None and self._err in ready and not log:
            self._err = None  # the log was closed; stdout tells whether the server is gone
        return out, log

    def send_in_background(self, data: bytes) -> threading.Thread:
        """Write ``data`` from a thread (a server that stops reading cannot block the reader)."""

        def write() -> None:
            with contextlib.suppress(OSError):
                self.send_bytes(data)

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        return thread

    def messages(self) -> Iterator[Message]:
        """Every message the server writes from now on, parsed."""
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                if line.strip():
                    yield orjson.loads(line)
            self._buf += self.read_chunk()

    def until(self, predicate: Callable[[Message], bool]) -> list[Message]:
        seen: list[Message] = []
        for message in self.messages():
            seen.append(message)
            if predicate(message):
                return seen
        raise AssertionError("unreachable")

    def call(self, method: str, params: Any = None) -> Message:
        request_id = self.request(method, params)
        reply = self.until(lambda m: m.get("id") == request_id and "method" not in m)[-1]
        if "result" not in reply:
            raise RuntimeError(f"{method} failed: {reply}")
        return reply["result"]

    def initialize(self) -> Message:
        result = self.call("initialize", {"clientInfo": {"name": "bench", "version": "1.0"}})
        self.send({"method": "initialized"})
        return result

    def start_thread(self, cwd: str | None = None) -> str:
        params: Message = {"approvalPolicy": "never", "sandbox": "danger-full-access"}
        if cwd is not None:
            params["cwd"] = cwd
        return str(self.call("thread/start", params)["thread"]["id"])

    def stream_until(self, end: bytes = TURN_COMPLETED, first: bytes = DELTA_METHOD) -> Stream:
        """Keep every byte until the line holding ``end`` is complete; time the first chunk
        holding ``first`` and the end. Nothing is parsed here."""
        chunks: list[bytes] = []
        first_at: float | None = None
        end_at: int | None = None  # offset of ``end`` in the stream
        total = 0
        data, self._buf = self._buf, b""
        tail = b""
        while True:
            now = time.perf_counter()
            if first_at is None and _find(tail, data, first) is not None:
                first_at = now
            if end_at is None and (at := _find(tail, data, end)) is not None:
                end_at = total + at
            chunks.append(data)
            total += len(data)
            if end_at is not None:
                newline = data.find(b"\n", max(0, end_at - (total - len(data))))
                if newline >= 0:
                    chunks[-1], self._buf = data[: newline + 1], data[newline + 1 :]
                    return Stream(b"".join(chunks), first_at or now, now)
            tail = (tail + data)[-64:]
            data = self.read_chunk()

    # -- ending

    def close(self, timeout: float = 30.0) -> int:
        with contextlib.suppress(OSError):
            os.close(self._in)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            assert self.proc.stdout is not None
            self.proc.stdout.close()
            if self.proc.stderr is not None:
                self.proc.stderr.close()
            with contextlib.suppress(OSError):
                self.proc.stdin.close()  # type: ignore[union-attr]

    def __enter__(self) -> StdioClient:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.close()


def _find(tail: bytes, data: bytes, needle: bytes) -> int | None:
    """Offset of ``needle`` in ``data`` (negative: it began in ``tail``, the bytes before)."""
    at = data.find(needle)
    if at >= 0:
        return at
    at = (tail + data[: len(needle)]).find(needle)
    return at - len(tail) if at >= 0 else None


@dataclass
class Stream:
    data: bytes
    first_at: float
    end_at: float

    @property
    def lines(self) -> int:
        return self.data.count(b"\n")


def delta_text(index: int) -> str:
    """The text of delta ``index`` in every benchmark stream (unique: order is checkable)."""
    return f"d{index} "


def check_deltas(stream: Stream, expected: Sequence[str]) -> int:
    """Every ``item/agentMessage/delta`` of the stream, parsed: all of ``expected`` must be
    there, in order, with the right text (raises otherwise). Returns the count."""
    texts = [
        orjson.loads(line)["params"]["delta"]
        for line in stream.data.split(b"\n")
        if DELTA_METHOD in line
    ]
    if texts != list(expected):
        wrong = next(
            (i for i, (a, b) in enumerate(zip(texts, expected, strict=False)) if a != b),
            min(len(texts), len(expected)),
        )
        raise AssertionError(
            f"{len(texts)} deltas received, {len(expected)} expected; first difference at {wrong}"
        )
    return len(texts)


# ---------------------------------------------------------------------------- event scripts


def _line(msg: Message) -> bytes:
    return orjson.dumps({"id": TURN_ID, "msg": msg}) + b"\n"


_IDS: Message = {"thread_id": THREAD_ID, "turn_id": TURN_ID}
_ITEM: Message = {"type": "AgentMessage", "id": ITEM_ID, "content": []}
_AT: Message = {"started_at_ms": 1796000000000}


def turn_prologue() -> list[Message]:
    """The events (``msg`` objects) that open a turn of one agent message: ``task_started``,
    ``item_started``."""
    started: Message = {
        "type": "task_started",
        "turn_id": TURN_ID,
        "started_at": 1796000000,
        "model_context_window": 258400,
        "collaboration_mode_kind": "default",
    }
    return [started, {"type": "item_started", **_IDS, "item": _ITEM, **_AT}]


def delta_event(text: str) -> Message:
    return {"type": "agent_message_content_delta", **_IDS, "item_id": ITEM_ID, "delta": text}


def turn_epilogue(texts: Sequence[str]) -> list[Message]:
    """``item_completed`` (the whole text) and ``task_complete``."""
    done = {**_ITEM, "content": [{"type": "Text", "text": "".join(texts)}]}
    complete: Message = {
        "type": "task_complete",
        "turn_id": TURN_ID,
        "last_agent_message": None,
        "started_at": 1796000000,
        "completed_at": 1796000001,
        "duration_ms": 1000,
        "time_to_first_token_ms": 1,
    }
    return [{"type": "item_completed", **_IDS, "item": done, **_AT, "completed_at_ms": 1}, complete]


def write_delta_script(path: Path, deltas: int, *, turns: int = 1) -> list[str]:
    """A ``serve --script`` file of ``turns`` turns, each one agent message of ``deltas``
    ``agent_message_content_delta`` events (texts ``delta_text(0..deltas-1)``). Returns the
    texts of one turn."""
    texts = [delta_text(i) for i in range(deltas)]
    with path.open("wb") as f:
        for _ in range(turns):
            f.writelines(_line(msg) for msg in turn_prologue())
            f.writelines(_line(delta_event(text)) for text in texts)
            f.writelines(_line(msg) for msg in turn_epilogue(texts))
    return texts


# ---------------------------------------------------------------------------- reporting


def parse_servers(parser: argparse.ArgumentParser, value: str, known: Sequence[str]) -> list[str]:
    """The ``--servers`` list (comma-separated), in the order given."""
    servers = [s for s in value.split(",") if s]
    unknown = sorted(set(servers) - set(known))
    if unknown or not servers:
        parser.error(f"--servers: pick from {', '.join(known)} (got {value!r})")
    return servers


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"
