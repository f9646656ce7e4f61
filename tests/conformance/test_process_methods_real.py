"""``process/*`` and ``fuzzyFileSearch/session*`` (experimental) side by side: the real 0.163.0
binary and the bridge get the same requests over stdio (``experimentalApi``) and every answer
and notification is compared: ``process/spawn`` answered ``{}`` then ``process/exited``
(buffered output, the cap flags), streaming with ``process/outputDelta`` and stdin, a
duplicate handle, a PTY resize and a stdin write refused, ``process/kill`` (137), unknown
handles, a relative cwd, an empty command, a missing binary; a fuzzy-search session's update
(``sessionUpdated`` then ``sessionCompleted``), an idempotent stop, an unknown session.

Left out of the equality: the fuzzy scores (the bridge's own, ``KNOWN_DIFFERENCES.md``).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from codex_app_bridge.conformance._model_mode import ModelContext, ModelScenario
from codex_app_bridge.conformance.real_codex import JsonObject
from tests.conformance._side_by_side import run_on

pytestmark = pytest.mark.conformance

WAIT_S = 30.0
RUN_TIMEOUT_S = 120.0


def _exited(handle: str) -> Any:
    def match(message: JsonObject) -> bool:
        params: JsonObject = message.get("params") or {}
        return message.get("method") == "process/exited" and params.get("processHandle") == handle

    return match


def _method(name: str) -> Any:
    return lambda message: message.get("method") == name  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType]


async def _play(ctx: ModelContext) -> None:
    peer, cwd, notes = ctx.peer, ctx.cwd, ctx.notes
    (Path(cwd) / "src").mkdir()
    (Path(cwd) / "src" / "main.py").write_text("x")
    (Path(cwd) / "README.md").write_text("r")

    async def call(name: str, method: str, params: JsonObject) -> None:
        notes[name] = await peer.request_raw(method, params)

    exited = peer.expect(_exited("p1"))
    command = ["sh", "-c", "echo out; echo err >&2; exit 3"]
    await call("spawn", "process/spawn", {"command": command, "cwd": cwd, "processHandle": "p1"})
    notes["exited1"] = (await peer.wait(exited, WAIT_S))["params"]

    exited = peer.expect(_exited("p2"))
    streamed = {
        "command": ["sh", "-c", "echo abcdefghij; cat"],
        "cwd": cwd,
        "processHandle": "p2",
        "streamStdoutStderr": True,
        "streamStdin": True,
        "outputBytesCap": 5,
    }
    await call("spawn2", "process/spawn", streamed)
    dup = {"command": ["true"], "cwd": cwd, "processHandle": "p2"}
    await call("duplicate", "process/spawn", dup)
    stdin = {"processHandle": "p2", "deltaBase64": "aGkK", "closeStdin": True}
    await call("write", "process/writeStdin", stdin)
    notes["exited2"] = (await peer.wait(exited, WAIT_S))["params"]

    exited = peer.expect(_exited("p3"))
    sleeper = {"command": ["sleep", "30"], "cwd": cwd, "processHandle": "p3"}
    await call("spawn3", "process/spawn", sleeper)
    size = {"processHandle": "p3", "size": {"rows": 5, "cols": 5}}
    await call("resize_not_a_pty", "process/resizePty", size)
    await call(
        "write_not_streamed", "process/writeStdin", {"processHandle": "p3", "deltaBase64": "aGkK"}
    )
    await call("kill", "process/kill", {"processHandle": "p3"})
    notes["exited3"] = (await peer.wait(exited, WAIT_S))["params"]
    await call("kill_unknown", "process/kill", {"processHandle": "nope"})
    relative = {"command": ["true"], "cwd": "rel", "processHandle": "p4"}
    await call("relative_cwd", "process/spawn", relative)
    await call("empty", "process/spawn", {"command": [], "cwd": cwd, "processHandle": "p5"})
    missing = {"command": ["/nonexistent/binary"], "cwd": cwd, "processHandle": "p6"}
    await call("missing_binary", "process/spawn", missing)

    await call("fuzzy_start", "fuzzyFileSearch/sessionStart", {"sessionId": "s1", "roots": [cwd]})
    completed = peer.expect(_method("fuzzyFileSearch/sessionCompleted"))
    query = {"sessionId": "s1", "query": "main"}
    await call("fuzzy_update", "fuzzyFileSearch/sessionUpdate", query)
    notes["fuzzy_completed"] = (await peer.wait(completed, WAIT_S))["params"]
    await call("fuzzy_stop", "fuzzyFileSearch/sessionStop", {"sessionId": "s1"})
    # the last update before the stop was answered: the real binary may send an early one with
    # no files yet when the machine is busy (the search still running), then the results
    updates = [m for m in peer.received if m.get("method") == "fuzzyFileSearch/sessionUpdated"]
    notes["fuzzy_updated"] = updates[-1]["params"]
    await call("fuzzy_stop_again", "fuzzyFileSearch/sessionStop", {"sessionId": "s1"})
    unknown = {"sessionId": "nope", "query": "x"}
    await call("fuzzy_unknown", "fuzzyFileSearch/sessionUpdate", unknown)
    notes["deltas"] = [
        m["params"] for m in peer.received if m.get("method") == "process/outputDelta"
    ]


def _run(server: str, base: Path) -> dict[str, Any]:
    spec = ModelScenario("process_methods", "plain", {}, "", _play)
    run = run_on(server, spec, base, RUN_TIMEOUT_S)
    text = json.dumps(run.notes).replace(str(base), "<base>")
    return json.loads(text)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return {s: _run(s, tmp_path_factory.mktemp(s)) for s in ("real", "bridge")}


def test_every_answer_and_notification_is_the_real_binarys(
    runs: dict[str, dict[str, Any]],
) -> None:
    real, bridge = runs["real"], runs["bridge"]
    assert real["exited1"]["exitCode"] == 3
    assert real["exited3"]["exitCode"] == 137
    for side in (real, bridge):
        for file in side["fuzzy_updated"]["files"]:
            file["score"] = "<score>"
    if not real["fuzzy_updated"]["files"]:
        # on a busy machine 0.163.0 can complete a session whose only update went out before
        # its search matched anything (seen on CI: ``files: []``, then ``sessionCompleted``,
        # nothing after): its answer then says nothing about the files, so the bridge's are
        # checked against what the tree holds (the one match of "main")
        assert [f["path"] for f in bridge["fuzzy_updated"]["files"]] == ["src/main.py"]
        real["fuzzy_updated"]["files"] = bridge["fuzzy_updated"]["files"]
    assert sorted(bridge) == sorted(real)
    for name in real:
        assert bridge[name] == real[name], name


def test_streamed_output_stops_at_the_cap(runs: dict[str, dict[str, Any]]) -> None:
    for side in runs.values():
        data = b"".join(base64.b64decode(d["deltaBase64"]) for d in side["deltas"])
        assert data == b"abcde"
        assert side["deltas"][-1]["capReached"] is True
