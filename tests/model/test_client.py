"""The client against a scripted local server: what it sends, the transport retries and their
spacing, the events it yields and where it stops, every way a stream fails, and closing the
connection the moment a reader leaves."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from codex_app_bridge.model import Endpoint, ModelError, ResponsesClient, backoff_s
from codex_app_bridge.model import _client as model_client  # pyright: ignore[reportPrivateUsage]
from tests.conftest import bridge_env
from tests.model.mock_server import (
    CREATED,
    OK,
    MockServer,
    Step,
    completed,
    delta,
    mock_server,
    sse,
)

pytestmark = pytest.mark.anyio

WAIT = 60  # seconds: a hang guard on anything that should take milliseconds


@asynccontextmanager
async def serving(
    *steps: Step, retries: int = 0, idle_s: float = 30.0, query: str = ""
) -> AsyncIterator[tuple[MockServer, ResponsesClient]]:
    async with mock_server(*steps) as server:
        client = ResponsesClient(
            Endpoint(
                server.url + query,
                {"authorization": "Bearer sk-test", "x-provider": "p"},
                request_max_retries=retries,
                stream_idle_timeout_s=idle_s,
            )
        )
        try:
            yield server, client
        finally:
            await client.aclose()


async def collect(client: ResponsesClient, body: bytes = b"{}") -> list[dict[str, Any]]:
    with anyio.fail_after(WAIT):
        async with client.stream(body) as stream:
            return [event async for event in stream]


async def failure(client: ResponsesClient) -> tuple[ModelError, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []

    async def read() -> None:
        async with client.stream(b"{}") as stream:
            async for event in stream:
                seen.append(event)

    with anyio.fail_after(WAIT), pytest.raises(ModelError) as caught:
        await read()
    return caught.value, seen


# --- the request ------------------------------------------------------------------------


async def test_the_post_carries_the_body_bytes_the_query_and_only_the_given_headers() -> None:
    async with serving(OK, query="?api-version=2026-01-01") as (server, client):
        with anyio.fail_after(WAIT):
            async with client.stream(
                b'{"model":"m"}', {"accept": "text/event-stream", "x-provider": "turn"}
            ) as stream:
                assert [e async for e in stream][-1]["type"] == "response.completed"
    (request,) = server.requests
    assert (request.method, request.target, request.body) == (
        "POST",
        "/v1/responses?api-version=2026-01-01",
        b'{"model":"m"}',
    )
    # no library defaults (accept-encoding, user-agent, connection): what Codex sends is what
    # the caller gives, the request's own headers winning over the endpoint's
    assert sorted((k.lower(), v) for k, v in request.headers) == [
        ("accept", "text/event-stream"),
        ("authorization", "Bearer sk-test"),
        ("content-length", "13"),
        ("host", f"127.0.0.1:{server.port}"),
        ("x-provider", "turn"),
    ]


async def test_the_answer_headers_are_exposed_with_lower_case_names() -> None:
    step = Step.events(
        CREATED,
        completed(),
        headers={"X-Codex-Primary-Used-Percent": "42.5", "X-Codex-Turn-State": "ts1"},
    )
    async with serving(step) as (_, client):
        with anyio.fail_after(WAIT):
            async with client.stream(b"{}") as stream:
                assert stream.status == 200
                assert stream.headers["x-codex-primary-used-percent"] == "42.5"
                assert stream.headers["x-codex-turn-state"] == "ts1"
                assert [e async for e in stream] == [CREATED, completed()]


# --- events -----------------------------------------------------------------------------


async def test_every_event_comes_in_order_and_the_stream_ends_right_after_completed() -> None:
    ignored = {"type": "response.content_part.added", "part": {}}
    after = delta("never seen")
    step = Step.events(CREATED, ignored, delta("a"), delta("b"), completed(), after, end="hang")
    async with serving(step) as (server, client):
        assert await collect(client) == [CREATED, ignored, delta("a"), delta("b"), completed()]
        with anyio.fail_after(WAIT):
            await server.requests[0].gone.wait()


async def test_batches_give_the_same_events_as_iteration() -> None:
    events = [CREATED, *(delta(str(i)) for i in range(50)), completed()]
    step = Step(chunks=[sse(*events[:10]), sse(*events[10:30]), sse(*events[30:])])
    async with serving(step) as (_, client):
        with anyio.fail_after(WAIT):
            async with client.stream(b"{}") as stream:
                first = await stream.__anext__()
                rest = [e async for batch in stream.batches() for e in batch]
    assert [first, *rest] == events


async def test_invalid_sse_is_skipped_and_the_stream_goes_on() -> None:
    step = Step(
        chunks=[
            b"data: {not json\n\n",
            b"\xff\xfe garbage line\n\n: comment\n\n",
            b'data: [1]\n\ndata: {"no":"type"}\n\n',
            sse(CREATED, delta("ok"), completed()),
        ]
    )
    async with serving(step) as (_, client):
        assert await collect(client) == [CREATED, delta("ok"), completed()]


async def test_an_event_of_twenty_megabytes_arrives_whole() -> None:
    text = "x" * (20 << 20)
    big = {"type": "response.output_item.done", "item": {"type": "message", "text": text}}
    raw = sse(CREATED, big, completed())
    step = Step(chunks=[raw[i : i + (1 << 20)] for i in range(0, len(raw), 1 << 20)])
    async with serving(step) as (_, client):
        events = await collect(client)
    assert [e["type"] for e in events] == [
        "response.created",
        "response.output_item.done",
        "response.completed",
    ]
    assert events[1]["item"]["text"] == text


async def test_a_completed_answer_leaves_its_connection_to_the_next_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The tail (the chunked end) follows at once; a busy machine may still deliver it after the
    # 50 ms the client waits for it, which would close the connection: here it may wait longer.
    monkeypatch.setattr(model_client, "TAIL_WAIT_S", WAIT)
    kept = Step.events(CREATED, delta("a"), completed(), keep_alive=True)
    async with serving(kept) as (server, client):
        for _ in range(3):
            assert (await collect(client))[-1] == completed()
    assert [r.connection for r in server.requests] == [1, 1, 1]


async def test_a_server_that_keeps_streaming_after_completed_loses_its_connection() -> None:
    after = Step.events(CREATED, completed(), delta("more"), end="hang", keep_alive=True)
    async with serving(after) as (server, client):
        assert (await collect(client))[-1] == completed()
        with anyio.fail_after(WAIT):
            await server.requests[0].gone.wait()


# --- layer 1: transport retries ---------------------------------------------------------


async def test_a_5xx_is_resent_silently_and_the_retry_answers() -> None:
    async with serving(Step.error(503, b"busy"), OK, retries=2) as (server, client):
        assert [e["type"] for e in await collect(client)][-1] == "response.completed"
    assert len(server.requests) == 2


async def test_a_persistent_5xx_is_sent_one_plus_retries_times_with_growing_gaps() -> None:
    async with serving(Step.error(500, {"error": {"message": "srv"}}), retries=2) as (
        server,
        client,
    ):
        error, _ = await failure(client)
    assert error.failure == "internal_server_error"
    assert len(server.requests) == 3
    gaps = [b.at - a.at for a, b in zip(server.requests, server.requests[1:], strict=False)]
    # 200 ms x 2^(n-1) less 10 % jitter at least; never an upper bound on a loaded machine
    assert gaps[0] >= 0.18
    assert gaps[1] >= 0.36


async def test_a_retry_after_on_a_5xx_sets_the_transport_retry_delay() -> None:
    async with serving(Step.error(502, b"x", retry_after="1"), OK, retries=1) as (server, client):
        await collect(client)
    assert server.requests[1].at - server.requests[0].at >= 1.0


@pytest.mark.parametrize(
    "step",
    [
        Step.error(429, {"error": {"message": "slow"}}),
        Step.error(429, {"error": {"message": "slow"}}, retry_after="1"),
        Step.error(401, {"error": {"message": "bad key"}}),
        Step.error(400, b"bad"),
        Step.error(404, b""),
    ],
    ids=["429", "429 retry-after", "401", "400", "404"],
)
async def test_429_and_other_4xx_are_not_resent_by_the_transport(step: Step) -> None:
    async with serving(step, retries=3) as (server, client):
        error, _ = await failure(client)
    assert len(server.requests) == 1
    assert error.http_status == step.status


async def test_the_error_of_the_last_http_answer_is_the_one_raised() -> None:
    steps = (Step.error(503, b"first"), Step.error(502, {"error": {"message": "upstream down"}}))
    async with serving(*steps, retries=1) as (server, client):
        error, _ = await failure(client)
    assert error.message == f"unexpected status 502 Bad Gateway: upstream down, url: {server.url}"
    assert error.codex_error_info == {"httpConnectionFailed": {"httpStatusCode": 502}}
    assert error.notice_codex_error_info == {"responseStreamDisconnected": {"httpStatusCode": 502}}
    assert error.retryable


async def test_a_connection_closed_without_an_answer_is_resent_then_a_stream_error() -> None:
    async with serving(Step(end="drop"), retries=2) as (server, client):
        error, _ = await failure(client)
    assert len(server.requests) == 3
    assert error.message == "stream disconnected before completion: error sending request"
    assert error.retryable
    assert not error.connection_failed


async def test_a_refused_connection_is_a_connection_failure() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    await listener.aclose()
    client = ResponsesClient(
        Endpoint(f"http://127.0.0.1:{port}/v1/responses", request_max_retries=1)
    )
    with anyio.fail_after(WAIT), pytest.raises(ModelError) as caught:
        async with client.stream(b"{}"):
            pass
    await client.aclose()
    assert caught.value.connection_failed
    assert caught.value.message == "Connection failed: error sending request"
    assert caught.value.notice_codex_error_info == {
        "responseStreamDisconnected": {"httpStatusCode": None}
    }


def test_backoff_doubles_with_ten_percent_jitter() -> None:
    for attempt, base in ((1, 0.2), (2, 0.4), (3, 0.8), (6, 6.4)):
        for _ in range(50):
            assert base * 0.9 <= backoff_s(attempt) <= base * 1.1


# --- the stream's own failures ----------------------------------------------------------


async def test_a_stream_cut_mid_event_fails_after_the_events_before_the_cut() -> None:
    step = Step(
        chunks=[sse(CREATED, delta("a")) + b'event: response.output_text.delta\ndata: {"ty'],
        end="cut",
    )
    async with serving(step) as (_, client):
        error, seen = await failure(client)
    assert seen == [CREATED, delta("a")]
    assert error.message == (
        "stream disconnected before completion: Transport error: network error: error decoding "
        "response body"
    )
    assert error.retryable


async def test_a_stream_that_ends_without_completed_is_a_retried_stream_error() -> None:
    async with serving(Step.events(CREATED, delta("x"))) as (_, client):
        error, seen = await failure(client)
    assert seen == [CREATED, delta("x")]
    assert error.message == (
        "stream disconnected before completion: stream closed before response.completed"
    )
    assert (error.codex_error_info, error.retryable) == ("other", True)


async def test_no_event_within_the_idle_timeout_is_a_retried_stream_error() -> None:
    async with serving(Step.events(CREATED, end="hang"), idle_s=0.3) as (server, client):
        error, seen = await failure(client)
        with anyio.fail_after(WAIT):
            await server.requests[0].gone.wait()
    assert seen == [CREATED]
    assert error.message == "stream disconnected before completion: idle timeout waiting for SSE"
    assert error.retryable


async def test_no_answer_headers_within_the_idle_timeout_is_the_same_error() -> None:
    async with serving(Step(end="stall"), idle_s=0.3, retries=3) as (server, client):
        error, _ = await failure(client)
    assert len(server.requests) == 1
    assert error.message == "stream disconnected before completion: idle timeout waiting for SSE"


async def test_each_event_restarts_the_idle_timer_even_one_that_is_skipped() -> None:
    slow = [
        sse(CREATED),
        b"data: not json\n\n",
        *(sse(delta(str(i))) for i in range(48)),
        sse(completed()),
    ]
    # 50 pauses of 0.05 s: the stream lasts longer than the idle timeout, and a gap would have
    # to grow 40 times (a stalled machine) to be as long
    async with serving(Step(chunks=slow, delay_s=0.05), idle_s=2.0) as (_, client):
        events = await collect(client)
    assert events[-1] == completed()


async def test_comments_do_not_restart_the_idle_timer() -> None:
    keepalive = [sse(CREATED), *([b": keep-alive\n\n"] * 20)]
    async with serving(Step(chunks=keepalive, delay_s=0.05, end="hang"), idle_s=0.4) as (_, client):
        error, _ = await failure(client)
    assert error.message.endswith("idle timeout waiting for SSE")


def failed(code: str, message: str) -> dict[str, Any]:
    return {
        "type": "response.failed",
        "response": {"id": "r", "error": {"code": code, "message": message}},
    }


def incomplete(reason: str) -> dict[str, Any]:
    return {
        "type": "response.incomplete",
        "response": {"id": "r", "incomplete_details": {"reason": reason}},
    }


async def test_response_failed_is_raised_when_the_stream_ends_without_completed() -> None:
    async with serving(Step.events(CREATED, failed("context_length_exceeded", "too long"))) as (
        _,
        client,
    ):
        error, seen = await failure(client)
    assert seen == [CREATED]
    assert (error.failure, error.codex_error_info, error.retryable) == (
        "context_window_exceeded",
        "contextWindowExceeded",
        False,
    )


async def test_a_completed_after_response_failed_wins() -> None:
    step = Step.events(CREATED, failed("server_error", "first"), delta("x"), completed())
    async with serving(step) as (_, client):
        assert await collect(client) == [CREATED, delta("x"), completed()]


async def test_an_idle_stream_after_response_failed_is_an_idle_timeout() -> None:
    step = Step.events(CREATED, failed("context_length_exceeded", "x"), end="hang")
    async with serving(step, idle_s=0.3) as (_, client):
        error, _ = await failure(client)
    assert error.message.endswith("idle timeout waiting for SSE")


async def test_response_incomplete_fails_at_once_without_waiting_for_the_stream() -> None:
    step = Step.events(CREATED, delta("a"), incomplete("max_output_tokens"), delta("b"), end="hang")
    async with serving(step, idle_s=60) as (server, client):
        error, seen = await failure(client)
        with anyio.fail_after(WAIT):
            await server.requests[0].gone.wait()
    assert seen == [CREATED, delta("a")]
    assert error.message == "Incomplete response returned, reason: max_output_tokens"
    assert (error.codex_error_info, error.retryable) == ("other", False)


async def test_an_incomplete_ended_only_by_the_end_of_the_stream_still_fails_at_once() -> None:
    # the last line end is a lone CR: the event is only complete when the stream ends
    step = Step(chunks=[sse(CREATED) + b'data: {"type":"response.incomplete","response":{}}\n\r'])
    async with serving(step) as (_, client):
        error, seen = await failure(client)
    assert seen == [CREATED]
    assert error.message == "Incomplete response returned, reason: unknown"


async def test_a_content_filter_incomplete_waits_for_the_end_of_the_stream() -> None:
    async with serving(Step.events(CREATED, incomplete("content_filter"), delta("x"))) as (
        _,
        client,
    ):
        error, seen = await failure(client)
    assert seen == [CREATED, delta("x")]
    assert error.message == (
        "stream disconnected before completion: Incomplete response returned, reason: content_filter"
    )
    assert error.retryable
    step = Step.events(CREATED, incomplete("content_filter"), completed())
    async with serving(step) as (_, client):
        assert await collect(client) == [CREATED, completed()]


async def test_a_completed_codex_cannot_read_is_not_yielded_and_fails_the_stream() -> None:
    bad = {"type": "response.completed", "response": {"id": "r", "usage": {"input_tokens": 1}}}
    async with serving(Step.events(CREATED, bad)) as (_, client):
        error, seen = await failure(client)
    assert seen == [CREATED]
    assert error.message == (
        "stream disconnected before completion: failed to parse ResponseCompleted: missing "
        "field `output_tokens`"
    )
    # a completed without a response is ignored, as if it were not there
    async with serving(Step.events(CREATED, {"type": "response.completed"})) as (_, client):
        error, _ = await failure(client)
    assert error.message.endswith("stream closed before response.completed")


# --- cancellation -----------------------------------------------------------------------


async def test_leaving_the_block_mid_stream_closes_the_connection_at_once() -> None:
    step = Step.events(CREATED, delta("a"), end="hang")
    async with serving(step) as (server, client):
        with anyio.fail_after(WAIT):
            async with client.stream(b"{}") as stream:
                assert await stream.__anext__() == CREATED
            await server.requests[0].gone.wait()


async def test_cancelling_a_task_blocked_on_the_stream_closes_the_connection() -> None:
    async with serving(Step.events(CREATED, end="hang")) as (server, client):
        reading = anyio.Event()

        async def read() -> None:
            async with client.stream(b"{}") as stream:
                async for _ in stream:
                    reading.set()

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                await reading.wait()
                tg.cancel_scope.cancel()
            await server.requests[0].gone.wait()


async def test_the_pool_serves_the_next_stream_after_a_cancelled_one() -> None:
    async with serving(Step.events(CREATED, end="hang"), OK) as (server, client):
        with anyio.fail_after(WAIT):
            async with client.stream(b"{}") as stream:
                await stream.__anext__()
        assert (await collect(client))[-1] == completed()
    assert len(server.requests) == 2


def test_importing_the_package_leaves_the_http_stack_unloaded() -> None:
    code = "import sys, codex_app_bridge.model; print(sorted({'httpx', 'httpcore'} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=bridge_env(),
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == "[]"


def test_the_http_stack_loads_without_the_command_line_of_httpx() -> None:
    # click and pygments are installed with the test tools: httpx would import them
    code = (
        "import sys, codex_app_bridge.model as m; m.warm_http_stack(); import httpx; "
        "print(sorted({'httpx', 'httpcore', 'click', 'pygments', 'rich'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=bridge_env(),
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == "['httpcore', 'httpx']"
