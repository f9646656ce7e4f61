#!/usr/bin/env python3
"""Start-up and memory of ``codex-app-bridge serve --script FILE`` as FILE grows: the file is
indexed, not loaded, so ``initialize`` is answered in the same time and the idle memory is the
same whatever its size, and playing it streams.

    PYTHONPATH=src python bench/serve_script.py [--lines N ...] [--kind script|rollout]
        [--turns T]

For each N, a file of N lines is written (``script``: event envelopes, T turns of agent message
deltas; ``rollout``: the same deltas as rollout ``event_msg`` lines; completed items are not used
because the thread's history keeps every one of them, whatever the source), then the server is
spawned over a pipe and the figures printed: spawn to the ``initialize`` answer, resident memory
(VmRSS) once initialized, the first turn's latency (its index pass included), the whole replay's
time, and peak resident memory (VmHWM) after every turn was played.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
THREAD = "01a2aaaa-0000-7000-8000-00000000bench"


def _turn_id(index: int) -> str:
    return f"01a2aaaa-0000-7000-8000-{index:012d}"


def write_script(path: Path, lines: int, turns: int) -> None:
    per_turn = max(4, lines // turns)
    with path.open("w", encoding="utf-8") as out:
        for index in range(turns):
            turn = _turn_id(index)
            item = {"type": "AgentMessage", "id": f"msg_{index}", "content": []}
            common = {"thread_id": THREAD, "turn_id": turn}
            rows = [
                {"type": "task_started", "turn_id": turn, "started_at": 1},
                {"type": "item_started", **common, "item": item, "started_at_ms": 1},
            ]
            delta = {"type": "agent_message_content_delta", **common, "item_id": item["id"]}
            body = [json.dumps({"id": turn, "msg": {**delta, "delta": "word "}})] * (per_turn - 3)
            for row in rows:
                out.write(json.dumps({"id": turn, "msg": row}) + "\n")
            out.write("\n".join(body) + "\n")
            end = {"type": "task_complete", "turn_id": turn, "last_agent_message": None}
            out.write(json.dumps({"id": turn, "msg": end}) + "\n")


def write_rollout(path: Path, lines: int, turns: int) -> None:
    per_turn = max(3, lines // turns)
    stamp = "2026-01-01T00:00:00.000Z"

    def line(kind: str, payload: dict[str, object]) -> str:
        return json.dumps({"timestamp": stamp, "type": kind, "payload": payload}) + "\n"

    with path.open("w", encoding="utf-8") as out:
        out.write(line("session_meta", {"id": THREAD, "cwd": "/"}))
        for index in range(turns):
            turn = _turn_id(index)
            out.write(line("event_msg", {"type": "task_started", "turn_id": turn}))
            delta = {
                "type": "agent_message_content_delta",
                "thread_id": THREAD,
                "turn_id": turn,
                "item_id": f"msg_{index}",
                "delta": "word ",
            }
            out.write(line("event_msg", delta) * (per_turn - 2))
            out.write(line("event_msg", {"type": "task_complete", "turn_id": turn}))


def _status(pid: int, key: str) -> int:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith(key + ":"):
            return int(row.split()[1]) // 1024  # MiB
    return -1


def measure(path: Path, turns: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "codex_app_bridge", "serve", "--script", str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None

    def send(message: dict[str, object]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    def until(predicate: object) -> dict[str, object]:
        assert proc.stdout is not None
        while True:
            message = json.loads(proc.stdout.readline())
            if predicate(message):  # type: ignore[operator]
                return message  # type: ignore[no-any-return]

    send({"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "b", "version": "1"}}})
    until(lambda m: m.get("id") == 0)
    figures: dict[str, float] = {"initialize_s": time.perf_counter() - started}
    figures["idle_rss_mib"] = _status(proc.pid, "VmRSS")
    send({"id": 1, "method": "thread/start", "params": {}})
    thread = until(lambda m: m.get("id") == 1)
    thread_id = thread["result"]["thread"]["id"]  # type: ignore[index]
    began = time.perf_counter()
    for turn in range(turns):
        send(
            {
                "id": 10 + turn,
                "method": "turn/start",
                "params": {"threadId": thread_id, "input": [{"type": "text", "text": "go"}]},
            }
        )
        done = until(lambda m: m.get("method") == "turn/completed")
        status = done["params"]["turn"]["status"]  # type: ignore[index]
        assert status == "completed", done
        if turn == 0:
            figures["first_turn_s"] = time.perf_counter() - began
    figures["replay_s"] = time.perf_counter() - began
    figures["peak_rss_mib"] = _status(proc.pid, "VmHWM")
    proc.stdin.close()
    proc.wait(timeout=60)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, nargs="+", default=[1_000, 200_000])
    parser.add_argument("--kind", choices=("script", "rollout"), default="script")
    parser.add_argument("--turns", type=int, default=2)
    args = parser.parse_args()
    write = write_script if args.kind == "script" else write_rollout
    with tempfile.TemporaryDirectory() as tmp:
        for lines in args.lines:
            path = Path(tmp) / f"{args.kind}-{lines}.jsonl"
            write(path, lines, args.turns)
            size = path.stat().st_size / 1e6
            figures = measure(path, args.turns)
            print(
                f"{args.kind} {lines:>9,} lines ({size:7.1f} MB): "
                f"initialize {figures['initialize_s'] * 1000:6.0f} ms, "
                f"idle RSS {figures['idle_rss_mib']:4.0f} MiB, "
                f"first turn {figures['first_turn_s']:6.2f} s, "
                f"replay {figures['replay_s']:6.2f} s, "
                f"peak RSS {figures['peak_rss_mib']:4.0f} MiB"
            )
            path.unlink()


if __name__ == "__main__":
    main()
