"""Scenarios: rules chosen by the input text, compiled to core events the mapper shows; every
problem of a bad scenario reported at once, by line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from codex_app_bridge.sources import ScenarioError, ScenarioSource, load_scenario, parse_scenario
from tests.e2e._harness import Message, Session, is_turn_completed, open_bridge

pytestmark = pytest.mark.anyio

TIMEOUT = 60
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "three_turns.scenario.jsonl"


async def _turn(
    client: Session, thread_id: str, text: str, answer: str = "accept"
) -> list[Message]:
    turn_id = await client.start_turn(thread_id, text)
    seen: list[Message] = []
    while True:
        message = await client.next_message()
        seen.append(message)
        if "method" in message and "id" in message:
            await client.send({"id": message["id"], "result": {"decision": answer}})
        if is_turn_completed(turn_id)(message):
            return seen


def _completed(messages: list[Message]) -> dict[str, Any]:
    return messages[-1]["params"]["turn"]


def _items(messages: list[Message]) -> list[dict[str, Any]]:
    return [m["params"]["item"] for m in messages if m.get("method") == "item/completed"]


async def test_the_example_scenario_answers_by_input() -> None:
    source = ScenarioSource(load_scenario(EXAMPLE))
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            client = await bridge.connect()
            await client.initialize()
            thread_id = await client.start_thread()

            hello = await _turn(client, thread_id, "Hello there")
            assert _completed(hello)["status"] == "completed"
            kinds = [i["type"] for i in _items(hello)]
            assert kinds == ["userMessage", "reasoning", "agentMessage"]
            assert _items(hello)[-1]["text"] == "Hello! I am a scripted Codex."

            deploy = await _turn(client, thread_id, "please deploy")
            asked = [
                m for m in deploy if m.get("method") == "item/commandExecution/requestApproval"
            ]
            assert asked[0]["params"]["command"] == "/bin/bash -lc 'make deploy'"
            command = _items(deploy)[1]
            assert (command["status"], command["aggregatedOutput"], command["exitCode"]) == (
                "completed",
                "deployed to staging\n",
                0,
            )
            declined = await _turn(client, thread_id, "deploy again", answer="decline")
            assert _items(declined)[1]["status"] == "declined"

            explain = await _turn(client, thread_id, "explain monads")
            plans = [m["params"] for m in explain if m.get("method") == "turn/plan/updated"]
            assert [s["step"] for s in plans[0]["plan"]] == ["read about monads", "summarise"]
            assert _items(explain)[-1]["text"] == "monads is simple."

            crash = await _turn(client, thread_id, "crash now")
            assert _completed(crash)["status"] == "failed"
            assert _completed(crash)["error"]["message"] == (
                "the model is overloaded, try again later"
            )

            edit = await _turn(client, thread_id, "edit my notes")
            change = _items(edit)[1]
            assert change["type"] == "fileChange"
            assert change["status"] == "completed"

            other = await _turn(client, thread_id, "anything else")
            assert _items(other)[-1]["text"] == "I have no rule for that."
            await client.close()


async def test_a_sequence_plays_in_order_then_loops_per_thread() -> None:
    source = ScenarioSource(parse_scenario(b'{"reply": "one"}\n{"reply": "two"}\n{"loop": true}\n'))
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            client = await bridge.connect()
            await client.initialize()
            first, second = await client.start_thread(), await client.start_thread()
            said = [_items(await _turn(client, first, "x"))[-1]["text"] for _ in range(3)]
            assert said == ["one", "two", "one"]
            assert _items(await _turn(client, second, "x"))[-1]["text"] == "one"
            await client.close()


async def test_a_turn_no_rule_answers_fails_saying_so() -> None:
    source = ScenarioSource(parse_scenario(b'{"match": "hi", "reply": "hello"}\n', name="s"))
    with anyio.fail_after(TIMEOUT):
        async with open_bridge("memory", source=source) as bridge:
            client = await bridge.connect()
            await client.initialize()
            thread_id = await client.start_thread()
            turn = _completed(await _turn(client, thread_id, "bye"))
            assert turn["status"] == "failed"
            assert turn["error"]["message"] == (
                "codex-app-bridge: the scenario s has no rule for 'bye' (no match, no default rule)"
            )
            await client.close()


def test_every_problem_of_a_bad_scenario_is_reported_with_its_line() -> None:
    data = (
        b"# comment\n"
        b'{"match": "a", "reply": 3}\n'
        b"not json\n"
        b'{"match": "b", "regex": "c", "reply": "x"}\n'
        b'{"match": "d", "replay": "typo"}\n'
        b'{"match": "e"}\n'
        b'{"regex": "(", "reply": "x"}\n'
        b'{"match": "f", "plan": [{"step": "s", "status": "done"}]}\n'
        b'{"default": true, "reply": "x"}\n'
        b'{"default": true, "reply": "y"}\n'
    )
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data, name="bad")
    lines = [line for line, _ in caught.value.problems]
    assert lines == [2, 3, 4, 5, 6, 7, 8, 10]
    messages = dict(caught.value.problems)
    assert messages[2] == "'reply' must be a string, not 3"
    assert messages[5].startswith("unknown key 'replay'")
    assert messages[6].startswith("this rule's turn does nothing a client would see")
    assert messages[10] == "a second default rule (the first is line 9)"


def test_serve_refuses_a_bad_scenario_before_it_reads_stdin(tmp_path: Path) -> None:
    import subprocess

    from tests.conftest import bridge_command, bridge_env

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"match": "a"}\n')
    proc = subprocess.run(
        [*bridge_command(), "serve", "--scenario", str(bad)],
        input=b"",
        capture_output=True,
        timeout=TIMEOUT,
        env=bridge_env(),
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith(
        f"codex-app-bridge serve: {bad}: line 1: this rule's turn does nothing a client would see"
    )
