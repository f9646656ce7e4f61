"""A producer for the fault tests of ``--producer``: what it does depends on the turn's text.

* ``die``: ``task_started``, then exit with code 3 (mid-turn);
* ``kill``: ``task_started``, then SIGKILL itself;
* ``garbage``: ``task_started``, three bad lines (not JSON, a long non-envelope, an invalid
  event), then an answer and ``task_complete``;
* ``flood N``: ``task_started``, N agent message deltas as fast as it can, ``task_complete``;
* ``deaf``: ``task_started``, then reads and ignores everything (interrupt, shutdown) forever;
* ``mute``: ``task_started``, then at the next submission (an interrupt) closes its stdout and
  lives on, reading and ignoring its stdin;
* anything else: a one-delta answer and ``task_complete``.

``FAULT_PRODUCER_STARTS``: a file to which each start appends a line (tests count processes).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

THREAD = os.environ.get("CODEX_APP_BRIDGE_THREAD_ID", "")


def emit(turn: str, msg: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"id": turn, "msg": msg}) + "\n")
    sys.stdout.flush()


def item(turn: str, kind: str, content: list[Any]) -> dict[str, Any]:
    return {
        "type": kind,
        "thread_id": THREAD,
        "turn_id": turn,
        "item": {"type": "AgentMessage", "id": "msg_1", "content": content},
        "started_at_ms": 1,
        **({"completed_at_ms": 2} if kind == "item_completed" else {}),
    }


def delta(turn: str, text: str) -> dict[str, Any]:
    return {
        "type": "agent_message_content_delta",
        "thread_id": THREAD,
        "turn_id": turn,
        "item_id": "msg_1",
        "delta": text,
    }


def answer(turn: str, text: str) -> None:
    emit(turn, item(turn, "item_started", []))
    emit(turn, delta(turn, text))
    emit(turn, item(turn, "item_completed", [{"type": "Text", "text": text}]))
    emit(turn, {"type": "task_complete", "turn_id": turn, "last_agent_message": text})


def main() -> None:
    starts = os.environ.get("FAULT_PRODUCER_STARTS")
    if starts:
        with open(starts, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
    for line in sys.stdin:
        submission = json.loads(line)
        op = submission["op"]
        turn = submission["id"]
        if op["type"] == "shutdown":
            emit(turn, {"type": "shutdown_complete"})
            return
        if op["type"] != "user_turn":
            continue
        text = " ".join(part.get("text", "") for part in op["items"])
        emit(turn, {"type": "task_started", "turn_id": turn, "started_at": 1})
        print(f"fault_producer: turn {text!r}", file=sys.stderr, flush=True)
        if text == "die":
            sys.exit(3)
        if text == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if text == "mute":
            sys.stdin.readline()
            os.close(1)
            for _ in sys.stdin:
                pass
            signal.pause()
        if text == "deaf":
            for _ in sys.stdin:
                pass
            signal.pause()
        if text == "garbage":
            sys.stdout.write("this is not json at all\n")
            sys.stdout.write(json.dumps({"hello": "x" * 1000}) + "\n")
            sys.stdout.write(json.dumps({"id": turn, "msg": {"type": "item_started"}}) + "\n")
            sys.stdout.flush()
        if text.startswith("flood "):
            count = int(text.split()[1])
            emit(turn, item(turn, "item_started", []))
            chunk = json.dumps({"id": turn, "msg": delta(turn, "x")}) + "\n"
            for _ in range(count):
                sys.stdout.write(chunk)
            sys.stdout.flush()
            emit(turn, item(turn, "item_completed", [{"type": "Text", "text": "x" * count}]))
            emit(turn, {"type": "task_complete", "turn_id": turn, "last_agent_message": None})
            continue
        answer(turn, f"ok: {text}")


if __name__ == "__main__":
    main()
