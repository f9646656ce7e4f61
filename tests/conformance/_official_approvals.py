"""The official ``openai-codex`` SDK, unmodified, answering the bridge's approval requests.

Run as ``python -m tests.conformance._official_approvals``; prints one JSON report. The SDK's own
approval hook (its default handler accepts command and file-change approvals) answers the
``item/commandExecution/requestApproval`` and ``item/fileChange/requestApproval`` requests that
the built-in agent raises for ``approve:`` / ``patch:`` inputs.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from openai_codex import Codex, CodexConfig


def main() -> None:
    config = CodexConfig(
        launch_args_override=(sys.executable, "-m", "codex_app_bridge", "serve"),
        env=dict(os.environ),
        cwd=os.getcwd(),
    )
    report: dict[str, Any] = {}
    with Codex(config) as codex:
        thread = codex.thread_start()
        for key, prompt in (("command", "approve: echo hi"), ("patch", "patch: notes.txt")):
            result = thread.run(prompt)
            report[key] = {"status": result.status.value, "final": result.final_response}
        read = thread.read(include_turns=True)
        report["statuses"] = [turn.status.value for turn in read.thread.turns]
        report["thread_status"] = read.thread.status.model_dump(mode="json")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
