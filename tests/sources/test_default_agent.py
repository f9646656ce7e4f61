"""The built-in agent: a complete, deterministic 0.163.0-style turn for any input."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from codex_app_bridge.protocol.core import (
    AgentMessageItem,
    EventMsg,
    ItemCompletedEvent,
    LocalImageUserInput,
    ReasoningItem,
    TaskCompleteEvent,
    TextUserInput,
    TokenCountEvent,
    UserInput,
    UserMessageItem,
)
from codex_app_bridge.sources import DefaultAgent, TurnRequest, answer_for, split_deltas

pytestmark = pytest.mark.anyio


def request(inputs: Sequence[UserInput], *, turn_index: int = 0, thread: str = "t1") -> TurnRequest:
    return TurnRequest(
        thread_id=thread,
        turn_id=f"turn-{turn_index}",
        input=list(inputs),
        user_message_id="user-1",
        turn_index=turn_index,
        model="m",
        cwd="/",
        started_at_ms=1_796_000_000_000,
    )


async def events(agent: DefaultAgent, req: TurnRequest) -> list[EventMsg]:
    return [event async for event in agent.turn(req)]


def collapse(types: list[str]) -> list[str]:
    out: list[str] = []
    for kind in types:
        if not (out and out[-1] == kind and kind.endswith("_delta")):
            out.append(kind)
    return out


async def test_a_turn_is_what_core_emits_for_a_model_that_thinks_then_answers() -> None:
    turn = await events(DefaultAgent(), request([TextUserInput(text="hi there")]))
    assert collapse([event.type for event in turn]) == [
        "task_started",
        "item_started",
        "item_completed",
        "item_started",
        "agent_reasoning_section_break",
        "reasoning_content_delta",
        "agent_reasoning_section_break",
        "reasoning_content_delta",
        "item_completed",
        "item_started",
        "agent_message_content_delta",
        "item_completed",
        "token_count",
        "task_complete",
    ]
    completed = [e.item for e in turn if isinstance(e, ItemCompletedEvent)]
    user, reasoning, answer = completed
    assert user == UserMessageItem(id="user-1", content=[TextUserInput(text="hi there")])
    assert isinstance(reasoning, ReasoningItem)
    assert isinstance(answer, AgentMessageItem)
    assert (reasoning.id, answer.id) == ("rs_turn0", "msg_turn0")
    text = answer.content[0].text  # type: ignore[union-attr]
    deltas = [e.delta for e in turn if e.type == "agent_message_content_delta"]  # type: ignore[union-attr]
    assert len(deltas) > 3
    assert "".join(deltas) == text == answer_for([TextUserInput(text="hi there")], 0)
    summary = [e for e in turn if e.type == "reasoning_content_delta"]
    assert "".join(e.delta for e in summary if e.summary_index == 0) == reasoning.summary_text[0]  # type: ignore[union-attr]
    final = turn[-1]
    assert isinstance(final, TaskCompleteEvent)
    assert final.last_agent_message == text
    assert final.started_at == 1_796_000_000


async def test_a_turns_tokens_add_to_the_total_the_request_carries() -> None:
    # the total is the session's (TurnRequest.token_total): the agent keeps none per thread
    agent = DefaultAgent()
    first = next(
        e
        for e in await events(agent, request([TextUserInput(text="x")]))
        if isinstance(e, TokenCountEvent)
    ).info
    assert first is not None
    assert first.total_token_usage == first.last_token_usage
    carried = replace(
        request([TextUserInput(text="x")], turn_index=1), token_total=first.total_token_usage
    )
    second = next(e for e in await events(agent, carried) if isinstance(e, TokenCountEvent)).info
    assert second is not None
    assert second.total_token_usage.total_tokens == (
        first.last_token_usage.total_tokens + second.last_token_usage.total_tokens
    )
    assert vars(agent).keys() == {"delay", "_defaults"}


async def test_an_empty_input_gets_no_user_item_but_still_an_answer() -> None:
    turn = await events(DefaultAgent(), request([]))
    assert not any(
        isinstance(e, ItemCompletedEvent) and isinstance(e.item, UserMessageItem) for e in turn
    )
    assert turn[-1].last_agent_message == answer_for([], 0)  # type: ignore[union-attr]


def test_answers_are_deterministic_and_describe_the_input() -> None:
    text = [TextUserInput(text="  many   spaces ")]
    assert answer_for(text, 1) == answer_for(text, 1)
    assert answer_for(text, 1).startswith('You said: "many spaces". This is turn 2 of this thread')
    image = [LocalImageUserInput(path="/tmp/a.png")]
    assert "I received 1 image" in answer_for(image, 0)


@pytest.mark.parametrize("text", ["", "one", "two words", "trailing  ", "a\nb c"])
def test_deltas_put_back_together_give_the_text(text: str) -> None:
    assert "".join(split_deltas(text)) == text


def test_a_negative_delay_is_refused() -> None:
    with pytest.raises(ValueError, match="delay"):
        DefaultAgent(delay=-1)
