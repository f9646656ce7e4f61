"""The built-in default agent: a small deterministic agent, so any client works out of the box.

Each turn is what Codex 0.163.0 core emits for a model that thinks briefly and then answers:

1. ``task_started`` (turn attribution, ``started_at`` in Unix seconds, the fallback context window);
2. the user message: ``item_started`` + ``item_completed`` (``UserMessage``, the request's UUIDv7
   id, the input passed through); no user item when the input is empty, as the real server;
3. a reasoning item: ``item_started`` (empty summary), then for each of two summary parts an
   ``agent_reasoning_section_break`` and its ``reasoning_content_delta`` s, then ``item_completed``
   with both summary texts;
4. the answer: ``item_started`` (``AgentMessage``, no content), ``agent_message_content_delta`` s
   (one per word, spaces kept), ``item_completed`` with the whole text;
5. ``token_count`` (deterministic estimates, 4 characters a token; totals add up per thread; the
   rate-limit snapshot the real server sends without a ChatGPT login);
6. ``task_complete`` with ``last_agent_message`` and timings.

An input that starts with ``approve:``, ``patch:``, ``permissions:``, ``ask:``, ``elicit:`` or
``tool:`` makes the agent ask the client first (``_asking``: the approval, question, elicitation
or dynamic tool call), wait for the answer, react to it as Codex would (a declined command is not
run), and answer with what it got instead of the echo, without a reasoning item.

The answer depends only on the input ("You said: …"), so transcripts are reproducible; only ids and
times vary. Item ids look like the Responses API ones (``rs_…``, ``msg_…``) and are derived from the
turn id. ``delay`` seconds pass before each streamed delta (``0`` for none): the pacing that makes a
turn long enough to interrupt or to watch in the demo.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator, Sequence

import anyio

from codex_app_bridge.protocol.core import (
    AgentMessageContentDeltaEvent,
    AgentMessageItem,
    AgentReasoningSectionBreakEvent,
    EventMsg,
    ImageUserInput,
    ItemCompletedEvent,
    ItemStartedEvent,
    LocalImageUserInput,
    RateLimitSnapshot,
    ReasoningContentDeltaEvent,
    ReasoningItem,
    TaskCompleteEvent,
    TextAgentMessageContent,
    TokenCountEvent,
    TokenUsage,
    TokenUsageInfo,
    UserInput,
    UserMessageItem,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.sources._asking import Outcome, ask_events, parse_ask
from codex_app_bridge.sources._base import (
    DEFAULT_CONTEXT_WINDOW,
    SourceDefaults,
    TurnRequest,
    aborted_turn,
    input_text,
    task_started_event,
    user_message_events,
)

__all__ = ["DEFAULT_MODEL", "DEFAULT_MODEL_PROVIDER", "DefaultAgent", "answer_for", "split_deltas"]

DEFAULT_MODEL = "codex-app-bridge-echo"
DEFAULT_MODEL_PROVIDER = "codex-app-bridge"

_WORD = re.compile(r"\S+\s*|\s+")
_BASE_INPUT_TOKENS = 100  # what the instructions and tools would cost a real model


def split_deltas(text: str) -> list[str]:
    """``text`` cut into streamable pieces: one word with its trailing whitespace each."""
    return _WORD.findall(text)


def _attachments(inputs: Sequence[UserInput]) -> int:
    return sum(isinstance(part, ImageUserInput | LocalImageUserInput) for part in inputs)


def answer_for(inputs: Sequence[UserInput], turn_index: int) -> str:
    """The agent's deterministic answer to a turn's input."""
    text = " ".join(input_text(inputs).split())
    images = _attachments(inputs)
    if not text and not images:
        return "There was nothing to answer: the turn arrived without input."
    parts: list[str] = []
    if text:
        parts.append(f'You said: "{text}".')
    if images:
        parts.append(f"I received {images} image{'s' if images != 1 else ''}, but I cannot see.")
    ordinal = turn_index + 1
    parts.append(
        f"This is turn {ordinal} of this thread, answered by the codex-app-bridge built-in "
        "agent, which echoes its input so that any client can be tried without a model."
    )
    return " ".join(parts)


def _summary_parts(inputs: Sequence[UserInput]) -> list[str]:
    words = len(input_text(inputs).split())
    return [
        "**Reading the request**\n\n"
        f"The user sent {words} word{'s' if words != 1 else ''}; I will repeat them back.",
        "**Answering**\n\nA short, faithful echo is the whole answer.",
    ]


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


class DefaultAgent:
    """The built-in agent (see the module docstring)."""

    def __init__(
        self,
        *,
        delay: float = 0.0,
        model: str = DEFAULT_MODEL,
        model_provider: str = DEFAULT_MODEL_PROVIDER,
    ) -> None:
        if delay < 0:
            raise ValueError("delay must not be negative")
        self.delay = delay
        self._defaults = SourceDefaults(model=model, model_provider=model_provider)

    @property
    def defaults(self) -> SourceDefaults:
        return self._defaults

    async def _pace(self) -> None:
        if self.delay:
            await anyio.sleep(self.delay)

    @staticmethod
    def _usage(previous: TokenUsage | None, last: TokenUsage) -> TokenUsageInfo:
        """The turn's usage added to the thread's (the session keeps the total: the agent
        holds nothing per thread, so nothing of an unloaded thread stays)."""
        previous = previous or TokenUsage()
        total = TokenUsage(
            input_tokens=previous.input_tokens + last.input_tokens,
            cached_input_tokens=previous.cached_input_tokens + last.cached_input_tokens,
            cache_write_input_tokens=previous.cache_write_input_tokens,
            output_tokens=previous.output_tokens + last.output_tokens,
            reasoning_output_tokens=previous.reasoning_output_tokens + last.reasoning_output_tokens,
            total_tokens=previous.total_tokens + last.total_tokens,
        )
        return TokenUsageInfo(
            total_token_usage=total,
            last_token_usage=last,
            model_context_window=DEFAULT_CONTEXT_WINDOW,
        )

    async def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        thread_id, turn_id = request.thread_id, request.turn_id
        started_at_ms = request.started_at_ms
        yield task_started_event(turn_id, started_at_ms)

        if request.input:
            user_item = UserMessageItem(id=request.user_message_id, content=list(request.input))
            for event in user_message_events(thread_id, turn_id, user_item, now_ms()):
                yield event

        suffix = turn_id.replace("-", "")
        ask = parse_ask(request)
        outcome = Outcome()
        if ask is not None:
            async for event in ask_events(request, ask, outcome):
                yield event
            if outcome.aborted:
                yield aborted_turn(turn_id, started_at_ms, now_ms())
                return
        parts = [] if ask is not None else _summary_parts(request.input)
        first_token_ms: int | None = None
        async for event in self._reasoning(request, parts):
            if first_token_ms is None and isinstance(event, ReasoningContentDeltaEvent):
                first_token_ms = now_ms()
            yield event

        message_id = f"msg_{suffix}"
        answer = outcome.text if ask is not None else answer_for(request.input, request.turn_index)
        async for event in self._answer(request, message_id, answer, parts, first_token_ms):
            yield event

    async def _reasoning(self, request: TurnRequest, parts: list[str]) -> AsyncIterator[EventMsg]:
        if not parts:
            return
        thread_id, turn_id = request.thread_id, request.turn_id
        reasoning_id = f"rs_{turn_id.replace('-', '')}"
        reasoning_started = now_ms()
        yield ItemStartedEvent(
            thread_id=thread_id,
            turn_id=turn_id,
            item=ReasoningItem(id=reasoning_id, summary_text=[], raw_content=[]),
            started_at_ms=reasoning_started,
        )
        for index, part in enumerate(parts):
            yield AgentReasoningSectionBreakEvent(item_id=reasoning_id, summary_index=index)
            for delta in split_deltas(part):
                await self._pace()
                yield ReasoningContentDeltaEvent(
                    thread_id=thread_id,
                    turn_id=turn_id,
                    item_id=reasoning_id,
                    delta=delta,
                    summary_index=index,
                )
        yield ItemCompletedEvent(
            thread_id=thread_id,
            turn_id=turn_id,
            item=ReasoningItem(id=reasoning_id, summary_text=parts, raw_content=[]),
            started_at_ms=reasoning_started,
            completed_at_ms=now_ms(),
        )

    async def _answer(
        self,
        request: TurnRequest,
        message_id: str,
        answer: str,
        parts: list[str],
        first_token_ms: int | None,
    ) -> AsyncIterator[EventMsg]:
        thread_id, turn_id = request.thread_id, request.turn_id
        started_at_ms = request.started_at_ms
        message_started = now_ms()
        yield ItemStartedEvent(
            thread_id=thread_id,
            turn_id=turn_id,
            item=AgentMessageItem(id=message_id, content=[]),
            started_at_ms=message_started,
        )
        for delta in split_deltas(answer):
            await self._pace()
            if first_token_ms is None:
                first_token_ms = now_ms()
            yield AgentMessageContentDeltaEvent(
                thread_id=thread_id, turn_id=turn_id, item_id=message_id, delta=delta
            )
        yield ItemCompletedEvent(
            thread_id=thread_id,
            turn_id=turn_id,
            item=AgentMessageItem(id=message_id, content=[TextAgentMessageContent(text=answer)]),
            started_at_ms=message_started,
            completed_at_ms=now_ms(),
        )

        prompt = input_text(request.input)
        reasoning_tokens = _tokens("".join(parts))
        output_tokens = _tokens(answer) + reasoning_tokens
        input_tokens = _BASE_INPUT_TOKENS + _tokens(prompt)
        last = TokenUsage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            reasoning_output_tokens=reasoning_tokens,
            total_tokens=input_tokens + output_tokens,
        )
        yield TokenCountEvent(
            info=self._usage(request.token_total, last),
            rate_limits=RateLimitSnapshot(limit_id="codex"),
        )

        completed_ms = now_ms()
        yield TaskCompleteEvent(
            root_turn_id=turn_id,
            turn_id=turn_id,
            last_agent_message=answer,
            started_at=started_at_ms // 1000,
            completed_at=completed_ms // 1000,
            duration_ms=max(0, completed_ms - started_at_ms),
            time_to_first_token_ms=(
                None if first_token_ms is None else max(0, first_token_ms - started_at_ms)
            ),
        )
