"""A thread's events are its log: clients of two nodes see one thread alike (issue 24.2).

Two nodes in the test's event loop, joined to a real ``nats-server -js`` (``conftest``).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.cluster._nodes import join, open_client, open_node
from tests.cluster.conftest import NatsServer
from tests.e2e._harness import TIMEOUT, Message, is_turn_completed

pytestmark = pytest.mark.anyio

RESUME_ONLY = ("deprecationNotice", "thread/goal/cleared", "thread/tokenUsage/updated")


CLOCK = ("startedAt", "completedAt", "durationMs", "emittedAtMs", "startedAtMs", "completedAtMs")


def _strip(value: Any) -> Any:
    """``value`` without the clock (``startedAt``...): what must be alike on every node."""
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()  # pyright: ignore[reportUnknownVariableType]
            if k not in CLOCK
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _stream(messages: list[Message]) -> list[tuple[str, Any]]:
    """The thread traffic of a client, as it must be alike on every node: each notification's
    method and params, without the clock."""
    return [
        (m["method"], _strip(m.get("params")))
        for m in messages
        if "method" in m and m["method"] not in RESUME_ONLY
    ]


async def test_clients_on_two_nodes_see_one_thread_and_start_turns_from_either(
    nats_server: NatsServer,
) -> None:
    # each node's client connects inside that node's block (the harness closes in that order)
    with anyio.fail_after(TIMEOUT):
        async with (
            open_client(nats_server.url, "node-a", client="alice") as (alice, _),
            open_client(nats_server.url, "node-b", client="bob") as (bob, _),
        ):
            thread_id = await alice.start_thread()
            first, _ = await alice.run_turn(thread_id, "hello from a")

            # node b has never seen the thread: it loads it from the log, with its turn
            resumed = await bob.result("thread/resume", {"threadId": thread_id})
            assert resumed["thread"]["id"] == thread_id
            [turn] = resumed["thread"]["turns"]
            assert turn["id"] == first
            assert turn["status"] == "completed"
            read = await alice.result("thread/read", {"threadId": thread_id, "includeTurns": True})
            assert _strip(resumed["thread"]["turns"]) == _strip(read["thread"]["turns"])
            assert [item["type"] for item in turn["items"]][::2] == [
                "userMessage",
                "agentMessage",
            ]
            await bob.drain_pending()
            await alice.drain_pending()

            # a turn started on a reaches b's client, in the same order, with the same content
            second, alice_saw = await alice.run_turn(thread_id, "second, from a")
            bob_saw = await bob.until(is_turn_completed(second))
            assert _stream(bob_saw) == _stream(alice_saw)

            # a turn started on b runs on a (the owner) and reaches both
            await alice.drain_pending()
            third, bob_saw = await bob.run_turn(thread_id, "third, from b")
            alice_saw = await alice.until(is_turn_completed(third))
            assert _stream(alice_saw) == _stream(bob_saw)
            texts = [p["delta"] for m, p in _stream(alice_saw) if m == "item/agentMessage/delta"]
            assert "third, from b" in "".join(texts)

            # both nodes read the same three turns
            read_a = await alice.result(
                "thread/read", {"threadId": thread_id, "includeTurns": True}
            )
            read_b = await bob.result("thread/read", {"threadId": thread_id, "includeTurns": True})
            assert [t["id"] for t in read_a["thread"]["turns"]] == [first, second, third]
            assert _strip(read_b["thread"]["turns"]) == _strip(read_a["thread"]["turns"])


APPROVAL = "item/commandExecution/requestApproval"


def _completed_commands(messages: list[Message]) -> list[dict[str, Any]]:
    return [
        m["params"]["item"]
        for m in messages
        if m.get("method") == "item/completed" and m["params"]["item"]["type"] == "commandExecution"
    ]


def _resolved_before_the_command(seen: list[Message], request_id: int) -> None:
    """The request ``request_id`` reads as resolved (``serverRequest/resolved``) before its
    command's ``item/completed``, not only at the turn's end."""
    resolved = [
        i
        for i, m in enumerate(seen)
        if m.get("method") == "serverRequest/resolved" and m["params"]["requestId"] == request_id
    ]
    completed = [
        i
        for i, m in enumerate(seen)
        if m.get("method") == "item/completed" and m["params"]["item"]["type"] == "commandExecution"
    ]
    assert len(resolved) == 1, [m.get("method") for m in seen]
    assert len(completed) == 1, [m.get("method") for m in seen]
    assert resolved[0] < completed[0], [m.get("method") for m in seen]


async def test_an_approval_raised_on_the_owner_is_answered_from_another_node(
    nats_server: NatsServer,
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with open_client(nats_server.url, "node-a", client="alice") as (alice, _):
            thread_id = await alice.start_thread()
            await alice.run_turn(thread_id, "first")
            async with open_node(nats_server.url, "node-b") as (bridge_b, _):
                bob = await join(bridge_b, "bob", thread_id)
                await alice.drain_pending()

                turn = await alice.start_turn(thread_id, "approve: ls -la")
                asked_a = (await alice.until(lambda m: m.get("method") == APPROVAL))[-1]
                asked_b = (await bob.until(lambda m: m.get("method") == APPROVAL))[-1]
                assert asked_b["params"] == asked_a["params"]  # the same request on both nodes
                await bob.send({"id": asked_b["id"], "result": {"decision": "accept"}})

                seen_a = await alice.until(is_turn_completed(turn))
                seen_b = await bob.until(is_turn_completed(turn))
                for seen in (seen_a, seen_b):
                    [command] = _completed_commands(seen)
                    assert command["status"] == "completed"
                    assert command["aggregatedOutput"] == "ran: ls -la\n"
                    assert seen[-1]["params"]["turn"]["status"] == "completed"
                # the request reads as answered on both nodes as soon as it is: before the
                # command runs (the owner resolves it before it takes the answer)
                _resolved_before_the_command(seen_a, asked_a["id"])
                _resolved_before_the_command(seen_b, asked_b["id"])

                # and answered on the owner: the other node resolves it from the log
                turn = await alice.start_turn(thread_id, "approve: pwd")
                asked_a = (await alice.until(lambda m: m.get("method") == APPROVAL))[-1]
                asked_b = (await bob.until(lambda m: m.get("method") == APPROVAL))[-1]
                await alice.send({"id": asked_a["id"], "result": {"decision": "decline"}})
                seen_a = await alice.until(is_turn_completed(turn))
                seen_b = await bob.until(is_turn_completed(turn))
                for seen, asked in ((seen_a, asked_a), (seen_b, asked_b)):
                    _resolved_before_the_command(seen, asked["id"])
                    [command] = _completed_commands(seen)
                    assert command["status"] == "declined"
