"""Server -> client requests over every transport: approvals, questions, elicitations and dynamic
tool calls raised by the built-in agent, their ids and audience, answers, replay, clean-up on
turn end and interrupt, the status flags, and every bad answer (the 0.163.0 rules)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from codex_app_bridge.protocol import v2
from codex_app_bridge.sources import ScriptSource, parse_script
from tests.e2e._harness import (
    IN_PROCESS_KINDS,
    Message,
    Session,
    is_turn_completed,
    methods,
    open_bridge,
)

pytestmark = pytest.mark.anyio


def is_request(method: str) -> Any:
    def check(message: Message) -> bool:
        return message.get("method") == method and "id" in message

    return check


async def ask(session: Session, thread_id: str, text: str, method: str) -> tuple[str, Message]:
    """Start a turn whose input asks; the turn id and the server request it raised."""
    turn_id = await session.start_turn(thread_id, text)
    seen = await session.until(is_request(method))
    return turn_id, seen[-1]


def after(messages: list[Message], method: str) -> list[Message]:
    return [m for m in messages if m.get("method") == method]


def statuses(messages: list[Message]) -> list[Any]:
    return [m["params"]["status"] for m in after(messages, "thread/status/changed")]


async def test_an_approved_command_runs_after_the_approval_started_item(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        session = await bridge.connect()
        await session.initialize()
        thread_id = await session.start_thread()
        mark = len(session.received)
        turn_id, request = await ask(
            session, thread_id, "approve: echo hi", "item/commandExecution/requestApproval"
        )
        assert request["id"] == 0
        params = request["params"]
        assert params["itemId"] == params["itemId"]
        assert params["threadId"] == thread_id
        assert params["turnId"] == turn_id
        assert params["command"] == "/bin/bash -lc 'echo hi'"
        assert params["commandActions"] == [{"type": "unknown", "command": "echo hi"}]
        assert params["proposedExecpolicyAmendment"] == ["echo", "hi"]
        assert params["availableDecisions"] == [
            "accept",
            {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["echo", "hi"]}},
            "cancel",
        ]
        assert params["environmentId"] == "local"
        before = session.received[mark:]
        assert methods(before)[-3:] == [
            "thread/status/changed",
            "item/started",
            "item/commandExecution/requestApproval",
        ]
        assert statuses(before)[-1] == {"type": "active", "activeFlags": ["waitingOnApproval"]}
        started = after(before, "item/started")[-1]["params"]["item"]
        assert started["type"] == "commandExecution"
        assert (started["processId"], started["source"], started["status"]) == (
            None,
            "agent",
            "inProgress",
        )
        read = await session.result("thread/read", {"threadId": thread_id})
        assert read["thread"]["status"] == {"type": "active", "activeFlags": ["waitingOnApproval"]}

        mark = len(session.received)
        await session.send({"id": request["id"], "result": {"decision": "accept"}})
        await session.until(is_turn_completed(turn_id))
        rest = session.received[mark:]
        names = methods(rest)
        assert names[:3] == ["serverRequest/resolved", "thread/status/changed", "item/completed"]
        assert rest[0]["params"] == {"threadId": thread_id, "requestId": 0}
        assert statuses(rest)[0] == {"type": "active", "activeFlags": []}
        command_items = [
            m["params"]["item"]
            for m in rest
            if m.get("method") in ("item/started", "item/completed")
            and m["params"]["item"]["type"] == "commandExecution"
        ]
        assert [i["status"] for i in command_items] == ["completed"]  # one item/started only
        assert command_items[0]["aggregatedOutput"] == "ran: echo hi\n"
        assert command_items[0]["source"] == "unifiedExecStartup"
        assert (
            "I ran `echo hi`"
            in after(rest, "turn/completed")[0]["params"]["turn"]["items"][0]["text"]
        )


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        ({"result": {"decision": "decline"}}, "declined"),
        ({"result": {"decision": "bogus"}}, "failed"),
        ({"result": "not an object"}, "failed"),
        ({"error": {"code": -32000, "message": "user closed the dialog"}}, "failed"),
    ],
)
async def test_a_refused_or_bad_answer_completes_the_command_without_running_it(
    answer: Message, status: str
) -> None:
    async with open_bridge("memory") as bridge:
        session = await bridge.connect()
        await session.initialize()
        thread_id = await session.start_thread()
        turn_id, request = await ask(
            session, thread_id, "approve: rm -rf /", "item/commandExecution/requestApproval"
        )
        mark = len(session.received)
        await session.send({"id": request["id"], **answer})
        await session.until(is_turn_completed(turn_id))
        rest = session.received[mark:]
        # probed: the server's own item/completed comes before the status change
        assert methods(rest)[:3] == [
            "serverRequest/resolved",
            "item/completed",
            "thread/status/changed",
        ]
        item = rest[1]["params"]["item"]
        assert (item["type"], item["status"], item["processId"]) == (
            "commandExecution",
            status,
            None,
        )
        completed = after(rest, "item/completed")
        assert [m["params"]["item"]["type"] for m in completed] == [
            "commandExecution",
            "agentMessage",
        ]
        assert "did not run it" in completed[-1]["params"]["item"]["text"]
        assert after(rest, "turn/completed")[0]["params"]["turn"]["status"] == "completed"


async def test_cancel_aborts_the_turn() -> None:
    async with open_bridge("memory") as bridge:
        session = await bridge.connect()
        await session.initialize()
        thread_id = await session.start_thread()
        turn_id, request = await ask(
            session, thread_id, "approve: ls", "item/commandExecution/requestApproval"
        )
        await session.send({"id": request["id"], "result": {"decision": "cancel"}})
        done = await session.until(is_turn_completed(turn_id))
        assert done[-1]["params"]["turn"]["status"] == "interrupted"


@pytest.mark.parametrize("kind", IN_PROCESS_KINDS)
async def test_two_subscribers_both_get_the_request_and_the_first_answer_wins(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        a = await bridge.connect()
        b = await bridge.connect()
        await a.initialize("a")
        await b.initialize("b")
        thread_id = await a.start_thread()
        await a.run_turn(thread_id, "hello")  # a materialized thread can be resumed
        await b.result("thread/resume", {"threadId": thread_id, "excludeTurns": True})
        turn_id, request_a = await ask(
            a, thread_id, "patch: notes.txt", "item/fileChange/requestApproval"
        )
        request_b = (await b.until(is_request("item/fileChange/requestApproval")))[-1]
        assert request_a == request_b
        assert request_a["params"]["itemId"].startswith("call_")
        await b.send({"id": request_b["id"], "result": {"decision": "accept"}})
        done_b = await b.until(is_turn_completed(turn_id))
        # the loser answers too late: nothing happens, nothing breaks
        await a.send({"id": request_a["id"], "result": {"decision": "decline"}})
        done_a = await a.until(is_turn_completed(turn_id))
        for done in (done_a, done_b):
            resolved = after(done, "serverRequest/resolved")
            assert [m["params"]["requestId"] for m in resolved] == [request_a["id"]]
            file_items = [
                m["params"]["item"]
                for m in after(done, "item/completed")
                if m["params"]["item"]["type"] == "fileChange"
            ]
            assert [i["status"] for i in file_items] == ["completed"]
        again = await a.result("thread/read", {"threadId": thread_id})
        assert again["thread"]["status"] == {"type": "idle"}


@pytest.mark.parametrize("kind", IN_PROCESS_KINDS)
async def test_a_late_subscriber_gets_the_pending_request_replayed_with_its_id(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        a = await bridge.connect()
        b = await bridge.connect()
        await a.initialize("a")
        await b.initialize("b")
        thread_id = await a.start_thread()
        await a.run_turn(thread_id, "hello")
        turn_id, request = await ask(
            a, thread_id, "ask: Which colour?", "item/tool/requestUserInput"
        )
        assert request["params"]["questions"][0]["question"] == "Which colour?"
        resume = await b.call("thread/resume", {"threadId": thread_id, "excludeTurns": True})
        assert resume["result"]["thread"]["status"] == {
            "type": "active",
            "activeFlags": ["waitingOnUserInput"],
        }
        replayed = (await b.until(is_request("item/tool/requestUserInput")))[-1]
        assert replayed == request
        await b.send(
            {"id": replayed["id"], "result": {"answers": {"answer": {"answers": ["blue"]}}}}
        )
        for session in (a, b):
            done = await session.until(is_turn_completed(turn_id))
            assert [m["params"]["requestId"] for m in after(done, "serverRequest/resolved")] == [
                request["id"]
            ]
            text = done[-1]["params"]["turn"]["items"][0]["text"]
            assert text == 'You answered: "blue".'


async def test_interrupt_resolves_the_pending_request_before_turn_completed() -> None:
    async with open_bridge("memory") as bridge:
        session = await bridge.connect()
        await session.initialize()
        thread_id = await session.start_thread()
        turn_id, request = await ask(
            session, thread_id, "permissions: fetch a page", "item/permissions/requestApproval"
        )
        assert request["params"]["permissions"] == {
            "network": {"enabled": True},
            "fileSystem": None,
        }
        mark = len(session.received)
        reply = await session.call("turn/interrupt", {"threadId": thread_id, "turnId": turn_id})
        assert reply["result"] == {}
        await session.until(is_turn_completed(turn_id))
        rest = session.received[mark:]
        names = [n for n in methods(rest) if n != "response"]
        assert names == ["serverRequest/resolved", "thread/status/changed", "turn/completed"]
        assert statuses(rest) == [{"type": "idle"}]
        # an answer after the turn ended finds no request: ignored, the server keeps serving
        await session.send({"id": request["id"], "result": {"permissions": {}, "scope": "turn"}})
        read = await session.result("thread/read", {"threadId": thread_id})
        assert read["thread"]["status"] == {"type": "idle"}


async def test_request_ids_count_up_across_threads_and_unknown_ids_are_ignored() -> None:
    async with open_bridge("memory") as bridge:
        session = await bridge.connect()
        await session.initialize()
        first = await session.start_thread()
        second = await session.start_thread()
        await session.send({"id": 99, "result": {"decision": "accept"}})  # no such request
        turn_a, request_a = await ask(
            session, first, "elicit: Your name?", "mcpServer/elicitation/request"
        )
        assert request_a["params"]["serverName"] == "codex-app-bridge"
        assert request_a["params"]["mode"] == "form"
        assert request_a["params"]["message"] == "Your name?"
        turn_b, request_b = await ask(
            session, second, 'tool: lookup_weather {"city": "Paris"}', "item/tool/call"
        )
        assert (request_a["id"], request_b["id"]) == (0, 1)
        assert request_b["params"]["arguments"] == {"city": "Paris"}
        await session.send(
            {
                "id": request_b["id"],
                "result": {
                    "contentItems": [{"type": "inputText", "text": "sunny"}],
                    "success": True,
                },
            }
        )
        done_b = await session.until(is_turn_completed(turn_b))
        assert after(done_b, "serverRequest/resolved") == []  # as the real server for tool calls
        tool = [
            m["params"]["item"]
            for m in after(done_b, "item/completed")
            if m["params"]["item"]["type"] == "dynamicToolCall"
        ]
        assert tool[0]["status"] == "completed"
        assert tool[0]["contentItems"] == [{"type": "inputText", "text": "sunny"}]
        await session.send(
            {"id": request_a["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}
        )
        done_a = await session.until(is_turn_completed(turn_a))
        assert done_a[-1]["params"]["turn"]["items"][0]["text"] == (
            'The elicitation was accepted with {"name":"Ada"}.'
        )


async def test_a_malformed_tool_result_reaches_the_source_as_a_failed_call() -> None:
    async with open_bridge("memory") as bridge:
        session = await bridge.connect()
        await session.initialize()
        thread_id = await session.start_thread()
        turn_id, request = await ask(session, thread_id, "tool: lookup", "item/tool/call")
        await session.send({"id": request["id"], "result": {"contentItems": "nope"}})
        done = await session.until(is_turn_completed(turn_id))
        tool = [
            m["params"]["item"]
            for m in after(done, "item/completed")
            if m["params"]["item"]["type"] == "dynamicToolCall"
        ]
        assert tool[0]["status"] == "failed"
        assert tool[0]["contentItems"] == [
            {"type": "inputText", "text": "dynamic tool response was invalid"}
        ]


@pytest.mark.parametrize("kind", IN_PROCESS_KINDS)
async def test_a_client_that_disconnects_leaves_the_request_to_a_later_resume(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        a = await bridge.connect()
        await a.initialize("a")
        thread_id = await a.start_thread()
        await a.run_turn(thread_id, "hello")
        turn_id, request = await ask(
            a, thread_id, "approve: make", "item/commandExecution/requestApproval"
        )
        await a.close()
        b = await bridge.connect()
        await b.initialize("b")
        await b.result("thread/resume", {"threadId": thread_id, "excludeTurns": True})
        replayed = (await b.until(is_request("item/commandExecution/requestApproval")))[-1]
        assert replayed["id"] == request["id"]
        await b.send({"id": replayed["id"], "result": {"decision": "acceptForSession"}})
        done = await b.until(is_turn_completed(turn_id))
        assert done[-1]["params"]["turn"]["status"] == "completed"


REQUEST_CAPTURES = Path(__file__).resolve().parents[1] / "data" / "request_captures"


def captured(capture: str) -> list[Message]:
    lines = (
        (REQUEST_CAPTURES / capture / "transcript.jsonl").read_text(encoding="utf-8").splitlines()
    )
    return [json.loads(line)["msg"] for line in lines]


def around_request(messages: list[Message], method: str) -> list[str]:
    """Method names from the last status change before the request to the item after it."""
    index = next(i for i, m in enumerate(messages) if m.get("method") == method and "id" in m)
    start = max(
        i
        for i in range(index)
        if messages[i].get("method") in ("thread/status/changed", "item/completed")
    )
    names = [m.get("method", "answer") for m in messages[start : index + 5]]
    return names[: names.index("item/completed") + 1]


@pytest.mark.parametrize(
    ("capture", "prompt", "method", "answer"),
    [
        (
            "shell_approval",
            "approve: touch approved.txt",
            "item/commandExecution/requestApproval",
            {"decision": "accept"},
        ),
        (
            "dynamic_tool",
            'tool: lookup_weather {"city": "Paris"}',
            "item/tool/call",
            {"contentItems": [{"type": "inputText", "text": "Sunny"}], "success": True},
        ),
    ],
)
async def test_the_request_and_its_answer_come_in_the_real_servers_order(
    capture: str, prompt: str, method: str, answer: Message
) -> None:
    real = captured(capture)
    request = next(m for m in real if m.get("method") == method and "id" in m)
    async with open_bridge("memory") as bridge:
        session = await bridge.connect()
        await session.initialize()
        thread_id = await session.start_thread()
        mark = len(session.received)
        turn_id, ours = await ask(session, thread_id, prompt, method)
        assert ours["id"] == request["id"] == 0
        # the same fields (the built-in agent gives a reason, the captured model did not)
        assert sorted(set(ours["params"]) - {"reason"}) == sorted(request["params"])
        await session.send({"id": ours["id"], "result": answer})
        await session.until(is_turn_completed(turn_id))
        mine = session.received[mark:]
        index = next(i for i, m in enumerate(mine) if m.get("id") == 0 and "method" in m)
        mine.insert(index + 1, {"id": 0, "result": answer})  # where the answer went
        assert around_request(mine, method) == around_request(real, method)


async def test_a_scripted_approval_is_raised_live_and_waits_for_the_answer() -> None:
    turn = "rec-turn"
    lines = [
        {"id": turn, "msg": {"type": "task_started", "turn_id": turn, "started_at": 1}},
        {
            "id": turn,
            "msg": {
                "type": "exec_approval_request",
                "call_id": "call_1",
                "turn_id": turn,
                "command": ["ls"],
                "cwd": "/tmp",
                "parsed_cmd": [{"type": "unknown", "cmd": "ls"}],
            },
        },
        {
            "id": turn,
            "msg": {"type": "task_complete", "turn_id": turn, "last_agent_message": None},
        },
    ]
    turns, _ = parse_script(b"\n".join(orjson.dumps(line) for line in lines), name="approval")
    script = ScriptSource(turns, name="approval")
    async with open_bridge("memory", source=script) as bridge:
        session = await bridge.connect()
        await session.initialize()
        thread_id = await session.start_thread()
        turn_id, request = await ask(
            session, thread_id, "go", "item/commandExecution/requestApproval"
        )
        assert request["params"]["turnId"] == turn_id
        assert request["params"]["availableDecisions"] == ["accept", "cancel"]
        read = await session.result("thread/read", {"threadId": thread_id})
        assert read["thread"]["status"]["activeFlags"] == ["waitingOnApproval"]
        await session.send({"id": request["id"], "result": {"decision": "decline"}})
        done = await session.until(is_turn_completed(turn_id))
        assert "serverRequest/resolved" in methods(done)
        assert done[-1]["params"]["turn"]["status"] == "completed"


@pytest.mark.parametrize("capture", ["shell_approval", "dynamic_tool"])
def test_the_captured_requests_parse_into_their_typed_models(capture: str) -> None:
    asked = {"item/commandExecution/requestApproval", "item/tool/call"}
    requests = [m for m in captured(capture) if m.get("method") in asked and "id" in m]
    assert len(requests) == 1
    parsed = v2.parse_server_request(json.dumps(requests[0]))
    assert not isinstance(parsed, v2.UnknownServerRequest)


def probed(mode: str) -> list[Message]:
    path = REQUEST_CAPTURES / "answers" / f"{mode}.jsonl"
    return [json.loads(line)["msg"] for line in path.read_text(encoding="utf-8").splitlines()]


def answer_index(messages: list[Message]) -> int:
    """Where the client's answer to server request 0 is."""
    return next(
        i
        for i, m in enumerate(messages)
        if "method" not in m and m.get("id") == 0 and ("result" in m or "error" in m)
    )


