"""End-to-end: failed requests, cut streams and interrupts end turns as the real 0.163.0 does
(its captures against the same mock scenarios: ``error_fatal``, ``stream_retry``, ``interrupt``)."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.to_thread
import pytest

from codex_app_bridge.conformance.mock_responses import MockResponses
from codex_app_bridge.conformance.real_codex import StdioPeer
from tests.agent._harness import TIMEOUT, capture_messages, masked_turn, run_turns

pytestmark = pytest.mark.anyio


def _without_deltas(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if not m["method"].endswith("/delta")]


async def test_a_persistent_500_is_retried_by_both_layers_then_fails_the_turn_as_core() -> None:
    run = await run_turns("error_fatal", ["Say something (every model request gets HTTP 500)."])
    # (1 + request_max_retries) x (1 + stream_max_retries) = 3 x 2
    assert len(run.requests) == 6
    assert masked_turn(run.received) == masked_turn(capture_messages("error_fatal"))


async def test_a_stream_cut_before_completed_is_resent_after_a_reconnecting_notice() -> None:
    run = await run_turns(
        "stream_retry", ["Say something (first SSE stream is cut before response.completed)."]
    )
    assert len(run.requests) == 2
    first, second = (r["body"]["input"] for r in run.requests)
    assert first == second  # nothing of the cut answer was recorded
    assert masked_turn(run.received) == masked_turn(capture_messages("stream_retry"))


async def test_response_failed_invalid_prompt_fails_the_turn_with_the_provider_message() -> None:
    run = await run_turns("stream_failed", ["hi"])
    assert len(run.requests) == 1
    (completed,) = [m for m in run.received if m.get("method") == "turn/completed"]
    turn = completed["params"]["turn"]
    assert turn["status"] == "failed"
    assert turn["error"]["message"] == "mock: the prompt was rejected"
    assert turn["error"]["codexErrorInfo"] == "other"


async def test_a_missing_env_key_fails_the_turn_before_any_request() -> None:
    run = await run_turns(
        "plain",
        ["hi"],
        extra_config='\n[model_providers.keyed]\nname = "keyed"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'env_key = "BRIDGE_TEST_UNSET_KEY"\nenv_key_instructions = "Set it."\n',
        thread_params={"modelProvider": "keyed"},
    )
    assert run.requests == []
    (completed,) = [m for m in run.received if m.get("method") == "turn/completed"]
    error = completed["params"]["turn"]["error"]
    assert error["message"] == "Missing environment variable: `BRIDGE_TEST_UNSET_KEY`. Set it."
    assert error["codexErrorInfo"] == "other"


async def test_an_interrupt_closes_the_http_stream_and_ends_the_turn_as_core() -> None:
    interrupted: list[bool] = []

    async def interrupt(peer: StdioPeer, thread_id: str, mock: MockResponses) -> None:
        if interrupted:
            return
        interrupted.append(True)
        delta = await peer.wait_for(
            lambda m: m.get("method") == "item/agentMessage/delta", timeout_s=TIMEOUT
        )
        await peer.request(
            "turn/interrupt", {"threadId": thread_id, "turnId": delta["params"]["turnId"]}
        )
        # the mock sees the connection go while it still has most of the answer to write
        with anyio.fail_after(TIMEOUT):
            closed = await anyio.to_thread.run_sync(mock.state.disconnected.wait, TIMEOUT)
        assert closed

    # client_flow: a prompt saying "interrupt" gets the slow stream, the next a short answer
    run = await run_turns(
        "client_flow", ["Write a very long essay (interrupt it).", "And now?"], driver=interrupt
    )
    ours = _without_deltas(masked_turn(run.received))
    first_turn = ours[: [m["method"] for m in ours].index("turn/completed") + 1]
    theirs = _without_deltas(masked_turn(capture_messages("interrupt")))
    assert [m["method"] for m in first_turn] == [m["method"] for m in theirs]
    # the same objects but for the prompt (client_flow needs "interrupt" in it)
    assert first_turn[3:] == theirs[3:]
    # the next turn sends the history, the aborted marker, then the new message
    second = run.requests[-1]["body"]["input"]
    assert second[-2]["role"] == "user"
    assert second[-2]["content"][0]["text"].startswith("<turn_aborted>")
    assert second[-1]["content"] == [{"type": "input_text", "text": "And now?"}]
    # the partly streamed message is not in history
    assert all(item.get("role") != "assistant" for item in second)
