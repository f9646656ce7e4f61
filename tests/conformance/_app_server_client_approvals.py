"""``codex-app-server-client`` 0.1.0, unmodified, answering the bridge's server requests.

Run as ``python -m tests.conformance._app_server_client_approvals`` in a subprocess with a hard
timeout; prints one JSON report. Its built-in default declines every ``*/requestApproval``; a
handler registered with ``on_server_request`` answers ``item/tool/requestUserInput`` and
``item/tool/call``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from codex_app_server_client import CodexAppServer


async def main() -> None:
    report: dict[str, Any] = {}
    asked: list[str] = []

    async def answer_question(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(method)
        question = params["questions"][0]["id"]
        return {"answers": {question: {"answers": ["green"]}}}

    async def call_tool(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(f"{method} {params['tool']}")
        return {"contentItems": [{"type": "inputText", "text": "42"}], "success": True}

    async with CodexAppServer(
        codex_bin=sys.executable, extra_args=["-m", "codex_app_bridge"], env=dict(os.environ)
    ) as server:
        server.low_level.on_server_request("item/tool/requestUserInput", answer_question)
        server.low_level.on_server_request("item/tool/call", call_tool)
        thread = await server.start_thread()
        for key, prompt in (
            ("declined", "approve: rm -rf /"),
            ("question", "ask: Favourite colour?"),
            ("tool", "tool: answer {}"),
        ):
            result = await thread.run(prompt, timeout_s=60)
            report[key] = {"status": result.status, "final": result.final_response}
    report["asked"] = asked
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main())