def after_answer(messages: list[Message]) -> list[tuple[str, str | None]]:
    """(method, command item status) from the answer to the approval up to the next item the
    model makes (the agent message), as the probed real server and the bridge send them."""
    index = answer_index(messages)
    out: list[tuple[str, str | None]] = []
    for message in messages[index + 1 :]:
        method = message.get("method")
        if method is None or method in ("thread/tokenUsage/updated", "account/rateLimits/updated"):
            continue
        item = message["params"].get("item") if isinstance(message.get("params"), dict) else None
        if isinstance(item, dict) and item.get("type") == "agentMessage":
            break
        status = item.get("status") if isinstance(item, dict) else None
        out.append((method, status))
    return out


@pytest.mark.parametrize("mode", ["decline", "error", "malformed", "notobj"])
async def test_each_answer_has_the_probed_real_servers_effect(mode: str) -> None:
    real = probed(mode)
    answer = real[answer_index(real)]
    async with open_bridge("memory") as bridge:
        session = await bridge.connect()
        await session.initialize()
        thread_id = await session.start_thread()
        mark = len(session.received)
        turn_id, request = await ask(
            session, thread_id, "approve: touch x.txt", "item/commandExecution/requestApproval"
        )
        await session.send(answer)
        await session.until(is_turn_completed(turn_id))
        mine = session.received[mark:]
        index = mine.index(request)
        mine.insert(index + 1, answer)
        assert after_answer(mine) == after_answer(real)


