"""A scripted mock of the OpenAI Responses API (SSE), to drive the real ``codex`` offline.

Role: the model side of a conformance or benchmark run. The real ``codex app-server`` (or
``codex exec``) is pointed at it through the CODEX_HOME ``config.toml`` that
:func:`codex_app_bridge.conformance.real_codex.write_codex_config` writes. Boundary: it knows the
Responses wire format and nothing of the bridge; stdlib HTTP only, bound to 127.0.0.1.

Stable API (other branches reuse it, e.g. the throughput benchmark)::

    from codex_app_bridge.conformance.mock_responses import MockResponses

    with MockResponses() as mock:          # a server thread on 127.0.0.1, a free port
        mock.base_url                      # "http://127.0.0.1:PORT/v1": the provider base_url
        mock.url                           # "http://127.0.0.1:PORT": the root (/_mock/* lives here)
        mock.set_scenario("throughput", n=20000)   # select a scenario, reset counters and log
        ...                                # run codex against mock.base_url
        mock.requests()                    # every request since the last set_scenario

From the shell: ``python -m codex_app_bridge.conformance.mock_responses --port 0`` prints
``URL http://127.0.0.1:PORT`` (and ``PORT n``) on stdout and serves until interrupted.

HTTP endpoints (same as ``tools/realpeer/mock_provider.py``):

- ``POST /v1/responses``: the next reply of the active scenario (SSE stream or HTTP error);
- ``GET /v1/models``: an empty model list;
- ``POST /_mock/scenario`` ``{"name": str, "params": {...}}``: select a scenario, reset counters;
- ``GET /_mock/requests``: JSON list of every request since then (headers without
  ``authorization``, parsed JSON body);
- ``GET /_mock/health``: ``{"ok": true}``.

Scenarios (:data:`SCENARIOS`; ``n`` is the 0-based index of the ``/v1/responses`` request since the
scenario was selected): ``plain`` (params ``text``, ``chunk``), ``reasoning``, ``shell`` (``cmd``,
``args``: more ``exec_command`` arguments),
``apply_patch``, ``steps`` (one tool call per request: ``{"patch": text}``, ``{"cmd": text}`` or
``{"stdin": chars}`` to the session the last output named,
then ``text``), ``web_search``, ``error_retry`` (``failures``: HTTP 500s first), ``error_fatal``
(always 500), ``stream_retry`` (``failures``: streams cut before ``response.completed``),
``stream_failed`` (``response.failed``), ``interrupt`` (``delay_s`` between events), ``multi_turn``,
``plan`` (``update_plan``), ``throughput`` (``n`` deltas, default 20000, written in large writes),
``dynamic_tool`` (``tool``), ``client_flow`` (numbered answers; a prompt that says "interrupt"
gets the slow stream), ``rate_limited`` (429 + ``retry-after``, ``failures``), ``unauthorized``
(always 401), ``invalid_sse`` (unparseable lines among good events), ``cut_mid_event`` (streams
torn inside an event, ``failures``), ``huge_event`` (one delta of ``mb`` MiB), ``unknown_tool``
(``frobnicate``), ``user_input`` (``request_user_input``), ``sdk_flow`` (a client library's
flow: fail / retry / tool / interrupt / context-counting answers, by prompt), ``hold`` (a few
deltas, then the stream stays open until the client closes it), ``goal`` (messages, then
``update_goal`` complete at request ``complete_at``), ``goal_tools`` (each goal tool once, and
their refusals). Tool-call scenarios look at the ``tools`` Codex offered to choose the
call shape (``exec_command`` / ``shell_command`` / ``shell``; custom or function ``apply_patch``).
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, cast

__all__ = [
    "SCENARIOS",
    "SSE",
    "HTTPError",
    "MockResponses",
    "MockState",
    "Reply",
    "Scenario",
    "sse_bytes",
]

JsonObject = dict[str, Any]

USAGE: Final[JsonObject] = {
    "input_tokens": 100,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 20,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 120,
}

# one HTTP write carries at most this many bytes of SSE: big enough that a 20k-delta stream is a
# handful of writes, small enough not to hold the whole stream twice in memory
_WRITE_CHUNK: Final = 1 << 20


# --- SSE event builders (the public Responses streaming event shapes) -------------------------


def ev_created(rid: str) -> JsonObject:
    return {
        "type": "response.created",
        "response": {"id": rid, "object": "response", "status": "in_progress"},
    }


def ev_completed(rid: str, usage: JsonObject | None = None) -> JsonObject:
    return {
        "type": "response.completed",
        "response": {
            "id": rid,
            "object": "response",
            "status": "completed",
            "usage": usage or USAGE,
        },
    }


def ev_failed(rid: str, code: str, message: str) -> JsonObject:
    return {
        "type": "response.failed",
        "response": {"id": rid, "status": "failed", "error": {"code": code, "message": message}},
    }


def message_events(
    item_id: str, chunks: list[str], output_index: int = 0, phase: str | None = None
) -> list[JsonObject]:
    """An assistant message streamed as one ``output_text`` delta per chunk."""
    text = "".join(chunks)
    added: JsonObject = {
        "type": "message",
        "role": "assistant",
        "id": item_id,
        "status": "in_progress",
        "content": [],
    }
    done: JsonObject = {
        "type": "message",
        "role": "assistant",
        "id": item_id,
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    if phase:
        added["phase"] = phase
        done["phase"] = phase
    where = {"item_id": item_id, "output_index": output_index, "content_index": 0}
    evs: list[JsonObject] = [
        {"type": "response.output_item.added", "output_index": output_index, "item": added},
        {
            "type": "response.content_part.added",
            **where,
            "part": {"type": "output_text", "text": "", "annotations": []},
        },
    ]
    evs.extend({"type": "response.output_text.delta", **where, "delta": c} for c in chunks)
    evs.append({"type": "response.output_text.done", **where, "text": text})
    evs.append(
        {
            "type": "response.content_part.done",
            **where,
            "part": {"type": "output_text", "text": text, "annotations": []},
        }
    )
    evs.append({"type": "response.output_item.done", "output_index": output_index, "item": done})
    return evs


def reasoning_events(
    item_id: str,
    summary_parts: list[list[str]],
    output_index: int = 0,
    raw_chunks: list[str] | None = None,
) -> list[JsonObject]:
    """A reasoning item; each summary part is a list of delta chunks."""
    evs: list[JsonObject] = [
        {
            "type": "response.output_item.added",
            "output_index": output_index,
            "item": {"type": "reasoning", "id": item_id, "summary": []},
        }
    ]
    summary: list[JsonObject] = []
    for si, chunks in enumerate(summary_parts):
        where = {"item_id": item_id, "output_index": output_index, "summary_index": si}
        evs.append(
            {
                "type": "response.reasoning_summary_part.added",
                **where,
                "part": {"type": "summary_text", "text": ""},
            }
        )
        evs.extend(
            {"type": "response.reasoning_summary_text.delta", **where, "delta": c} for c in chunks
        )
        text = "".join(chunks)
        evs.append({"type": "response.reasoning_summary_text.done", **where, "text": text})
        evs.append(
            {
                "type": "response.reasoning_summary_part.done",
                **where,
                "part": {"type": "summary_text", "text": text},
            }
        )
        summary.append({"type": "summary_text", "text": text})
    item: JsonObject = {
        "type": "reasoning",
        "id": item_id,
        "summary": summary,
        "encrypted_content": "bW9jay1lbmNyeXB0ZWQ=",
    }
    if raw_chunks:
        evs.extend(
            {
                "type": "response.reasoning_text.delta",
                "item_id": item_id,
                "output_index": output_index,
                "content_index": 0,
                "delta": c,
            }
            for c in raw_chunks
        )
        item["content"] = [{"type": "reasoning_text", "text": "".join(raw_chunks)}]
    evs.append({"type": "response.output_item.done", "output_index": output_index, "item": item})
    return evs


def function_call_events(
    item_id: str, call_id: str, name: str, arguments: str | JsonObject, output_index: int = 0
) -> list[JsonObject]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    base: JsonObject = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name}
    where = {"item_id": item_id, "output_index": output_index}
    return [
        {
            "type": "response.output_item.added",
            "output_index": output_index,
            "item": {**base, "arguments": "", "status": "in_progress"},
        },
        {"type": "response.function_call_arguments.delta", **where, "delta": args},
        {"type": "response.function_call_arguments.done", **where, "arguments": args},
        {
            "type": "response.output_item.done",
            "output_index": output_index,
            "item": {**base, "arguments": args, "status": "completed"},
        },
    ]


def custom_tool_call_events(
    item_id: str, call_id: str, name: str, tool_input: str, output_index: int = 0
) -> list[JsonObject]:
    base: JsonObject = {"type": "custom_tool_call", "id": item_id, "call_id": call_id, "name": name}
    where = {"item_id": item_id, "output_index": output_index}
    return [
        {
            "type": "response.output_item.added",
            "output_index": output_index,
            "item": {**base, "input": "", "status": "in_progress"},
        },
        {"type": "response.custom_tool_call_input.delta", **where, "delta": tool_input},
        {"type": "response.custom_tool_call_input.done", **where, "input": tool_input},
        {
            "type": "response.output_item.done",
            "output_index": output_index,
            "item": {**base, "input": tool_input, "status": "completed"},
        },
    ]


def web_search_events(item_id: str, query: str, output_index: int = 0) -> list[JsonObject]:
    action = {"type": "search", "query": query}
    where = {"item_id": item_id, "output_index": output_index}
    return [
        {
            "type": "response.output_item.added",
            "output_index": output_index,
            "item": {
                "type": "web_search_call",
                "id": item_id,
                "status": "in_progress",
                "action": action,
            },
        },
        {"type": "response.web_search_call.in_progress", **where},
        {"type": "response.web_search_call.searching", **where},
        {"type": "response.web_search_call.completed", **where},
        {
            "type": "response.output_item.done",
            "output_index": output_index,
            "item": {
                "type": "web_search_call",
                "id": item_id,
                "status": "completed",
                "action": action,
            },
        },
    ]


def sse_bytes(events: Iterable[JsonObject]) -> bytes:
    """Events framed as SSE (``event:`` + compact JSON ``data:``)."""
    return b"".join(
        b"event: %s\ndata: %s\n\n"
        % (ev["type"].encode(), json.dumps(ev, separators=(",", ":")).encode())
        for ev in events
    )


# --- replies -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SSE:
    """A 200 ``text/event-stream`` reply.

    ``delay_s`` > 0 writes one event at a time with that pause (a slow stream to interrupt);
    ``close_early_after`` cuts the stream after that many events, without ``response.completed``.
    ``body`` replaces ``events`` with pre-framed SSE bytes (the throughput scenario builds them
    directly, which is much cheaper than one dict per delta).
    """

    events: list[JsonObject] = field(default_factory=list[JsonObject])
    delay_s: float = 0.0
    close_early_after: int | None = None
    body: bytes | None = None
    hold_after: int | None = None
    """Write that many events, then keep the stream open until the client closes it (the time
    it did is noted: :meth:`MockResponses.wait_closed`)."""


@dataclass(frozen=True, slots=True)
class HTTPError:
    """A non-200 JSON reply."""

    status: int
    body: JsonObject
    headers: Mapping[str, str] = field(default_factory=dict[str, str])


Reply = SSE | HTTPError
Scenario = Callable[[int, JsonObject, JsonObject], Reply]
"""(request index n, parsed request body, scenario params) -> reply."""


# --- helpers that look at the request Codex sent ---------------------------------------------


def _objects(value: object) -> list[JsonObject]:
    """The JSON objects of a JSON array (anything else: none)."""
    if not isinstance(value, list):
        return []
    return [cast(JsonObject, v) for v in cast(list[object], value) if isinstance(v, dict)]


def tool_kinds(body: JsonObject) -> dict[str, str | None]:
    """Tool name -> tool type (``function``, ``custom``, ...) of the tools Codex offered."""
    kinds: dict[str, str | None] = {}
    for tool in _objects(body.get("tools")):
        fn = tool.get("function")
        fn_name = cast(JsonObject, fn).get("name") if isinstance(fn, dict) else None
        name = tool.get("name") or fn_name or tool.get("type")
        kinds[str(name)] = tool.get("type")
    return kinds


def last_user_text(body: JsonObject) -> str:
    for item in reversed(_objects(body.get("input"))):
        if item.get("type") == "message" and item.get("role") == "user":
            for part in _objects(item.get("content")):
                if part.get("type") == "input_text":
                    return str(part.get("text", ""))
    return ""


def chunks_of(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


LOREM: Final = (
    "Hello from the mock model. This reply is streamed as many small output_text deltas "
    "so that the client sees a realistic token-by-token stream. "
)

PATCH: Final = """*** Begin Patch
*** Add File: hello.txt
+hello from apply_patch
+second line
*** End Patch"""


def _message_reply(rid: str, item_id: str, text: str, chunk: int = 5) -> SSE:
    return SSE(
        [ev_created(rid), *message_events(item_id, chunks_of(text, chunk)), ev_completed(rid)]
    )


def _shell_call(
    body: JsonObject,
    cmd: str,
    call_id: str,
    output_index: int = 0,
    extra: JsonObject | None = None,
) -> list[JsonObject]:
    """The call of the shell tool Codex offered; ``extra`` arguments (``sandbox_permissions``,
    ``justification``, ...) go to ``exec_command`` only."""
    kinds = tool_kinds(body)
    item_id = "fc_" + call_id
    if "exec_command" in kinds:
        args: JsonObject = {"cmd": cmd, "yield_time_ms": 10000, **(extra or {})}
        return function_call_events(item_id, call_id, "exec_command", args, output_index)
    if "shell_command" in kinds:
        return function_call_events(
            item_id, call_id, "shell_command", {"command": cmd}, output_index
        )
    return function_call_events(
        item_id, call_id, "shell", {"command": ["bash", "-lc", cmd]}, output_index
    )


# --- scenarios ---------------------------------------------------------------------------------


def sc_plain(n: int, body: JsonObject, p: JsonObject) -> Reply:
    rid = f"resp_plain_{n}"
    text = str(p.get("text", LOREM * 2))
    return _message_reply(rid, f"msg_plain_{n}", text, int(p.get("chunk", 4)))


def sc_reasoning(n: int, body: JsonObject, p: JsonObject) -> Reply:
    rid = f"resp_reason_{n}"
    parts = [
        chunks_of("**Planning the answer**\n\nI should greet the user and explain briefly.", 6),
        chunks_of("**Double-checking**\n\nThe greeting is short and correct.", 6),
    ]
    answer = chunks_of("Hi! I thought about it and here is my answer.", 5)
    return SSE(
        [
            ev_created(rid),
            *reasoning_events(f"rs_{n}", parts, 0),
            *message_events(f"msg_reason_{n}", answer, 1),
            ev_completed(rid),
        ]
    )


def sc_shell(n: int, body: JsonObject, p: JsonObject) -> Reply:
    rid = f"resp_shell_{n}"
    if n == 0:
        pre = chunks_of("I'll run a command.", 5)
        return SSE(
            [
                ev_created(rid),
                *message_events(f"msg_pre_{n}", pre, 0, phase="commentary"),
                *_shell_call(
                    body,
                    str(p.get("cmd", "echo hello")),
                    "call_shell_1",
                    1,
                    cast(JsonObject, p.get("args") or {}),
                ),
                ev_completed(rid),
            ]
        )
    return _message_reply(rid, f"msg_shell_{n}", "The command printed hello.")


def sc_apply_patch(n: int, body: JsonObject, p: JsonObject) -> Reply:
    rid = f"resp_patch_{n}"
    if n > 0:
        return _message_reply(rid, f"msg_patch_{n}", "Created hello.txt.")
    kind = tool_kinds(body).get("apply_patch", "")
    if kind == "custom":
        call = custom_tool_call_events("ctc_1", "call_patch_1", "apply_patch", PATCH)
    elif kind != "":
        call = function_call_events("fc_patch_1", "call_patch_1", "apply_patch", {"input": PATCH})
    else:  # no apply_patch tool: the shell tool runs it through a heredoc
        call = _shell_call(body, f"apply_patch <<'EOF'\n{PATCH}\nEOF", "call_patch_1")
    return SSE([ev_created(rid), *call, ev_completed(rid)])


_SESSION_ID: Final = re.compile(r"^Process running with session ID (\d+)$", re.MULTILINE)


def last_session_id(body: JsonObject) -> int | None:
    """The session id the last tool output in the request's input reported running."""
    for item in reversed(_objects(body.get("input"))):
        if item.get("type") == "function_call_output":
            m = _SESSION_ID.search(str(item.get("output", "")))
            if m is not None:
                return int(m.group(1))
    return None


