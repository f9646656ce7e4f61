"""The official ``openai-codex`` SDK, unmodified, across a restart of ``codex-app-bridge serve``.

Run as ``python -m tests.conformance._official_restart CODEX_HOME``: one SDK client (and server
process) runs a turn and names the thread, then exits; a second one, on the same ``CODEX_HOME``,
lists the thread, reads it with its turns, resumes it and runs a second turn; a third only reads.
Prints one JSON report on stdout.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from openai_codex import Codex, CodexConfig


def _config(home: str) -> CodexConfig:
    return CodexConfig(
        launch_args_override=(sys.executable, "-m", "codex_app_bridge", "serve", "--pace", "0"),
        env={**os.environ, "CODEX_HOME": home},
        cwd=os.getcwd(),
    )


def main() -> None:
    home = sys.argv[1]
    report: dict[str, Any] = {}
    with Codex(_config(home)) as codex:
        thread = codex.thread_start()
        report["thread_id"] = thread.id
        first = thread.run("first turn before the restart")
        report["first"] = {"id": first.id, "status": first.status.value}
        thread.set_name("survives restarts")
    with Codex(_config(home)) as codex:
        listed = codex.thread_list()
        report["listed"] = [
            {"id": t.id, "name": t.name, "preview": t.preview, "status": t.status.root.type}
            for t in listed.data
        ]
        read = codex.thread_resume(report["thread_id"]).read(include_turns=True)
        report["read_turns"] = [turn.id for turn in read.thread.turns]
        resumed = codex.thread_resume(report["thread_id"])
        second = resumed.run("second turn after the restart")
        report["second"] = {
            "id": second.id,
            "status": second.status.value,
            "final": second.final_response,
        }
    with Codex(_config(home)) as codex:
        listed = codex.thread_list()
        report["listed_after"] = [t.id for t in listed.data]
        thread = codex.thread_resume(report["thread_id"])
        read = thread.read(include_turns=True)
        report["turns_after"] = [[turn.id, turn.status.value] for turn in read.thread.turns]
        report["path"] = read.thread.path
    print(json.dumps(report))


if __name__ == "__main__":
    main()