async def test_a_connection_not_subscribed_sees_the_status_flags_but_not_the_request() -> None:
    async with open_bridge("memory") as bridge:
        a = await bridge.connect()
        b = await bridge.connect()
        await a.initialize("a")
        await b.initialize("b")
        thread_id = await a.start_thread()
        turn_id, request = await ask(
            a, thread_id, "approve: date", "item/commandExecution/requestApproval"
        )
        await a.send({"id": request["id"], "result": {"decision": "accept"}})
        await a.until(is_turn_completed(turn_id))
        seen = await b.until(
            lambda m: (
                m.get("method") == "thread/status/changed"
                and m["params"]["status"] == {"type": "idle"}
            )
        )
        assert [m["params"]["status"] for m in after(seen, "thread/status/changed")] == [
            {"type": "active", "activeFlags": []},
            {"type": "active", "activeFlags": ["waitingOnApproval"]},
            {"type": "active", "activeFlags": []},
            {"type": "idle"},
        ]
        assert [m for m in seen if "id" in m] == []
        assert "serverRequest/resolved" not in methods(seen)


async def test_a_request_that_cannot_be_sent_is_answered_for_the_source_at_once() -> None:
    turn = "rec-turn"
    lines = [
        {"id": turn, "msg": {"type": "task_started", "turn_id": turn, "started_at": 1}},
        {
            "id": turn,
            "msg": {"type": "request_user_input", "call_id": "c", "questions": [{"id": 1}]},
        },
        {"id": turn, "msg": {"type": "task_complete", "turn_id": turn}},
    ]
    turns, _ = parse_script(b"\n".join(orjson.dumps(line) for line in lines), name="bad")
    async with open_bridge("memory", source=ScriptSource(turns, name="bad")) as bridge:
        session = await bridge.connect()
        await session.initialize()
        thread_id = await session.start_thread()
        _, received = await session.run_turn(thread_id, "go")
        assert [m for m in received if "id" in m and "method" in m] == []
        assert received[-1]["params"]["turn"]["status"] == "completed"
        read = await session.result("thread/read", {"threadId": thread_id})
        assert read["thread"]["status"] == {"type": "idle"}


