"""Client flows written for the real server with a mocked model (``config.toml`` + a local
Responses mock, no flags): the official ``openai-codex`` SDK and ``codex-app-server-client``
run ``conformance/_model_client_flows.py`` against the real binary, and what they see, and the
requests the mock got, must still be the recorded reference
(``tests/data/model_mode/clients/<client>.json``) the bridge is compared with.

Re-record (with the scenarios' references): ``python -m codex_app_bridge.conformance
--model-mode --clients --servers real --record tests/data/model_mode``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from codex_app_bridge.conformance._client_flows import CLIENTS
from codex_app_bridge.conformance._model_mode import run_client_flow
from codex_app_bridge.conformance.mock_responses import MockResponses

pytestmark = pytest.mark.conformance

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "model_mode" / "clients"


def reference(client: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REFERENCE / f"{client}.json").read_text(encoding="utf-8"))
    return data


async def flow(client: str, server: str, scratch: Path) -> dict[str, Any]:
    with MockResponses() as mock:
        return await run_client_flow(client, server, mock, scratch / client / server)


def test_the_references_show_every_step_working() -> None:
    """What the flows prove on the real binary, so an equal bridge proves it too."""
    official = reference("official")["outcome"]
    assert official["streamed"]["status"] == "completed"
    assert official["streamed"]["streamed"].startswith("Answer to: Stream a short answer.")
    assert "item/agentMessage/delta" in official["streamed"]["methods"]
    assert official["failed"]["raised"] == "RuntimeError"
    assert official["retried"]["status"] == "completed"
    assert official["interrupted"] == {"interrupt_answer": {}, "status": "interrupted"}
    assert official["fork"]["final"].endswith("(I see 6 user messages)")
    assert official["dynamic_tool"]["final"] == "The tool said: Sunny, 21 C"
    assert official["dynamic_tool"]["asked"] == ["item/tool/call lookup_weather"]
    resumed = official["resume_after_restart"]
    assert resumed["final"].endswith("(I see 6 user messages)")
    assert resumed["turn_statuses"][1] == "failed"
    other = reference("app_server_client")["outcome"]
    assert all("raised" not in step for step in other.values()), other
    assert other["resume_after_restart"]["final"].endswith("(I see 6 user messages)")


@pytest.mark.anyio
@pytest.mark.parametrize("client", CLIENTS)
async def test_the_real_binary_still_gives_the_recorded_client_outcome(
    tmp_path: Path, client: str
) -> None:
    with anyio.fail_after(900):
        fresh = await flow(client, "real", tmp_path)
    expected = reference(client)
    assert fresh["outcome"] == expected["outcome"]
    assert fresh["inputs"] == expected["inputs"]
