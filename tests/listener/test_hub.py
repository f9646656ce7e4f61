"""Subscriptions and fan-out: who receives what, in which order, and what a bad connection or a
bad event cannot break (runtime spec §2.3, §2.4)."""

from __future__ import annotations

from typing import Any

import anyio
import orjson
import pytest

from codex_app_bridge.listener import ListenerHub, ThreadExistsError, ThreadListener
from codex_app_bridge.protocol.core import RESPONSE_ITEM_ADAPTER, ThreadSettingsSnapshot
from codex_app_bridge.protocol.v2 import IdleThreadStatus
from tests.listener.support import (
    THREAD,
    TIMEOUT,
    TURN,
    RecordingOutbox,
    agent_message_item,
    envelope,
    item_completed,
    task_complete,
    task_started,
)

pytestmark = pytest.mark.anyio

DELTA = {"type": "agent_message_content_delta", "item_id": "m1", "delta": "Hel"}
RAW_ITEM = {"type": "raw_response_item", "item": {"type": "message", "role": "user", "content": []}}


def clock() -> int:
    return 1_796_000_000_123


def setup(*outboxes: RecordingOutbox) -> tuple[ListenerHub, ThreadListener]:
    hub = ListenerHub(clock=clock)
    for outbox in outboxes:
        hub.add_connection(outbox)
    return hub, hub.create_thread(THREAD)


async def feed(listener: ThreadListener, *msgs: dict[str, Any]) -> None:
    for msg in msgs:
        await listener.handle(envelope(msg))


async def test_subscriber_gets_turn_traffic_and_others_only_the_status_broadcasts() -> None:
    subscriber, bystander = RecordingOutbox(1), RecordingOutbox(2)
    _, listener = setup(subscriber, bystander)
    listener.subscribe(subscriber)
    await feed(listener, task_started(), DELTA, task_complete())
    assert subscriber.methods() == [
        "thread/status/changed",
        "turn/started",
        "item/agentMessage/delta",
        "thread/readState/changed",
        "thread/status/changed",
        "turn/completed",
    ]
    assert bystander.methods() == ["thread/status/changed", "thread/status/changed"]


async def test_every_notification_is_encoded_once_with_the_hub_clock() -> None:
    first, second = RecordingOutbox(1), RecordingOutbox(2)
    _, listener = setup(first, second)
    listener.subscribe(first)
    listener.subscribe(second)
    await feed(listener, task_started())
    assert first.raw == second.raw
    assert [n["emittedAtMs"] for n in first.received] == [clock(), clock()]
    assert list(first.received[1]) == ["method", "params", "emittedAtMs"]


async def test_broadcast_reaches_every_initialized_connection() -> None:
    a, b = RecordingOutbox(1), RecordingOutbox(2, opt_out=["thread/started"])
    hub, _ = setup(a, b)
    await hub.broadcast("thread/started", {"thread": {"id": THREAD}})
    assert a.received == [
        {"method": "thread/started", "params": {"thread": {"id": THREAD}}, "emittedAtMs": clock()}
    ]
    assert b.received == []


async def test_opt_out_is_by_exact_method_name() -> None:
    picky = RecordingOutbox(1, opt_out=["item/agentMessage/delta", "turn/"])
    _, listener = setup(picky)
    listener.subscribe(picky)
    await feed(listener, task_started(), DELTA)
    assert picky.methods() == ["thread/status/changed", "turn/started"]


async def test_raw_events_go_only_to_subscribers_that_opted_in() -> None:
    plain, raw = RecordingOutbox(1), RecordingOutbox(2)
    _, listener = setup(plain, raw)
    listener.subscribe(plain)
    listener.subscribe(raw, raw_events=True)
    await feed(listener, RAW_ITEM)
    assert plain.received == []
    assert raw.methods() == ["rawResponseItem/completed"]
    # subscribing again (a resume) does not withdraw the opt-in
    listener.subscribe(raw)
    await feed(listener, RAW_ITEM)
    assert raw.methods() == ["rawResponseItem/completed", "rawResponseItem/completed"]


async def test_unsubscribe_statuses_and_what_an_unsubscribed_connection_still_sees() -> None:
    conn = RecordingOutbox(1)
    _, listener = setup(conn)
    listener.subscribe(conn)
    assert listener.is_subscribed(1)
    assert listener.unsubscribe(1) == "unsubscribed"
    assert listener.unsubscribe(1) == "notSubscribed"
    assert not listener.is_subscribed(1)
    await feed(listener, task_started(), DELTA, task_complete())
    assert conn.methods() == ["thread/status/changed", "thread/status/changed"]


async def test_removed_connection_is_dropped_from_every_thread_and_broadcast() -> None:
    conn, other = RecordingOutbox(1), RecordingOutbox(2)
    hub, listener = setup(conn, other)
    second = hub.create_thread("thread-2")
    listener.subscribe(conn)
    second.subscribe(conn)
    hub.remove_connection(1)
    assert not listener.is_subscribed(1)
    assert not second.is_subscribed(1)
    await feed(listener, task_started())
    await hub.broadcast("skills/changed", {})
    assert conn.received == []
    assert other.methods() == ["thread/status/changed", "skills/changed"]


