#!/usr/bin/env python3
"""Real model turns, side by side in one run: the bridge and the real ``codex app-server``
0.163.0, each started with no flags on a ``CODEX_HOME`` whose ``config.toml`` names one mock
Responses server on 127.0.0.1 (``codex_app_bridge.conformance.mock_responses``).

Per server and round (the order alternates):

* a turn whose one response streams N ``response.output_text.delta`` events (default 100,000;
  scenario ``throughput``, its bytes built once before the clock starts): deltas/s (first
  delta to ``turn/completed``), server CPU per delta (utime+stime of the server process,
  ``turn/start`` to ``turn/completed``), peak RSS (VmHWM of the process life) and the time from
  sending ``turn/start`` to the first delta reaching the client; every delta is checked after
  the clock stopped (count, order, text);
* a turn on a stream that never ends (scenario ``hold``): at its first delta the client sends
  ``turn/interrupt``; measured is the time until the mock sees the HTTP connection closed
  (the mock blocks reading the socket, so it sees the close when it happens).

Then the medians and the ratios bridge/real. Goals (issue 20): deltas/s >= 2x real, CPU per
delta <= 1/2, peak RSS <= real, first delta <= real, interrupt to closed <= 100 ms.

    .venv/bin/python bench/model_turn.py [--deltas 100000] [--rounds 3] [--servers bridge,real]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from _common import (
    SRC,
    StdioClient,
    check_deltas,
    cpu_seconds,
    median,
    parse_servers,
    peak_rss_kb,
    ratio,
)
from _real import real_available, real_texts

from codex_app_bridge.conformance.mock_responses import MockResponses, throughput_body
from codex_app_bridge.conformance.real_codex import (
    bridge_command,
    codex_env,
    real_codex_command,
    write_codex_config,
)

SERVERS = ("bridge", "real")
WAIT_S = 300.0


@dataclass
class Run:
    server: str
    deltas_per_s: float
    cpu_us_per_delta: float
    peak_rss_mb: float
    first_delta_ms: float
    interrupt_ms: float


class Spawner:
    """Fresh server processes, each with its own CODEX_HOME (config.toml -> the mock) and cwd."""

    def __init__(self, mock: MockResponses, scratch: Path) -> None:
        self.mock = mock
        self.scratch = scratch
        self._count = itertools.count()

    def spawn(self, server: str) -> tuple[StdioClient, str]:
        base = self.scratch / f"{server}-{next(self._count)}"
        work, home = base / "work", base / "home" / ".codex"
        work.mkdir(parents=True)
        write_codex_config(home, self.mock.base_url)
        if server == "real":
            argv = real_codex_command()
            env = codex_env(home, rust_log="error")
        else:
            argv = bridge_command()
            env = codex_env(home, extra={"PYTHONPATH": str(SRC), "LOG_LEVEL": "WARNING"})
        return StdioClient(argv, env, work), str(work)


def _turn(client: StdioClient, thread_id: str, text: str) -> None:
    client.request("turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": text}]})


def measure(spawner: Spawner, server: str, deltas: int) -> Run:
    mock = spawner.mock
    client, cwd = spawner.spawn(server)
    with client:
        client.initialize()
        thread_id = client.start_thread(cwd)
        # the streaming turn
        mock.set_scenario("throughput", n=deltas)
        cpu_before = cpu_seconds(client.pid)
        _turn(client, thread_id, "stream")
        started = time.perf_counter()
        stream = client.stream_until()
        cpu = cpu_seconds(client.pid) - cpu_before
        # the interrupted turn
        mock.set_scenario("hold", deltas=3)
        closed_before = len(mock.wait_closed(0, 0))
        _turn(client, thread_id, "hold on")
        turn_id = None
        for message in client.messages():
            if message.get("method") == "turn/started":
                turn_id = message["params"]["turn"]["id"]
            if message.get("method") == "item/agentMessage/delta":
                break
        interrupted_at = time.perf_counter()
        client.request("turn/interrupt", {"threadId": thread_id, "turnId": turn_id})
        closed = mock.wait_closed(closed_before + 1, WAIT_S)
        if len(closed) <= closed_before:
            raise AssertionError(f"{server}: the mock never saw the interrupted stream closed")
        client.until(lambda m: m.get("method") == "turn/completed")
        peak = peak_rss_kb(client.pid)
    count = check_deltas(stream, real_texts(deltas))
    return Run(
        server,
        count / max(stream.end_at - stream.first_at, 1e-9),
        cpu / count * 1e6,
        peak / 1024,
        (stream.first_at - started) * 1000,
        (closed[closed_before] - interrupted_at) * 1000,
    )


@contextlib.contextmanager
def spawner() -> Iterator[Spawner]:
    # not under /tmp: the real binary refuses to set up its PATH helpers there
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    cache.mkdir(parents=True, exist_ok=True)
    with (
        MockResponses() as mock,
        tempfile.TemporaryDirectory(prefix="codex-app-bridge-bench-", dir=cache) as scratch,
    ):
        yield Spawner(mock, Path(scratch))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--servers", default=",".join(SERVERS))
    args = parser.parse_args()
    servers = parse_servers(parser, args.servers, SERVERS)
    if "real" in servers and not real_available():
        parser.error("the real codex binary is not installed (pip install -e '.[test]')")
    throughput_body(0, args.deltas)  # the mock's answer, built before any clock starts
    print(
        f"{'round':<6}{'server':<8}{'deltas/s':>12}{'CPU us/delta':>14}{'peak RSS MB':>13}"
        f"{'first delta ms':>16}{'interrupt ms':>14}"
    )
    runs: list[Run] = []
    with spawner() as spawn:
        for round_no in range(args.rounds):
            order = servers[round_no % len(servers) :] + servers[: round_no % len(servers)]
            for server in order:
                run = measure(spawn, server, args.deltas)
                runs.append(run)
                print(
                    f"{round_no:<6}{server:<8}{run.deltas_per_s:>12,.0f}"
                    f"{run.cpu_us_per_delta:>14.2f}{run.peak_rss_mb:>13.0f}"
                    f"{run.first_delta_ms:>16.1f}{run.interrupt_ms:>14.1f}"
                )
    print(
        f"medians over {args.rounds} rounds, {args.deltas:,} deltas in one response "
        "(every delta checked: count, order, text):"
    )
    summary: dict[str, tuple[float, float, float, float, float]] = {}
    for server in servers:
        mine = [r for r in runs if r.server == server]
        summary[server] = (
            median([r.deltas_per_s for r in mine]),
            median([r.cpu_us_per_delta for r in mine]),
            median([r.peak_rss_mb for r in mine]),
            median([r.first_delta_ms for r in mine]),
            median([r.interrupt_ms for r in mine]),
        )
        rate, cpu, rss, first, interrupt = summary[server]
        print(
            f"  {server:<8} {rate:>10,.0f} deltas/s {cpu:>8.2f} us CPU/delta {rss:>6.0f} MB "
            f"peak RSS {first:>8.1f} ms to first delta {interrupt:>7.1f} ms interrupt to closed"
        )
    if "bridge" in summary and "real" in summary:
        b, r = summary["bridge"], summary["real"]
        print(
            f"  bridge/real: deltas/s {ratio(b[0], r[0])} (goal >= 2x), CPU/delta "
            f"{ratio(b[1], r[1])} (<= 0.5x), peak RSS {ratio(b[2], r[2])} (<= 1x), first delta "
            f"{ratio(b[3], r[3])} (<= 1x); bridge interrupt {b[4]:.1f} ms (<= 100 ms)"
        )


if __name__ == "__main__":
    main()
