#!/usr/bin/env python3
"""The two reference servers of ``throughput.py``, speaking just enough of the protocol for the
benchmark client (``initialize``, ``thread/start``, ``turn/start``, ``thread/loaded/list``).

    python bench/_fake_server.py passthrough SCRIPT   # the practical limit of a Python server
    python bench/_fake_server.py preencoded SCRIPT    # the reading client's ceiling

On ``turn/start``, ``passthrough`` reads the script's event lines, rewrites each
``agent_message_content_delta`` into its ``item/agentMessage/delta`` notification with orjson
(``emittedAtMs`` stamped) and writes them in large chunks, then ``turn/completed``.
``preencoded`` encodes every line before answering ``turn/start`` and then only writes bytes.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import orjson

CHUNK = 1 << 18


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def _notification(method: str, params: dict[str, Any]) -> bytes:
    return orjson.dumps(
        {"method": method, "params": params, "emittedAtMs": time.time_ns() // 1_000_000}
    )


def _stream(script: str, thread_id: str, turn_id: str) -> Iterator[bytes]:
    with open(script, "rb") as f:
        for raw in f:
            msg = orjson.loads(raw)["msg"]
            if msg["type"] == "agent_message_content_delta":
                yield _notification(
                    "item/agentMessage/delta",
                    {
                        "threadId": thread_id,
                        "turnId": turn_id,
                        "itemId": msg["item_id"],
                        "delta": msg["delta"],
                    },
                )
            elif msg["type"] == "task_complete":
                turn = {"id": turn_id, "items": [], "status": "completed", "error": None}
                yield _notification("turn/completed", {"threadId": thread_id, "turn": turn})


def _play(lines: Iterator[bytes] | list[bytes]) -> None:
    pending: list[bytes] = []
    size = 0
    for line in lines:
        pending.append(line)
        size += len(line) + 1
        if size >= CHUNK:
            pending.append(b"")
            _write(b"\n".join(pending))
            pending, size = [], 0
    if pending:
        pending.append(b"")
        _write(b"\n".join(pending))


def main() -> None:
    mode, script = sys.argv[1], sys.argv[2]
    thread_id = "thr_fake"
    turns = 0
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        message = orjson.loads(raw)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "turn/start":
            turn_id = f"turn_fake_{turns}"
            turns += 1
            lines = _stream(script, thread_id, turn_id)
            if mode == "preencoded":
                lines = list(lines)
            _write(orjson.dumps({"id": request_id, "result": {"turn": {"id": turn_id}}}) + b"\n")
            _play(lines)
            continue
        if method == "initialize":
            result: Any = {"userAgent": "fake/0.163.0", "platformFamily": "unix"}
        elif method == "thread/start":
            result = {"thread": {"id": thread_id}}
        elif method == "thread/loaded/list":
            result = {"data": [thread_id], "nextCursor": None}
        else:
            result = {}
        _write(orjson.dumps({"id": request_id, "result": result}) + b"\n")


if __name__ == "__main__":
    main()
