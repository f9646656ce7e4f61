"""The failure table against the oracle: the same scripted answer, once read by our client and
once by the real ``codex app-server`` 0.163.0 in a turn; the binary's final turn error, its
``Reconnecting...`` notices and its request count must be what our ``ModelError`` says.

One real server serves every case (a thread each), with ``request_max_retries = 1`` and
``stream_max_retries = 1`` so a retried failure shows one notice and (1+R)(1+S) requests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from codex_app_bridge.conformance.real_codex import (
    StdioPeer,
    codex_env,
    real_codex_command,
)
from codex_app_bridge.model import Endpoint, ModelError, ResponsesClient
from tests.model.mock_server import CREATED, MockServer, Step, completed, delta, mock_server, sse

pytestmark = [pytest.mark.conformance, pytest.mark.anyio]

RETRIES = 1  # both layers
IDLE_MS = 800
"""The idle window of the case that tests it: short, so that the test does not wait long."""
PATIENT_IDLE_MS = 60_000
"""Every other case's idle window: longer than any stall of a loaded machine, so that only the
case under test decides the outcome (800 ms failed a 500 as an idle timeout under load)."""
IDLE_CASES = frozenset({"idle"})


def idle_ms(case: str) -> int:
    return IDLE_MS if case in IDLE_CASES else PATIENT_IDLE_MS


CONFIG = """model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "mock"
base_url = "{base_url}"
wire_api = "responses"
requires_openai_auth = false
supports_websockets = false
request_max_retries = {retries}
stream_max_retries = {retries}
stream_idle_timeout_ms = {idle_ms}

