"""The client side of every conformance scenario: the same requests to any stdio server.

Role: one scenario = what a client does (``thread/start``, ``turn/start``, ``turn/interrupt``,
``thread/revert``, ``thread/fork``, answering server requests) and waits for (``turn/completed``,
the notification that ends what a request sends), with a timeout on every wait. Nothing waits
for a stretch of silence: a scenario names the last message it expects, so a busy machine makes
it slower, never different. :func:`run_session` plays it against one server process (the real
binary or the bridge) and keeps what came back: every message, the thread ids, and a final
``thread/read`` of each thread. A scenario with ``listen`` runs the server on a unix socket
(``--listen unix://PATH``) instead of stdio, and may open more clients on it
(:meth:`Context.open_client`); what each of them received is kept apart. Boundary: wire-level
only; it compares nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import anyio

from codex_app_bridge.conformance._socket_peer import Connect, listening_server
from codex_app_bridge.conformance.mock_responses import MockResponses
from codex_app_bridge.conformance.real_codex import JsonObject, PeerError, StdioPeer

__all__ = [
    "SCENARIO_SPECS",
    "ClientRecord",
    "Context",
    "ScenarioSpec",
    "Session",
    "each_on_a_mock",
    "run_session",
    "scratch_root",
]

_T = TypeVar("_T")

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
    clients: dict[str, StdioPeer] = field(default_factory=dict[str, StdioPeer])
    """The clients opened after the first (``peer``), by name."""
    _connect: Connect | None = None

    async def open_client(self, name: str) -> StdioPeer:
        """One more client on the server's socket (``listen`` scenarios only), initialized."""
        if self._connect is None:
            raise RuntimeError("open_client needs a scenario with listen=True")
        peer = await self._connect()
        self.clients[name] = peer
        await peer.initialize()
        return peer

    async def start_thread(self, **extra: Any) -> str:
        # model and provider explicit, as the capture driver sends them
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

    async def run_turn(
        self, thread_id: str, text: str, peer: StdioPeer | None = None
    ) -> tuple[str, JsonObject]:
        """A turn started by ``peer`` (default: the first client), up to its completion."""
        peer = peer or self.peer
        done = peer.expect(_turn_completed(thread_id))
        params = {"threadId": thread_id, "input": [{"type": "text", "text": text}]}
        result = await peer.request("turn/start", params)
        completed = await peer.wait(done, TURN_TIMEOUT_S)
        return str(result["turn"]["id"]), completed


def _notification(method: str, thread_id: str) -> Callable[[JsonObject], bool]:
    def match(message: JsonObject) -> bool:
        params: JsonObject = message.get("params") or {}
        return message.get("method") == method and params.get("threadId") == thread_id

    return match


def _turn_completed(thread_id: str) -> Callable[[JsonObject], bool]:
    return _notification("turn/completed", thread_id)


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
    listen: bool = False
    """Serve on a unix socket instead of stdio (the scenario opens several clients)."""


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


async def _two_clients(ctx: Context) -> None:
    """A starts a thread and runs a turn (a thread is resumable once it has one); B connects,
    resumes it (with its turns) and so subscribes; A runs a turn, then B does: each client must
    see both turns' notifications."""
    thread_id = await ctx.start_thread()
    await ctx.run_turn(thread_id, "First question, from A")
    bob = await ctx.open_client("B")
    # what the resume sends B (the replayed token usage, then thread/goal/cleared, which ends it
    # on both servers) comes before the next turn
    resumed = bob.expect(_notification("thread/goal/cleared", thread_id))
    ctx.notes["resume"] = await bob.request_raw("thread/resume", {"threadId": thread_id})
    await bob.wait(resumed, TURN_TIMEOUT_S)
    bob_done = bob.expect(_turn_completed(thread_id))
    await ctx.run_turn(thread_id, "Second question, from A")
    await bob.wait(bob_done, TURN_TIMEOUT_S)
    alice_done = ctx.peer.expect(_turn_completed(thread_id))
    await ctx.run_turn(thread_id, "Third question, from B", peer=bob)
    await ctx.peer.wait(alice_done, TURN_TIMEOUT_S)


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
    ScenarioSpec(
        "two_clients",
        "multi_turn",
        {},
        "over a unix socket: B resumes A's thread; a turn from A, then one from B, seen by both",
        _two_clients,
        listen=True,
    ),
)

PENDING_SCENARIOS: Final[dict[str, str]] = {}
"""Scenarios of issue 14 not written yet, with why (none left)."""


