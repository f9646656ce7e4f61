"""The maximum message size (``serve --max-message-size``, issue 23.7): a frame past it is never
buffered nor parsed; a request whose id comes first is answered with the reason, and the
connection goes on."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import ConnectionClosed

from codex_app_bridge.transport import DecodeError, LineSplitter, decode_line
from codex_app_bridge.transport._framing import OversizedLine
from tests.conftest import bridge_command, bridge_env
from tests.transport._serving import listening_url, serving

TIMEOUT = 60
INIT = {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "1"}}}
LOADED = {"id": 3, "method": "thread/loaded/list", "params": {}}


def test_the_splitter_keeps_only_the_head_of_a_line_past_its_limit() -> None:
    splitter = LineSplitter(limit=1000)
    head = b'{"id":7,"method":"thread/start","params":{"x":"'
    line = head + b"y" * 100_000 + b'"}}'
    out: list[bytes | OversizedLine] = []
    for start in range(0, len(line), 997):
        out += splitter.feed(line[start : start + 997])
    out += splitter.feed(b'\n{"id":8}\n')
    first, second = out
    assert isinstance(first, OversizedLine)
    assert first.size == len(line)
    assert first.head.startswith(head)
    assert len(first.head) <= 4096 + 997
    assert second == b'{"id":8}'
    refused = decode_line(first)
    assert isinstance(refused, DecodeError)
    assert refused.request_id == 7
    assert refused.reason == (
        f"message of {len(line)} bytes exceeds the maximum message size of 1000 bytes"
    )


def test_an_oversized_line_in_one_chunk_and_at_end_of_input_is_refused() -> None:
    splitter = LineSplitter(limit=10)
    (line,) = splitter.feed(b'{"id":"a","method":"m","params":{}}\n')
    assert isinstance(line, OversizedLine)
    assert splitter.feed(b'["no id first", 1, 2, 3]') == []
    tail = splitter.finish()
    assert isinstance(tail, OversizedLine)
    refused = decode_line(tail)
    assert isinstance(refused, DecodeError)
    assert refused.request_id is None


def test_serve_answers_an_oversized_request_with_the_reason_and_goes_on() -> None:
    big = orjson.dumps(
        {"id": 2, "method": "thread/start", "params": {"baseInstructions": "x" * 5000}}
    )
    lines = [
        orjson.dumps(
            {
                "id": 1,
                "method": "initialize",
                "params": {"clientInfo": {"name": "c", "version": "1"}},
            }
        ),
        big,
        b'{"id":3,"method":"thread/loaded/list","params":{}}',
    ]
    result = subprocess.run(
        [*bridge_command(), "serve", "--max-message-size", "1K"],
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        env=bridge_env({"LOG_LEVEL": "WARNING"}),
        timeout=60,
        check=True,
    )
    answers = {m["id"]: m for m in map(orjson.loads, result.stdout.splitlines()) if "id" in m}
    assert answers[2]["error"] == {
        "code": -32600,
        "message": f"Invalid request: message of {len(big)} bytes exceeds the maximum message "
        "size of 1024 bytes",
    }
    assert answers[3]["result"] == {"data": [], "nextCursor": None}
    assert b"exceeds the maximum message size" in result.stderr
    assert b"Traceback" not in result.stderr


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["ws", "unix"])
async def test_a_socket_message_past_the_limit_closes_that_client_with_1009(
    kind: str,
) -> None:
    """A message past the limit (the real server's is 16 MiB; here the configured one) closes
    its connection with 1009 ("message too big") and a reason naming the limit, on both socket
    transports (issue 23.7); the client next to it is served on."""
    path = Path("/tmp") / f"cab-limit-{os.getpid()}.sock"  # short: a socket path has a limit
    listen = "ws://127.0.0.1:0" if kind == "ws" else f"unix://{path}"

    def connection(url: str) -> connect:
        if kind == "ws":
            return connect(url)
        return unix_connect(str(path), uri="ws://localhost/")

    try:
        async with (
            serving(["--listen", listen, "--max-message-size", "1K"]) as banner,
            connection(listening_url(banner)) as bystander,
            connection(listening_url(banner)) as sender,
        ):
            await bystander.send(orjson.dumps(INIT), text=True)
            await sender.send(orjson.dumps(INIT), text=True)
            with anyio.fail_after(TIMEOUT):
                assert orjson.loads(await sender.recv())["id"] == 1
                assert orjson.loads(await bystander.recv())["id"] == 1
            big = {"id": 2, "method": "thread/start", "params": {"x": "y" * 2000}}
            await sender.send(orjson.dumps(big), text=True)
            with anyio.fail_after(TIMEOUT), pytest.raises(ConnectionClosed) as closed:
                await _answer(sender, 2)
            assert closed.value.rcvd is not None
            assert closed.value.rcvd.code == 1009
            assert closed.value.rcvd.reason.endswith("exceeds limit of 1024 bytes")
            await bystander.send(orjson.dumps(LOADED), text=True)
            with anyio.fail_after(TIMEOUT):
                answer = await _answer(bystander, 3)
            assert answer == {"id": 3, "result": {"data": [], "nextCursor": None}}
    finally:
        path.unlink(missing_ok=True)


async def _answer(client: ClientConnection, request_id: int) -> dict[str, Any]:
    """The answer to ``request_id``, past the notifications before it."""
    while True:
        message = orjson.loads(await client.recv())
        if message.get("id") == request_id:
            return message
