#!/usr/bin/env python3
"""``command/exec`` side by side with the real ``codex app-server`` 0.163.0 (issue 21's figures):
both servers over stdio, alternating each round (the order rotates).

* **overhead**: ``command/exec ["true"]`` sent one after the other; request written to answer
  read (the command's own run is a fork+exec of ``true``, the same for both), median and p90;
* **output**: ``command/exec`` of ``head -c N /dev/zero`` streamed (``streamStdoutStderr``,
  ``disableOutputCap``, ``disableTimeout``): every ``command/exec/outputDelta`` is kept raw
  while the clock runs, then parsed: the decoded bytes must add up to N (the script's check);
  rate = N / (request written -> answer read), and the server's CPU and peak RSS over it.

Both run with ``sandboxPolicy: dangerFullAccess`` (the real binary's sandboxed path needs its
own helper and CODEX_HOME outside /tmp). ``--sandbox readOnly`` times the bridge's overhead with
bubblewrap around each ``true`` (use it with ``--servers bridge``).

    .venv/bin/python bench/command_exec.py [--runs 30] [--mb 100] [--rounds 3]
        [--servers bridge,real] [--sandbox dangerFullAccess|readOnly]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import statistics
import time
from collections.abc import Iterator
from contextlib import ExitStack

import orjson
from _common import (
    StdioClient,
    bridge_argv,
    bridge_env,
    cpu_seconds,
    median,
    parse_servers,
    peak_rss_kb,
    ratio,
)

SERVERS = ("bridge", "real")
FULL = {"type": "dangerFullAccess"}
DELTA = b'"command/exec/outputDelta"'
EXIT = b'"exitCode"'


def overhead(client: StdioClient, runs: int, policy: dict[str, str]) -> list[float]:
    """Seconds from writing each ``command/exec ["true"]`` to reading its answer."""
    times: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        result = client.call("command/exec", {"command": ["true"], "sandboxPolicy": policy})
        times.append(time.perf_counter() - started)
        if result.get("exitCode") != 0:
            raise SystemExit(f"command/exec true answered {result}")
    return times


def output(client: StdioClient, size: int, n: int) -> tuple[float, float, int]:
    """(seconds, server CPU seconds, server peak RSS kB) for ``size`` bytes streamed."""
    process_id = f"out-{n}"
    params = {
        "command": ["head", "-c", str(size), "/dev/zero"],
        "processId": process_id,
        "streamStdoutStderr": True,
        "disableOutputCap": True,
        "disableTimeout": True,
        "sandboxPolicy": FULL,
    }
    cpu = cpu_seconds(client.pid)
    started = time.perf_counter()
    client.request("command/exec", params)
    stream = client.stream_until(end=EXIT, first=DELTA)
    elapsed = stream.end_at - started
    cpu = cpu_seconds(client.pid) - cpu
    received = 0
    answered = False
    for line in stream.data.split(b"\n"):
        if not line.strip():
            continue
        message = orjson.loads(line)
        if message.get("method") == "command/exec/outputDelta":
            delta = message["params"]
            if delta["processId"] == process_id:
                received += len(base64.b64decode(delta["deltaBase64"]))
        elif "result" in message and "exitCode" in message["result"]:
            answered = message["result"]["exitCode"] == 0
    if received != size or not answered:
        raise SystemExit(f"streamed {received} of {size} bytes (answered: {answered})")
    return elapsed, cpu, peak_rss_kb(client.pid)


@contextlib.contextmanager
def spawner(servers: list[str]) -> Iterator[dict[str, object]]:
    with ExitStack() as stack:
        made: dict[str, object] = {}
        if "real" in servers:
            from _real import real_servers

            made["real"] = stack.enter_context(real_servers())
        yield made


def spawn(name: str, made: dict[str, object]) -> StdioClient:
    if name == "bridge":
        return StdioClient(bridge_argv("serve"), bridge_env())
    from _real import RealServers

    real = made["real"]
    assert isinstance(real, RealServers)
    client, _ = real.spawn()
    return client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="command/exec true per round")
    parser.add_argument("--mb", type=float, default=100, help="MiB streamed per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument(
        "--sandbox", default="dangerFullAccess", choices=["dangerFullAccess", "readOnly"]
    )
    args = parser.parse_args()
    policy = {"type": args.sandbox}
    servers = parse_servers(parser, args.servers, SERVERS)
    size = int(args.mb * 1024 * 1024)
    latencies: dict[str, list[float]] = {s: [] for s in servers}
    rates: dict[str, list[float]] = {s: [] for s in servers}
    cpus: dict[str, list[float]] = {s: [] for s in servers}
    rss: dict[str, list[int]] = {s: [] for s in servers}
    print(
        f"command/exec: {args.runs} x `true` ({args.sandbox}), then {size:,} bytes streamed, "
        "per round"
    )
    print(
        f"{'round':<6}{'server':<8}{'p50 ms':>9}{'p90 ms':>9}{'MB/s':>10}{'cpu s':>8}{'rss MB':>8}"
    )
    with spawner(servers) as made:
        for round_no in range(args.rounds):
            order = servers[round_no % len(servers) :] + servers[: round_no % len(servers)]
            for name in order:
                with spawn(name, made) as client:
                    client.initialize()
                    overhead(client, 3, policy)  # warm-up: imports, first spawn
                    times = sorted(overhead(client, args.runs, policy))
                    elapsed, cpu, peak = output(client, size, round_no)
                    client.close()
                p50 = statistics.median(times) * 1000
                p90 = times[min(len(times) - 1, int(len(times) * 0.9))] * 1000
                rate = size / elapsed / 1e6
                latencies[name].extend(times)
                rates[name].append(rate)
                cpus[name].append(cpu)
                rss[name].append(peak)
                print(
                    f"{round_no:<6}{name:<8}{p50:>9.2f}{p90:>9.2f}{rate:>10.1f}{cpu:>8.2f}"
                    f"{peak / 1024:>8.1f}"
                )
    print("medians over every round:")
    for name in servers:
        print(
            f"  {name:<7} overhead {median(latencies[name]) * 1000:.2f} ms, "
            f"output {median(rates[name]):.1f} MB/s, server cpu {median(cpus[name]):.2f} s, "
            f"peak rss {max(rss[name]) / 1024:.1f} MB"
        )
    if len(servers) == 2:
        bridge, real = "bridge", "real"
        print(
            f"bridge/real: overhead {ratio(median(latencies[bridge]), median(latencies[real]))}, "
            f"output rate {ratio(median(rates[bridge]), median(rates[real]))}"
        )


if __name__ == "__main__":
    main()
