#!/usr/bin/env python3
"""What cluster mode costs one node: ``serve --pace 0`` on stdio, embedded and with
``--cluster`` (a real ``nats-server -js`` on 127.0.0.1, file storage in a temporary directory),
side by side in one run: deltas per second while turns stream, and CPU seconds per 1,000 deltas
of the bridge process (and of nats-server). Issue 24's goal: cluster mode costs at most 30 %.

    PYTHONPATH=src python bench/cluster.py [--turns N] [--words W] [--rounds R]

Every delta of every turn is counted (a turn ends at its ``turn/completed``); the script fails
if a turn streams no delta.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def start_nats(store: str) -> tuple[subprocess.Popen[bytes], str]:
    binary = Path(sys.executable).parent / "nats-server"
    proc = subprocess.Popen(
        [str(binary), "-js", "-a", "127.0.0.1", "-p", "-1", "-sd", store],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    port = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        found = re.search(rb"Listening for client connections on [0-9.]+:(\d+)", line)
        if found:
            port = int(found.group(1))
        if b"Server is ready" in line:
            break
    if port is None:
        proc.kill()
        raise SystemExit("nats-server did not start")
    return proc, f"nats://127.0.0.1:{port}"


def run(extra: list[str], turns: int, words: int) -> tuple[int, float, float]:
    """(deltas, wall seconds, bridge CPU seconds) of ``turns`` turns on one thread."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "LOG_LEVEL": "ERROR"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "codex_app_bridge", "serve", "--pace", "0", *extra],
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

    def read() -> dict[str, object]:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"serve {' '.join(extra)} exited")
        return json.loads(line)

    send({"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "b", "version": "1"}}})
    while read().get("id") != 0:
        pass
    send({"id": 1, "method": "thread/start", "params": {}})
    thread_id = None
    while thread_id is None:
        message = read()
        if message.get("id") == 1:
            thread_id = message["result"]["thread"]["id"]  # type: ignore[index]
    text = " ".join(f"w{i}" for i in range(words))
    deltas = 0
    cpu0 = cpu_seconds(proc.pid)
    started = time.perf_counter()
    for n in range(turns):
        send(
            {
                "id": 10 + n,
                "method": "turn/start",
                "params": {"threadId": thread_id, "input": [{"type": "text", "text": text}]},
            }
        )
        turn_deltas = 0
        while True:
            message = read()
            method = message.get("method")
            if method == "item/agentMessage/delta":
                turn_deltas += 1
            elif method == "turn/completed":
                break
        if not turn_deltas:
            raise SystemExit("a turn streamed no delta")
        deltas += turn_deltas
    wall = time.perf_counter() - started
    cpu = cpu_seconds(proc.pid) - cpu0
    proc.stdin.close()
    proc.wait(timeout=60)
    return deltas, wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--words", type=int, default=2000, help="words of input per turn")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs of each mode")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as store:
        nats, url = start_nats(store)
        try:
            results: dict[str, list[tuple[int, float, float]]] = {"embedded": [], "cluster": []}
            nats_cpu = 0.0
            for _ in range(args.rounds):
                results["embedded"].append(run([], args.turns, args.words))
                before = cpu_seconds(nats.pid)
                results["cluster"].append(run(["--cluster", url], args.turns, args.words))
                nats_cpu += cpu_seconds(nats.pid) - before
        finally:
            nats.send_signal(signal.SIGTERM)
            nats.wait(timeout=30)
    rates: dict[str, float] = {}
    for mode, runs in results.items():
        deltas = sum(r[0] for r in runs)
        wall = sum(r[1] for r in runs)
        cpu = sum(r[2] for r in runs)
        rates[mode] = deltas / wall
        print(
            f"{mode:9} {deltas:8d} deltas  {deltas / wall:9.0f} deltas/s  "
            f"bridge CPU {cpu:6.2f} s = {1000 * cpu / deltas:6.3f} s per 1,000 deltas"
        )
    cluster_deltas = sum(r[0] for r in results["cluster"])
    print(
        f"nats-server CPU during the cluster runs: {nats_cpu:.2f} s = "
        f"{1000 * nats_cpu / cluster_deltas:.3f} s per 1,000 deltas"
    )
    print(
        f"cluster / embedded throughput: {rates['cluster'] / rates['embedded']:.2f} (goal: >= 0.70)"
    )


if __name__ == "__main__":
    main()