def sc_steps(n: int, body: JsonObject, p: JsonObject) -> Reply:
    """One tool call per request from ``steps`` (``{"patch": text}`` through ``apply_patch`` as
    Codex offers it, ``{"cmd": text, "args": {...}}`` through the shell tool, ``{"stdin":
    chars, "yield_time_ms": n}`` through ``write_stdin`` to the session the last output named),
    then the ``text`` reply."""
    rid = f"resp_steps_{n}"
    steps = cast(list[JsonObject], p.get("steps") or [])
    if n >= len(steps):
        return _message_reply(rid, f"msg_steps_{n}", str(p.get("text", "Done.")))
    step = steps[n]
    call_id = f"call_step_{n}"
    if "stdin" in step:
        args: JsonObject = {"session_id": last_session_id(body), "chars": str(step["stdin"])}
        if "yield_time_ms" in step:
            args["yield_time_ms"] = step["yield_time_ms"]
        call = function_call_events(f"fc_{n}", call_id, "write_stdin", args)
    elif "cmd" in step:
        extra = cast(JsonObject, step.get("args") or {})
        call = _shell_call(body, str(step["cmd"]), call_id, extra=extra)
    else:
        patch = str(step["patch"])
        kind = tool_kinds(body).get("apply_patch", "")
        if kind == "custom":
            call = custom_tool_call_events(f"ctc_{n}", call_id, "apply_patch", patch)
        elif kind != "":
            call = function_call_events(f"fc_{n}", call_id, "apply_patch", {"input": patch})
        else:
            call = _shell_call(body, f"apply_patch <<'EOF'\n{patch}\nEOF", call_id)
    return SSE([ev_created(rid), *call, ev_completed(rid)])


