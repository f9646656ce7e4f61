"""Client flows written for the real server with a mocked model pass unchanged on the bridge.

The official ``openai-codex`` SDK and ``codex-app-server-client`` run
``conformance/_model_client_flows.py`` (streaming, a failed turn, a retried stream, an
interrupt, a dynamic tool the client answers, a fork, a restart and resume) against
``codex-app-bridge serve`` started by the library itself, with no flags, on a ``CODEX_HOME``
whose ``config.toml`` names the mock. What each library sees, step by step, and the requests
the mock got must equal what the real binary gave (``tests/data/model_mode/clients``), apart
from the rows of ``KNOWN_DIFFERENCES.md`` ("Model mode") listed in :data:`KNOWN`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from codex_app_bridge.conformance._client_flows import CLIENTS
from codex_app_bridge.conformance._compare import Difference
from codex_app_bridge.conformance._model_mode import compare_client_flows, run_client_flow
from codex_app_bridge.conformance.mock_responses import MockResponses

pytestmark = pytest.mark.conformance

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "model_mode" / "clients"

# (kind, label pattern, detail pattern) as in test_model_mode_bridge.py: none left (the
# skills fragment, and the history of forks and resumed threads, are as the real binary's)
KNOWN: list[tuple[str, str, str]] = []


def known(difference: Difference) -> bool:
    rows = [r for r in KNOWN if r[0] == difference.kind and re.fullmatch(r[1], difference.label)]
    return bool(difference.details) and all(
        any(re.fullmatch(r[2], line) for r in rows) for line in difference.details
    )


@pytest.mark.anyio
@pytest.mark.parametrize("client", CLIENTS)
async def test_the_client_flow_sees_on_the_bridge_what_it_saw_on_the_real_binary(
    tmp_path: Path, client: str
) -> None:
    real: dict[str, Any] = json.loads((REFERENCE / f"{client}.json").read_text(encoding="utf-8"))
    with anyio.fail_after(900), MockResponses() as mock:
        bridge = await run_client_flow(client, "bridge", mock, tmp_path / client)
    result = compare_client_flows(real, bridge)
    assert result.outcome.compared == len(real["outcome"])
    differences = [*result.outcome.differences, *result.inputs.differences]
    assert [d for d in differences if not known(d)] == []
    # streaming, failures, retries, interrupts and the client's dynamic tool are equal outright
    for step in ("streamed", "failed", "retried", "interrupted", "after_interrupt"):
        if step in real["outcome"]:
            assert bridge["outcome"][step] == real["outcome"][step], step
    assert bridge["outcome"]["dynamic_tool"] == real["outcome"]["dynamic_tool"]
