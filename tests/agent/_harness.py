"""Run ``serve`` (no source flags) against the in-repo mock Responses API, as a client of the
real server would: a ``CODEX_HOME/config.toml`` naming the mock provider.

``run_turns(scenario, turns, ...)`` spawns the bridge (or ``command``) on stdio with a fresh CODEX_HOME, starts
a thread, runs each turn until ``turn/completed`` (60 s hang guard) and returns what the server
wrote, what the mock received and the server's stderr. Nothing waits on the clock.
``model_bridge(tmp_path, scenario, ...)`` is the same in this event loop: an in-memory bridge
whose model source calls the mock, for tests that look at the server's own objects (its
threads' runtimes and tasks, what they hold).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from codex_app_bridge._clock import SeededClock, use_clock
from codex_app_bridge.agent import ModelSource
from codex_app_bridge.config import load_layers
from codex_app_bridge.conformance.mock_responses import MockResponses
from codex_app_bridge.conformance.real_codex import (
    StdioPeer,
    bridge_command,
    codex_env,
    default_server_request_handler,
    write_codex_config,
)
from codex_app_bridge.server import BridgeServer
from tests.conftest import bridge_env
from tests.e2e._harness import Session, open_bridge

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
TIMEOUT = 60.0

JsonObject = dict[str, Any]


@dataclass
class Run:
    received: list[JsonObject]
    requests: list[JsonObject]
    stderr: str
    thread_id: str
    home: Path
    work: Path


def capture_requests(name: str) -> list[JsonObject]:
    path = CAPTURES / name / "model_requests.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def capture_messages(name: str) -> list[JsonObject]:
    path = CAPTURES / name / "notifications.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


Driver = Callable[[StdioPeer, str, MockResponses], Awaitable[None]]


async def run_turns(
    scenario: str,
    turns: list[str],
    *,
    params: dict[str, Any] | None = None,
    thread_params: dict[str, Any] | None = None,
    turn_params: dict[str, Any] | None = None,
    extra_config: str = "",
    top_config: str = "",
    driver: Driver | None = None,
    handler: Any = default_server_request_handler,
    command: Sequence[str] | None = None,
) -> Run:
    with MockResponses() as mock, tempfile.TemporaryDirectory() as scratch:
        mock.set_scenario(scenario, **(params or {}))
        home = Path(scratch) / "home"
        work = Path(scratch) / "work"
        work.mkdir()
        write_codex_config(home, mock.base_url, extra_config, top_config)
        env = codex_env(home, extra={k: v for k, v in bridge_env().items() if k == "PYTHONPATH"})
        stderr = Path(scratch) / "stderr.log"
        with anyio.fail_after(TIMEOUT * (1 + len(turns))):
            async with StdioPeer.spawn(
                list(command or bridge_command()),
                env=env,
                cwd=str(work),
                stderr_path=stderr,
                handler=handler,
            ) as peer:
                await peer.initialize()
                started = await peer.request(
                    "thread/start",
                    {
                        "approvalPolicy": "never",
                        "sandbox": "danger-full-access",
                        "cwd": str(work),
                        **(thread_params or {}),
                    },
                )
                thread_id = started["thread"]["id"]
                for text in turns:
                    done = len([m for m in peer.received if m.get("method") == "turn/completed"])
                    await peer.request(
                        "turn/start",
                        {
                            "threadId": thread_id,
                            "input": [{"type": "text", "text": text}],
                            **(turn_params or {}),
                        },
                    )
                    if driver is not None:
                        await driver(peer, thread_id, mock)
                    if _completed(peer) <= done:  # else it came while the driver ran
                        await peer.wait_for(
                            lambda m, done=done: (
                                m.get("method") == "turn/completed" and _completed(peer) > done
                            ),
                            timeout_s=TIMEOUT,
                        )
        return Run(
            received=list(peer.received),
            requests=mock.requests(),
            stderr=stderr.read_text(errors="replace"),
            thread_id=thread_id,
            home=home,
            work=work,
        )


def _completed(peer: StdioPeer) -> int:
    return sum(1 for x in peer.received if x.get("method") == "turn/completed")


def turn_notifications(messages: list[JsonObject]) -> list[JsonObject]:
    """The notifications from the first ``turn/started`` to the last ``turn/completed``."""
    methods = [m.get("method") for m in messages]
    start = methods.index("turn/started")
    end = len(methods) - 1 - methods[::-1].index("turn/completed")
    return [m for m in messages[start : end + 1] if "method" in m and "id" not in m]


_MASKED_KEYS = frozenset(
    {
        "threadId",
        "turnId",
        "itemId",
        "id",
        "rootTurnId",
        "startedAt",
        "completedAt",
        "startedAtMs",
        "completedAtMs",
        "durationMs",
        "revision",
        "emittedAtMs",
    }
)


def mask(value: Any) -> Any:
    """Ids and times replaced, so two runs compare equal."""
    if isinstance(value, dict):
        return {
            k: ("<masked>" if k in _MASKED_KEYS and v is not None else mask(v))
            for k, v in value.items()  # pyright: ignore[reportUnknownVariableType]
        }
    if isinstance(value, list):
        return [mask(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def masked_turn(messages: list[JsonObject]) -> list[JsonObject]:
    return [
        {"method": m["method"], "params": mask(m.get("params"))}
        for m in turn_notifications(messages)
    ]


@asynccontextmanager
async def model_bridge(
    tmp_path: Path, scenario: str, *, limit: float = TIMEOUT, **params: Any
) -> AsyncGenerator[tuple[BridgeServer, Session, MockResponses]]:
    """An in-memory bridge in this event loop whose threads' turns go to the mock Responses
    API (``scenario``, ``params``), ids and times seeded, a client connected and initialized;
    the thread's cwd is ``tmp_path / "work"``; ``limit``: seconds the whole of it may take."""
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir(exist_ok=True)
    with MockResponses() as mock, use_clock(SeededClock(0)), anyio.fail_after(limit):
        mock.set_scenario(scenario, **params)
        write_codex_config(home, mock.base_url)
        layers = load_layers(home, system_config=tmp_path / "etc" / "config.toml")
        source = ModelSource(layers, codex_home=str(home))
        async with open_bridge("memory", source=source, config=layers) as bridge:
            assert bridge.server is not None
            bridge.server.default_cwd = str(work)
            client = await bridge.connect()
            await client.initialize()
            yield bridge.server, client, mock