def sc_web_search(n: int, body: JsonObject, p: JsonObject) -> Reply:
    rid = f"resp_ws_{n}"
    answer = chunks_of("According to my search, the protocol is JSON-RPC.", 6)
    return SSE(
        [
            ev_created(rid),
            *web_search_events("ws_1", "codex app-server protocol"),
            *message_events(f"msg_ws_{n}", answer, 1),
            ev_completed(rid),
        ]
    )


def sc_error_retry(n: int, body: JsonObject, p: JsonObject) -> Reply:
    if n < int(p.get("failures", 1)):
        err = {
            "message": "mock internal server error",
            "type": "server_error",
            "code": "server_error",
        }
        return HTTPError(500, {"error": err})
    return sc_plain(n, body, {"text": "Recovered after a 500."})


def sc_stream_retry(n: int, body: JsonObject, p: JsonObject) -> Reply:
    full = sc_plain(n, body, {"text": "This answer arrives on the second attempt."})
    if n < int(p.get("failures", 1)) and isinstance(full, SSE):
        return SSE(full.events, close_early_after=6)
    return full


def sc_error_fatal(n: int, body: JsonObject, p: JsonObject) -> Reply:
    err = {"message": "mock internal server error (persistent)", "type": "server_error"}
    return HTTPError(500, {"error": err})


