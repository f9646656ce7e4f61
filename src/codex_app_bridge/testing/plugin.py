"""The pytest plugin (entry point ``pytest11``: ``codex_app_bridge``): fixtures that start the
bridge with a scenario and give the test a connected client.

* ``@pytest.mark.codex_scenario(SCENARIO)``: the scenario of the test's bridge (its JSON lines,
  or a path); without it the built-in agent answers.
* ``codex_seed`` (default ``0``; override the fixture, ``None`` for the real clock): ids and
  times are reproducible, so the same test receives the same bytes on every run.
* ``codex_client`` (async; run the test with ``@pytest.mark.anyio``): a ``BridgeClient``
  connected to a bridge in the test's event loop, initialized.
* ``codex_process_client`` (async): the same over the stdio of a ``serve`` process.

The bridges are per test (no shared ports or files), so they run under pytest-xdist as they
do alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from codex_app_bridge.testing._bridge import in_process_bridge, subprocess_bridge
from codex_app_bridge.testing._client import BridgeClient

__all__ = ["codex_client", "codex_process_client", "codex_scenario", "codex_seed"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "codex_scenario(scenario): the scenario (JSON lines or a path) of the codex_client bridge",
    )


@pytest.fixture
def codex_scenario(request: pytest.FixtureRequest) -> str | Path | None:
    """The scenario of ``@pytest.mark.codex_scenario(...)``, else ``None`` (built-in agent)."""
    marker = request.node.get_closest_marker("codex_scenario")
    if marker is None or not marker.args:
        return None
    scenario: str | Path = marker.args[0]
    return scenario


@pytest.fixture
def codex_seed() -> int | None:
    """The seed of the bridge's clock and ids (``None``: the real clock)."""
    return 0


@pytest.fixture
async def codex_client(
    codex_scenario: str | Path | None, codex_seed: int | None
) -> AsyncIterator[BridgeClient]:
    """A client of a bridge in the test's event loop (see the module docstring)."""
    async with in_process_bridge(codex_scenario, seed=codex_seed) as client:
        yield client


@pytest.fixture
async def codex_process_client(
    codex_scenario: str | Path | None, codex_seed: int | None, tmp_path: Path
) -> AsyncIterator[BridgeClient]:
    """A client of ``codex-app-bridge serve`` run as a process, on its stdio."""
    async with subprocess_bridge(codex_scenario, seed=codex_seed, workdir=tmp_path) as client:
        yield client