@dataclass
class ClientRecord:
    """What one more client (``Context.open_client``) sent and received."""

    received: list[JsonObject]
    sent: list[JsonObject]
    reads_from: int
    """How many messages it had received when the first client began the final reads."""


@dataclass
class Session:
    """What one server did in one scenario (``received``/``sent``: the first client's)."""

    received: list[JsonObject]
    thread_ids: list[str]
    reads: dict[str, JsonObject]
    """thread id -> the whole ``thread/read {includeTurns: true}`` answer."""
    notes: dict[str, Any]
    sent: list[JsonObject] = field(default_factory=list[JsonObject])
    error: str | None = None
    clients: dict[str, ClientRecord] = field(default_factory=dict[str, ClientRecord])
    """The other clients of a ``listen`` scenario, by name."""


def _without_stdio_listen(argv: list[str]) -> list[str]:
    """``argv`` without a ``--listen stdio://`` (the socket listener is added instead)."""
    out = list(argv)
    for i in range(len(out) - 1):
        if out[i] == "--listen" and out[i + 1] == "stdio://":
            del out[i : i + 2]
            break
    return out


@asynccontextmanager
async def _first_client(
    spec: ScenarioSpec,
    argv: list[str],
    env: Mapping[str, str],
    cwd: str | os.PathLike[str],
    stderr_path: str | os.PathLike[str] | None,
) -> AsyncGenerator[tuple[StdioPeer, Connect | None]]:
    if not spec.listen:
        async with StdioPeer.spawn(argv, env=env, cwd=cwd, stderr_path=stderr_path) as peer:
            yield peer, None
        return
    server = listening_server(
        _without_stdio_listen(argv), env=env, cwd=cwd, stderr_path=stderr_path
    )
    async with server as connect:
        yield await connect(), connect


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
    async with _first_client(spec, argv, env, cwd, stderr_path) as (peer, connect):
        ctx = Context(peer, str(Path(cwd)), _connect=connect)
        error: str | None = None
        try:
            with anyio.fail_after(timeout_s):
                await peer.initialize()
                await spec.play(ctx)  # it ends on the last message it expects
        except (PeerError, TimeoutError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        ctx.notes["reads_from"] = len(peer.received)
        marks = {name: len(other.received) for name, other in ctx.clients.items()}
        reads: dict[str, JsonObject] = {}
        for thread_id in ctx.thread_ids:
            try:
                params = {"threadId": thread_id, "includeTurns": True}
                reads[thread_id] = await peer.request_raw("thread/read", params, 30)
            except (PeerError, TimeoutError) as exc:
                reads[thread_id] = {"error": {"driver": str(exc)}}
        clients = {
            name: ClientRecord(list(other.received), list(other.sent), marks[name])
            for name, other in ctx.clients.items()
        }
    return Session(
        list(peer.received), ctx.thread_ids, reads, ctx.notes, list(peer.sent), error, clients
    )


async def each_on_a_mock(
    items: Sequence[_T], concurrency: int, run: Callable[[_T, MockResponses], Awaitable[None]]
) -> None:
    """``run(item, mock)`` for every item, up to ``concurrency`` at once: each worker has a
    mock of its own (a mock answers one scenario at a time) and takes the next item left."""
    left = iter(items)

    async def worker() -> None:
        with MockResponses() as mock:
            for item in left:
                await run(item, mock)

    async with anyio.create_task_group() as tg:
        for _ in range(max(1, min(concurrency, len(items)))):
            tg.start_soon(worker)


def judge_second_runs(
    results: dict[str, _T],
    differs: Callable[[_T], bool],
    run_again: Callable[[list[str]], Mapping[str, _T]],
) -> dict[str, _T]:
    """The scenarios of ``results`` whose run ``differs`` are run once more (``run_again``, by
    name) and the second run is judged: where it does not differ, it takes the first's place in
    ``results``. Returns the first runs so replaced (a race to report); a scenario whose second
    run differs too keeps its first. 0.163.0 sends from several tasks at once, and on a busy
    machine a notification can overtake another in a way the comparison does not place yet."""
    again = [name for name, result in results.items() if differs(result)]
    if not again:
        return {}
    second = run_again(again)
    raced: dict[str, _T] = {}
    for name in again:
        if not differs(second[name]):
            raced[name], results[name] = results[name], second[name]
    return raced


@contextmanager
def scratch_root(scratch: Path | None, prefix: str) -> Generator[Path]:
    """``scratch``, or a temporary directory removed at the end (also on failure)."""
    if scratch is not None:
        yield scratch
        return
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