def sc_stream_failed(n: int, body: JsonObject, p: JsonObject) -> Reply:
    rid = f"resp_failed_{n}"
    partial = message_events(f"msg_f_{n}", chunks_of("partial", 3))[:3]
    return SSE(
        [
            ev_created(rid),
            *partial,
            ev_failed(rid, "invalid_prompt", "mock: the prompt was rejected"),
        ]
    )


def sc_interrupt(n: int, body: JsonObject, p: JsonObject) -> Reply:
    rid = f"resp_long_{n}"
    chunks = chunks_of("word " * 2000, 5)
    return SSE(
        [ev_created(rid), *message_events(f"msg_long_{n}", chunks), ev_completed(rid)],
        delay_s=float(p.get("delay_s", 0.02)),
    )


def sc_multi_turn(n: int, body: JsonObject, p: JsonObject) -> Reply:
    text = f"Answer number {n + 1} to: {last_user_text(body)[:40]}"
    return sc_plain(n, body, {"text": text})


def sc_client_flow(n: int, body: JsonObject, p: JsonObject) -> Reply:
    """A client's whole flow on one thread: a prompt mentioning "interrupt" gets the slow
    stream of ``interrupt``, every other one a numbered answer as in ``multi_turn``."""
    if "interrupt" in last_user_text(body).lower():
        return sc_interrupt(n, body, p)
    return sc_multi_turn(n, body, p)


