#!/usr/bin/env python3
"""Latency from the moment an event is handed to the server to the moment the client reads its
notification, through the in-memory harness (``_seam.py``), at offered rates of 1k, 10k and 50k
agent-message deltas a second (open loop: each event is due at ``start + i / rate``; all events
that are due are handed over at each wake-up, in order).

Prints, per rate: the rate achieved, p50 / p99 / max latency (hand-off to read), and the lag of
the hand-off itself behind the schedule (max), which grows when the server cannot keep up.

    .venv/bin/python bench/latency.py [--rates 1000,10000,50000] [--seconds 2]
"""

from __future__ import annotations

import argparse
import time

import anyio
from _common import TURN_ID, delta_event, delta_text, turn_prologue
from _seam import envelope, open_server, push_event


def percentile(sorted_values: list[float], fraction: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


async def at_rate(rate: int, count: int) -> tuple[float, list[float], float]:
    """(achieved events/s, sorted latencies in s, max hand-off lag in s)."""
    async with open_server() as server:
        client = await server.connect()
        thread_id = await server.start_thread(client)
        for msg in turn_prologue():
            await push_event(server, thread_id, envelope(TURN_ID, msg))
        events = [envelope(TURN_ID, delta_event(delta_text(i))) for i in range(count)]
        handed = [0.0] * count
        latencies = [0.0] * count
        lag = 0.0

        async def produce() -> None:
            nonlocal lag
            start = time.perf_counter()
            sent = 0
            while sent < count:
                now = time.perf_counter()
                due = min(count, int((now - start) * rate) + 1)
                if due <= sent:
                    await anyio.sleep(start + sent / rate - now)
                    continue
                lag = max(lag, now - (start + (due - 1) / rate))
                while sent < due:
                    handed[sent] = time.perf_counter()
                    await push_event(server, thread_id, events[sent])
                    sent += 1

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            group.start_soon(produce)
            received = 0
            while received < count:
                message = await client.receive()
                if message.get("method") != "item/agentMessage/delta":
                    continue
                index = int(message["params"]["delta"][1:-1])
                if index != received:
                    raise AssertionError(f"delta {index} arrived in place {received}")
                latencies[index] = time.perf_counter() - handed[index]
                received += 1
        elapsed = time.perf_counter() - started
    return count / elapsed, sorted(latencies), lag


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1000,10000,50000")
    parser.add_argument("--seconds", type=float, default=2.0, help="duration of each rate")
    args = parser.parse_args()
    print("hand-off to the server -> notification read by the client (in memory), in ms:")
    print(
        f"{'offered/s':>10}{'achieved/s':>12}{'events':>9}{'p50':>9}{'p99':>9}{'max':>9}"
        f"{'max lag':>9}"
    )
    for rate in (int(r) for r in args.rates.split(",")):
        count = max(10, int(rate * args.seconds))
        achieved, latencies, lag = anyio.run(at_rate, rate, count)
        ms = [percentile(latencies, f) * 1000 for f in (0.5, 0.99)] + [latencies[-1] * 1000]
        print(
            f"{rate:>10,}{achieved:>12,.0f}{count:>9,}"
            + "".join(f"{v:>9.2f}" for v in ms)
            + f"{lag * 1000:>9.1f}"
        )


if __name__ == "__main__":
    main()
