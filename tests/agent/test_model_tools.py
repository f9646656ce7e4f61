"""End-to-end: the tool loop. Calls are answered and the loop goes on until a response has no
call: the machine's exec_command (capture ``shell``), the client's dynamic tools
(``item/tool/call``), and core's answer to a tool it does not have."""

from __future__ import annotations

from typing import Any

import pytest

from tests.agent._harness import capture_messages, capture_requests, masked_turn, run_turns

pytestmark = pytest.mark.anyio


def _outputs(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in request["body"]["input"] if i["type"] == "function_call_output"]


async def test_exec_command_runs_and_the_loop_sends_its_output_as_the_real_server() -> None:
    run = await run_turns("shell", ["Run `echo hello` in the shell."])
    assert len(run.requests) == 2
    real = capture_requests("shell")
    ours_in, real_in = run.requests[1]["body"]["input"], real[1]["body"]["input"]
    assert [(i["type"], i.get("role")) for i in ours_in] == [
        (i["type"], i.get("role")) for i in real_in
    ]
    assert ours_in[-3:-1] == real_in[-3:-1]  # the assistant message and the call, as received
    (output,) = _outputs(run.requests[1])
    assert output["id"].startswith("fco_")
    assert output["output"].endswith("Output:\nhello\n")
    methods = [m["method"] for m in masked_turn(run.received) if "delta" not in m["method"].lower()]
    real_methods = [
        m["method"]
        for m in masked_turn(capture_messages("shell"))
        if "delta" not in m["method"].lower()
    ]
    assert methods == real_methods


async def test_an_unknown_tool_gets_cores_answer_and_the_turn_goes_on() -> None:
    run = await run_turns("plan", ["Make a plan."])
    assert len(run.requests) >= 2
    (output,) = _outputs(run.requests[1])
    assert output["output"] == "unsupported call: update_plan"
    (completed,) = [m for m in run.received if m.get("method") == "turn/completed"]
    assert completed["params"]["turn"]["status"] == "completed"


async def test_a_dynamic_tool_is_called_on_the_client_and_its_answer_goes_to_the_model() -> None:
    asked: list[dict[str, Any]] = []

    async def handler(message: dict[str, Any]) -> dict[str, Any]:
        asked.append(message)
        return {
            "result": {
                "contentItems": [{"type": "inputText", "text": "42 degrees"}],
                "success": True,
            }
        }

    tool = {
        "name": "lookup_weather",
        "description": "Look up the weather.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    run = await run_turns(
        "dynamic_tool",
        ["What is the weather?"],
        params={"tool": "lookup_weather"},
        thread_params={"dynamicTools": [tool]},
        handler=handler,
    )
    (request,) = asked
    assert request["method"] == "item/tool/call"
    assert request["params"]["tool"] == "lookup_weather"
    offered = run.requests[0]["body"]["tools"]
    assert [t.get("name") for t in offered][-2:] == ["lookup_weather", None]
    (output,) = _outputs(run.requests[1])
    assert output["output"] == "42 degrees"
