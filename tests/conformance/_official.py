"""The official ``openai-codex`` SDK, unmodified, driving ``codex-app-bridge serve`` over a pipe.

Run as ``python -m tests.conformance._official`` (the test starts it in a subprocess with a hard
timeout); prints one JSON report on stdout. The SDK spawns the server itself through
``CodexConfig(launch_args_override=…)``, exactly as an application would point it at a custom
``codex app-server``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from openai_codex import Codex, CodexConfig
from openai_codex.models import UnknownNotification

LONG_PROMPT = " ".join(f"word{i}" for i in range(400))


def main() -> None:
    config = CodexConfig(
        launch_args_override=(sys.executable, "-m", "codex_app_bridge", "serve", "--pace", "0.01"),
        env=dict(os.environ),
        cwd=os.getcwd(),
    )
    report: dict[str, Any] = {}
    with Codex(config) as codex:
        info = codex.metadata.serverInfo
        report["server"] = None if info is None else [info.name, info.version]
        thread = codex.thread_start()
        report["thread_id"] = thread.id

        handle = thread.turn("hello from the official sdk")
        events = list(handle.stream())
        report["first_methods"] = [event.method for event in events]
        report["unknown"] = [
            event.method for event in events if isinstance(event.payload, UnknownNotification)
        ]
        report["streamed"] = "".join(
            event.payload.delta  # type: ignore[union-attr]
            for event in events
            if event.method == "item/agentMessage/delta"
        )
        completed = events[-1].payload
        report["first_status"] = completed.turn.status.value  # type: ignore[union-attr]

        result = thread.run("and a second turn")
        report["second"] = {
            "status": result.status.value,
            "final": result.final_response,
            "id": result.id,
            "total_tokens": None if result.usage is None else result.usage.total.total_tokens,
        }

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
        report["interrupt_tail"] = seen[-2:]
        read = thread.read(include_turns=True)
        report["turn_statuses"] = [turn.status.value for turn in read.thread.turns]
    print(json.dumps(report))


if __name__ == "__main__":
    main()
