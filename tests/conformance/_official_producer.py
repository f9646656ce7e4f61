"""The official ``openai-codex`` SDK, unmodified, driving ``serve --producer`` with the example
producer (``examples/echo_producer.py``): a turn, an interrupted turn, a second full turn.

Run as ``python -m tests.conformance._official_producer LOGFILE`` (the test starts it in a
subprocess with a hard timeout); prints one JSON report on stdout. The producer appends every
submission it receives to LOGFILE (``ECHO_PRODUCER_LOG``), so the test can check that the
interrupt reached it as an ``Op``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from openai_codex import Codex, CodexConfig
from openai_codex.models import UnknownNotification

ROOT = Path(__file__).resolve().parents[2]
PRODUCER = ROOT / "examples" / "echo_producer.py"
LONG_PROMPT = " ".join(f"word{i}" for i in range(400))


def main() -> None:
    env = dict(os.environ)
    env["ECHO_PRODUCER_LOG"] = sys.argv[1]
    env["ECHO_PRODUCER_DELAY"] = "0.005"
    producer = f"{sys.executable} {PRODUCER}"
    config = CodexConfig(
        launch_args_override=(
            sys.executable,
            "-m",
            "codex_app_bridge",
            "serve",
            "--producer",
            producer,
        ),
        env=env,
        cwd=os.getcwd(),
    )
    report: dict[str, Any] = {}
    with Codex(config) as codex:
        thread = codex.thread_start()
        report["thread_id"] = thread.id

        events = list(thread.turn("hello from the producer").stream())
        report["first_methods"] = [event.method for event in events]
        report["unknown"] = [
            event.method for event in events if isinstance(event.payload, UnknownNotification)
        ]
        report["streamed"] = "".join(
            event.payload.delta  # type: ignore[union-attr]
            for event in events
            if event.method == "item/agentMessage/delta"
        )
        report["first_status"] = events[-1].payload.turn.status.value  # type: ignore[union-attr]

        handle = thread.turn(LONG_PROMPT)
        seen: list[str] = []
        stream = handle.stream()
        for event in stream:
            seen.append(event.method)
            if event.method == "item/agentMessage/delta":
                break
        interrupt = handle.interrupt()
        for event in stream:
            seen.append(event.method)
        report["interrupt_response"] = interrupt.model_dump(mode="json")
        report["interrupt_tail"] = seen[-1:]

        result = thread.run("and a second turn")
        report["second"] = {
            "status": result.status.value,
            "final": result.final_response,
            "total_tokens": None if result.usage is None else result.usage.total.total_tokens,
        }
        read = thread.read(include_turns=True)
        report["turn_statuses"] = [turn.status.value for turn in read.thread.turns]
        report["turn_ids"] = [turn.id for turn in read.thread.turns]
    print(json.dumps(report))


if __name__ == "__main__":
    main()
