"""A state-machine fuzz of random valid method sequences with storage on (Hypothesis stateful
testing, issue 23): threads are started, turns run to completion, are interrupted after some
output, steered, joined by a second ``turn/start``, threads are unsubscribed and resumed. After
every sequence:

* every request was answered exactly once (the harness refuses an answer to no request);
* every ``turn/started`` has exactly one ``turn/completed``, and turn ids are unique;
* the streamed deltas of each completed agent message concatenate to its text;
* the live ``thread/read`` of each thread and a fresh server's read of its rollout agree (turn
  ids, statuses, items and their texts);
* the real 0.163.0 binary, over the same home, resumes each thread with the turns the fresh
  server read (the whole turns, equal).

The short pass runs a few sequences; ``CODEX_APP_BRIDGE_LONG=1`` runs 1,000.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.from_thread
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from codex_app_bridge.conformance.real_codex import write_codex_config
from tests.conformance._realpeer import real_peer
from tests.e2e._harness import Message, Session, is_turn_completed, open_bridge
from tests.reliability._scale import DERANDOMIZE, LONG, report, scale

pytestmark = pytest.mark.conformance  # the real binary resumes what each sequence stored

PACE = 0.002
WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "x"]), min_size=1, max_size=12)


def _turn_shape(turn: dict[str, Any]) -> tuple[Any, ...]:
    items: list[tuple[str, str]] = []
    for item in turn["items"]:
        if item["type"] == "agentMessage":
            items.append(("agentMessage", item["text"]))
        elif item["type"] == "userMessage":
            text = " ".join(part.get("text", "") for part in item["content"])
            items.append(("userMessage", text))
        else:
            items.append((item["type"], ""))
    return (turn["id"], turn["status"], tuple(items))


async def _hold(
    home: Path, stop: anyio.Event, *, task_status: anyio.abc.TaskStatus[Session]
) -> None:
    async with open_bridge("memory", pace=PACE, codex_home=home) as bridge:
        client = await bridge.connect()
        await client.initialize()
        task_status.started(client)
        await stop.wait()


class BridgeSequences(RuleBasedStateMachine):
    threads = Bundle("threads")

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="cab-fuzz-"))
        self.home = self.root / "home"
        self._portal_cm: AbstractContextManager[anyio.from_thread.BlockingPortal] = (
            anyio.from_thread.start_blocking_portal()
        )
        self.portal = self._portal_cm.__enter__()
        try:
            self.client, self._stop = self._open()
        except BaseException:
            self._portal_cm.__exit__(None, None, None)
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        self.started: Counter[str] = Counter()
        self.completed: Counter[str] = Counter()
        self.deltas: defaultdict[str, list[str]] = defaultdict(list)
        self.finished_items: dict[str, str] = {}

    def _open(self) -> tuple[Session, Callable[[], None]]:
        """A bridge over ``home`` and an initialized client, held by one task of the portal
        (its scopes must be left by the task that entered them); and how to close them."""
        stop: anyio.Event = self.portal.call(anyio.Event)
        future, client = self.portal.start_task(_hold, self.home, stop)

        def close() -> None:
            self.portal.call(stop.set)
            future.result(timeout=60)

        return client, close

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.portal.call(fn, *args)

    def _note(self, messages: list[Message]) -> None:
        for message in messages:
            method = message.get("method")
            params = message.get("params", {})
            if method == "turn/started":
                self.started[params["turn"]["id"]] += 1
            elif method == "turn/completed":
                self.completed[params["turn"]["id"]] += 1
            elif method == "item/agentMessage/delta":
                self.deltas[params["itemId"]].append(params["delta"])
            elif method == "item/completed" and params["item"]["type"] == "agentMessage":
                self.finished_items[params["item"]["id"]] = params["item"]["text"]

    @initialize(target=threads)
    def first_thread(self) -> str:
        return self._call(self.client.start_thread)

    @rule(target=threads)
    def start_thread(self) -> str:
        return self._call(self.client.start_thread)

    @rule(thread=threads, words=WORDS)
    def complete_a_turn(self, thread: str, words: list[str]) -> None:
        self._resume(thread)
        _, messages = self._call(self.client.run_turn, thread, " ".join(words))
        self._note(messages)

    @rule(thread=threads, words=WORDS, steers=st.integers(0, 2), join=st.booleans())
    def interrupt_a_turn(self, thread: str, words: list[str], steers: int, join: bool) -> None:
        self._resume(thread)
        self._call(self._interrupted_turn, thread, " ".join(words), steers, join)

    async def _interrupted_turn(self, thread: str, text: str, steers: int, join: bool) -> None:
        client = self.client
        await client.drain_pending()
        mark = len(client.received)
        turn_id = await client.start_turn(thread, text)
        for index in range(steers):
            params = {
                "threadId": thread,
                "expectedTurnId": turn_id,
                "input": [{"type": "text", "text": f"steer {index}"}],
            }
            await client.call("turn/steer", params)  # may find the turn over: either answer
        if join:
            await client.call(
                "turn/start", {"threadId": thread, "input": [{"type": "text", "text": "join"}]}
            )
        await client.call("turn/interrupt", {"threadId": thread, "turnId": turn_id})
        await client.until(is_turn_completed(turn_id))
        # a late steer or join may have started a turn of its own: let it end
        await self._settle(thread)
        self._note(client.received[mark:])

    async def _settle(self, thread: str) -> None:
        while True:
            read = await self.client.result("thread/read", {"threadId": thread})
            if read["thread"]["status"]["type"] != "active":
                return
            await self.client.until(lambda m: m.get("method") == "turn/completed")

    def _resume(self, thread: str) -> None:
        reply = self._call(self.client.call, "thread/resume", {"threadId": thread})
        if "error" in reply:  # no turn yet: nothing stored to resume (as 0.163.0)
            assert reply["error"]["message"].startswith("no rollout found"), reply

    @rule(thread=threads)
    def read_live(self, thread: str) -> None:
        reply = self._call(
            self.client.call, "thread/read", {"threadId": thread, "includeTurns": True}
        )
        if "error" in reply:  # no turn yet: 0.163.0 cannot list the turns of such a thread
            assert reply["error"]["message"] == "list_turns is not supported yet", reply
            return
        ids = [turn["id"] for turn in reply["result"]["thread"]["turns"]]
        assert len(ids) == len(set(ids)), f"turn ids repeat: {ids}"

    @invariant()
    def every_started_turn_completes_once(self) -> None:
        for turn_id, count in self.started.items():
            assert count == 1, f"turn {turn_id} started {count} times"
        for turn_id, count in self.completed.items():
            assert count == 1, f"turn {turn_id} completed {count} times"

    @invariant()
    def deltas_concatenate_to_the_completed_text(self) -> None:
        for item_id, text in self.finished_items.items():
            if item_id in self.deltas:
                assert "".join(self.deltas[item_id]) == text, item_id

    def teardown(self) -> None:
        try:
            try:
                live = self._reads(self.client)
                assert set(self.started) == set(self.completed)
            finally:
                self._stop()
            reader, close = self._open()
            try:
                turns = self._turns(reader, sorted(live))
            finally:
                close()
            assert {key: [_turn_shape(t) for t in value] for key, value in turns.items()} == live
            assert self._real_resumes(sorted(live)) == turns
            SEQUENCES[0] += 1
        finally:  # also when a check failed: the portal's thread and the scratch home go
            self._portal_cm.__exit__(None, None, None)
            shutil.rmtree(self.root, ignore_errors=True)

    def _turns(self, client: Session, ids: list[str]) -> dict[str, list[Any]]:
        return {
            thread_id: self.portal.call(
                client.result, "thread/read", {"threadId": thread_id, "includeTurns": True}
            )["thread"]["turns"]
            for thread_id in ids
        }

    def _real_resumes(self, ids: list[str]) -> dict[str, list[Any]]:
        """Each thread's turns as the real binary resumes it."""
        # the provider the bridge's threads are stored with, known to the real binary (which
        # resumes a thread with its stored provider); nothing listens there: a resume asks no
        # model
        write_codex_config(
            self.home,
            "http://127.0.0.1:9/v1",
            provider="codex-app-bridge",
            model="codex-app-bridge-echo",
            sandbox="read-only",
        )
        cwd = self.root / "work"
        cwd.mkdir(exist_ok=True)
        resumed: dict[str, list[Any]] = {}
        with real_peer(self.home, cwd) as real:
            for thread_id in ids:
                thread = real.result("thread/resume", {"threadId": thread_id})["thread"]
                resumed[thread_id] = thread["turns"]
        return resumed

    def _reads(self, client: Session, only: set[str] | None = None) -> dict[str, Any]:
        no_params: dict[str, Any] = {}
        listed = self.portal.call(client.result, "thread/list", no_params)
        ids = [t["id"] for t in listed["data"]]
        if only is not None:
            ids = sorted(only)
        shapes: dict[str, Any] = {}
        for thread_id in ids:
            read = self.portal.call(
                client.result, "thread/read", {"threadId": thread_id, "includeTurns": True}
            )
            shapes[thread_id] = [_turn_shape(turn) for turn in read["thread"]["turns"]]
        return shapes


SEQUENCES = [0]
"""Sequences whose every check passed (printed in the long pass)."""

# a share of the long campaign (CODEX_APP_BRIDGE_LONG=0.1) runs fewer sequences, each as long
BridgeSequences.TestCase.settings = settings(
    max_examples=scale(6, 1000),
    stateful_step_count=12 if LONG else 6,
    deadline=None,
    derandomize=DERANDOMIZE,
)


class TestRandomMethodSequences(BridgeSequences.TestCase):
    @classmethod
    def tearDownClass(cls) -> None:
        report(f"state machine: {SEQUENCES[0]} sequences passed every check")
