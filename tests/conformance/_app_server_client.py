"""``codex-app-server-client`` 0.1.0, unmodified, driving our server over a pipe.

Run as ``python -m tests.conformance._app_server_client CODEX_BIN [EXTRA_ARG ...]`` in a
subprocess with a hard timeout; prints one JSON report. The client spawns
``CODEX_BIN [EXTRA_ARG ...] app-server --listen stdio://``: with ``CODEX_BIN`` = the Python
interpreter and ``-m codex_app_bridge`` as extra args this is our CLI used directly as a codex
binary; with a shim script it is how any client is pointed at the bridge.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from codex_app_server_client import CodexAppServer, EventAction

LONG_PROMPT = " ".join(f"word{i}" for i in range(400))


async def main(codex_bin: str, extra_args: list[str]) -> None:
    report: dict[str, Any] = {}
    async with CodexAppServer(
        codex_bin=codex_bin, extra_args=extra_args, env=dict(os.environ)
    ) as server:
        info = server.server_info
        report["user_agent"] = None if info is None else info.user_agent
        thread = await server.start_thread()
        methods: list[str] = []

        def record(method: str, _event: object) -> None:
            methods.append(method)

        first = await thread.run(
            "hello from codex-app-server-client", timeout_s=60, on_event=record
        )
        report["first"] = {
            "status": first.status,
            "final": first.final_response,
            "streamed": first.streamed_response,
            "items": [item.get("type") for item in first.items],
        }
        report["methods"] = methods
        second = await thread.run("second turn", timeout_s=60)
        report["second"] = {"status": second.status, "final": second.final_response}

        def interrupt_on_delta(method: str, _event: object) -> EventAction | None:
            return EventAction.INTERRUPT if method == "item/agentMessage/delta" else None

        third = await thread.run(LONG_PROMPT, timeout_s=60, on_event=interrupt_on_delta)
        report["interrupted"] = {"status": third.status, "turn_id": third.turn_id}
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
