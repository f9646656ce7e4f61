"""``SerialScopes`` on its own: per-key FIFO, and what releasing a ticket early does to the queue."""

from __future__ import annotations

import anyio
import pytest

from codex_app_bridge.rpc import ScopeTicket, SerialScopes
from tests.rpc._support import TIMEOUT

pytestmark = pytest.mark.anyio


async def _run(name: str, ticket: ScopeTicket, order: list[str]) -> None:
    await ticket.wait_turn()
    order.append(name)
    ticket.release()


async def test_tickets_of_one_key_take_turns_in_arrival_order_and_other_keys_do_not_wait() -> None:
    scopes = SerialScopes()
    first, second, other = scopes.enter("k"), scopes.enter("k"), scopes.enter("other")
    order: list[str] = []
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_run, "second", second, order)
            tg.start_soon(_run, "other", other, order)
            await anyio.wait_all_tasks_blocked()
            assert order == ["other"]
            first.release()
    assert order == ["other", "second"]
    assert len(scopes) == 0


async def test_a_ticket_released_before_its_turn_keeps_the_ones_behind_it_waiting() -> None:
    scopes = SerialScopes()
    first, dropped, behind = scopes.enter("k"), scopes.enter("k"), scopes.enter("k")
    dropped.release()  # e.g. its connection closed while it was queued
    later = scopes.enter("k")
    order: list[str] = []
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_run, "behind", behind, order)
            tg.start_soon(_run, "later", later, order)
            await anyio.wait_all_tasks_blocked()
            assert order == []
            order.append("first")
            first.release()
    assert order == ["first", "behind", "later"]
    assert len(scopes) == 0


async def test_releasing_a_ticket_twice_changes_nothing() -> None:
    scopes = SerialScopes()
    first, second = scopes.enter("k"), scopes.enter("k")
    first.release()
    first.release()
    third = scopes.enter("k")
    order: list[str] = []
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_run, "third", third, order)
            await anyio.wait_all_tasks_blocked()
            assert order == []
            second.release()
    assert order == ["third"]
    assert len(scopes) == 0
