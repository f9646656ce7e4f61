#!/usr/bin/env python3
"""An example event producer for ``codex-app-bridge serve --producer``: stdlib only.

    codex-app-bridge serve --producer "python3 examples/echo_producer.py"

It speaks Codex core's queues as JSON lines: it reads submissions ``{"id", "op"}`` on stdin and
writes event envelopes ``{"id", "msg"}`` on stdout. Each turn (a ``user_turn`` op; its id is the
turn id) echoes the user's text back, streamed word by word:

    task_started, the user message item (item_started + item_completed), the agent message
    (item_started, agent_message_content_delta per word, item_completed), token_count,
    task_complete

While it streams it keeps reading: ``interrupt`` ends the turn with ``turn_aborted``,
``user_input`` (steering) adds a user message item to the running turn, and ``shutdown`` answers
``shutdown_complete`` and exits. End of input also ends it.

Settings (environment): ``ECHO_PRODUCER_DELAY`` seconds before each delta (default 0.01);
``ECHO_PRODUCER_LOG`` a file to which every submission received is appended (tests read it);
``CODEX_APP_BRIDGE_THREAD_ID`` is set by the bridge. Diagnostics go to stderr (the bridge logs
them).
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
import uuid
from typing import Any

THREAD_ID = os.environ.get("CODEX_APP_BRIDGE_THREAD_ID", "")
DELAY = float(os.environ.get("ECHO_PRODUCER_DELAY", "0.01"))
LOG = os.environ.get("ECHO_PRODUCER_LOG")

_ops: queue.Queue[dict[str, Any] | None] = queue.Queue()


def read_stdin() -> None:
    """Every submission line, parsed, into the queue; ``None`` at end of input."""
    for line in sys.stdin:
        if not line.strip():
            continue
        if LOG:
            with open(LOG, "a", encoding="utf-8") as log:
                log.write(line if line.endswith("\n") else line + "\n")
        try:
            _ops.put(json.loads(line))
        except ValueError:
            print(f"echo_producer: not JSON: {line[:200]!r}", file=sys.stderr, flush=True)
    _ops.put(None)


def emit(turn_id: str, msg: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"id": turn_id, "msg": msg}) + "\n")
    sys.stdout.flush()


def now_ms() -> int:
    return int(time.time() * 1000)


def text_of(items: list[dict[str, Any]]) -> str:
    return " ".join(part.get("text", "") for part in items if part.get("type") == "text")


def user_message(turn_id: str, items: list[dict[str, Any]]) -> None:
    item = {"type": "UserMessage", "id": str(uuid.uuid4()), "content": items}
    at = now_ms()
    common = {"thread_id": THREAD_ID, "turn_id": turn_id, "item": item, "started_at_ms": at}
    emit(turn_id, {"type": "item_started", **common})
    emit(turn_id, {"type": "item_completed", **common, "completed_at_ms": at})


class Shutdown(Exception):
    pass


def play_turn(turn_id: str, items: list[dict[str, Any]], number: int) -> None:
    started = now_ms()
    emit(
        turn_id,
        {
            "type": "task_started",
            "turn_id": turn_id,
            "started_at": started // 1000,
            "model_context_window": 258400,
        },
    )
    user_message(turn_id, items)
    answer = f"Echo (turn {number}): {text_of(items)}"
    message_id = f"msg_{uuid.uuid4().hex}"
    item_common = {"thread_id": THREAD_ID, "turn_id": turn_id, "started_at_ms": now_ms()}
    emit(
        turn_id,
        {
            "type": "item_started",
            **item_common,
            "item": {"type": "AgentMessage", "id": message_id, "content": []},
        },
    )
    words = answer.split(" ")
    for index, word in enumerate(words):
        # between deltas, act on what arrived: interrupt, steering, shutdown
        while True:
            try:
                op = _ops.get_nowait()
            except queue.Empty:
                break
            kind = None if op is None else op.get("op", {}).get("type")
            if kind == "interrupt":
                done = now_ms()
                emit(
                    turn_id,
                    {
                        "type": "turn_aborted",
                        "turn_id": turn_id,
                        "reason": "interrupted",
                        "started_at": started // 1000,
                        "completed_at": done // 1000,
                        "duration_ms": done - started,
                    },
                )
                return
            if kind in ("user_input", "user_turn"):
                user_message(turn_id, op["op"].get("items", []))
            elif op is None or kind == "shutdown":
                raise Shutdown(None if op is None else op.get("id"))
        if DELAY:
            time.sleep(DELAY)
        delta = word if index == len(words) - 1 else word + " "
        emit(
            turn_id,
            {
                "type": "agent_message_content_delta",
                "thread_id": THREAD_ID,
                "turn_id": turn_id,
                "item_id": message_id,
                "delta": delta,
            },
        )
    emit(
        turn_id,
        {
            "type": "item_completed",
            **item_common,
            "completed_at_ms": now_ms(),
            "item": {
                "type": "AgentMessage",
                "id": message_id,
                "content": [{"type": "Text", "text": answer}],
            },
        },
    )
    tokens = {
        "input_tokens": len(text_of(items)) // 4 + 1,
        "cached_input_tokens": 0,
        "output_tokens": len(answer) // 4 + 1,
        "reasoning_output_tokens": 0,
    }
    tokens["total_tokens"] = tokens["input_tokens"] + tokens["output_tokens"]
    emit(
        turn_id,
        {
            "type": "token_count",
            "info": {
                "total_token_usage": tokens,
                "last_token_usage": tokens,
                "model_context_window": 258400,
            },
        },
    )
    done = now_ms()
    emit(
        turn_id,
        {
            "type": "task_complete",
            "turn_id": turn_id,
            "last_agent_message": answer,
            "started_at": started // 1000,
            "completed_at": done // 1000,
            "duration_ms": done - started,
        },
    )


def main() -> int:
    threading.Thread(target=read_stdin, daemon=True).start()
    turns = 0
    while True:
        submission = _ops.get()
        if submission is None:
            return 0
        op = submission.get("op", {})
        kind = op.get("type")
        try:
            if kind in ("user_turn", "user_input"):
                turns += 1
                play_turn(submission["id"], op.get("items", []), turns)
            elif kind == "shutdown":
                raise Shutdown(submission.get("id"))
            else:  # interrupt while idle, approvals, ...: nothing to do for an echo
                print(f"echo_producer: ignoring {kind}", file=sys.stderr, flush=True)
        except Shutdown as shutdown:
            if shutdown.args[0] is not None:
                emit(shutdown.args[0], {"type": "shutdown_complete"})
            return 0


if __name__ == "__main__":
    sys.exit(main())
