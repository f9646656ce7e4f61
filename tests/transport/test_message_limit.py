"""The maximum message size (``serve --max-message-size``, issue 23.7): a frame past it is never
buffered nor parsed; a request whose id comes first is answered with the reason, and the
connection goes on."""

from __future__ import annotations

import subprocess

import orjson

from codex_app_bridge.transport import DecodeError, LineSplitter, decode_line
from codex_app_bridge.transport._framing import OversizedLine
from tests.conftest import bridge_command, bridge_env


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
