"""Conformance: the real 0.163.0 binary, given the rule scenarios' rollouts, shows exactly the turns
and summaries those scenarios record (and so, by ``test_thread_history_rules``, what the builder
rebuilds).

One ``codex app-server`` process reads every scenario: each rollout is written under a scratch
``CODEX_HOME/sessions``, then ``thread/resume`` (full turns; turns that never ended come back
``interrupted``, the thread not running) and ``thread/turns/list`` (summaries) are asked for each
thread. No model request is made; the provider URL points nowhere.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.mapping.test_thread_history_rules import SCENARIOS, Scenario

CONFIG = """\
model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
requires_openai_auth = false

[analytics]
enabled = false
"""


def codex_binary() -> Path:
    import codex_cli_bin  # installed by the test extra (openai-codex-cli-bin==0.163.0)

    return codex_cli_bin.bundled_codex_path()


def write_rollout(sessions: Path, scenario: Scenario) -> None:
    day = sessions / "2026" / "11" / "30"
    day.mkdir(parents=True, exist_ok=True)
    path = day / f"rollout-2026-11-30T00-54-51-{scenario.thread_id}.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in scenario.rollout()))


class Peer:
    """A JSON-RPC client over the binary's stdio, answering requests in order."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._buffer = b""
        self._next_id = 0

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        request_id = self._next_id
        message = {"id": request_id, "method": method, "params": params}
        await self._stdin.send(json.dumps(message).encode() + b"\n")
        while True:
            while b"\n" not in self._buffer:
                self._buffer += await self._stdout.receive()
            raw, self._buffer = self._buffer.split(b"\n", 1)
            reply = json.loads(raw)
            if reply.get("id") == request_id and ("result" in reply or "error" in reply):
                assert "error" not in reply, reply
                result: dict[str, Any] = reply["result"]
                return result

    async def notify(self, method: str) -> None:
        await self._stdin.send(json.dumps({"method": method}).encode() + b"\n")


async def read_scenarios(
    tmp_path: Path,
) -> dict[str, tuple[list[Any], list[Any], list[Any] | None]]:
    home = tmp_path / "codex-home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(CONFIG)
    for scenario in SCENARIOS:
        write_rollout(home / "sessions", scenario)
    env = {
        "CODEX_HOME": str(home),
        "HOME": str(tmp_path),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "RUST_LOG": "error",
    }
    shown: dict[str, tuple[list[Any], list[Any], list[Any] | None]] = {}
    async with await anyio.open_process(
        [str(codex_binary()), "app-server"], env=env, cwd=work, stderr=None
    ) as process:
        peer = Peer(process)
        await peer.request(
            "initialize",
            {"clientInfo": {"name": "history-conformance", "version": "0"}, "capabilities": {}},
        )
        await peer.notify("initialized")
        for scenario in SCENARIOS:
            resumed = await peer.request("thread/resume", {"threadId": scenario.thread_id})
            listed = await peer.request(
                "thread/turns/list", {"threadId": scenario.thread_id, "limit": 100}
            )
            entries = None
            if scenario.entries is not None:
                items = await peer.request(
                    "thread/items/list", {"threadId": scenario.thread_id, "limit": 100}
                )
                entries = items["data"]
            # turns/list pages newest first
            shown[scenario.name] = (resumed["thread"]["turns"], listed["data"][::-1], entries)
        process.terminate()
    return shown


@pytest.mark.conformance
@pytest.mark.anyio
async def test_real_server_shows_the_recorded_turns_and_summaries(tmp_path: Path) -> None:
    with anyio.fail_after(180):
        shown = await read_scenarios(tmp_path)
    mismatches = [
        scenario.name
        for scenario in SCENARIOS
        if shown[scenario.name] != (scenario.turns, scenario.summaries(), scenario.entries)
    ]
    for name in mismatches:
        print(name, *(json.dumps(part) for part in shown[name]), sep="\n")
    assert mismatches == []
