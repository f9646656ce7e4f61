"""The client side of every conformance scenario: the same requests to any stdio server.

Role: one scenario = what a client does (``thread/start``, ``turn/start``, ``turn/interrupt``,
``thread/revert``, ``thread/fork``, answering server requests) and waits for (``turn/completed``),
with a timeout on every wait. :func:`run_session` plays it against one server process (the real
binary or the bridge) and keeps what came back: every message, the thread ids, and a final
``thread/read`` of each thread. Boundary: wire-level only; it compares nothing.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio

from codex_app_bridge.conformance.real_codex import JsonObject, PeerError, StdioPeer

__all__ = ["SCENARIO_SPECS", "Context", "ScenarioSpec", "Session", "run_session"]

TURN_TIMEOUT_S: Final = 90.0

DYNAMIC_TOOL: Final[JsonObject] = {
    "type": "function",
    "name": "lookup_weather",
    "description": "Look up the weather for a city.",
    "inputSchema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


@dataclass
class Context:
    """What a scenario's client code works with."""

    peer: StdioPeer
    cwd: str
    thread_ids: list[str] = field(default_factory=list[str])
    notes: dict[str, Any] = field(default_factory=dict[str, Any])

    async def start_thread(self, **extra: Any) -> str:
        # model and provider explicit: the bridge does not read CODEX_HOME/config.toml
        params: JsonObject = {
            "approvalPolicy": "never",
            "sandbox": "danger-full-access",
            "model": "mock-model",
            "modelProvider": "mock",
        }
        params["cwd"] = self.cwd
        params.update(extra)
        result = await self.peer.request("thread/start", params)
        thread_id = str(result["thread"]["id"])
        self.thread_ids.append(thread_id)
        return thread_id

    async def run_turn(self, thread_id: str, text: str) -> tuple[str, JsonObject]:
        done = self.peer.expect(_turn_completed(thread_id))
        params = {"threadId": thread_id, "input": [{"type": "text", "text": text}]}
        result = await self.peer.request("turn/start", params)
        completed = await self.peer.wait(done, TURN_TIMEOUT_S)
        return str(result["turn"]["id"]), completed


def _turn_completed(thread_id: str) -> Callable[[JsonObject], bool]:
    def match(message: JsonObject) -> bool:
        params: JsonObject = message.get("params") or {}
        return message.get("method") == "turn/completed" and params.get("threadId") == thread_id

    return match


