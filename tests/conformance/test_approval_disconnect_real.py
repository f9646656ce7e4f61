"""A command approval whose client goes away, side by side: the real 0.163.0 binary and the
bridge (model source, each against a mock of its own), ``untrusted`` / workspace-write, the
model asking for ``touch approved.txt``.

* Over a socket (``--listen unix://``), the client that was asked disconnects: neither server
  declines for it nor times out (0.163.0 has no approval timeout). The request stays pending,
  the thread stays loaded, and the next client's ``thread/resume`` gets the same request (same
  id) again; its ``decline`` ends the wait, the turn completes, and the command never ran.
* Over stdio, the client closes stdin while asked: the server exits (rc 0) and nothing ran;
  the model never got a tool output.

Not compared: the notifications around the replay (0.163.0 sends the resumed client
``thread/tokenUsage/updated`` first and no ``item/completed`` for the declined command; the
bridge sends the item's ``declined`` completion: ``KNOWN_DIFFERENCES.md``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from codex_app_bridge.conformance._model_mode import CWD_ONLY
from codex_app_bridge.conformance._socket_peer import listening_server
from codex_app_bridge.conformance.mock_responses import MockResponses
from codex_app_bridge.conformance.real_codex import (
    JsonObject,
    StdioPeer,
    bridge_command,
    codex_env,
    real_codex_path,
    write_codex_config,
)
from tests.conftest import bridge_env

pytestmark = pytest.mark.conformance

COMMAND = "touch approved.txt; echo ran"
WAIT_S = 60.0


def _asked(message: JsonObject) -> bool:
    return message.get("method") == "item/commandExecution/requestApproval"


async def _never_answer(message: JsonObject) -> JsonObject:
    await anyio.Event().wait()
    raise AssertionError("unreachable")


async def _decline(message: JsonObject) -> JsonObject:
    return {"result": {"decision": "decline"}}


def _layout(base: Path, server: str) -> tuple[Path, Path, dict[str, str], list[str]]:
    shutil.rmtree(base, ignore_errors=True)
    home, work = base / "home", base / "work"
    home.mkdir(parents=True)
    work.mkdir(parents=True)
    extra = {} if server == "real" else {"PYTHONPATH": bridge_env()["PYTHONPATH"]}
    argv = [real_codex_path(), "app-server"] if server == "real" else bridge_command()
    return home, work, codex_env(home, extra=extra), argv


async def _ask(peer: StdioPeer, work: Path) -> tuple[str, JsonObject]:
    await peer.initialize()
    params = {
        "approvalPolicy": "untrusted",
        "sandbox": "workspace-write",
        "model": "mock-model",
        "modelProvider": "mock",
        "cwd": str(work),
    }
    thread_id = str((await peer.request("thread/start", params))["thread"]["id"])
    asked = peer.expect(_asked)
    turn = {"threadId": thread_id, "input": [{"type": "text", "text": "Run a command."}]}
    await peer.request("turn/start", turn)
    return thread_id, await peer.wait(asked, WAIT_S)


async def _disconnect_then_resume(server: str, base: Path) -> dict[str, Any]:
    home, work, env, argv = _layout(base, server)
    with MockResponses() as mock:
        write_codex_config(home, mock.base_url, top=CWD_ONLY)
        mock.set_scenario("shell", cmd=COMMAND)
        async with listening_server(argv, env=env, cwd=work, handler=_never_answer) as connect:
            first = await connect()
            thread_id, request = await _ask(first, work)
            await first.close()
            second = await connect()
            second._handler = _decline  # pyright: ignore[reportPrivateUsage]
            await second.initialize()
            loaded = (await second.request("thread/loaded/list", {}))["data"]
            replayed = second.expect(_asked)
            done = second.expect(lambda m: m.get("method") == "turn/completed")
            await second.request("thread/resume", {"threadId": thread_id})
            again = await second.wait(replayed, WAIT_S)
            completed = await second.wait(done, WAIT_S)
        return {
            "loaded after the disconnect": loaded == [thread_id],
            "replayed with the same id": again["id"] == request["id"],
            "turn": completed["params"]["turn"]["status"],
            "ran": (work / "approved.txt").exists(),
            "requests to the model": len(mock.model_requests()),
        }


async def _stdio_eof(server: str, base: Path) -> dict[str, Any]:
    home, work, env, argv = _layout(base, server)
    if server == "real":
        argv = [*argv, "--listen", "stdio://"]
    with MockResponses() as mock:
        write_codex_config(home, mock.base_url, top=CWD_ONLY)
        mock.set_scenario("shell", cmd=COMMAND)
        async with StdioPeer.spawn(argv, env=env, cwd=work, handler=_never_answer) as peer:
            await _ask(peer, work)
            assert peer.process.stdin is not None
            await peer.process.stdin.aclose()
            with anyio.fail_after(WAIT_S):
                code = await peer.process.wait()
        return {
            "exit code": code,
            "ran": (work / "approved.txt").exists(),
            "requests to the model": len(mock.model_requests()),
        }


@pytest.mark.anyio
async def test_a_disconnected_clients_approval_waits_for_the_next_client_and_runs_nothing(
    tmp_path: Path,
) -> None:
    outcomes = {s: await _disconnect_then_resume(s, tmp_path / s) for s in ("real", "bridge")}
    assert outcomes["bridge"] == {
        "loaded after the disconnect": True,
        "replayed with the same id": True,
        "turn": "completed",
        "ran": False,
        "requests to the model": 2,
    }
    assert outcomes["real"] == outcomes["bridge"]


@pytest.mark.anyio
async def test_stdin_closed_during_an_approval_ends_the_server_and_runs_nothing(
    tmp_path: Path,
) -> None:
    outcomes = {s: await _stdio_eof(s, tmp_path / s) for s in ("real", "bridge")}
    assert outcomes["bridge"] == {"exit code": 0, "ran": False, "requests to the model": 1}
    assert outcomes["real"] == outcomes["bridge"]
