"""Token-usage replay against the real 0.163.0 binary: the same flow on the binary and on the
bridge (each with its own scratch ``CODEX_HOME``), and the same ``thread/tokenUsage/updated``
replays in the same places: after ``thread/resume`` of a loaded thread with turns (not without),
after ``thread/fork`` with turns, before its ``thread/started`` (not without turns; through an
earlier turn: that turn's usage), after a resume in a new process with or without turns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conformance._realpeer import MockModel, Peer, bridge_peer, real_peer

pytestmark = pytest.mark.conformance

USAGE = "thread/tokenUsage/updated"
KEPT = {USAGE, "thread/started"}
CLOSING = {"thread/resume": "thread/goal/cleared", "thread/fork": "thread/started"}
"""The notification that ends what each step's request sends, on both servers: the binary
replays token usage after its answer, asynchronously, and before this one. A step waits for it
(not for a stretch of silence, which a busy machine stretches)."""


class _Flow:
    """One server: every message in arrival order, a step = a request and what follows it, up to
    the request's closing notification."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.log: list[dict[str, Any]] = []
        self.live: list[dict[str, Any]] = []  # the last live usage of each turn, in order

    def _take(self) -> None:
        self.log.extend(self.peer.notifications)
        self.peer.notifications.clear()

    def turn(self, thread_id: str, text: str) -> str:
        turn = self.peer.run_turn(thread_id, text)  # the turn's usage comes before turn/completed
        self._take()
        usage = [m["params"] for m in self.log if m.get("method") == USAGE]
        self.live.append(usage[-1])
        return str(turn["id"])

    def step(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        """(result, [what came after it]): ``response``, ``thread/started`` and each replay
        described by the live usage it repeats (``live[k]``) and whose thread it names."""
        self._take()
        self.log.clear()
        response = self.peer.call(method, params)
        assert "result" in response, response
        self._take()
        closing = CLOSING[method]
        if not any(m.get("method") == closing for m in self.log):
            last = self.peer.wait_for(closing)
            self._take()
            self.log.append(last)
        seen: list[Any] = ["response"]
        result = response["result"]
        for message in self.log:
            name = message.get("method")
            if name not in KEPT:
                continue
            if name == USAGE:
                usage = message["params"]
                same = [
                    k
                    for k, live in enumerate(self.live)
                    if {**live, "threadId": usage["threadId"]} == usage
                ]
                mine = usage["threadId"] == result["thread"]["id"]
                seen.append((USAGE, same, "own thread" if mine else usage["threadId"]))
            else:
                seen.append(name)
        return result, seen


def _flow(start: Any, home: Path, cwd: Path) -> list[Any]:
    """The flow on one kind of server; ``start(home, cwd)`` spawns it."""
    record: list[Any] = []
    with start(home, cwd) as peer:
        flow = _Flow(peer)
        thread = peer.result("thread/start", {"model": "mock-model", "modelProvider": "mock"})
        thread_id = thread["thread"]["id"]
        first = flow.turn(thread_id, "first")
        flow.turn(thread_id, "second")
        steps: list[tuple[str, dict[str, Any]]] = [
            ("thread/resume", {"threadId": thread_id}),
            ("thread/resume", {"threadId": thread_id, "excludeTurns": True}),
            ("thread/fork", {"threadId": thread_id}),
            ("thread/fork", {"threadId": thread_id, "excludeTurns": True}),
            ("thread/fork", {"threadId": thread_id, "lastTurnId": first}),
        ]
        for method, params in steps:
            record.append((method, sorted(params), flow.step(method, params)[1]))
        live = flow.live
    for params in ({"threadId": thread_id, "excludeTurns": True}, {"threadId": thread_id}):
        with start(home, cwd) as peer:
            flow = _Flow(peer)
            flow.live = live
            record.append(
                ("cold thread/resume", sorted(params), flow.step("thread/resume", params)[1])
            )
    with start(home, cwd) as peer:
        flow = _Flow(peer)
        flow.live = live
        params = {"threadId": thread_id}
        record.append(("cold thread/fork", sorted(params), flow.step("thread/fork", params)[1]))
    return record


def test_resume_and_fork_replay_token_usage_where_the_real_binary_does(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    with MockModel() as model:
        # both homes name the mock provider the flow names (the bridge reads config.toml too)
        model.write_config(tmp_path / "real")
        model.write_config(tmp_path / "bridge")
        real = _flow(real_peer, tmp_path / "real", cwd)
        ours = _flow(bridge_peer, tmp_path / "bridge", cwd)
    assert ours == real
    # what the binary does, spelled out (so that a change on both sides is seen too)
    assert [steps for _method, _params, steps in real] == [
        ["response", (USAGE, [1], "own thread")],
        ["response"],
        ["response", (USAGE, [1], "own thread"), "thread/started"],
        ["response", "thread/started"],
        ["response", (USAGE, [0], "own thread"), "thread/started"],
        ["response", (USAGE, [1], "own thread")],
        ["response", (USAGE, [1], "own thread")],
        ["response", (USAGE, [1], "own thread"), "thread/started"],
    ]