Play = Callable[[Context], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ScenarioSpec:
    name: str
    mock: str
    """The :data:`~codex_app_bridge.conformance.mock_responses.SCENARIOS` entry the model plays."""
    mock_params: Mapping[str, Any]
    description: str
    play: Play
    bridge_pace: str | None = None
    """``--pace`` for the bridge's replay (the interrupt scenario needs a turn still running)."""


def _single(prompt: str, **thread_extra: Any) -> Play:
    async def play(ctx: Context) -> None:
        thread_id = await ctx.start_thread(**thread_extra)
        _, completed = await ctx.run_turn(thread_id, prompt)
        ctx.notes["turn_status"] = completed["params"]["turn"]["status"]

    return play


INTERRUPT_AFTER_DELTAS: Final = 20


async def _interrupt(ctx: Context) -> None:
    thread_id = await ctx.start_thread()
    seen = 0

    def twentieth_delta(message: JsonObject) -> bool:
        nonlocal seen
        if message.get("method") == "item/agentMessage/delta":
            seen += 1
        return seen >= INTERRUPT_AFTER_DELTAS

    deltas = ctx.peer.expect(twentieth_delta)
    done = ctx.peer.expect(_turn_completed(thread_id))
    params = {"threadId": thread_id, "input": [{"type": "text", "text": "Write a long essay."}]}
    turn = await ctx.peer.request("turn/start", params)
    await ctx.peer.wait(deltas, TURN_TIMEOUT_S)
    interrupt = {"threadId": thread_id, "turnId": turn["turn"]["id"]}
    ctx.notes["interrupt"] = await ctx.peer.request_raw("turn/interrupt", interrupt)
    completed = await ctx.peer.wait(done, TURN_TIMEOUT_S)
    ctx.notes["turn_status"] = completed["params"]["turn"]["status"]


async def _revert_fork(ctx: Context) -> None:
    thread_id = await ctx.start_thread()
    await ctx.run_turn(thread_id, "First question")
    second, _ = await ctx.run_turn(thread_id, "Second question")
    # 0.163.0 has no thread/rollback; thread/revert drops that turn and every later one
    revert = {"threadId": thread_id, "beforeTurnId": second}
    ctx.notes["revert"] = await ctx.peer.request_raw("thread/revert", revert)
    fork = await ctx.peer.request("thread/fork", {"threadId": thread_id})
    fork_id = str(fork["thread"]["id"])
    ctx.thread_ids.append(fork_id)
    await ctx.run_turn(fork_id, "Third question, on the fork")


SCENARIO_SPECS: Final[tuple[ScenarioSpec, ...]] = (
    ScenarioSpec(
        "plain", "plain", {}, "a plain assistant message, streamed", _single("Say hello.")
    ),
    ScenarioSpec(
        "reasoning",
        "reasoning",
        {},
        "two reasoning summary parts then a message",
        _single("Think, then greet me."),
    ),
    ScenarioSpec(
        "shell",
        "shell",
        {"cmd": "echo hello"},
        "exec_command `echo hello`, then a message",
        _single("Run `echo hello` in the shell."),
    ),
    ScenarioSpec(
        "shell_approval",
        "shell",
        {"cmd": "touch approved.txt"},
        "approvalPolicy=untrusted: the client accepts the command approval request",
        _single(
            "Create approved.txt with touch.",
            approvalPolicy="untrusted",
            sandbox="workspace-write",
        ),
    ),
    ScenarioSpec(
        "apply_patch",
        "apply_patch",
        {},
        "apply_patch adds hello.txt, then a message",
        _single("Create hello.txt with apply_patch."),
    ),
    ScenarioSpec(
        "web_search",
        "web_search",
        {},
        "a web_search_call then a message",
        _single("Search the web for the codex app-server protocol."),
    ),
    ScenarioSpec(
        "plan", "plan", {}, "update_plan with three steps, then a message", _single("Make a plan.")
    ),
    ScenarioSpec(
        "error_fatal",
        "error_fatal",
        {},
        "every model request answered HTTP 500: the turn fails",
        _single("Say something."),
    ),
    ScenarioSpec(
        "error_retry",
        "error_retry",
        {"failures": 1},
        "the first model request gets HTTP 500, the retry succeeds",
        _single("Say something."),
    ),
    ScenarioSpec(
        "stream_retry",
        "stream_retry",
        {"failures": 1},
        "the first stream is cut before response.completed; the reconnect succeeds",
        _single("Say something."),
    ),
    ScenarioSpec(
        "stream_failed",
        "stream_failed",
        {},
        "a partial message then response.failed",
        _single("Say something."),
    ),
    ScenarioSpec(
        "interrupt",
        "interrupt",
        {"delay_s": 0.02},
        f"a slow stream interrupted after {INTERRUPT_AFTER_DELTAS} deltas",
        _interrupt,
        bridge_pace="0.02",
    ),
    ScenarioSpec(
        "revert_fork",
        "multi_turn",
        {},
        "two turns, thread/revert before the second, thread/fork, a turn on the fork",
        _revert_fork,
    ),
    ScenarioSpec(
        "dynamic_tool",
        "dynamic_tool",
        {"tool": "lookup_weather"},
        "a dynamic tool the client answers (item/tool/call)",
        _single("What is the weather in Paris?", dynamicTools=[DYNAMIC_TOOL]),
    ),
)

PENDING_SCENARIOS: Final = {
    "two_clients": "two clients on one thread over a socket: scenario not written yet",
}


@dataclass
class Session:
    """What one server did in one scenario."""

    received: list[JsonObject]
    thread_ids: list[str]
    reads: dict[str, JsonObject]
    """thread id -> the whole ``thread/read {includeTurns: true}`` answer."""
    notes: dict[str, Any]
    sent: list[JsonObject] = field(default_factory=list[JsonObject])
    error: str | None = None


async def run_session(
    spec: ScenarioSpec,
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str],
    stderr_path: str | os.PathLike[str] | None = None,
    timeout_s: float = 180.0,
) -> Session:
    """Spawn ``argv``, initialize (experimentalApi), play ``spec``, read every thread."""
    async with StdioPeer.spawn(argv, env=env, cwd=cwd, stderr_path=stderr_path) as peer:
        ctx = Context(peer, str(Path(cwd)))
        error: str | None = None
        try:
            with anyio.fail_after(timeout_s):
                await peer.initialize()
                await spec.play(ctx)
                await peer.settle()
        except (PeerError, TimeoutError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        ctx.notes["reads_from"] = len(peer.received)
        reads: dict[str, JsonObject] = {}
        for thread_id in ctx.thread_ids:
            try:
                params = {"threadId": thread_id, "includeTurns": True}
                reads[thread_id] = await peer.request_raw("thread/read", params, 30)
            except (PeerError, TimeoutError) as exc:
                reads[thread_id] = {"error": {"driver": str(exc)}}
        await peer.settle(limit=1.0)
    return Session(list(peer.received), ctx.thread_ids, reads, ctx.notes, list(peer.sent), error)