[analytics]
enabled = false
"""


def failed(code: str | None, message: str) -> dict[str, Any]:
    error = {"code": code, "message": message}
    return {"type": "response.failed", "response": {"id": "r", "status": "failed", "error": error}}


def incomplete(reason: str) -> dict[str, Any]:
    details = {"reason": reason}
    return {"type": "response.incomplete", "response": {"id": "r", "incomplete_details": details}}


CASES: dict[str, Step] = {
    "500": Step.error(500, {"error": {"message": "srv"}}),
    "502 json": Step.error(502, {"error": {"message": "upstream down"}}, x_request_id="req-1"),
    "503 overloaded": Step.error(503, {"error": {"message": "b", "code": "server_is_overloaded"}}),
    "503 slow_down": Step.error(503, {"error": {"message": "busy", "code": "slow_down"}}),
    "401 cf-ray": Step.error(401, {"error": {"message": "bad key"}}, cf_ray="ray-9"),
    "404 empty": Step.error(404, b""),
    "400 body": Step.error(400, {"error": {"message": "bad", "code": "context_length_exceeded"}}),
    "400 image": Step.error(
        400, {"error": {"message": "The image data you provided does not represent a valid image"}}
    ),
    "429": Step.error(429, {"error": {"message": "slow down"}}, x_request_id="req-2"),
    "429 retry-after": Step.error(429, {"error": {"message": "slow down"}}, retry_after="1"),
    "429 quota": Step.error(429, {"error": {"message": "q", "code": "insufficient_quota"}}),
    "429 usage limit plus": Step.error(
        429, {"error": {"message": "u", "type": "usage_limit_reached", "plan_type": "plus"}}
    ),
    "failed context": Step.events(CREATED, failed("context_length_exceeded", "x")),
    "failed rate limit": Step.events(CREATED, failed("rate_limit_exceeded", "try again in 300ms")),
    "failed overloaded": Step.events(CREATED, failed("server_is_overloaded", "o")),
    "failed invalid_prompt": Step.events(CREATED, failed("invalid_prompt", "prompt bad")),
    "failed other code": Step.events(CREATED, failed("server_error", "boom")),
    "failed no error": Step.events(CREATED, {"type": "response.failed", "response": {"id": "r"}}),
    "incomplete": Step.events(CREATED, incomplete("max_output_tokens")),
    "incomplete content_filter": Step.events(CREATED, incomplete("content_filter")),
    "bad completed": Step.events(CREATED, {"type": "response.completed", "response": {}}),
    "closed early": Step.events(CREATED, delta("x")),
    "cut mid-event": Step(chunks=[sse(CREATED) + b'data: {"ty'], end="cut"),
    "idle": Step.events(CREATED, end="hang"),
    "no answer": Step(end="drop"),
}


async def ours(server: MockServer, step: Step, idle: int) -> tuple[ModelError, int]:
    server.script(step)
    client = ResponsesClient(
        Endpoint(server.url, request_max_retries=RETRIES, stream_idle_timeout_s=idle / 1000)
    )

    async def read() -> None:
        async with client.stream(b"{}") as stream:
            async for _ in stream:
                pass

    try:
        with anyio.fail_after(60), pytest.raises(ModelError) as caught:
            await read()
    finally:
        await client.aclose()
    return caught.value, len(server.requests)


async def theirs(peer: StdioPeer, server: MockServer, step: Step, cwd: Path) -> dict[str, Any]:
    server.script(step)
    thread = await peer.request("thread/start", {"cwd": str(cwd)})
    thread_id = thread["thread"]["id"]
    first = len(peer.received)
    done = peer.expect(
        lambda m: m.get("method") == "turn/completed" and m["params"]["threadId"] == thread_id
    )
    await peer.request(
        "turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": "hi"}]}
    )
    ended = await peer.wait(done, 90)
    notices = [
        m["params"]["error"]
        for m in peer.received[first:]
        if m.get("method") == "error" and m["params"]["willRetry"]
    ]
    return {"turn": ended["params"]["turn"], "notices": notices, "requests": len(server.requests)}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


Peer = tuple[StdioPeer, MockServer, Path]


@pytest.fixture(scope="module")
async def real_peers(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[dict[int, Peer]]:
    """A real binary per idle window, both against one mock server."""
    try:
        command = real_codex_command()
    except ImportError:
        pytest.skip("the real binary (test extra) is not installed")
    async with mock_server() as server, AsyncExitStack() as stack:
        peers: dict[int, Peer] = {}
        for idle in (IDLE_MS, PATIENT_IDLE_MS):
            root = tmp_path_factory.mktemp(f"errors_real_{idle}")
            home, work = root / "home", root / "work"
            home.mkdir()
            work.mkdir()
            (home / "config.toml").write_text(
                CONFIG.format(
                    base_url=f"http://127.0.0.1:{server.port}/v1", retries=RETRIES, idle_ms=idle
                )
            )
            peer = await stack.enter_async_context(
                StdioPeer.spawn(command, env=codex_env(home), cwd=work)
            )
            await peer.initialize()
            peers[idle] = (peer, server, work)
        yield peers


@pytest.fixture
def real(real_peers: dict[int, Peer]) -> Peer:
    return real_peers[PATIENT_IDLE_MS]


@pytest.mark.parametrize("case", list(CASES))
async def test_the_real_binary_fails_the_turn_as_our_error_says(
    real_peers: dict[int, Peer], case: str
) -> None:
    idle = idle_ms(case)
    peer, server, work = real_peers[idle]
    step = CASES[case]
    error, our_requests = await ours(server, step, idle)
    seen = await theirs(peer, server, step, work)
    assert seen["turn"]["status"] == "failed"
    assert {
        "message": seen["turn"]["error"]["message"],
        "codexErrorInfo": seen["turn"]["error"]["codexErrorInfo"],
    } == {"message": error.message, "codexErrorInfo": error.codex_error_info}
    expected_notices = (
        [{"details": error.notice_details, "info": error.notice_codex_error_info}] * RETRIES
        if error.retryable
        else []
    )
    assert [
        {"details": n["additionalDetails"], "info": n["codexErrorInfo"]} for n in seen["notices"]
    ] == expected_notices
    assert seen["requests"] == our_requests * (1 + RETRIES if error.retryable else 1)


async def test_a_completed_after_a_failure_completes_the_turn_on_both(
    real: tuple[StdioPeer, MockServer, Path],
) -> None:
    peer, server, work = real
    step = Step.events(CREATED, failed("context_length_exceeded", "x"), completed())
    client = ResponsesClient(Endpoint(server.url))
    server.script(step)
    with anyio.fail_after(60):
        async with client.stream(b"{}") as stream:
            assert [e["type"] async for e in stream] == ["response.created", "response.completed"]
    await client.aclose()
    seen = await theirs(peer, server, step, work)
    assert (seen["turn"]["status"], seen["notices"]) == ("completed", [])
