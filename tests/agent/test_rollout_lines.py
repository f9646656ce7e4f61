"""The rollout a model thread leaves has 0.163.0's lines in 0.163.0's places: after a first turn's
context its ``world_state`` and then the ``turn_context`` (a later turn: the ``turn_context``
right after ``task_started``), a ``token_usage_record`` after each response's items, and after
a compaction's ``compacted`` line a ``world_state`` and ``turn_context`` again, each baseline's
``turn_context`` followed by a ``thread_settings_applied`` line. The reference is the real
binary's rollout in ``tests/data/captures/plain`` and its lines probed in
``tests/data/rollout_lines/real_0.163.0.json`` (a goal set before the first turn, a compaction,
the permission profile of each sandbox)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from codex_app_bridge.conformance.mock_responses import MockResponses
from codex_app_bridge.conformance.real_codex import (
    StdioPeer,
    bridge_command,
    codex_env,
    write_codex_config,
)
from codex_app_bridge.server._settings_line import permission_profile, settings_applied
from codex_app_bridge.server._threads import ThreadSettings
from tests.conftest import CAPTURES_DIR, DATA_DIR, bridge_env

pytestmark = pytest.mark.anyio

TIMEOUT = 60.0
JsonObject = dict[str, Any]


def _kind(line: JsonObject) -> str:
    payload = line.get("payload")
    if line["type"] == "event_msg" and isinstance(payload, dict):
        return f"event_msg:{payload['type']}"
    return str(line["type"])


def _turns(lines: list[JsonObject]) -> list[list[str]]:
    """Line kinds, one list per turn (the lines before the first turn dropped)."""
    turns: list[list[str]] = []
    for line in lines:
        kind = _kind(line)
        if kind == "event_msg:task_started":
            turns.append([])
        if turns:
            turns[-1].append(kind)
    return turns


def _layout(scratch: Path, mock: MockResponses) -> tuple[Path, dict[str, str]]:
    """A scratch ``CODEX_HOME`` whose config points at ``mock``, a work directory, and the
    environment a bridge process runs in there."""
    home, work = scratch / "home", scratch / "work"
    work.mkdir()
    write_codex_config(home, mock.base_url)
    return work, codex_env(home, extra={k: v for k, v in bridge_env().items() if k == "PYTHONPATH"})


async def _run(scratch: Path, mock: MockResponses) -> list[JsonObject]:
    work, env = _layout(scratch, mock)
    with anyio.fail_after(TIMEOUT * 4):
        async with StdioPeer.spawn(
            bridge_command(), env=env, cwd=str(work), stderr_path=scratch / "stderr.log"
        ) as peer:
            await peer.initialize()
            params = {"cwd": str(work), "approvalPolicy": "never", "sandbox": "danger-full-access"}
            thread_id = (await peer.request("thread/start", params))["thread"]["id"]
            for count, step in enumerate(("one", None, "two"), start=1):
                if step is None:
                    await peer.request("thread/compact/start", {"threadId": thread_id})
                else:
                    text = [{"type": "text", "text": step}]
                    await peer.request("turn/start", {"threadId": thread_id, "input": text})
                await peer.wait_for(
                    lambda m, n=count: (
                        m.get("method") == "turn/completed"
                        and sum(1 for x in peer.received if x.get("method") == "turn/completed")
                        >= n
                    ),
                    timeout_s=TIMEOUT,
                )
            read = await peer.request("thread/read", {"threadId": thread_id})
    text = await anyio.Path(read["thread"]["path"]).read_text(encoding="utf-8")
    return [json.loads(x) for x in text.splitlines()]


settings_kind = "event_msg:thread_settings_applied"
PROBED: JsonObject = json.loads(
    (DATA_DIR / "rollout_lines" / "real_0.163.0.json").read_text(encoding="utf-8")
)


def _payloads(lines: list[JsonObject]) -> list[JsonObject]:
    return [line["payload"] for line in lines if line["type"] == "event_msg"]


async def test_a_model_threads_rollout_has_the_binarys_lines_in_the_binarys_places() -> None:
    real = [
        json.loads(x)
        for x in (CAPTURES_DIR / "plain" / "rollout.jsonl").read_text("utf-8").splitlines()
    ]
    with MockResponses() as mock, tempfile.TemporaryDirectory() as scratch:
        mock.set_scenario("plain", text="ok")
        lines = await _run(Path(scratch), mock)
    first, compaction, second = _turns(lines)
    (real_first,) = _turns(real)
    assert first == real_first
    assert second == [
        "event_msg:task_started",
        "turn_context",
        "response_item",
        "event_msg:item_completed",
        "event_msg:item_completed",
        "response_item",
        "token_usage_record",
        "event_msg:token_count",
        "event_msg:task_complete",
    ]
    after = compaction[compaction.index("compacted") :]
    assert after[:4] == ["compacted", "world_state", "turn_context", settings_kind]
    probed = PROBED["compaction"]["kinds"]
    assert after[:4] == probed[probed.index("compacted") :][:4]
    assert [line["ordinal"] for line in lines] == list(range(len(lines)))
    # the settings line is the binary's, field for field (its ids and paths the bridge's)
    (real_applied,) = [p for p in _payloads(real) if p.get("type") == "thread_settings_applied"]
    work = lines[0]["payload"]["cwd"]
    expected = json.loads(
        json.dumps(real_applied)
        .replace(real_applied["thread_id"], lines[0]["payload"]["id"])
        .replace(real_applied["thread_settings"]["cwd"], work)
    )
    applied = [p for p in _payloads(lines) if p.get("type") == "thread_settings_applied"]
    assert applied == [expected, expected]
    assert list(applied[0]["thread_settings"]) == list(real_applied["thread_settings"])

    # the world state has the binary's layout (its texts are the bridge's own)
    def state(of: list[JsonObject]) -> JsonObject:
        return next(line["payload"] for line in of if line["type"] == "world_state")

    assert state(lines)["full"] is True
    assert sorted(state(lines)["state"]) == sorted(state(real)["state"])
    # each response's usage with the turn's and the thread's totals
    records = [line["payload"] for line in lines if line["type"] == "token_usage_record"]
    (real_record,) = [line["payload"] for line in real if line["type"] == "token_usage_record"]
    assert [sorted(r) for r in records] == [sorted(real_record)] * len(records)
    thread_id = lines[0]["payload"]["id"]
    assert {(r["thread_id"], r["session_id"]) for r in records} == {(thread_id, thread_id)}
    totals = [r["thread_token_usage"]["total_tokens"] for r in records]
    assert totals == sorted(totals)
    assert len(set(totals)) == len(totals)
    assert all(r["turn_token_usage"] == r["usage"] for r in records)  # one response per turn


def _sandbox_settings(sandbox: JsonObject, cwd: str) -> ThreadSettings:
    from pydantic import TypeAdapter

    from codex_app_bridge.protocol.v2 import SandboxPolicy

    policy = TypeAdapter(SandboxPolicy).validate_python(sandbox)
    return ThreadSettings(cwd=cwd, model="mock-model", model_provider="mock", sandbox=policy)


@pytest.mark.parametrize(
    ("mode", "sandbox"),
    [
        ("danger-full-access", {"type": "dangerFullAccess"}),
        ("read-only", {"type": "readOnly"}),
        ("workspace-write", {"type": "workspaceWrite"}),
    ],
)
def test_the_permission_profile_of_each_sandbox_is_the_binarys(
    mode: str, sandbox: JsonObject
) -> None:
    expected = json.loads(json.dumps(PROBED["profiles"][mode]).replace("<cwd>", "/w/project"))
    assert permission_profile(_sandbox_settings(sandbox, "/w/project")) == expected


def test_a_workspace_write_snapshot_with_a_writable_root_is_the_binarys() -> None:
    probed = PROBED["workspace_write_extra_root"]
    expected = json.loads(
        json.dumps(probed["thread_settings"])
        .replace("<cwd>", "/w/project")
        .replace("<extra>", "/w/extra")
    )
    sandbox = {
        "type": "workspaceWrite",
        "writableRoots": ["/w/extra"],
        "networkAccess": True,
        "excludeSlashTmp": True,
        "excludeTmpdirEnvVar": True,
    }
    settings = _sandbox_settings(sandbox, "/w/project")
    settings.approval_policy = "never"
    event = settings_applied("t", settings, "detailed")
    dumped = json.loads(event.thread_settings.model_dump_json(by_alias=True))
    assert dumped == expected
    assert list(dumped) == list(expected)


async def test_a_goal_set_before_the_first_turn_is_the_rollouts_first_line() -> None:
    """As probed: ``session_meta``, the goal set (turnless ``thread_goal_updated``), the settings
    checkpoint, a second set; a turn; two sets after it; ``thread/goal/clear`` writes nothing."""
    with MockResponses() as mock, tempfile.TemporaryDirectory() as raw:
        mock.set_scenario("plain", text="ok")
        scratch = Path(raw)
        work, env = _layout(scratch, mock)
        with anyio.fail_after(TIMEOUT * 4):
            async with StdioPeer.spawn(
                bridge_command(), env=env, cwd=str(work), stderr_path=scratch / "stderr.log"
            ) as peer:
                await peer.initialize()
                params = {"cwd": str(work), "approvalPolicy": "never"}
                thread_id = (await peer.request("thread/start", params))["thread"]["id"]

                async def goal(**fields: Any) -> None:
                    await peer.request("thread/goal/set", {"threadId": thread_id, **fields})

                await goal(objective="x", status="paused")
                await goal(status="paused", tokenBudget=50)
                text = [{"type": "text", "text": "hi"}]
                done = peer.expect(lambda m: m.get("method") == "turn/completed")
                await peer.request("turn/start", {"threadId": thread_id, "input": text})
                await peer.wait(done, TIMEOUT)
                await goal(status="paused", tokenBudget=70)
                await peer.request("thread/goal/clear", {"threadId": thread_id})
                await goal(objective="y", status="paused")
                read = await peer.request("thread/read", {"threadId": thread_id})
        text = await anyio.Path(read["thread"]["path"]).read_text(encoding="utf-8")
    lines = [json.loads(x) for x in text.splitlines()]
    kinds = [_kind(line) for line in lines]
    assert kinds == PROBED["goal_set_before_first_turn"]["kinds"]
    goals = [p for p in _payloads(lines) if p["type"] == "thread_goal_updated"]
    assert [(g["goal"]["objective"], g["goal"].get("tokenBudget")) for g in goals] == [
        ("x", None),
        ("x", 50),
        ("x", 70),
        ("y", None),
    ]
    assert all("turnId" not in g and g["threadId"] == thread_id for g in goals)
    assert "tokenBudget" not in goals[0]["goal"]


async def test_a_resume_after_a_restart_checkpoints_the_settings_as_the_binary() -> None:
    """Two turns, a new server process, ``thread/resume``, a turn: the resumed thread's first
    line is the settings checkpoint, before the turn (probed ``resume_after_restart``)."""
    with MockResponses() as mock, tempfile.TemporaryDirectory() as raw:
        mock.set_scenario("plain", text="ok")
        scratch = Path(raw)
        work, env = _layout(scratch, mock)
        thread_id = ""
        path = ""
        with anyio.fail_after(TIMEOUT * 4):
            for process, turns in enumerate((2, 1)):
                async with StdioPeer.spawn(
                    bridge_command(),
                    env=env,
                    cwd=str(work),
                    stderr_path=scratch / f"stderr.{process}.log",
                ) as peer:
                    await peer.initialize()
                    params = {"cwd": str(work), "approvalPolicy": "never"}
                    if process == 0:
                        started = await peer.request("thread/start", params)
                        thread_id = started["thread"]["id"]
                    else:
                        await peer.request("thread/resume", {"threadId": thread_id})
                    for _ in range(turns):
                        done = peer.expect(lambda m: m.get("method") == "turn/completed")
                        text = [{"type": "text", "text": "hi"}]
                        await peer.request("turn/start", {"threadId": thread_id, "input": text})
                        await peer.wait(done, TIMEOUT)
                    read = await peer.request("thread/read", {"threadId": thread_id})
                    path = read["thread"]["path"]
        text = await anyio.Path(path).read_text(encoding="utf-8")
    lines = [json.loads(x) for x in text.splitlines()]
    assert [_kind(line) for line in lines] == PROBED["resume_after_restart"]["kinds"]
    applied = [p for p in _payloads(lines) if p["type"] == "thread_settings_applied"]
    assert len(applied) == 2
    assert applied[0]["thread_settings"] == applied[1]["thread_settings"]


def _context_updates(lines: list[JsonObject]) -> list[list[str]]:
    """For each turn: the leading tag of each message it records before the user's own."""
    turns: list[list[str]] = []
    open_turn = False
    for line in lines:
        if _kind(line) == "event_msg:task_started":
            turns.append([])
            open_turn = True
            continue
        payload = line["payload"]
        if open_turn and line["type"] == "response_item" and payload.get("type") == "message":
            text = str(payload["content"][0].get("text", ""))
            if text == "hi":
                open_turn = False
            else:
                turns[-1].append(text.split(">", 1)[0] + ">")
    return turns


