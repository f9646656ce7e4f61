"""One model-mode scenario played on one server, the real binary or the bridge, each against a
mock of its own: the side-by-side tests of the machine methods compare what each server sent."""

from __future__ import annotations

from pathlib import Path

import anyio

from codex_app_bridge.conformance._model_mode import ModelScenario, ServerRun, run_server
from codex_app_bridge.conformance.mock_responses import MockResponses
from codex_app_bridge.conformance.real_codex import bridge_command, real_codex_command
from tests.conftest import bridge_env


def run_on(server: str, spec: ModelScenario, base: Path, timeout_s: float) -> ServerRun:
    """``spec`` on ``server`` (``"real"`` or ``"bridge"``), its scratch under ``base``; every
    wait inside is bounded by ``timeout_s``. A driver error fails the calling test."""
    argv = real_codex_command() if server == "real" else bridge_command()
    extra = None if server == "real" else {"PYTHONPATH": bridge_env()["PYTHONPATH"]}

    async def go() -> ServerRun:
        with MockResponses() as mock:
            return await run_server(spec, argv, mock, base, extra_env=extra, timeout_s=timeout_s)

    run = anyio.run(go)
    assert run.error is None, run.error
    return run
