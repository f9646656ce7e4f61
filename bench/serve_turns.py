#!/usr/bin/env python3
"""End-to-end figures of ``codex-app-bridge serve`` over a real stdio pipe (built-in agent, no
pacing): start-up to the initialize answer, turn latency (``turn/start`` sent to ``turn/completed``
received) and notifications per second while turns stream.

    PYTHONPATH=src python bench/serve_turns.py [--turns N] [--words W]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--words", type=int, default=200, help="words of input per turn")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "codex_app_bridge", "serve", "--pace", "0"],
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

    def until(predicate: object) -> int:
        assert proc.stdout is not None
        count = 0
        while True:
            message = json.loads(proc.stdout.readline())
            count += 1
            if predicate(message):  # type: ignore[operator]
                return count

    send({"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "b", "version": "1"}}})
    until(lambda m: m.get("id") == 0)
    startup = time.perf_counter() - started
    send({"id": 1, "method": "thread/start", "params": {}})
    thread_id = None
    while thread_id is None:
        message = json.loads(proc.stdout.readline())
        if message.get("id") == 1:
            thread_id = message["result"]["thread"]["id"]
    text = " ".join(f"w{i}" for i in range(args.words))
    latencies: list[float] = []
    notifications = 0
    streaming = 0.0
    for turn in range(args.turns):
        began = time.perf_counter()
        send(
            {
                "id": 10 + turn,
                "method": "turn/start",
                "params": {"threadId": thread_id, "input": [{"type": "text", "text": text}]},
            }
        )
        notifications += until(lambda m: m.get("method") == "turn/completed")
        took = time.perf_counter() - began
        latencies.append(took)
        streaming += took
    proc.stdin.close()
    proc.wait(timeout=30)
    print(f"start-up to initialize answer: {startup * 1000:.0f} ms")
    print(
        f"turn latency ({args.words}-word input, {notifications // args.turns} messages a turn): "
        f"median {statistics.median(latencies) * 1000:.1f} ms, "
        f"max {max(latencies) * 1000:.1f} ms"
    )
    print(f"messages per second while streaming: {notifications / streaming:,.0f}")


if __name__ == "__main__":
    main()
