#!/usr/bin/env python3
"""Pipelined requests over stdio, bridge versus the real server, in one run: after
``initialize``, N ``thread/loaded/list`` requests (default 20,000) are written back to back
without waiting; the client reads until every request is accounted for: answered (a result, a
``-32001`` overloaded error or another error) or, for the real server, reported dropped (its
``dropping overload response`` log line: a request it will never answer). No silence is taken
for the end, so a slow or busy machine changes the rate, not the counts; ``--timeout`` only
bounds a server that loses requests without saying so (they are printed as unanswered). Prints
answered/s (from the first request written to the last answer), results, ``-32001`` errors, other
errors, requests dropped and requests never answered.

    .venv/bin/python bench/pipelined_requests.py [--requests 20000] [--rounds 2] [--timeout 300]
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
DROPPED = b"dropping overload response"
"""What the real server logs (``WARN``, target ``codex_app_server_transport``) for each request it
will never answer: its ingress queue was full and so was the connection's outbound queue."""
REAL_LOG = "error,codex_app_server_transport=warn"


@dataclass
class Outcome:
    answered_per_s: float
    results: int
    overloaded: int
    other_errors: int
    dropped: int
    unanswered: int


def pipeline(client: StdioClient, count: int, timeout: float) -> Outcome:
    with client:
        client.initialize()
        first = client.request("thread/loaded/list", {})
        blob = b"".join(
            orjson.dumps({"id": first + 1 + i, "method": "thread/loaded/list", "params": {}})
            + b"\n"
            for i in range(count - 1)
        )
        started = time.perf_counter()
        deadline = started + timeout
        client.send_in_background(blob)
        data = bytearray()
        log = bytearray()
        last = started
        answers = dropped = 0
        while answers + dropped < count:
            chunks = client.read_both_within(deadline - time.perf_counter())
            if chunks is None:
                break
            chunk, logged = chunks
            if chunk:
                last = time.perf_counter()
                data += chunk
                answers += chunk.count(b"\n") - chunk.count(b'{"method":')
            if logged:
                log += logged
                dropped = log.count(DROPPED)
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
        answered / max(last - started, 1e-9),
        results,
        overloaded,
        other,
        dropped,
        count - answered - dropped,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait for every request of a round"
    )
    parser.add_argument("--servers", default="bridge,real", help="bridge, real or both")
    args = parser.parse_args()
    names = parse_servers(parser, args.servers, ("bridge", "real"))

    with contextlib.ExitStack() as stack:
        servers: dict[str, Callable[[], StdioClient]] = {}
        if "bridge" in names:
            servers["bridge"] = lambda: StdioClient(bridge_argv("serve"), bridge_env())
        if "real" in names:
            real = stack.enter_context(real_servers())
            servers["real"] = lambda: real.spawn(REAL_LOG, read_log=True)[0]
        print(f"{args.requests:,} pipelined thread/loaded/list over stdio:")
        print(
            f"{'round':<6}{'server':<8}{'answered/s':>12}{'results':>9}{'-32001':>8}"
            f"{'errors':>8}{'dropped':>8}{'unanswered':>11}"
        )
        rates: dict[str, list[float]] = {name: [] for name in servers}
        for round_no in range(args.rounds):
            for name, spawn in servers.items():
                o = pipeline(spawn(), args.requests, args.timeout)
                rates[name].append(o.answered_per_s)
                print(
                    f"{round_no:<6}{name:<8}{o.answered_per_s:>12,.0f}{o.results:>9,}"
                    f"{o.overloaded:>8,}{o.other_errors:>8,}{o.dropped:>8,}{o.unanswered:>11,}"
                )
    for name, values in rates.items():
        print(f"median answered/s {name}: {median(values):,.0f}")
    if len(rates) == 2:
        print(f"bridge/real answered/s: {ratio(median(rates['bridge']), median(rates['real']))}")


if __name__ == "__main__":
    main()
