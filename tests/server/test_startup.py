"""Start-up of ``serve``: ``initialize`` is answered before the domain is imported.

The default ``serve`` (stdio, built-in agent) loads the CLI, the transport, the rpc layer, the
handshake and the few wire models of ``initialize``; the handlers, the listener, the mapping, the
core models, the sources and the storage are imported on the first request that needs them.
A module-level import that pulls them in again is named by the first test.
"""

from __future__ import annotations

import json
import subprocess
import sys

import orjson

from tests.conftest import bridge_env

# Runs ``serve`` on a stdin holding one initialize and the end of input; at exit, reports the
# package modules loaded and the generated models created.
PROBE = """
import atexit, json, os, sys
read, write = os.pipe()
os.write(write, sys.argv[1].encode() + b"\\n")
os.close(write)
os.dup2(read, 0)

def report():
    generated = sys.modules["codex_app_bridge.protocol.v2._generated"]
    print(json.dumps({
        "modules": sorted(m for m in sys.modules if m.startswith("codex_app_bridge")),
        "models": sum(1 for name in generated.__all__ if name in vars(generated)),
    }), file=sys.stderr)

atexit.register(report)
from codex_app_bridge.cli import main
sys.exit(main(["serve"]))
"""

DOMAIN = (
    "codex_app_bridge.listener",
    "codex_app_bridge.mapping",
    "codex_app_bridge.projection",
    "codex_app_bridge.protocol.core",
    "codex_app_bridge.sources",
    "codex_app_bridge.storage",
    "codex_app_bridge.server._handlers",
    "codex_app_bridge.server._runtime",
    "codex_app_bridge.transport.listen",
    "codex_app_bridge.cli._demo",
)


def _serve(*lines: dict[str, object]) -> tuple[list[dict[str, object]], dict[str, object]]:
    stdin = "\n".join(json.dumps(line) for line in lines)
    result = subprocess.run(
        [sys.executable, "-c", PROBE, stdin],
        env=bridge_env({"LOG_LEVEL": "ERROR"}),
        capture_output=True,
        timeout=60,
        check=True,
    )
    answers = [orjson.loads(line) for line in result.stdout.splitlines()]
    return answers, json.loads(result.stderr.decode().strip().splitlines()[-1])


INITIALIZE = {
    "id": 1,
    "method": "initialize",
    "params": {"clientInfo": {"name": "c", "version": "1"}},
}


def test_serve_answers_initialize_without_importing_the_domain() -> None:
    answers, report = _serve(INITIALIZE)
    assert answers[0]["id"] == 1
    assert set(answers[0]["result"]) == {"userAgent", "codexHome", "platformFamily", "platformOs"}
    assert answers[1]["method"] == "remoteControl/status/changed"
    modules = report["modules"]
    assert isinstance(modules, list)
    loaded = [m for m in modules if isinstance(m, str) and m.startswith(DOMAIN)]
    assert loaded == []
    models = report["models"]
    assert isinstance(models, int)
    assert models < 100


def test_the_first_other_request_loads_the_rest_and_is_answered() -> None:
    answers, report = _serve(
        INITIALIZE, {"id": 2, "method": "thread/start", "params": {}}, {"id": 3, "method": "x/y"}
    )
    by_id = {answer.get("id"): answer for answer in answers}
    result = by_id[2]["result"]
    assert isinstance(result, dict)
    assert "thread" in result
    error = by_id[3]["error"]
    assert isinstance(error, dict)
    assert "unknown variant `x/y`" in str(error["message"])
    modules = report["modules"]
    assert isinstance(modules, list)
    assert "codex_app_bridge.server._handlers" in modules


def test_an_unknown_method_before_initialize_loads_nothing_more() -> None:
    answers, report = _serve({"id": 1, "method": "x/y"}, INITIALIZE)
    assert "unknown variant `x/y`" in str(answers[0]["error"])
    assert answers[1]["id"] == 1
    assert "result" in answers[1]
    modules = report["modules"]
    assert isinstance(modules, list)
    assert [m for m in modules if isinstance(m, str) and m.startswith(DOMAIN)] == []
