"""The tools core answers without running anything locally: the client's dynamic tools and
``request_user_input``.

Role: handlers for the tool table (``_tools``), looked up after ``TOOL_HANDLERS``:

* a thread/start ``dynamicTools`` name: core asks the client (``dynamic_tool_call_request`` ->
  ``item/tool/call``), waits for its ``dynamic_tool_response``, shows the ``DynamicToolCall``
  item completed and hands the client's content to the model (its text when it is one text
  item; the content items otherwise);
* ``request_user_input`` (plan mode only, else core's ``request_user_input is unavailable in
  Default mode``; every question needs options and gets ``is_other: true``):
  ``request_user_input`` -> ``item/tool/requestUserInput``, the answers go back to the model
  as JSON.

Arguments that are not JSON get core's ``failed to parse function arguments: ...`` output.
Boundary: core events and ops; no I/O.
"""

from __future__ import annotations

from typing import Any, cast

import orjson

from codex_app_bridge.agent._events import dicts
from codex_app_bridge.agent._tools import ToolCall, ToolContext, ToolError, ToolHandler, ToolOutput
from codex_app_bridge.protocol.core import (
    DynamicToolCallItem,
    DynamicToolCallRequestEvent,
    DynamicToolResponseOp,
    ItemCompletedEvent,
    RequestUserInputEvent,
    UserInputAnswerOp,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.sources import SessionConfig

__all__ = ["builtin_tool", "parse_arguments"]


def parse_arguments(call: ToolCall) -> Any:
    """The call's JSON arguments (``ToolError`` with core's text when they are not JSON)."""
    try:
        return orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError as exc:
        raise ToolError(f"failed to parse function arguments: {exc}") from None


def _object(value: object) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


async def _request_user_input(call: ToolCall, ctx: ToolContext) -> ToolOutput:
    from codex_app_bridge.config import MODE_DISPLAY_NAMES, collaboration_mode_kind

    mode = collaboration_mode_kind(ctx.config.collaboration_mode)
    if mode != "plan":
        name = MODE_DISPLAY_NAMES.get(mode, mode.replace("_", " ").title())
        raise ToolError(f"request_user_input is unavailable in {name} mode")
    arguments = _object(parse_arguments(call))
    raw = arguments.get("questions")
    if not isinstance(raw, list):
        raise ToolError("failed to parse function arguments: missing field `questions`")
    questions = dicts(cast("object", raw))
    if any(not isinstance(q.get("options"), list) or not q.get("options") for q in questions):
        raise ToolError("request_user_input requires non-empty options for every question")
    # the client always offers a free-form answer besides the options (core sets it)
    questions = [{**q, "is_other": True} for q in questions]
    event = RequestUserInputEvent(call_id=call.call_id, turn_id=ctx.turn_id, questions=questions)
    answer = await ctx.ask(event)
    response = answer.response if isinstance(answer, UserInputAnswerOp) else None
    return ToolOutput(output=orjson.dumps(response).decode(), success=True)


def _dynamic(namespace: str | None) -> ToolHandler:
    async def handler(call: ToolCall, ctx: ToolContext) -> ToolOutput:
        arguments = parse_arguments(call)
        started = now_ms()
        event = DynamicToolCallRequestEvent(
            callId=call.call_id,
            turnId=ctx.turn_id,
            startedAtMs=started,
            namespace=namespace,
            tool=call.name,
            arguments=arguments,
        )
        answer = await ctx.ask(event)
        response = _object(answer.response if isinstance(answer, DynamicToolResponseOp) else None)
        items = dicts(response.get("contentItems"))
        success = response.get("success") is True
        done = now_ms()
        ctx.emit(
            ItemCompletedEvent(
                thread_id=ctx.thread_id,
                turn_id=ctx.turn_id,
                item=DynamicToolCallItem.model_validate(
                    {
                        "id": call.call_id,
                        "namespace": namespace,
                        "tool": call.name,
                        "arguments": arguments,
                        "status": "completed" if success else "failed",
                        "content_items": items,
                        "success": success,
                        "duration": {
                            "secs": (done - started) // 1000,
                            "nanos": ((done - started) % 1000) * 1_000_000,
                        },
                    }
                ),
                started_at_ms=started,
                completed_at_ms=done,
            )
        )
        texts = [str(i.get("text", "")) for i in items if i.get("type") == "inputText"]
        if len(items) == 1 and len(texts) == 1:
            return ToolOutput(output=texts[0], success=success)
        content: list[dict[str, Any]] = []
        for i in items:
            if i.get("type") == "inputText":
                content.append({"type": "input_text", "text": str(i.get("text", ""))})
            elif i.get("type") == "inputImage":
                content.append({"type": "input_image", "image_url": str(i.get("imageUrl", ""))})
        return ToolOutput(output=content, success=success)

    return handler


def builtin_tool(name: str, config: SessionConfig) -> ToolHandler | None:
    """The handler core itself provides for ``name`` in this session, if any."""
    for tool in config.dynamic_tools:
        if tool.get("name") == name:
            namespace = tool.get("namespace")
            return _dynamic(namespace if isinstance(namespace, str) else None)
    if name == "request_user_input":
        return _request_user_input
    return None