KINDS_TABLE: list[tuple[str, str, Message, str]] = [
    (
        "approve: echo hi",
        "item/commandExecution/requestApproval",
        {"decision": "accept"},
        "I ran `echo hi` (approved); it printed: ran: echo hi",
    ),
    (
        "patch: a.txt",
        "item/fileChange/requestApproval",
        {"decision": "decline"},
        "You declined creating a.txt.",
    ),
    (
        "permissions: fetch",
        "item/permissions/requestApproval",
        {"permissions": {"network": {"enabled": True}}, "scope": "turn"},
        'Permissions granted: {"permissions":{"network":{"enabled":true}},"scope":"turn"}',
    ),
    (
        "ask: Colour?",
        "item/tool/requestUserInput",
        {"answers": {"answer": {"answers": ["red"]}}},
        'You answered: "red".',
    ),
    (
        "elicit: Name?",
        "mcpServer/elicitation/request",
        {"action": "decline"},
        "The elicitation was declined with null.",
    ),
    (
        "tool: sum [1, 2]",
        "item/tool/call",
        {"contentItems": [{"type": "inputText", "text": "3"}], "success": True},
        "The tool said: 3",
    ),
]


async def test_every_request_kind_round_trips_over_each_transport(kind: str) -> None:
    async with open_bridge(kind) as bridge:
        session = await bridge.connect()
        await session.initialize()
        thread_id = await session.start_thread()
        for number, (prompt, method, answer, final) in enumerate(KINDS_TABLE):
            turn_id, request = await ask(session, thread_id, prompt, method)
            assert request["id"] == number  # one process-wide counter
            await session.send({"id": request["id"], "result": answer})
            done = await session.until(is_turn_completed(turn_id))
            assert done[-1]["params"]["turn"]["status"] == "completed"
            assert done[-1]["params"]["turn"]["items"][0]["text"] == final
