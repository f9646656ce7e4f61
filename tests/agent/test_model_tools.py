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


_PLAN = {
    "collaborationMode": {
        "mode": "plan",
        "settings": {
            "model": "mock-model",
            "reasoning_effort": None,
            "developer_instructions": None,
        },
    }
}


async def _answer_colour(message: dict[str, Any]) -> dict[str, Any]:
    assert message["method"] == "item/tool/requestUserInput"
    return {"result": {"answers": {"colour": {"answers": ["Red"]}}}}


async def test_request_user_input_outside_plan_mode_gets_cores_refusal() -> None:
    run = await run_turns("user_input", ["Ask me which colour to use."], handler=_answer_colour)
    (output,) = _outputs(run.requests[1])
    assert output["output"] == "request_user_input is unavailable in Default mode"
    assert not [m for m in run.received if m.get("method") == "item/tool/requestUserInput"]
    assert not [m for m in run.received if m.get("method") == "thread/settings/updated"]


async def test_plan_mode_announces_itself_instructs_the_model_and_asks_the_user() -> None:
    run = await run_turns(
        "user_input", ["Ask me which colour to use."], turn_params=_PLAN, handler=_answer_colour
    )
    methods = [m.get("method") for m in run.received]
    # the switch is announced before the turn starts, with the built-in instructions filled in
    (updated,) = [m for m in run.received if m.get("method") == "thread/settings/updated"]
    assert methods.index("thread/settings/updated") < methods.index("turn/started")
    mode = updated["params"]["threadSettings"]["collaborationMode"]
    assert mode["mode"] == "plan"
    instructions = mode["settings"]["developer_instructions"]
    assert "Plan mode" in instructions
    # the first context carries them as the third developer fragment, as the real binary's
    developer = run.requests[0]["body"]["input"][1]
    tags = [p["text"].split("\n")[0].split(">")[0] + ">" for p in developer["content"]]
    assert tags == ["<skills_instructions>", "<permissions instructions>", "<collaboration_mode>"]
    assert (
        developer["content"][2]["text"]
        == f"<collaboration_mode>{instructions}</collaboration_mode>"
    )
    # every question offers a free-form answer; the answer goes back as compact JSON
    (asked,) = [m for m in run.received if m.get("method") == "item/tool/requestUserInput"]
    assert [q["isOther"] for q in asked["params"]["questions"]] == [True]
    (output,) = _outputs(run.requests[1])
    assert output["output"] == '{"answers":{"colour":{"answers":["Red"]}}}'
