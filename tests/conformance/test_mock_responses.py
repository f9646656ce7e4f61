"""The mock Responses endpoint: scenarios selected over HTTP, SSE framing, the request log, the
throughput fast path and the command line. No codex binary needed."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from codex_app_bridge.conformance.mock_responses import (
    SCENARIOS,
    MockResponses,
    ev_completed,
    ev_created,
    message_events,
    sse_bytes,
    throughput_chunk,
)
from tests.conftest import bridge_env


def post(url: str, payload: object) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def events_of(body: bytes) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in body.decode().split("\n\n"):
        if not block:
            continue
        name, data = block.split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert name == "event: " + event["type"]
        out.append(event)
    return out


def test_plain_stream_deltas_add_up_to_the_completed_message() -> None:
    with MockResponses() as mock:
        mock.set_scenario("plain", text="Hello there, streamed.", chunk=4)
        status, body = post(mock.base_url + "/responses", {"input": []})
    events = events_of(body)
    assert status == 200
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.completed"
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert deltas[0] == "Hell"
    done = next(e for e in events if e["type"] == "response.output_item.done")
    assert "".join(deltas) == done["item"]["content"][0]["text"] == "Hello there, streamed."


def test_scenario_is_selected_over_http_and_requests_are_logged_since_then() -> None:
    with MockResponses() as mock:
        post(mock.base_url + "/responses", {"before": True})
        status, _ = post(mock.url + "/_mock/scenario", {"name": "error_retry", "params": {}})
        assert status == 200
        first, _ = post(mock.base_url + "/responses", {"input": [], "n": 0})
        second, body = post(mock.base_url + "/responses", {"input": [], "n": 1})
        with urllib.request.urlopen(mock.url + "/_mock/requests", timeout=60) as response:
            logged = json.loads(response.read())
        assert post(mock.url + "/_mock/scenario", {"name": "nope"})[0] == 400
    assert (first, second) == (500, 200)
    assert events_of(body)[-1]["type"] == "response.completed"
    assert [r["body"]["n"] for r in logged] == [0, 1]
    # a refused name resets nothing
    assert [r["body"]["n"] for r in mock.model_requests()] == [0, 1]


def test_shell_scenario_picks_the_tool_codex_offered() -> None:
    with MockResponses() as mock:
        mock.set_scenario("shell", cmd="echo hi")
        _, body = post(
            mock.base_url + "/responses", {"tools": [{"type": "function", "name": "exec_command"}]}
        )
    calls = [
        e["item"]
        for e in events_of(body)
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call"
    ]
    assert [c["name"] for c in calls] == ["exec_command"]
    assert json.loads(calls[0]["arguments"])["cmd"] == "echo hi"


def test_throughput_fast_path_writes_the_same_bytes_as_the_generic_builders() -> None:
    n = 25
    chunks = [throughput_chunk(i) for i in range(n)]
    expected = sse_bytes(
        [ev_created("resp_tp_0"), *message_events("msg_tp_0", chunks), ev_completed("resp_tp_0")]
    )
    with MockResponses() as mock:
        mock.set_scenario("throughput", n=n)
        _, body = post(mock.base_url + "/responses", {})
    assert body == expected


def test_every_realpeer_scenario_exists() -> None:
    assert set(SCENARIOS) >= {
        "plain",
        "reasoning",
        "shell",
        "apply_patch",
        "web_search",
        "error_retry",
        "error_fatal",
        "stream_retry",
        "stream_failed",
        "interrupt",
        "multi_turn",
        "plan",
        "throughput",
        "dynamic_tool",
    }


def test_command_line_prints_its_url_and_serves() -> None:
    argv = [sys.executable, "-m", "codex_app_bridge.conformance.mock_responses", "--port", "0"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, env=bridge_env(), text=True) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("URL http://127.0.0.1:")
            url = line.split()[1]
            with urllib.request.urlopen(url + "/_mock/health", timeout=60) as response:
                assert json.loads(response.read()) == {"ok": True}
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@pytest.mark.parametrize("name", ["error_fatal"])
def test_fatal_error_is_always_500(name: str) -> None:
    with MockResponses() as mock:
        mock.set_scenario(name)
        assert [post(mock.base_url + "/responses", {})[0] for _ in range(3)] == [500] * 3


def test_tee_passes_lines_through_and_logs_both_directions(tmp_path: Path) -> None:
    log = tmp_path / "wire.jsonl"
    argv = [sys.executable, "-m", "codex_app_bridge.conformance.tee", str(log), "--", "cat"]
    proc = subprocess.run(
        argv, input=b'{"id":1}\nnot json\n', capture_output=True, env=bridge_env(), timeout=30
    )
    assert proc.returncode == 0
    assert proc.stdout == b'{"id":1}\nnot json\n'
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert records[0] == {"dir": "start", "argv": ["cat"]}
    assert sorted((r["dir"], json.dumps(r["line"])) for r in records[1:]) == [
        ("c2s", '"not json"'),
        ("c2s", '{"id": 1}'),
        ("s2c", '"not json"'),
        ("s2c", '{"id": 1}'),
    ]
