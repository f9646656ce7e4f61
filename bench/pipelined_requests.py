#!/usr/bin/env python3
"""Pipelined requests over stdio, bridge versus the real server, in one run: after
``initialize``, N ``thread/loaded/list`` requests (default 20,000) are written back to back
without waiting; the client reads until every request is answered or nothing arrives for
``--quiet`` seconds. Prints answered/s (from the first request written to the last answer),
answers, ``-32001`` overloaded errors, other errors and requests never answered.

    .venv/bin/python bench/pipelined_requests.py [--requests 20000] [--rounds 2] [--quiet 3]
                                                [--servers bridge,real]
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import orjson
from _common import StdioClient, bridge_argv, bridge_env, median, parse_servers, ratio
from _real import real_servers

OVERLOADED = -32001


@dataclass
class Outcome:
    answered_per_s: float
    results: int
    overloaded: int
    other_errors: int
    unanswered: int


def pipeline(client: StdioClient, count: int, quiet: float) -> Outcome:
    with client:
        client.initialize()
        first = client.request("thread/loaded/list", {})
        blob = b"".join(
            orjson.dumps({"id": first + 1 + i, "method": "thread/loaded/list", "params": {}})
            + b"\n"
            for i in range(count - 1)
        )
        started = time.perf_counter()
        client.send_in_background(blob)
        data = bytearray()
        last = started
        answers = 0
        while answers < count:
            chunk = client.read_within(quiet)
            if chunk is None:
                break
            last = time.perf_counter()
            data += chunk
            answers += chunk.count(b"\n") - chunk.count(b'{"method":')
    results = overloaded = other = 0
    for line in bytes(data).split(b"\n"):
        if not line.strip():
            continue
        message = orjson.loads(line)
        if "method" in message or not isinstance(message.get("id"), int):
            continue
        if "result" in message:
            results += 1
        elif message["error"]["code"] == OVERLOADED:
            overloaded += 1
        else:
            other += 1
    answered = results + overloaded + other
    return Outcome(
        answered / max(last - started, 1e-9), results, overloaded, other, count - answered
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--quiet", type=float, default=3.0, help="seconds of silence = done")
    parser.add_argument("--servers", default="bridge,real", help="bridge, real or both")
    args = parser.parse_args()
    names = parse_servers(parser, args.servers, ("bridge", "real"))

    with contextlib.ExitStack() as stack:
        servers: dict[str, Callable[[], StdioClient]] = {}
        if "bridge" in names:
            servers["bridge"] = lambda: StdioClient(bridge_argv("serve"), bridge_env())
        if "real" in names:
            real = stack.enter_context(real_servers())
            servers["real"] = lambda: real.spawn()[0]
        print(f"{args.requests:,} pipelined thread/loaded/list over stdio:")
        print(
            f"{'round':<6}{'server':<8}{'answered/s':>12}{'results':>9}{'-32001':>8}"
            f"{'errors':>8}{'unanswered':>11}"
        )
        rates: dict[str, list[float]] = {name: [] for name in servers}
        for round_no in range(args.rounds):
            for name, spawn in servers.items():
                o = pipeline(spawn(), args.requests, args.quiet)
                rates[name].append(o.answered_per_s)
                print(
                    f"{round_no:<6}{name:<8}{o.answered_per_s:>12,.0f}{o.results:>9,}"
                    f"{o.overloaded:>8,}{o.other_errors:>8,}{o.unanswered:>11,}"
                )
    for name, values in rates.items():
        print(f"median answered/s {name}: {median(values):,.0f}")
    if len(rates) == 2:
        print(f"bridge/real answered/s: {ratio(median(rates['bridge']), median(rates['real']))}")


if __name__ == "__main__":
    main()
