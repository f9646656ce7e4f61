#!/usr/bin/env python3
"""What cluster mode costs one node: ``serve --pace 0`` on stdio, embedded and with
``--cluster`` (a real ``nats-server -js`` on 127.0.0.1, file storage in a temporary directory),
side by side in one run: deltas per second while turns stream, and CPU seconds per 1,000 deltas
of the bridge process (and of nats-server). Issue 24's goal: cluster mode costs at most 30 %.

Then, with ``--threads T`` (> 0), the scaling: one node, then two, each ``serve --cluster``
process playing T threads of its own at once (a turn on every thread, ``--turns`` times), driven
by this script (the load generator, one reader thread per node): the aggregate deltas per wall
second, the CPU seconds of each node, of nats-server and of the load generator, and deltas per
node-CPU-second (what shows the scaling where the machine's cores are the ceiling; goal: two
nodes >= 1.6x one node's deltas per wall second where each node has a core of its own).

With ``--list N`` (> 0), ``thread/list`` over N threads of the cluster instead: N metadata
entries in the ``codex_threads`` bucket (as their owners write them: the ids, times and texts of
``stored_threads.py``'s threads, provider ``mock``), then a fresh ``serve --cluster`` node on
stdio, which has loaded none of them, answers: the first page as its first request (the node
reads the head of the cluster's thread index as it joins, written by a node that read the
bucket and left before, untimed; the rest of the bucket after the first page), again, a later page (the cursor of the middle, reached untimed by
pages of 100) and by ``updated_at``; with ``--real``, the real binary over the same N threads
stored in its own ``CODEX_HOME`` (written by ``stored_threads.generate_home``), the same
requests, alternating processes, the answers checked alike (the same ids in the same order).
Issue 24's goal: the cluster lists within the binary's time for its own N stored threads.

    PYTHONPATH=src python bench/cluster.py [--turns N] [--words W] [--rounds R] [--threads T]
        [--pin]
    PYTHONPATH=src python bench/cluster.py --list 10000 [--real] [--rounds R]

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
import threading
import time
from pathlib import Path
from typing import Any

from _common import StdioClient, bridge_argv, bridge_env, median

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


class Node:
    """A ``serve --cluster`` process on stdio, played by the load generator (``cpu``: the one
    core it runs on, ``None``: any)."""

    def __init__(self, url: str, name: str, cpu: int | None = None) -> None:
        env = {**os.environ, "PYTHONPATH": str(SRC), "LOG_LEVEL": "ERROR"}
        argv = [sys.executable, "-m", "codex_app_bridge", "serve", "--pace", "0"]
        self.proc = subprocess.Popen(
            [*argv, "--cluster", url, "--cluster-name", name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        if cpu is not None:
            os.sched_setaffinity(self.proc.pid, {cpu})
        self.next_id = 100
        self.deltas = 0

    def send(self, method: str, params: dict[str, object]) -> int:
        assert self.proc.stdin is not None
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        return self.next_id

    def read(self) -> dict[str, object]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("a cluster node exited")
        return json.loads(line)

    def answer(self, request_id: int) -> dict[str, object]:
        while True:
            message = self.read()
            if message.get("id") == request_id and "method" not in message:
                return message

    def start(self, threads: int) -> list[str]:
        client = {"clientInfo": {"name": "load", "version": "1"}}
        self.answer(self.send("initialize", client))
        ids: list[str] = []
        for _ in range(threads):
            result = self.answer(self.send("thread/start", {}))["result"]
            ids.append(result["thread"]["id"])  # type: ignore[index]
        return ids

    def play(self, thread_ids: list[str], turns: int, text: str) -> None:
        """A turn on every thread at once, ``turns`` times; every delta counted."""
        for _ in range(turns):
            for thread_id in thread_ids:
                params = {"threadId": thread_id, "input": [{"type": "text", "text": text}]}
                self.send("turn/start", params)
            running = len(thread_ids)
            while running:
                method = self.read().get("method")
                if method == "item/agentMessage/delta":
                    self.deltas += 1
                elif method == "turn/completed":
                    running -= 1

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def scaling(
    url: str, nats_pid: int, nodes: int, threads: int, turns: int, words: int, pin: bool
) -> None:
    """``nodes`` nodes, each playing ``threads`` threads: one line of figures (``pin``: node i
    on core i alone, of the cores this process may use)."""
    cores = sorted(os.sched_getaffinity(0))
    members = [Node(url, f"n{i}", cores[i % len(cores)] if pin else None) for i in range(nodes)]
    try:
        thread_ids = [node.start(threads) for node in members]
        text = " ".join(f"w{i}" for i in range(words))
        cpu0 = [cpu_seconds(node.proc.pid) for node in members]
        nats0, load0 = cpu_seconds(nats_pid), time.process_time()
        started = time.perf_counter()
        workers = [
            threading.Thread(target=node.play, args=(ids, turns, text))
            for node, ids in zip(members, thread_ids, strict=True)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        wall = time.perf_counter() - started
        node_cpu = [cpu_seconds(n.proc.pid) - c for n, c in zip(members, cpu0, strict=True)]
        nats_cpu, load_cpu = cpu_seconds(nats_pid) - nats0, time.process_time() - load0
    finally:
        for node in members:
            node.stop()
    deltas = sum(node.deltas for node in members)
    if not deltas:
        raise SystemExit("the threads streamed no delta")
    print(
        f"{nodes} node(s) x {threads} threads: {deltas:8d} deltas {deltas / wall:9.0f} deltas/s  "
        f"CPU s: nodes {' + '.join(f'{c:.2f}' for c in node_cpu)}, nats-server {nats_cpu:.2f}, "
        f"load generator {load_cpu:.2f}; {deltas / sum(node_cpu):9.0f} deltas per node-CPU-s"
    )


LIST_REQUESTS = (
    "thread/list, first page (first request)",
    "thread/list, first page again",
    "thread/list, a later page",
    "thread/list, by updated_at",
)


def write_entries(url: str, count: int) -> list[str]:
    """Write ``count`` metadata entries, as their owners would, for the threads
    ``stored_threads.generate_home`` writes as rollouts; their ids, newest first."""
    import asyncio
    from datetime import UTC, datetime, timedelta

    import nats
    import orjson
    from nats.js.api import KeyValueConfig, StorageType
    from stored_threads import CWD, MODEL, PROVIDER, _thread_id, question

    from codex_app_bridge.cluster._subjects import META_BUCKET

    now = datetime.now(UTC).replace(microsecond=0)

    def entry(index: int) -> bytes:
        created = int((now - timedelta(minutes=10 * (count - index))).timestamp())
        return orjson.dumps(
            {
                "id": _thread_id(index),
                "owner": "bench",
                "cwd": CWD,
                "model": MODEL,
                "modelProvider": PROVIDER,
                "approvalPolicy": "never",
                "approvalsReviewer": "user",
                "sandbox": {"type": "dangerFullAccess"},
                "reasoningEffort": None,
                "serviceTier": None,
                "originator": "codex-app-bridge",
                "name": None,
                "preview": question(index, 0),
                "createdAt": created,
                "updatedAt": created + 120,
                "forkedFromId": None,
                "turnsStarted": 2,
                "readState": None,
            }
        )

    async def write() -> None:
        nc = await nats.connect(url)
        js = nc.jetstream()
        kv = await js.create_key_value(
            KeyValueConfig(bucket=META_BUCKET, storage=StorageType.FILE, history=1)
        )
        for start in range(0, count, 500):
            await asyncio.gather(
                *(kv.put(_thread_id(i), entry(i)) for i in range(start, min(count, start + 500)))
            )
        await nc.close()

    asyncio.run(write())
    return [_thread_id(index) for index in reversed(range(count))]


def list_requests(client: StdioClient, ids: list[str]) -> dict[str, float]:
    """The timed ``thread/list`` requests of one process (see the module docstring)."""
    times: dict[str, float] = {}

    def timed(params: dict[str, Any]) -> Any:
        started = time.perf_counter()
        result = client.call("thread/list", params)
        times[LIST_REQUESTS[len(times)]] = time.perf_counter() - started
        return result

    client.initialize()
    for _ in range(2):
        first = timed({})
        listed = [t["id"] for t in first["data"]]
        assert listed == ids[: len(listed)], f"first page: {listed[:3]} != {ids[:3]}"
    middle = len(ids) // 2 // 100 * 100
    cursor = None
    for start in range(0, middle, 100):
        page = client.call("thread/list", {"limit": 100, "cursor": cursor})
        assert [t["id"] for t in page["data"]] == ids[start : start + 100]
        cursor = page["nextCursor"]
    later = timed({"cursor": cursor, "limit": 25})
    assert [t["id"] for t in later["data"]] == ids[middle : middle + 25]
    updated = timed({"sortKey": "updated_at", "limit": 25})
    assert [t["id"] for t in updated["data"]] == ids[:25]
    return times


def listing(url: str, count: int, rounds: int, real: bool) -> None:
    """``thread/list`` over ``count`` threads of the cluster (and the binary's own)."""
    import contextlib
    import shutil
    from collections.abc import Callable

    from stored_threads import generate_home, scratch_dir

    started = time.perf_counter()
    ids = write_entries(url, count)
    print(f"{count:,} metadata entries written in {time.perf_counter() - started:.1f} s")
    with scratch_dir(None) as scratch, contextlib.ExitStack() as stack:
        spawners: dict[str, Callable[[], StdioClient]] = {}

        def node() -> StdioClient:
            argv = bridge_argv("serve", "--cluster", url)
            return StdioClient(argv, bridge_env({"LOG_LEVEL": "ERROR"}), cwd=scratch)

        spawners["cluster node"] = node
        # a running cluster keeps the head of its thread index in the object store (its nodes
        # write it once they have read the bucket, and as they leave): one node reads the
        # bucket and leaves, untimed, before the fresh nodes are timed
        started = time.perf_counter()
        with node() as warm:
            warm.initialize()
            warm.call("thread/list", {})
            assert warm.close() == 0, "the node that writes the index head failed"
        print(f"index head written by a node in {time.perf_counter() - started:.1f} s")
        if real:
            from _real import real_servers

            from codex_app_bridge.conformance.real_codex import (
                codex_env,
                real_codex_command,
                write_codex_config,
            )

            servers = stack.enter_context(real_servers())
            source = scratch / "threads"
            started = time.perf_counter()
            generate_home(source, count, 2)
            print(f"{count:,} stored threads written in {time.perf_counter() - started:.1f} s")

            def binary() -> StdioClient:
                home = scratch / "real" / ".codex"
                shutil.rmtree(home.parent, ignore_errors=True)
                shutil.copytree(source, home)
                write_codex_config(home, servers.mock.base_url)
                return StdioClient(real_codex_command(), codex_env(home, "error"), home.parent)

            spawners["real binary"] = binary
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(rounds):
            for name, spawn in spawners.items():
                with spawn() as client:
                    for request, value in list_requests(client, ids).items():
                        times.setdefault((request, name), []).append(value)
    print(f"request -> answer, median of {rounds} (min-max), ms, {count:,} threads:")
    for request in LIST_REQUESTS:
        cells = [
            f"{name} {median(v) * 1000:7.1f} ({min(v) * 1000:.0f}-{max(v) * 1000:.0f})"
            for name in spawners
            for v in [times[(request, name)]]
        ]
        print(f"  {request:<40} " + "   ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--words", type=int, default=2000, help="words of input per turn")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs of each mode")
    parser.add_argument(
        "--threads", type=int, default=0, help="threads per node in the scaling runs (0: none)"
    )
    parser.add_argument(
        "--list", type=int, default=0, help="thread/list over N threads of the cluster (0: no)"
    )
    parser.add_argument("--real", action="store_true", help="--list: the real binary too")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="--threads: each node on a core of its own (node i on core i; nats-server and the "
        "load generator on any)",
    )
    args = parser.parse_args()
    if args.list > 0:
        with tempfile.TemporaryDirectory() as store:
            nats, url = start_nats(store)
            try:
                listing(url, args.list, args.rounds, args.real)
            finally:
                nats.send_signal(signal.SIGTERM)
                nats.wait(timeout=30)
        return
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
            if args.threads > 0:
                print(f"scaling, {args.turns} turns of {args.words} words on every thread:")
                for _ in range(args.rounds):
                    for nodes in (1, 2):
                        scaling(
                            url, nats.pid, nodes, args.threads, args.turns, args.words, args.pin
                        )
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
