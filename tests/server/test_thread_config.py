"""thread/start, resume and fork resolve the thread's effective config and keep it on the record.

The echoes and errors of ``thread/start`` are compared whole with the real binary's elsewhere
(``test_config_methods.py``, ``tests/conformance/test_config_real.py``); here, what a client and
the model source rely on around them: the config reaches the thread record, resume and fork
keep the thread's model unless told otherwise and refuse what the config refuses, and the
notices come in the binary's order (``configWarning`` before the answer, ``warning`` after
``thread/started``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codex_app_bridge.config import load_layers
from codex_app_bridge.server import BridgeServer
from codex_app_bridge.sources import DefaultAgent
from tests.e2e._harness import methods, open_bridge

pytestmark = pytest.mark.anyio

CONFIG = """model = "mock-model"
model_provider = "mock"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:9/v1"
request_max_retries = 2
"""


def _server_record(server: BridgeServer | None, thread_id: str) -> Any:
    assert server is not None
    record = server.threads.get(thread_id)
    assert record is not None
    return record


async def test_the_effective_config_reaches_the_thread_record(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(CONFIG, encoding="utf-8")
    layers = load_layers(tmp_path, system_config=tmp_path / "no-system.toml")
    async with open_bridge("memory", config=layers) as bridge:
        client = await bridge.connect()
        await client.initialize()
        started = await client.result(
            "thread/start",
            {"config": {"model_reasoning_effort": "high"}, "developerInstructions": "be brief"},
        )
        assert (started["model"], started["modelProvider"]) == ("mock-model", "mock")
        assert started["reasoningEffort"] == "high"
        assert started["sandbox"] == {"type": "dangerFullAccess"}
        assert started["activePermissionProfile"] is None
        config = _server_record(bridge.server, started["thread"]["id"]).config
        assert config.provider.responses_url() == "http://127.0.0.1:9/v1/responses"
        assert config.provider.request_max_retries == 2
        assert config.developer_instructions == "be brief"
        assert config.model_reasoning_effort == "high"


async def test_resume_and_fork_keep_the_threads_model_and_refuse_what_the_config_refuses(
    tmp_path: Path,
) -> None:
    (tmp_path / "config.toml").write_text(CONFIG, encoding="utf-8")
    layers = load_layers(tmp_path, system_config=tmp_path / "no-system.toml")
    async with open_bridge("memory", config=layers) as bridge:
        client = await bridge.connect()
        await client.initialize()
        thread_id = await client.start_thread(model="gpt-5.5")
        await client.run_turn(thread_id, "hi")
        resumed = await client.result(
            "thread/resume", {"threadId": thread_id, "excludeTurns": True}
        )
        assert (resumed["model"], resumed["modelProvider"]) == ("gpt-5.5", "mock")
        refused = await client.call(
            "thread/resume", {"threadId": thread_id, "modelProvider": "nope", "excludeTurns": True}
        )
        assert refused["error"] == {
            "code": -32600,
            "message": "failed to load configuration: Model provider `nope` not found",
        }
        forked = await client.result(
            "thread/fork",
            {"threadId": thread_id, "model": "mock-model-2", "excludeTurns": True},
        )
        assert (forked["model"], forked["modelProvider"]) == ("mock-model-2", "mock")
        fork_config = _server_record(bridge.server, forked["thread"]["id"]).config
        assert fork_config.model == "mock-model-2"
        assert fork_config.provider.id == "mock"
        bad_fork = await client.call(
            "thread/fork",
            {"threadId": thread_id, "config": {"model_verbosity": "loud"}, "excludeTurns": True},
        )
        assert bad_fork["error"]["message"] == (
            "failed to load configuration: unknown variant `loud`, expected one of `low`, "
            "`medium`, `high`\nin `model_verbosity`\n"
        )


async def test_notices_come_before_the_answer_and_after_thread_started(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(CONFIG + "stray = 1\n", encoding="utf-8")
    layers = load_layers(tmp_path, system_config=tmp_path / "no-system.toml")
    async with open_bridge("memory", config=layers) as bridge:
        client = await bridge.connect()
        await client.initialize()
        announced = [m for m in client.received if m.get("method") == "configWarning"]
        assert len(announced) == 1  # the file's stray key, right after initialize
        await client.drain_pending()
        mark = len(client.received)
        await client.call("thread/start", {"serviceTier": "bogus", "config": {"other": 1}})
        await client.until(lambda m: m.get("method") == "warning")
        await client.until(lambda m: m.get("method") == "warning")
        seen = client.received[mark:]
        assert methods(seen) == [
            "configWarning",  # a new text (the thread's map adds a key): announced once
            "response",
            "thread/started",
            "warning",  # the ignored keys, for this thread
            "warning",  # the tier mock-model does not advertise
        ]
        assert seen[3]["params"]["message"].startswith("Codex is ignoring 2 unrecognized")


async def test_a_server_without_codex_home_reads_no_config_file(tmp_path: Path) -> None:
    async with open_bridge("memory", source=DefaultAgent()) as bridge:
        client = await bridge.connect()
        await client.initialize()
        started = await client.result("thread/start", {})
        assert (started["model"], started["modelProvider"]) == (
            "codex-app-bridge-echo",
            "codex-app-bridge",
        )
        assert started["activePermissionProfile"] == {"id": ":read-only", "extends": None}
        read = await client.result("config/read", {"includeLayers": True})
        assert [layer["config"] for layer in read["layers"]] == [{}, {}]
