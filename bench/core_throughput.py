#!/usr/bin/env python3
"""Throughput of the pure layers and the listener, measured in one run on the captured 0.163.0
traffic: rollout lines parsed, ResponseItems projected (parse_turn_item), events mapped by the
stateless mapper, and events reduced and fanned out by a ThreadListener to N subscribers.

    PYTHONPATH=src python bench/core_throughput.py [--seconds S] [--subscribers N]

Prints one figure per line (operations per second and microseconds per operation). The machine
is shared and noisy: compare figures from the same run only.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from codex_app_bridge import (
    EVENT_ENVELOPE_ADAPTER,
    ROLLOUT_LINE_ADAPTER,
    item_event_to_server_notification,
    parse_turn_item,
)
from codex_app_bridge.listener import ListenerHub
from codex_app_bridge.protocol.core import EventEnvelope, EventMsgLine, ResponseItemLine
from codex_app_bridge.protocol.jsonrpc import RequestId
from codex_app_bridge.rpc.outbox import EncodedParams, OutboundNotification

CAPTURES = Path(__file__).resolve().parent.parent / "tests" / "data" / "captures"


class _CountingOutbox:
    def __init__(self, connection_id: int) -> None:
        self._id = connection_id
        self.received = 0

    @property
    def connection_id(self) -> int:
        return self._id

    @property
    def closed(self) -> bool:
        return False

    def wants(self, method: str) -> bool:
        return True

    async def send_notification(self, notification: OutboundNotification) -> bool:
        self.received += 1
        return True

    async def send_server_request(
        self, request_id: RequestId, method: str, params: EncodedParams
    ) -> bool:
        return True


def _rate(label: str, unit: str, seconds: float, batch: int, op: Callable[[], object]) -> None:
    done = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        op()
        done += batch
    print(f"{label:<44} {done / elapsed:>12,.0f} {unit}/s  {elapsed / done * 1e6:8.2f} us/{unit}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--subscribers", type=int, default=3)
    args = parser.parse_args()

    raw_lines = [
        line
        for path in sorted(CAPTURES.glob("*/rollout*.jsonl"))
        for line in path.read_bytes().splitlines()
        if line.strip()
    ]
    lines = [ROLLOUT_LINE_ADAPTER.validate_json(raw) for raw in raw_lines]
    items = [line.payload for line in lines if isinstance(line, ResponseItemLine)]
    envelopes = [
        EventEnvelope(id="turn-1", msg=line.payload)
        for line in lines
        if isinstance(line, EventMsgLine)
    ]
    delta = EVENT_ENVELOPE_ADAPTER.validate_json(
        b'{"id":"turn-1","msg":{"type":"agent_message_content_delta","thread_id":"t",'
        b'"turn_id":"turn-1","item_id":"msg_1","delta":"Hello"}}'
    )
    print(
        f"corpus: {len(raw_lines)} rollout lines, {len(items)} response items, "
        f"{len(envelopes)} events"
    )

    _rate(
        "rollout line parse (JSON bytes -> model)",
        "line",
        args.seconds,
        len(raw_lines),
        lambda: [ROLLOUT_LINE_ADAPTER.validate_json(raw) for raw in raw_lines],
    )
    _rate(
        "parse_turn_item",
        "item",
        args.seconds,
        len(items),
        lambda: [parse_turn_item(item) for item in items],
    )
    _rate(
        "stateless mapper, captured events",
        "event",
        args.seconds,
        len(envelopes),
        lambda: [item_event_to_server_notification(e.msg, "thread", e.id) for e in envelopes],
    )
    _rate(
        "stateless mapper, agent message delta",
        "event",
        args.seconds,
        1000,
        lambda: [
            item_event_to_server_notification(delta.msg, "thread", "turn-1") for _ in range(1000)
        ],
    )

    async def fan_out() -> None:
        hub = ListenerHub()
        outboxes = [_CountingOutbox(i) for i in range(args.subscribers)]
        listener = hub.create_thread("01a22a61-17a1-7d69-ad53-25afd84a341c")
        for outbox in outboxes:
            hub.add_connection(outbox)
            listener.subscribe(outbox)
        start = time.perf_counter()
        handled = 0
        while time.perf_counter() - start < args.seconds:
            for _ in range(1000):
                await listener.handle(delta)
            handled += 1000
        elapsed = time.perf_counter() - start
        print(
            f"{f'listener handle + fan-out to {args.subscribers}':<44} "
            f"{handled / elapsed:>12,.0f} event/s  {elapsed / handled * 1e6:8.2f} us/event "
            f"({outboxes[0].received:,} notifications each)"
        )

    anyio.run(fan_out)


if __name__ == "__main__":
    main()
