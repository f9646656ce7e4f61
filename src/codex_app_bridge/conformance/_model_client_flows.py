"""Client flows written for the real server with a mocked model, run unchanged on either server.

``python -m codex_app_bridge.conformance._model_client_flows CLIENT SERVER_ARGV_JSON SHIM_DIR`` with
CLIENT ``official`` (``openai-codex`` 0.163.0) or ``app_server_client``
(``codex-app-server-client`` 0.1.0). The server finds its model through ``CODEX_HOME`` (the
environment this process gets): a ``config.toml`` naming the mock Responses server, whose
``sdk_flow`` scenario answers by prompt (``mock_responses.sc_sdk_flow``). No flag tells the
server it is being tested.

The flow, on one thread: a streamed turn, a turn whose every model request fails (HTTP 500; the
official SDK only), a turn whose first stream is cut (retried), a turn interrupted at its first delta, a turn that
calls the client's dynamic tool ``lookup_weather`` (the client answers it), a fork with a turn
on it, then a new client and server process (a restart) resuming the thread and running a
turn. The mock's answers say how many user messages the model saw, so a fork or resume that
lost context shows. The outcome keeps what a user of the library sees (statuses, texts, error
messages, item types), never timings; a step that raises is recorded as its error class and
message and the others still run.

:func:`run_client_flow` runs it against one server with a mock and returns the outcome and the
requests the mock got.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from codex_app_bridge.conformance._client_flows import run_client, step
from codex_app_bridge.conformance._venv_flows import shim

MODEL, PROVIDER = "mock-model", "mock"
STREAMED = "Stream a short answer."
FAIL = "fail: this turn cannot succeed"
RETRY = "retry: the first stream is cut"
LONG = "Please interrupt me: write a very long essay."
TOOL = "tool: what is the weather in Paris?"
ON_FORK = "A question on the fork"
AFTER_RESTART = "A question after the restart"
TOOL_ANSWER = "Sunny, 21 C"
WEATHER_TOOL: dict[str, Any] = {
    "name": "lookup_weather",
    "description": "Look up the weather for a city.",
    "inputSchema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}

Outcome = dict[str, Any]


def _jsonable(value: object) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return value


def official(argv: list[str], shim_dir: Path) -> Outcome:
    from openai_codex import Codex, CodexConfig
    from openai_codex.client import CodexClient

    config = CodexConfig(launch_args_override=tuple(argv), env=dict(os.environ), cwd=os.getcwd())
    out: Outcome = {}
    with Codex(config) as codex:
        thread = codex.thread_start(model=MODEL, model_provider=PROVIDER)

        def streamed() -> Outcome:
            handle = thread.turn(STREAMED)
            methods: list[str] = []
            text = ""
            last: Any = None
            for event in handle.stream():
                if not methods or methods[-1] != event.method:
                    methods.append(event.method)
                if event.method == "item/agentMessage/delta":
                    text += str(getattr(event.payload, "delta", ""))
                last = event
            turn = last.payload.turn if last is not None else None
            return {
                "methods": methods,
                "streamed": text,
                "status": None if turn is None else turn.status.value,
            }

        def run(prompt: str) -> Outcome:
            result = thread.run(prompt)
            return {
                "status": result.status.value,
                "final": result.final_response,
                "items": [item.root.type for item in result.items],
                "error": _jsonable(getattr(result, "error", None)),
            }

        step(out, "streamed", streamed)
        step(out, "failed", lambda: run(FAIL))
        step(out, "retried", lambda: run(RETRY))

        def interrupted() -> Outcome:
            handle = thread.turn(LONG)
            stream = handle.stream()
            for event in stream:
                if event.method == "item/agentMessage/delta":
                    break
            answer = _jsonable(handle.interrupt())
            last: Any = None
            for event in stream:
                last = event
            status = last.payload.turn.status.value if last is not None else None
            return {"interrupt_answer": answer, "status": status}

        step(out, "interrupted", interrupted)
        step(out, "after_interrupt", lambda: run("Are you still there?"))

        def forked() -> Outcome:
            fork = codex.thread_fork(thread.id)
            result = fork.run(ON_FORK)
            return {
                "new_id": fork.id != thread.id,
                "status": result.status.value,
                "final": result.final_response,
            }

        step(out, "fork", forked)
        thread_id = thread.id

    asked: list[str] = []

    def handler(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        asked.append(f"{method} {(params or {}).get('tool')}")
        if method == "item/tool/call":
            return {"contentItems": [{"type": "inputText", "text": TOOL_ANSWER}], "success": True}
        return {}

    with CodexClient(config, approval_handler=handler) as client:

        def dynamic_tool() -> Outcome:
            client.initialize()
            started = client.thread_start(
                {"model": MODEL, "modelProvider": PROVIDER, "dynamicTools": [WEATHER_TOOL]}
            )
            turn = client.turn_start(started.thread.id, TOOL)
            done = client.wait_for_turn_completed(turn.turn.id)
            read = client.thread_read(started.thread.id, include_turns=True)
            items = read.thread.turns[-1].items
            texts = [
                str(getattr(i.root, "text", "")) for i in items if i.root.type == "agentMessage"
            ]
            return {
                "status": done.turn.status.value,
                "asked": list(asked),
                "items": [i.root.type for i in items],
                "final": texts[-1] if texts else None,
            }

        step(out, "dynamic_tool", dynamic_tool)

    with Codex(config) as codex:

        def resumed() -> Outcome:
            again = codex.thread_resume(thread_id, model=MODEL, model_provider=PROVIDER)
            result = again.run(AFTER_RESTART)
            turns = again.read(include_turns=True).thread.turns
            return {
                "same_id": again.id == thread_id,
                "status": result.status.value,
                "final": result.final_response,
                "turn_statuses": [t.status.value for t in turns],
            }

        step(out, "resume_after_restart", resumed)
    return out


async def app_server_client(argv: list[str], shim_dir: Path) -> Outcome:
    from codex_app_server_client import CodexAppServer, EventAction, ThreadStartParams

    shim_path = shim(argv, shim_dir)
    out: Outcome = {}
    asked: list[str] = []

    async def astep(name: str, coro: Any) -> None:
        try:
            out[name] = await coro
        except Exception as exc:
            out[name] = {"raised": type(exc).__name__, "message": str(exc)[:300]}

    async def call_tool(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(f"{method} {params.get('tool')}")
        return {"contentItems": [{"type": "inputText", "text": TOOL_ANSWER}], "success": True}

    async with CodexAppServer(codex_bin=shim_path, env=dict(os.environ)) as server:
        server.low_level.on_server_request("item/tool/call", call_tool)
        thread = await server.start_thread(
            ThreadStartParams(
                model=MODEL,
                model_provider=PROVIDER,
                dynamic_tools=[WEATHER_TOOL],  # pyright: ignore[reportArgumentType]
            )
        )

        async def run(prompt: str) -> Outcome:
            result = await thread.run(prompt, timeout_s=90)
            return {
                "status": result.status,
                "final": result.final_response,
                "items": [i.get("type") for i in result.items],
            }

        await astep("streamed", run(STREAMED))
        # no failed turn here: this library cannot read a turn error's string codexErrorInfo
        # (``internalServerError``), from either server, so it never sees that turn complete
        # and cannot resume a thread that holds one
        await astep("retried", run(RETRY))

        def interrupt_on_delta(method: str, _event: object) -> EventAction | None:
            return EventAction.INTERRUPT if method == "item/agentMessage/delta" else None

        async def interrupted() -> Outcome:
            result = await thread.run(LONG, timeout_s=90, on_event=interrupt_on_delta)
            return {"status": result.status}

        await astep("interrupted", interrupted())
        await astep("after_interrupt", run("Are you still there?"))

        async def tool() -> Outcome:
            outcome = await run(TOOL)
            outcome["asked"] = list(asked)
            return outcome

        await astep("dynamic_tool", tool())
        thread_id = thread.id
    async with CodexAppServer(codex_bin=shim_path, env=dict(os.environ)) as server:

        async def resumed() -> Outcome:
            again = await server.resume_thread(thread_id)
            result = await again.run(AFTER_RESTART, timeout_s=90)
            return {
                "same_id": again.id == thread_id,
                "status": result.status,
                "final": result.final_response,
            }

        await astep("resume_after_restart", resumed())
    return out


def main() -> None:
    run_client(official, app_server_client)


if __name__ == "__main__":
    main()
