"""Soak: many websocket clients against one ``serve --listen ws://`` with storage and idle unload
(issue 23's acceptance: 30 clients for 10 minutes with ``--idle-unload 5``).

Each client loops until the deadline: connect, initialize, start a thread, run a turn (the
built-in agent at ``--pace 0``), read the thread with its turns, resume one of its earlier
threads now and then, close. Every request's latency is measured (send -> response); every
``--interval`` seconds a line reports the server's RSS, its open descriptors, the requests
answered and p50/p99 latency in that interval. After the clients leave, the script waits until
every thread is unloaded (``thread/loaded/list`` empty, ``--idle-unload`` later) and reports RSS
and descriptors against the baseline measured after a warm-up (one client, then one that
resumes its thread); the server's RSS before the warm-up is printed too. ``--rounds N`` runs the
load N times in the same server, each followed by the unload and its figures: memory that one
round takes once shows as a step after round 1 and none after the next; growth shows every round.

The run fails (exit 1) on a crash (the server exits), an unanswered request (60 s) or a turn that
does not complete.

    python bench/soak.py --clients 30 --seconds 600 --idle-unload 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bridge_argv, bridge_env, rss_kb

from codex_app_bridge.server._idle import RELEASE_QUIET

WAIT = 60.0


class Failure(Exception):
    pass


class Stats:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.answered = 0
        self.turns = 0
        self.unanswered = 0

    def take(self) -> tuple[list[float], int, int]:
        latencies, answered, turns = self.latencies, self.answered, self.turns
        self.latencies, self.answered, self.turns = [], 0, 0
        return latencies, answered, turns


class Client:
    def __init__(self, ws: ClientConnection, stats: Stats) -> None:
        self.ws = ws
        self.stats = stats
        self.next_id = 0

    async def call(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        request_id = self.next_id
        started = time.perf_counter()
        await self.ws.send(
            orjson.dumps({"id": request_id, "method": method, "params": params}).decode()
        )
        try:
            async with asyncio.timeout(WAIT):
                while True:
                    message = orjson.loads(await self.ws.recv(decode=False))
                    if message.get("id") == request_id and "method" not in message:
                        break
        except TimeoutError:
            self.stats.unanswered += 1
            raise Failure(f"{method} unanswered after {WAIT} s") from None
        self.stats.latencies.append(time.perf_counter() - started)
        self.stats.answered += 1
        if "error" in message:
            raise Failure(f"{method}: {message['error']}")
        return message["result"]

    async def until_turn_completed(self) -> dict[str, Any]:
        async with asyncio.timeout(WAIT):
            while True:
                message = orjson.loads(await self.ws.recv(decode=False))
                if message.get("method") == "turn/completed":
                    return message["params"]["turn"]


async def session(
    url: str, stats: Stats, mine: list[str], rng: random.Random, *, resume: float = 0.3
) -> None:
    """One client's visit; it resumes one of its earlier threads with probability ``resume``."""
    async with connect(url, max_size=None, open_timeout=WAIT, ping_timeout=WAIT) as ws:
        client = Client(ws, stats)
        await client.call("initialize", {"clientInfo": {"name": "soak", "version": "1"}})
        if mine and rng.random() < resume:
            await client.call("thread/resume", {"threadId": rng.choice(mine)})
        thread = (await client.call("thread/start", {}))["thread"]["id"]
        text = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(40))
        await client.call(
            "turn/start", {"threadId": thread, "input": [{"type": "text", "text": text}]}
        )
        turn = await client.until_turn_completed()
        if turn["status"] != "completed":
            raise Failure(f"turn ended {turn['status']}")
        stats.turns += 1
        await client.call("thread/read", {"threadId": thread, "includeTurns": True})
        mine.append(thread)
        del mine[:-20]


async def client_loop(url: str, stats: Stats, deadline: float, seed: int) -> None:
    rng = random.Random(seed)
    mine: list[str] = []
    while time.monotonic() < deadline:
        await session(url, stats, mine, rng)


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def start_server(idle_unload: float, home: str, allocator: str | None) -> subprocess.Popen[bytes]:
    chosen = [] if allocator is None else ["--allocator", allocator]
    return subprocess.Popen(
        bridge_argv(
            "serve",
            "--listen",
            "ws://127.0.0.1:0",
            "--pace",
            "0",
            "--codex-home",
            home,
            "--idle-unload",
            str(idle_unload),
            *chosen,
        ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=bridge_env({"LOG_LEVEL": "ERROR"}),
    )


def server_url(process: subprocess.Popen[bytes]) -> str:
    assert process.stderr is not None
    for raw in process.stderr:
        found = re.search(r"listening on: (ws://\S+)", raw.decode())
        if found:
            return found.group(1)
    raise Failure("the server printed no address")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--interval", type=float, default=60)
    parser.add_argument("--idle-unload", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--settle",
        type=float,
        default=RELEASE_QUIET + 2,
        help="seconds with no thread loaded before the figures (the server gives memory back "
        "after RELEASE_QUIET)",
    )
    parser.add_argument(
        "--allocator",
        choices=("python", "system"),
        default=None,
        help="the server's --allocator (default: the server's own, system for a websocket)",
    )
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="cab-soak-")
    process = start_server(args.idle_unload, home, args.allocator)
    try:
        url = server_url(process)
        return asyncio.run(soak(url, process, args))
    except Failure as exc:
        print(f"soak failed: {exc}", file=sys.stderr)
        return 1
    finally:
        try:
            stop_server(process)
        finally:
            shutil.rmtree(home, ignore_errors=True)  # a 10-minute run stores ~40,000 rollouts


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:  # a server that does not stop is killed, never left behind
        process.kill()
        process.wait(timeout=60)
    if process.stderr is not None:
        process.stderr.close()


