#!/usr/bin/env python3
"""Throughput of one turn of N agent-message deltas over stdio, side by side in one run:

* ``bridge``: ``python -m codex_app_bridge serve --script FILE`` playing a turn of N
  ``agent_message_content_delta`` events;
* ``real``: the real ``codex app-server`` 0.163.0 streaming N ``response.output_text.delta``
  events from a mock Responses endpoint on 127.0.0.1;
* ``passthrough``: a bare Python server that reads the same event lines and rewrites each into
  its notification with orjson (the practical limit of a Python server);

alternating, for several rounds. First the reading client's own ceiling is measured on a fake
server that only writes pre-encoded lines. For each run it prints deltas/s (first delta to
``turn/completed``), server CPU per delta (utime+stime of the server process from ``turn/start``
to ``turn/completed``) and peak RSS (VmHWM), then the medians and the ratios bridge/real and
bridge/limit. Every delta is checked (count, order, text) after the clock stopped.

    .venv/bin/python bench/throughput.py [--deltas 200000] [--rounds 3]
                                         [--servers bridge,real,passthrough]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from _common import (
    StdioClient,
    bridge_argv,
    bridge_env,
    check_deltas,
    cpu_seconds,
    fake_server_argv,
    median,
    parse_servers,
    peak_rss_kb,
    ratio,
    write_delta_script,
)
from _real import real_servers, real_texts

SERVERS = ("bridge", "real", "passthrough")


@dataclass
class Run:
    server: str
    deltas_per_s: float
    cpu_us_per_delta: float
    peak_rss_mb: float
    turn_s: float


def measure(server: str, client: StdioClient, texts: list[str], cwd: str | None = None) -> Run:
    """One turn on an already spawned server: handshake, thread/start, then the timed turn."""
    with client:
        client.initialize()
        thread_id = client.start_thread(cwd)
        cpu_before = cpu_seconds(client.pid)
        client.request(
            "turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": "stream"}]}
        )
        started = time.perf_counter()
        stream = client.stream_until()
        cpu = cpu_seconds(client.pid) - cpu_before
        peak = peak_rss_kb(client.pid)
    count = check_deltas(stream, texts)
    return Run(
        server,
        count / max(stream.end_at - stream.first_at, 1e-9),
        cpu / count * 1e6,
        peak / 1024,
        stream.end_at - started,
    )


def client_ceiling(script: Path, texts: list[str]) -> float:
    run = measure("ceiling", StdioClient(fake_server_argv("preencoded", script)), texts)
    return run.deltas_per_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--servers", default=",".join(SERVERS))
    args = parser.parse_args()
    servers = parse_servers(parser, args.servers, SERVERS)

    with tempfile.TemporaryDirectory(prefix="bench-tp-") as tmp, contextlib.ExitStack() as stack:
        script = Path(tmp) / "deltas.jsonl"
        texts = write_delta_script(script, args.deltas)
        real = stack.enter_context(real_servers()) if "real" in servers else None
        spawn: dict[str, Callable[[], tuple[StdioClient, str | None, list[str]]]] = {
            "bridge": lambda: (
                StdioClient(bridge_argv("serve", "--script", str(script)), bridge_env()),
                None,
                texts,
            ),
            "passthrough": lambda: (
                StdioClient(fake_server_argv("passthrough", script)),
                None,
                texts,
            ),
        }
        if real is not None:
            expected = real_texts(args.deltas)
            spawn["real"] = lambda: (*real.spawn_streaming(args.deltas), expected)

        ceiling = client_ceiling(script, texts)
        print(f"client ceiling (pre-encoded lines from a fake server): {ceiling:,.0f} deltas/s")
        print(
            f"{'round':<6}{'server':<13}{'deltas/s':>12}{'CPU us/delta':>14}"
            f"{'peak RSS MB':>13}{'turn s':>9}"
        )
        runs: list[Run] = []
        for round_no in range(args.rounds):
            order = servers[round_no % len(servers) :] + servers[: round_no % len(servers)]
            for server in order:
                client, cwd, expected_texts = spawn[server]()
                run = measure(server, client, expected_texts, cwd)
                runs.append(run)
                print(
                    f"{round_no:<6}{server:<13}{run.deltas_per_s:>12,.0f}"
                    f"{run.cpu_us_per_delta:>14.1f}{run.peak_rss_mb:>13.0f}{run.turn_s:>9.2f}"
                )
        print(
            f"medians over {args.rounds} rounds, {args.deltas:,} deltas a turn "
            f"(every delta checked: count, order, text):"
        )
        summary = dict(_summarize(runs, servers))
        for server, (rate, cpu, rss) in summary.items():
            print(
                f"  {server:<12} {rate:>10,.0f} deltas/s {cpu:>8.1f} us CPU/delta "
                f"{rss:>6.0f} MB peak RSS"
            )
        if "bridge" in summary:
            bridge = summary["bridge"]
            for other, label in (("real", "bridge/real"), ("passthrough", "bridge/limit")):
                if other in summary:
                    o = summary[other]
                    print(
                        f"  {label:<12} deltas/s {ratio(bridge[0], o[0])}, "
                        f"CPU/delta {ratio(bridge[1], o[1])}, peak RSS {ratio(bridge[2], o[2])}"
                    )


def _summarize(runs: list[Run], servers: list[str]) -> Iterator[tuple[str, tuple[float, ...]]]:
    for server in servers:
        mine = [r for r in runs if r.server == server]
        yield (
            server,
            (
                median([r.deltas_per_s for r in mine]),
                median([r.cpu_us_per_delta for r in mine]),
                median([r.peak_rss_mb for r in mine]),
            ),
        )


if __name__ == "__main__":
    main()