async def test_a_closed_outbox_is_dropped_and_the_others_still_receive() -> None:
    gone, alive = RecordingOutbox(1), RecordingOutbox(2)
    hub, listener = setup(gone, alive)
    listener.subscribe(gone)
    listener.subscribe(alive)
    gone.closed = True
    await feed(listener, task_started())
    assert gone.received == []
    assert alive.methods() == ["thread/status/changed", "turn/started"]
    assert not listener.is_subscribed(1)
    assert hub.connection_ids() == [2]


async def test_a_failing_outbox_does_not_stop_delivery_to_the_others() -> None:
    broken, fine = RecordingOutbox(1, fail=True), RecordingOutbox(2)
    _, listener = setup(broken, fine)
    listener.subscribe(broken)
    listener.subscribe(fine)
    await feed(listener, task_started(), DELTA)
    assert fine.methods() == ["thread/status/changed", "turn/started", "item/agentMessage/delta"]


async def test_threads_are_created_once_and_listed_in_creation_order() -> None:
    hub = ListenerHub()
    hub.create_thread("b")
    hub.create_thread("a")
    with pytest.raises(ThreadExistsError):
        hub.create_thread("b")
    with pytest.raises(KeyError):
        hub.create_thread("a")
    assert hub.loaded_thread_ids() == ["b", "a"]
    assert hub.get("a") is not None
    assert hub.get("zzz") is None
    assert hub.remove_thread("b") is not None
    assert hub.loaded_thread_ids() == ["a"]


async def test_status_and_active_turn_follow_the_events() -> None:
    _, listener = setup()
    assert listener.status == IdleThreadStatus()
    await feed(listener, task_started())
    assert listener.active_turn_id == TURN
    assert listener.status.type == "active"
    await feed(listener, {"type": "error", "message": "boom"})
    assert listener.status.type == "systemError"
    await feed(listener, task_complete())
    assert listener.active_turn_id is None
    assert listener.status.type == "systemError"


async def test_unknown_and_malformed_events_are_skipped_counted_and_do_not_stall() -> None:
    conn = RecordingOutbox(1)
    _, listener = setup(conn)
    listener.subscribe(conn)
    await feed(listener, task_started(), {"type": "brand_new_event", "x": 1})
    # a known event whose payload cannot be shown (a plan step status outside the v2 enum)
    await feed(listener, {"type": "plan_update", "plan": [{"step": "s", "status": "exploded"}]})
    assert await listener.handle_json(b'{"id": "t", "msg": {"type": "warning"}}') is False
    assert await listener.handle_json(b"not json") is False
    await feed(
        listener, {"type": "exec_approval_request", "call_id": "c", "command": ["ls"], "cwd": "/"}
    )
    await feed(listener, DELTA, task_complete())
    assert listener.skipped_events == 5
    assert conn.methods() == [
        "thread/status/changed",
        "turn/started",
        "item/agentMessage/delta",
        "thread/readState/changed",
        "thread/status/changed",
        "turn/completed",
    ]


async def test_handle_json_accepts_a_wire_envelope() -> None:
    conn = RecordingOutbox(1)
    _, listener = setup(conn)
    listener.subscribe(conn)
    ok = await listener.handle_json(
        orjson.dumps({"id": TURN, "msg": {"type": "warning", "message": "w"}})
    )
    assert ok
    assert conn.received[0]["params"] == {"threadId": THREAD, "message": "w"}


async def test_record_response_item_emits_raw_then_started_then_completed() -> None:
    plain, raw = RecordingOutbox(1), RecordingOutbox(2)
    _, listener = setup(plain, raw)
    listener.subscribe(plain)
    listener.subscribe(raw, raw_events=True)
    item = RESPONSE_ITEM_ADAPTER.validate_python(
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Hello!"}],
        }
    )
    await listener.record_response_item(item, turn_id=TURN)
    agent = {
        "type": "agentMessage",
        "id": "msg_1",
        "text": "Hello!",
        "phase": None,
        "memoryCitation": None,
        "delivery": None,
        "questions": None,
    }
    assert [(n["method"], n["params"]) for n in plain.received] == [
        (
            "item/started",
            {"item": agent, "threadId": THREAD, "turnId": TURN, "startedAtMs": clock()},
        ),
        (
            "item/completed",
            {"item": agent, "threadId": THREAD, "turnId": TURN, "completedAtMs": clock()},
        ),
    ]
    assert raw.methods() == ["rawResponseItem/completed", "item/started", "item/completed"]
    assert raw.received[0]["params"]["item"]["id"] == "msg_1"


