"""``thread/metadata/update {gitInfo}`` against the real 0.163.0 binary: the same requests on the
binary and on the bridge (each with a scratch home), the same answers, and the same git info in
later ``thread/read`` / ``thread/list`` / ``thread/resume``, in the same process and after a
restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conformance._realpeer import MockModel, bridge_peer, real_peer

pytestmark = pytest.mark.conformance

UPDATES: list[dict[str, Any] | None] = [
    {"sha": "abc123", "branch": "main", "originUrl": "https://example.com/r.git"},
    {"branch": "dev"},  # the others stay
    {"sha": None},  # null clears one
    None,  # no gitInfo: an error
    {},  # a gitInfo without a field: an error
]


def _answer(response: dict[str, Any]) -> Any:
    if "error" in response:
        return {"error": response["error"]}
    return response["result"]["thread"]["gitInfo"]


def _flow(start: Any, home: Path, cwd: Path) -> list[Any]:
    seen: list[Any] = []
    with start(home, cwd) as peer:
        started = peer.result("thread/start", {"model": "mock-model", "modelProvider": "mock"})
        thread_id = started["thread"]["id"]
        seen.append(("start", started["thread"]["gitInfo"]))
        peer.run_turn(thread_id, "hi")
        for update in UPDATES:
            params: dict[str, Any] = {"threadId": thread_id}
            if update is not None:
                params["gitInfo"] = update
            seen.append(("update", _answer(peer.call("thread/metadata/update", params))))
        seen.append(
            ("read", peer.result("thread/read", {"threadId": thread_id})["thread"]["gitInfo"])
        )
        seen.append(("list", [t["gitInfo"] for t in peer.result("thread/list", {})["data"]]))
    with start(home, cwd) as peer:
        seen.append(
            ("restart list", [t["gitInfo"] for t in peer.result("thread/list", {})["data"]])
        )
        seen.append(
            (
                "restart read",
                peer.result("thread/read", {"threadId": thread_id})["thread"]["gitInfo"],
            )
        )
        params = {"threadId": thread_id, "gitInfo": {"originUrl": None}}
        seen.append(("stored update", _answer(peer.call("thread/metadata/update", params))))
        resumed = peer.result("thread/resume", {"threadId": thread_id})
        seen.append(("restart resume", resumed["thread"]["gitInfo"]))
    return seen


def test_git_info_updates_are_answered_stored_and_shown_as_by_the_real_binary(
    tmp_path: Path,
) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    with MockModel() as model:
        # both homes name the mock provider the flows name (the bridge reads config.toml too)
        model.write_config(tmp_path / "real")
        model.write_config(tmp_path / "bridge")
        theirs = _flow(real_peer, tmp_path / "real", cwd)
        ours = _flow(bridge_peer, tmp_path / "bridge", cwd)
    assert ours == theirs
    last = {"sha": None, "branch": "dev", "originUrl": "https://example.com/r.git"}
    assert theirs[4] == (
        "update",
        {
            "error": {
                "code": -32600,
                "message": "thread metadata update must include at least one field",
            }
        },
    )
    assert theirs[6] == ("read", last)
    assert theirs[-1] == ("restart resume", {**last, "originUrl": None})
