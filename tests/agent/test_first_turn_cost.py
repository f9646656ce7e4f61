"""A model turn builds no validator for the unions of every event and line type, and the warm-up
builds what turn/start itself needs.

Pydantic builds a model's validator and serializer on first use, and the unions of every core
event (``EventEnvelope.msg``, an ``event_msg`` line's payload) and of every rollout line are the
largest of them: building them was a large share of a cold ``turn/start``'s time to its first
delta (issue 20). Every event of a model turn is a model the bridge made, so nothing on the way
(the runtime, the listener, the rollout writer) validates it again: ``EventEnvelope.trusted``
and ``dump_rollout_record``. A validating constructor brought back on that path is named here.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.agent._harness import run_turns
from tests.conftest import bridge_env

# ``serve`` as the harness starts it, reporting at exit which of the big unions were built
# (and the kinds of line its rollout holds: the scratch CODEX_HOME is gone when the test reads).
# The idle warm-up (``server._warm``) builds the rollout-line union on purpose, for the first
# ``thread/turns/list``, once the turn is over and before the process exits: it has no steps
# here, so what is reported is what the turn itself built.
PROBE = """
import atexit, json, os, pathlib, sys

import codex_app_bridge.server._warm as warm
warm.warm_up_steps = lambda: iter(())

def report():
    from codex_app_bridge.protocol import core

    rollouts = sorted(pathlib.Path(os.environ["CODEX_HOME"]).glob("sessions/**/rollout-*.jsonl"))
    print("PROBE " + json.dumps({
        "EventEnvelope": core.EventEnvelope.__pydantic_complete__,
        "EventMsgLine": core.EventMsgLine.__pydantic_complete__,
        "RolloutLine": core.ROLLOUT_LINE_ADAPTER.pydantic_complete,
        "rollouts": [
            sorted({json.loads(line)["type"] for line in path.read_text().splitlines()})
            for path in rollouts
        ],
    }), file=sys.stderr, flush=True)

atexit.register(report)
from codex_app_bridge.cli import main
sys.exit(main(["serve"]))
"""


@pytest.mark.anyio
async def test_a_model_turn_and_its_rollout_build_neither_event_union() -> None:
    probe = [sys.executable, "-c", PROBE]
    run = await run_turns("reasoning", ["Think, then answer."], command=probe)
    methods = [m.get("method") for m in run.received]
    assert "item/agentMessage/delta" in methods
    assert "turn/completed" in methods
    [report] = [line for line in run.stderr.splitlines() if line.startswith("PROBE ")]
    assert json.loads(report.removeprefix("PROBE ")) == {
        "EventEnvelope": False,
        "EventMsgLine": False,
        "RolloutLine": False,
        "rollouts": [
            [
                "event_msg",
                "response_item",
                "session_meta",
                "token_usage_record",
                "turn_context",
                "world_state",
            ]
        ],
    }


# a fresh interpreter: which of turn/start's own models are built before and after the warm-up
WARM_PROBE = """
import json
from codex_app_bridge.protocol import core, v2
models = [v2.TurnStartParams, v2.TurnStartResponse, core.Submission, core.TurnContextItem]
before = [m.__pydantic_complete__ for m in models]
from codex_app_bridge.cli._serve import _warm_turn_models
_warm_turn_models()
print(json.dumps({"before": before, "after": [m.__pydantic_complete__ for m in models]}))
"""


def test_the_warm_up_builds_what_turn_start_builds_before_it_comes() -> None:
    out = subprocess.run(
        [sys.executable, "-c", WARM_PROBE],
        capture_output=True,
        text=True,
        env=bridge_env({"LOG_LEVEL": "ERROR"}),
        timeout=120,
        check=True,
    )
    assert json.loads(out.stdout) == {"before": [False] * 4, "after": [True] * 4}