async def test_record_response_item_without_a_turn_item_is_only_raw() -> None:
    plain, raw = RecordingOutbox(1), RecordingOutbox(2)
    _, listener = setup(plain, raw)
    listener.subscribe(plain)
    listener.subscribe(raw, raw_events=True)
    item = RESPONSE_ITEM_ADAPTER.validate_python(
        {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c1"}
    )
    await listener.record_response_item(item, turn_id=TURN)
    assert plain.received == []
    assert raw.methods() == ["rawResponseItem/completed"]


async def test_recorded_items_count_for_the_turn_summary() -> None:
    conn = RecordingOutbox(1)
    _, listener = setup(conn)
    listener.subscribe(conn)
    await feed(listener, task_started())
    await feed(listener, item_completed(agent_message_item("m", "from the event")))
    item = RESPONSE_ITEM_ADAPTER.validate_python(
        {
            "type": "message",
            "id": "r",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "seed"}],
        }
    )
    await listener.record_response_item(item, turn_id=TURN)
    await feed(listener, task_complete())
    assert conn.received[-1]["params"]["turn"]["items"][0]["id"] == "r"


async def test_concurrent_handlers_of_one_thread_are_serialized_in_call_order() -> None:
    conn = RecordingOutbox(1)
    _, listener = setup(conn)
    listener.subscribe(conn)
    deltas = [{**DELTA, "delta": str(i)} for i in range(200)]
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            for msg in deltas:
                tg.start_soon(listener.handle, envelope(msg))
                await anyio.lowlevel.checkpoint()
    assert [n["params"]["delta"] for n in conn.received] == [str(i) for i in range(200)]


async def test_a_thousand_threads_with_interleaved_events_keep_per_thread_order() -> None:
    subscribers = [RecordingOutbox(i) for i in range(1, 4)]
    hub = ListenerHub(clock=clock)
    for outbox in subscribers:
        hub.add_connection(outbox)
    threads = [f"thread-{n:04d}" for n in range(1000)]
    for thread_id in threads:
        listener = hub.create_thread(thread_id)
        for outbox in subscribers:
            listener.subscribe(outbox)
    per_thread = 6

    async def run_thread(thread_id: str) -> None:
        listener = hub.get(thread_id)
        assert listener is not None
        await listener.handle(envelope(task_started(thread_id), thread_id))
        for i in range(per_thread):
            await listener.handle(envelope({**DELTA, "delta": f"{thread_id}:{i}"}, thread_id))
            await anyio.lowlevel.checkpoint()  # let the other threads interleave
        await listener.handle(envelope(task_complete(thread_id), thread_id))

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for thread_id in threads:
                tg.start_soon(run_thread, thread_id)

    expected_methods = (
        ["thread/status/changed", "turn/started"]
        + ["item/agentMessage/delta"] * per_thread
        + ["thread/readState/changed", "thread/status/changed", "turn/completed"]
    )
    for outbox in subscribers:
        by_thread: dict[str, list[dict[str, Any]]] = {}
        for n in outbox.received:
            by_thread.setdefault(n["params"]["threadId"], []).append(n)
        assert sorted(by_thread) == threads
        interleaved = [n["params"]["threadId"] for n in outbox.received[: len(threads)]]
        assert len(set(interleaved)) > 1  # the threads really did interleave
        for thread_id, received in by_thread.items():
            assert [n["method"] for n in received] == expected_methods
            deltas = [
                n["params"]["delta"] for n in received if n["method"] == "item/agentMessage/delta"
            ]
            assert deltas == [f"{thread_id}:{i}" for i in range(per_thread)]


async def test_thread_created_with_its_settings_reports_the_first_differing_turn() -> None:
    from tests.listener.test_lifecycle import settings_event

    conn = RecordingOutbox(1)
    hub = ListenerHub(clock=clock)
    started = ThreadSettingsSnapshot.model_validate(settings_event()["thread_settings"])
    listener = hub.create_thread(THREAD, settings=started)
    listener.subscribe(conn)
    await feed(listener, settings_event())
    assert conn.received == []
    await feed(listener, settings_event(model="gpt-5.4"))
    assert conn.methods() == ["thread/settings/updated"]
    assert conn.received[0]["params"]["threadSettings"]["model"] == "gpt-5.4"


class _CongestedOutbox(RecordingOutbox):
    """A connection whose client has stopped reading: congested until ``drained`` is set."""

    def __init__(self, connection_id: int) -> None:
        super().__init__(connection_id)
        self.drained = anyio.Event()
        self.waited = 0

    @property
    def congested(self) -> bool:  # pyright: ignore[reportIncompatibleVariableOverride]
        return not self.drained.is_set()

    async def wait_writable(self) -> None:
        self.waited += 1
        await self.drained.wait()


async def test_a_client_congested_by_one_thread_does_not_hold_up_another_thread() -> None:
    slow, reading = _CongestedOutbox(1), RecordingOutbox(2)
    hub = ListenerHub(clock=clock)
    stuck = hub.create_thread(THREAD)
    other = hub.create_thread("01a229f2-0000-7000-8000-000000000002")
    stuck.subscribe(slow)
    other.subscribe(reading)
    stuck.process(envelope(task_started()))
    other.process(envelope(task_started()))
    assert stuck.congested
    assert not other.congested
    with anyio.fail_after(TIMEOUT):
        await other.wait_writable()
        await other.handle(envelope(task_complete()))
    assert slow.waited == 0
    assert reading.methods()[-1] == "turn/completed"
    slow.drained.set()
    with anyio.fail_after(TIMEOUT):
        await stuck.wait_writable()
    assert not stuck.congested