def _context_updates_of_kinds(kinds: list[str]) -> list[list[str]]:
    """The probed turns' context-update message counts (as tags: the binary's layout is known
    from the probe, permissions first)."""
    tags = ["<permissions instructions>", "<environment_context>"]
    out: list[list[str]] = []
    turn: list[str] | None = None
    for kind in kinds:
        if kind == "event_msg:task_started":
            turn = []
            out.append(turn)
        elif turn is not None and kind == "response_item":
            turn.append("?")
        elif turn is not None and kind == "event_msg:item_completed":
            turn = None
    # each turn's last message before its first item_completed is the user's own
    return [tags[: len(t) - 1] for t in out]


def _checkpointed_turns(kinds: list[str]) -> list[bool]:
    """For each turn: whether a ``thread_settings_applied`` line comes right before its start."""
    return [
        index > 0 and kinds[index - 1] == settings_kind
        for index, kind in enumerate(kinds)
        if kind == "event_msg:task_started"
    ]


async def test_a_turns_overrides_are_checkpointed_and_a_change_is_announced() -> None:
    """As probed: two turns, a turn overriding the approval policy, the same override again,
    a sandbox override: each overriding turn's start follows a ``thread_settings_applied``
    line; ``thread/settings/updated`` only for the two that changed something."""
    with MockResponses() as mock, tempfile.TemporaryDirectory() as raw:
        mock.set_scenario("plain", text="ok")
        scratch = Path(raw)
        work, env = _layout(scratch, mock)
        overrides: list[JsonObject] = [
            {},
            {},
            {"approvalPolicy": "on-request"},
            {"approvalPolicy": "on-request"},
            {"sandboxPolicy": {"type": "readOnly"}},
        ]
        with anyio.fail_after(TIMEOUT * 6):
            async with StdioPeer.spawn(
                bridge_command(), env=env, cwd=str(work), stderr_path=scratch / "stderr.log"
            ) as peer:
                await peer.initialize()
                params = {
                    "cwd": str(work),
                    "approvalPolicy": "never",
                    "sandbox": "danger-full-access",
                }
                thread_id = (await peer.request("thread/start", params))["thread"]["id"]
                for extra in overrides:
                    done = peer.expect(lambda m: m.get("method") == "turn/completed")
                    text = [{"type": "text", "text": "hi"}]
                    turn = {"threadId": thread_id, "input": text, **extra}
                    await peer.request("turn/start", turn)
                    await peer.wait(done, TIMEOUT)
                read = await peer.request("thread/read", {"threadId": thread_id})
                received = list(peer.received)
        text = await anyio.Path(read["thread"]["path"]).read_text(encoding="utf-8")
    lines = [json.loads(x) for x in text.splitlines()]
    kinds = [_kind(line) for line in lines]
    # the context an overriding turn records carries only what changed, as the binary's (one
    # permissions message for an approval policy, permissions and environment for a sandbox)
    assert _context_updates(lines)[1:] == [
        [],
        ["<permissions instructions>"],
        [],
        ["<permissions instructions>", "<environment_context>"],
    ]
    probed_updates = _context_updates_of_kinds(PROBED["turn_overrides"]["kinds"])
    assert _context_updates(lines)[1:] == probed_updates[1:]
    probed = PROBED["turn_overrides"]["kinds"]
    assert (
        _checkpointed_turns(kinds)
        == _checkpointed_turns(probed)
        == [
            False,
            False,
            True,
            True,
            True,
        ]
    )
    announced = [
        m["params"]["threadSettings"]
        for m in received
        if m.get("method") == "thread/settings/updated"
    ]
    assert [(s["approvalPolicy"], s["sandboxPolicy"]["type"]) for s in announced] == [
        ("on-request", "dangerFullAccess"),
        ("on-request", "readOnly"),
    ]
