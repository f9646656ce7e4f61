#!/usr/bin/env python3
"""Fan-out: N agent-message deltas handed to one thread as fast as the server takes them, read by
K subscribers of that thread (K = 1, 8, 64; in-memory connections through ``_seam.py`` until
sockets exist). The first connection starts the thread, the others subscribe with
``thread/resume``. Prints events/s handed over and notifications/s delivered (K x N over the
time until the last subscriber read its last delta); every subscriber must get every delta, in
order.

    .venv/bin/python bench/fanout.py [--subscribers 1,8,64] [--deltas 20000]
"""

from __future__ import annotations

import argparse
import time

import anyio
from _common import TURN_ID, delta_event, delta_text, turn_prologue
from _seam import Client, envelope, open_server, push_event


async def fan_out(subscribers: int, deltas: int) -> float:
    """Seconds from the first hand-off until every subscriber read every delta."""
    async with open_server() as server:
        owner = await server.connect()
        thread_id = await server.start_thread(owner)
        clients = [owner]
        for _ in range(subscribers - 1):
            client = await server.connect()
            await client.call("thread/resume", {"threadId": thread_id, "excludeTurns": True})
            clients.append(client)
        for msg in turn_prologue():
            await push_event(server, thread_id, envelope(TURN_ID, msg))
        texts = [delta_text(i) for i in range(deltas)]
        events = [envelope(TURN_ID, delta_event(text)) for text in texts]

        async def read_all(client: Client) -> None:
            received = 0
            while received < deltas:
                message = await client.receive()
                if message.get("method") == "item/agentMessage/delta":
                    if message["params"]["delta"] != texts[received]:
                        raise AssertionError(f"delta {received} wrong: {message}")
                    received += 1

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for client in clients:
                group.start_soon(read_all, client)
            for event in events:
                await push_event(server, thread_id, event)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", default="1,8,64")
    parser.add_argument("--deltas", type=int, default=20_000)
    args = parser.parse_args()
    print(f"{args.deltas:,} deltas to K subscribers of one thread (in memory):")
    print(f"{'K':>4}{'events/s':>12}{'notifications/s':>17}{'seconds':>9}")
    for k in (int(s) for s in args.subscribers.split(",")):
        elapsed = anyio.run(fan_out, k, args.deltas)
        print(
            f"{k:>4}{args.deltas / elapsed:>12,.0f}{k * args.deltas / elapsed:>17,.0f}"
            f"{elapsed:>9.2f}"
        )


if __name__ == "__main__":
    main()