def sc_plan(n: int, body: JsonObject, p: JsonObject) -> Reply:
    rid = f"resp_plan_{n}"
    if n > 0:
        return _message_reply(rid, f"msg_plan_{n}", "Plan recorded.")
    plan: JsonObject = {
        "explanation": "Three steps",
        "plan": [
            {"step": "Read the code", "status": "completed"},
            {"step": "Write the fix", "status": "in_progress"},
            {"step": "Run the tests", "status": "pending"},
        ],
    }
    call = function_call_events("fc_plan", "call_plan_1", "update_plan", plan)
    return SSE([ev_created(rid), *call, ev_completed(rid)])


def throughput_chunk(i: int) -> str:
    """The text of delta ``i`` of the throughput scenario (its total is predictable)."""
    return f"t{i % 10} "


def sc_throughput(n: int, body: JsonObject, p: JsonObject) -> Reply:
    return SSE(body=throughput_body(n, int(p.get("n", 20000))))


@functools.lru_cache(maxsize=4)
def throughput_body(n: int, count: int) -> bytes:
    """The SSE bytes of the ``throughput`` answer to request ``n`` (kept: a benchmark times
    the server, not the mock building 100,000 events)."""
    rid = f"resp_tp_{n}"
    item_id = f"msg_tp_{n}"
    # same bytes message_events + sse_bytes would give, built from templates: one dict and one
    # json.dumps per delta would dominate the mock's time at 100k deltas
    chunks = [throughput_chunk(i) for i in range(10)]
    framed = [
        sse_bytes(
            [
                {
                    "type": "response.output_text.delta",
                    "item_id": item_id,
                    "output_index": 0,
                    "content_index": 0,
                    "delta": c,
                }
            ]
        )
        for c in chunks
    ]
    text = "".join(chunks[i % 10] for i in range(count))
    opening = message_events(item_id, [])[:2]  # output_item.added, content_part.added
    closing = message_events(item_id, [text])[3:]  # output_text.done .. output_item.done
    return b"".join(
        [
            sse_bytes([ev_created(rid), *opening]),
            b"".join(framed[i % 10] for i in range(count)),
            sse_bytes([*closing, ev_completed(rid)]),
        ]
    )


def sc_hold(n: int, body: JsonObject, p: JsonObject) -> Reply:
    """A message of ``deltas`` deltas (default 5) that never ends: the stream stays open until
    the client closes it (an interrupt), and the mock notes when it saw that."""
    rid = f"resp_hold_{n}"
    count = int(p.get("deltas", 5))
    events = [ev_created(rid), *message_events(f"msg_hold_{n}", ["held "] * count)]
    return SSE(events, hold_after=2 + count)


def sc_dynamic_tool(n: int, body: JsonObject, p: JsonObject) -> Reply:
    rid = f"resp_dyn_{n}"
    if n > 0:
        return _message_reply(rid, f"msg_dyn_{n}", "The tool said it is sunny.")
    tool = str(p.get("tool", "lookup_weather"))
    call = function_call_events("fc_dyn", "call_dyn_1", tool, {"city": "Paris"})
    return SSE([ev_created(rid), *call, ev_completed(rid)])