async def soak(url: str, process: subprocess.Popen[bytes], args: argparse.Namespace) -> int:
    stats = Stats()
    print(
        f"started (before the warm-up): rss {rss_kb(process.pid) / 1024:.1f} MB, "
        f"fds {fds(process.pid)}",
        flush=True,
    )
    # Warm-up: every path the clients take once, so that what the server builds or opens
    # once (modules, models, the thread index: 3 descriptors) is in the baseline: a thread
    # played and unloaded, then resumed from its rollout and unloaded again.
    warm: list[str] = []
    for resume in (0.0, 1.0):
        await session(url, stats, warm, random.Random(0), resume=resume)
        await wait_unloaded(url, process, args.settle)
    base_rss, base_fds = rss_kb(process.pid), fds(process.pid)
    print(f"baseline: rss {base_rss / 1024:.1f} MB, fds {base_fds}", flush=True)
    stats.take()
    end_rss, end_fds = base_rss, base_fds
    p99s: list[float] = []
    for round_ in range(1, args.rounds + 1):
        await load(
            url,
            process,
            args,
            stats,
            p99s,
            seeds=range(round_ * 1000, round_ * 1000 + args.clients),
        )
        await wait_unloaded(url, process, args.settle)
        end_rss, end_fds = rss_kb(process.pid), fds(process.pid)
        if round_ < args.rounds:
            print(
                f"after round {round_}: rss {end_rss / 1024:.1f} MB "
                f"({100 * (end_rss - base_rss) / base_rss:+.1f} %), fds {end_fds}",
                flush=True,
            )
    print(
        f"after the clients left and threads unloaded: rss {end_rss / 1024:.1f} MB "
        f"({100 * (end_rss - base_rss) / base_rss:+.1f} %), fds {end_fds} "
        f"({end_fds - base_fds:+d}); unanswered {stats.unanswered}; crashes 0",
        flush=True,
    )
    if p99s:
        print(f"p99 per interval (ms): {', '.join(f'{p:.1f}' for p in p99s)}", flush=True)
    return 0 if stats.unanswered == 0 else 1


async def load(
    url: str,
    process: subprocess.Popen[bytes],
    args: argparse.Namespace,
    stats: Stats,
    p99s: list[float],
    seeds: range,
) -> None:
    """``--clients`` clients for ``--seconds``, a line every ``--interval``."""
    deadline = time.monotonic() + args.seconds
    tasks = [asyncio.create_task(client_loop(url, stats, deadline, seed)) for seed in seeds]
    while not all(task.done() for task in tasks):
        done, _ = await asyncio.wait(
            tasks, timeout=args.interval, return_when=asyncio.FIRST_EXCEPTION
        )
        for task in done:
            if task.exception() is not None:
                raise Failure(f"a client failed: {task.exception()!r}")
        if process.poll() is not None:
            raise Failure(f"the server exited ({process.returncode})")
        latencies, answered, turns = stats.take()
        p99s.append(pct(latencies, 0.99))
        print(
            f"interval {len(p99s)}: rss {rss_kb(process.pid) / 1024:.1f} MB, fds {fds(process.pid)}, "
            f"answered {answered}, turns {turns}, p50 {pct(latencies, 0.5):.1f} ms, "
            f"p99 {pct(latencies, 0.99):.1f} ms",
            flush=True,
        )


async def wait_unloaded(url: str, process: subprocess.Popen[bytes], settle: float) -> None:
    """Until no thread is loaded (the idle unload took them all), asking on a fresh client every
    second, and seen so for ``settle`` seconds (by default ``RELEASE_QUIET`` and two more: the
    server gives the memory back once it has stayed so quiet that long after the last unload,
    ``server._idle``)."""
    empty_since: float | None = None
    async with asyncio.timeout(300):
        while True:
            async with connect(url, max_size=None, open_timeout=WAIT, ping_timeout=WAIT) as ws:
                client = Client(ws, Stats())
                await client.call("initialize", {"clientInfo": {"name": "probe", "version": "1"}})
                loaded = await client.call("thread/loaded/list", {})
            if loaded["data"]:
                empty_since = None
            elif empty_since is None:
                empty_since = time.monotonic()
            elif time.monotonic() - empty_since >= settle:
                return
            if process.poll() is not None:
                raise Failure("the server exited")
            await asyncio.sleep(1)  # polling the server's own unload timer, not synchronisation


if __name__ == "__main__":
    sys.exit(main())
