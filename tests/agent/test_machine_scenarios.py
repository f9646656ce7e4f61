"""End-to-end: model turns whose tool calls run on this machine (``machine/``), compared with
the real 0.163.0's captures of the same mock scenarios: the notifications, and the tool outputs
the model is sent (chunk ids, wall times and process ids masked)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.agent._harness import capture_messages, capture_requests, masked_turn, run_turns

pytestmark = pytest.mark.anyio

PROMPTS = {
    "shell": "Run `echo hello` in the shell.",
    "apply_patch": "Create hello.txt with apply_patch.",
}


def _outputs(requests: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for request in requests:
        for item in request["body"]["input"]:
            if item.get("type") in ("function_call_output", "custom_tool_call_output"):
                text = str(item["output"])
                text = re.sub(r"Chunk ID: [0-9a-f]{6}", "Chunk ID: <id>", text)
                text = re.sub(r"Wall time: [0-9.]+ seconds", "Wall time: <t> seconds", text)
                found.append(text)
    return found


def _shape(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in masked_turn(messages):
        if message["method"] == "item/commandExecution/outputDelta":
            continue  # timing: 0.163.0 streams only what comes ~150 ms after the spawn
        params = message["params"]
        item = params.get("item") if isinstance(params, dict) else None
        if isinstance(item, dict) and item.get("type") == "commandExecution":
            item["processId"] = "<pid>"
            item["cwd"] = "<cwd>"
        if isinstance(item, dict) and item.get("type") == "fileChange":
            for change in item["changes"]:
                change["path"] = change["path"].rsplit("/", 1)[-1]
        out.append(message)
    return out


@pytest.mark.parametrize("scenario", ["shell", "apply_patch"])
async def test_shell_and_apply_patch_items_and_outputs_are_the_real_servers(scenario: str) -> None:
    run = await run_turns(scenario, [PROMPTS[scenario]])
    assert "codex-app-bridge serve: sandbox: " in run.stderr
    ours, theirs = _shape(run.received), _shape(capture_messages(scenario))
    assert [m["method"] for m in ours] == [m["method"] for m in theirs]
    items = [m for m in ours if m["method"] == "item/completed"]
    real = [m for m in theirs if m["method"] == "item/completed"]
    assert items == real
    assert _outputs(run.requests) == _outputs(capture_requests(scenario))