def sc_rate_limited(n: int, body: JsonObject, p: JsonObject) -> Reply:
    """HTTP 429 with ``retry-after`` (``retry_after`` seconds, default 1) for the first
    ``failures`` requests, then a plain answer."""
    if n < int(p.get("failures", 1)):
        err = {
            "message": "Rate limit reached for requests per minute (mock).",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
        return HTTPError(429, {"error": err}, {"retry-after": str(p.get("retry_after", 1))})
    return sc_plain(n, body, {"text": "Answered after a 429."})


def sc_unauthorized(n: int, body: JsonObject, p: JsonObject) -> Reply:
    """Every request answered HTTP 401."""
    err = {"message": "Incorrect API key provided (mock).", "type": "invalid_request_error"}
    return HTTPError(401, {"error": {**err, "code": "invalid_api_key"}})


def sc_invalid_sse(n: int, body: JsonObject, p: JsonObject) -> Reply:
    """Lines that are not SSE JSON (a broken ``data:``, a bare line, an event without a type)
    among the events of a normal answer."""
    rid = f"resp_badsse_{n}"
    garbage = (
        b"event: response.output_text.delta\ndata: {not json\n\n"
        b"this line is not SSE at all\n\n"
        b"data: [1, 2, 3]\n\n"
        b'data: {"no_type": true}\n\n'
    )
    events = [ev_created(rid), *message_events(f"msg_badsse_{n}", chunks_of("Still here.", 4))]
    return SSE(body=sse_bytes(events[:1]) + garbage + sse_bytes([*events[1:], ev_completed(rid)]))


def sc_cut_mid_event(n: int, body: JsonObject, p: JsonObject) -> Reply:
    """The first ``failures`` streams stop in the middle of an event's bytes (after a few
    deltas); then the whole answer."""
    rid = f"resp_cut_{n}"
    text = "This answer survives a stream cut in the middle of an event."
    events = [
        ev_created(rid),
        *message_events(f"msg_cut_{n}", chunks_of(text, 6)),
        ev_completed(rid),
    ]
    if n < int(p.get("failures", 1)):
        head = sse_bytes(events[:5])
        torn = sse_bytes(events[5:6])
        return SSE(body=head + torn[: len(torn) // 2])
    return SSE(events)


def sc_huge_event(n: int, body: JsonObject, p: JsonObject) -> Reply:
    """One ``output_text.delta`` of ``mb`` MiB (default 20) inside an otherwise plain answer."""
    rid = f"resp_huge_{n}"
    size = int(float(p.get("mb", 20)) * (1 << 20))
    big = ("0123456789abcdef" * (size // 16 + 1))[:size]
    return SSE(
        [
            ev_created(rid),
            *message_events(f"msg_huge_{n}", ["start:", big, ":end"]),
            ev_completed(rid),
        ]
    )


def sc_unknown_tool(n: int, body: JsonObject, p: JsonObject) -> Reply:
    """A call to a tool Codex never offered (``frobnicate``), then a message."""
    rid = f"resp_unknown_{n}"
    if n > 0:
        return _message_reply(rid, f"msg_unknown_{n}", "That tool does not exist here.")
    call = function_call_events("fc_unknown", "call_unknown_1", "frobnicate", {"x": 1})
    return SSE([ev_created(rid), *call, ev_completed(rid)])


USER_INPUT_QUESTIONS: Final[list[JsonObject]] = [
    {
        "id": "colour",
        "header": "Colour",
        "question": "Which colour should the button be?",
        "options": [
            {"label": "Green (Recommended)", "description": "Matches the theme."},
            {"label": "Red", "description": "Stands out."},
        ],
    }
]


def sc_user_input(n: int, body: JsonObject, p: JsonObject) -> Reply:
    """``request_user_input`` with one question, then a message."""
    rid = f"resp_ask_{n}"
    if n > 0:
        return _message_reply(rid, f"msg_ask_{n}", "Thanks for the answer.")
    call = function_call_events(
        "fc_ask", "call_ask_1", "request_user_input", {"questions": USER_INPUT_QUESTIONS}
    )
    return SSE([ev_created(rid), *call, ev_completed(rid)])


def _conversation_user_messages(body: JsonObject) -> int:
    """How many user messages of the conversation (not context fragments) the input holds."""
    count = 0
    for item in _objects(body.get("input")):
        if item.get("type") != "message" or item.get("role") != "user":
            continue
        texts = [str(p.get("text", "")) for p in _objects(item.get("content"))]
        first = texts[0] if texts else ""
        if first.startswith(("<", "# AGENTS.md")):
            continue
        count += 1
    return count


def sc_sdk_flow(n: int, body: JsonObject, p: JsonObject) -> Reply:
    """A client library's whole flow on one mock, by the prompt: ``fail:`` always HTTP 500;
    ``retry:`` a cut stream on its first attempt, then the answer; ``tool:`` a call to the
    client's ``lookup_weather`` tool, then an answer quoting the tool's output; a prompt
    mentioning "interrupt" the slow stream; anything else an answer that says how many user
    messages the model saw (so a resumed or forked thread shows it carried its context)."""
    text = last_user_text(body)
    rid = f"resp_sdk_{n}"
    if text.startswith("fail:"):
        return sc_error_fatal(n, body, p)
    if text.startswith("retry:") and int(p.get("_repeat", 0)) == 0:
        reply = _message_reply(rid, f"msg_sdk_{n}", "This is cut short.")
        return SSE(reply.events, close_early_after=4)
    if text.startswith("tool:"):
        items = _objects(body.get("input"))
        last = items[-1] if items else {}
        if last.get("type") == "function_call_output":
            said = str(last.get("output", ""))
            return _message_reply(rid, f"msg_sdk_{n}", f"The tool said: {said}")
        call = function_call_events(
            f"fc_sdk_{n}", f"call_sdk_{n}", "lookup_weather", {"city": "Paris"}
        )
        return SSE([ev_created(rid), *call, ev_completed(rid)])
    if "interrupt" in text.lower():
        return sc_interrupt(n, body, p)
    seen = _conversation_user_messages(body)
    answer = f"Answer to: {text[:40]} (I see {seen} user messages)"
    return _message_reply(rid, f"msg_sdk_{n}", answer)


_NO_USAGE: Final[JsonObject] = {
    "input_tokens": 0,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 0,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 0,
}


def sc_goal(n: int, body: JsonObject, p: JsonObject) -> Reply:
    """A model pursuing a thread goal: a message per request until request ``complete_at``
    (default 2), which calls ``update_goal`` with status ``complete`` (in a response that
    reports no usage); the request that carries
    a tool's output gets a closing message. With ``get_goal_first`` N, requests below N call
    ``get_goal`` (in a response with the usual usage) instead; request ``fail_at`` fails
    (``response.failed``, ``invalid_prompt``); request ``slow_at`` streams a long message
    slowly (to be interrupted)."""
    rid = f"resp_goal_{n}"
    items = _objects(body.get("input"))
    last = items[-1] if items else {}
    if last.get("type") == "function_call_output":
        return _message_reply(rid, f"msg_goal_{n}", "The goal is complete.")
    if n == int(p.get("slow_at", -1)):
        return sc_interrupt(n, body, {"delay_s": 0.02})
    if n == int(p.get("fail_at", -1)):
        return SSE(
            [ev_created(rid), ev_failed(rid, "invalid_prompt", "mock: the prompt was rejected")]
        )
    if n < int(p.get("get_goal_first", 0)):
        # a get_goal call in a response that reports usage: the goal is charged mid-turn
        call = function_call_events(f"fc_goal_{n}", f"call_goal_{n}", "get_goal", {})
        return SSE([ev_created(rid), *call, ev_completed(rid)])
    if n >= int(p.get("complete_at", 2)):
        call = function_call_events(
            f"fc_goal_{n}", f"call_goal_{n}", "update_goal", {"status": "complete"}
        )
        # no usage: whether 0.163.0 charges the calling response before the call is timing
        return SSE([ev_created(rid), *call, ev_completed(rid, _NO_USAGE)])
    return _message_reply(rid, f"msg_goal_{n}", f"Working on the goal, step {n}.")


_GOAL_TOOL_CALLS: Final[tuple[tuple[str, JsonObject], ...]] = (
    ("create_goal", {"objective": "Write a poem", "token_budget": 1000}),
    ("get_goal", {}),
    ("create_goal", {"objective": "Another"}),
    ("update_goal", {"status": "active"}),
    ("update_goal", {"status": "paused"}),
)


def sc_goal_tools(n: int, body: JsonObject, p: JsonObject) -> Reply:
    """The goal tools, one call per request: create_goal (budget 1000), get_goal, create_goal
    again (refused: a goal is unfinished), update_goal active (refused), update_goal paused;
    then a message."""
    rid = f"resp_gt_{n}"
    if n < len(_GOAL_TOOL_CALLS):
        name, arguments = _GOAL_TOOL_CALLS[n]
        call = function_call_events(f"fc_gt_{n}", f"call_gt_{n}", name, arguments)
        return SSE([ev_created(rid), *call, ev_completed(rid)])
    return _message_reply(rid, f"msg_gt_{n}", "Paused, as you asked.")


SCENARIOS: Final[Mapping[str, Scenario]] = {
    "plain": sc_plain,
    "reasoning": sc_reasoning,
    "shell": sc_shell,
    "apply_patch": sc_apply_patch,
    "steps": sc_steps,
    "web_search": sc_web_search,
    "error_retry": sc_error_retry,
    "error_fatal": sc_error_fatal,
    "stream_retry": sc_stream_retry,
    "stream_failed": sc_stream_failed,
    "interrupt": sc_interrupt,
    "multi_turn": sc_multi_turn,
    "plan": sc_plan,
    "throughput": sc_throughput,
    "dynamic_tool": sc_dynamic_tool,
    "client_flow": sc_client_flow,
    "rate_limited": sc_rate_limited,
    "unauthorized": sc_unauthorized,
    "invalid_sse": sc_invalid_sse,
    "cut_mid_event": sc_cut_mid_event,
    "huge_event": sc_huge_event,
    "unknown_tool": sc_unknown_tool,
    "user_input": sc_user_input,
    "sdk_flow": sc_sdk_flow,
    "hold": sc_hold,
    "goal": sc_goal,
    "goal_tools": sc_goal_tools,
}


# --- server ------------------------------------------------------------------------------------


class MockState:
    """The active scenario and the request log; shared by the handler threads under a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._name = "plain"
        self._params: JsonObject = {}
        self._n = 0
        self._requests: list[JsonObject] = []
        self.disconnected = threading.Event()
        """Set when a client closed a stream before the mock wrote all of it (an interrupt)."""
        self._closed = threading.Condition(self._lock)
        self._closed_at: list[float] = []

    def note_closed(self, at: float) -> None:
        with self._closed:
            self._closed_at.append(at)
            self._closed.notify_all()
        self.disconnected.set()

    def wait_closed(self, count: int, timeout: float) -> list[float]:
        """The ``time.perf_counter()`` at which held streams were seen closed by the client,
        once there are ``count`` of them (or at ``timeout``)."""
        with self._closed:
            self._closed.wait_for(lambda: len(self._closed_at) >= count, timeout)
            return list(self._closed_at)

    def set_scenario(self, name: str, params: Mapping[str, Any] | None = None) -> None:
        if name not in SCENARIOS:
            raise KeyError(f"unknown mock scenario {name!r}; known: {', '.join(SCENARIOS)}")
        with self._lock:
            self._name = name
            self._params = dict(params or {})
            self._n = 0
            self._requests = []
            self.disconnected.clear()

    def log(self, record: JsonObject) -> None:
        with self._lock:
            self._requests.append(record)

    def requests(self) -> list[JsonObject]:
        with self._lock:
            return list(self._requests)

    def next_reply(self, body: JsonObject) -> tuple[int, Reply]:
        """The reply to request ``n``; the scenario's params get ``_repeat``: how many earlier
        model requests ended with the same user text (a retry of the same sampling request
        counts)."""
        text = last_user_text(body)
        with self._lock:
            n = self._n
            self._n += 1
            fn = SCENARIOS[self._name]
            params = dict(self._params)
            earlier = [
                cast(JsonObject, r["body"])
                for r in self._requests[:-1]
                if isinstance(r.get("body"), dict) and str(r.get("path", "")).endswith("/responses")
            ]
        params["_repeat"] = sum(1 for b in earlier if last_user_text(b) == text)
        return n, fn(n, body, params)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], state: MockState) -> None:
        super().__init__(address, _Handler)
        self.state = state


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def _state(self) -> MockState:
        return cast(_Server, self.server).state

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send_json(
        self, status: int, obj: object, extra_headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (extra_headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _log(self, raw: bytes, parsed: object, note: str | None = None) -> None:
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != "authorization"}
        record: JsonObject = {
            "t": time.time(),
            "method": self.command,
            "path": self.path,
            "headers": headers,
            "body": parsed if parsed is not None else raw.decode("utf-8", "replace")[:2000],
        }
        if note:
            record["note"] = note
        self._state.log(record)

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/_mock/health":
            return self._send_json(200, {"ok": True})
        if path == "/_mock/requests":
            return self._send_json(200, self._state.requests())
        self._log(b"", None)
        if path.endswith("/models"):
            return self._send_json(200, {"object": "list", "data": [], "models": []})
        return self._send_json(404, {"error": {"message": "not found: " + path}})

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if path == "/_mock/scenario":
            cfg = json.loads(raw or b"{}")
            try:
                self._state.set_scenario(str(cfg["name"]), cfg.get("params") or {})
            except KeyError as e:
                return self._send_json(400, {"error": {"message": str(e)}})
            return self._send_json(200, {"ok": True})
        parsed: object = None
        note = None
        encoding = self.headers.get("content-encoding")
        if encoding:
            note = f"compressed body ({encoding}), not decoded"
        elif raw:
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
        self._log(raw, parsed, note)
        if not path.endswith("/responses"):
            return self._send_json(404, {"error": {"message": "not found: " + path}})
        body = cast(JsonObject, parsed) if isinstance(parsed, dict) else {}
        n, reply = self._state.next_reply(body)
        if isinstance(reply, HTTPError):
            return self._send_json(reply.status, reply.body, reply.headers)
        self._stream(n, reply)
        return None

    def _stream(self, n: int, reply: SSE) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("x-request-id", f"mock-req-{n}")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            if reply.hold_after is not None:
                self.wfile.write(sse_bytes(reply.events[: reply.hold_after]))
                self.wfile.flush()
                _wait_for_close(self)
                self._state.note_closed(time.perf_counter())
                return
            if reply.delay_s > 0 and reply.body is None:
                for ev in reply.events:
                    self.wfile.write(sse_bytes([ev]))
                    self.wfile.flush()
                    time.sleep(reply.delay_s)
                return
            if reply.body is not None:
                data = reply.body
            elif reply.close_early_after is not None:
                data = sse_bytes(reply.events[: reply.close_early_after])
            else:
                data = sse_bytes(reply.events)
            view = memoryview(data)
            for start in range(0, len(view), _WRITE_CHUNK):
                self.wfile.write(view[start : start + _WRITE_CHUNK])
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self._state.disconnected.set()  # the client went away (an interrupted turn)


_HOLD_LIMIT_S: Final = 600.0


def _wait_for_close(handler: BaseHTTPRequestHandler) -> None:
    """Block until the client closes the connection (EOF or reset), at most ``_HOLD_LIMIT_S``."""
    sock = handler.connection
    sock.settimeout(_HOLD_LIMIT_S)
    try:
        while sock.recv(1 << 16):
            pass
    except OSError:
        pass


class MockResponses:
    """The mock on a background thread; a context manager giving its URLs.

    ``MockResponses(port=0)``: 0 picks a free port. ``start()``/``close()`` for use without
    ``with``.
    """

    def __init__(self, port: int = 0, host: str = "127.0.0.1") -> None:
        self.state = MockState()
        self._server = _Server((host, port), self.state)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The root URL (``/_mock/*`` endpoints)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The provider ``base_url`` for Codex's config (ends in ``/v1``)."""
        return self.url + "/v1"

    def set_scenario(self, name: str, **params: Any) -> None:
        """Select a scenario with its params; resets the request counter and the log."""
        self.state.set_scenario(name, params)

    def requests(self) -> list[JsonObject]:
        """Every request received since the last :meth:`set_scenario` (oldest first)."""
        return self.state.requests()

    def wait_closed(self, count: int = 1, timeout: float = 60.0) -> list[float]:
        """When (``time.perf_counter()``) the client closed each held stream (scenario
        ``hold``) since the mock started, once ``count`` were closed or at ``timeout``."""
        return self.state.wait_closed(count, timeout)

    def model_requests(self) -> list[JsonObject]:
        """Only the ``POST .../responses`` requests."""
        return [
            r
            for r in self.requests()
            if r["method"] == "POST" and str(r["path"]).split("?")[0].endswith("/responses")
        ]

    def serve_forever(self) -> None:
        """Serve on the calling thread until interrupted (the command-line entry)."""
        self._server.serve_forever(poll_interval=0.2)

    def start(self) -> MockResponses:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"mock-responses:{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> MockResponses:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m codex_app_bridge.conformance.mock_responses",
        description="Serve the scripted Responses API mock on 127.0.0.1.",
    )
    ap.add_argument("--port", type=int, default=0, help="0 (default) picks a free port")
    ap.add_argument("--port-file", help="also write the chosen port to this file")
    ap.add_argument("--scenario", default="plain", help="initial scenario (default: plain)")
    args = ap.parse_args(argv)
    mock = MockResponses(port=args.port)
    mock.set_scenario(args.scenario)
    if args.port_file:
        with open(args.port_file, "w") as f:
            f.write(str(mock.port))
    print(f"URL {mock.url}\nPORT {mock.port}", flush=True)
    try:
        mock.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        mock.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
