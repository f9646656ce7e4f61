"""The sandbox and the policies, enforced: under read-only nothing is written, under
workspace-write only the writable roots (their .git/.agents/.codex/.aws excepted), no network
unless allowed, and without a usable sandbox nothing runs unconfined
(``spec/machine-tools.md`` §5, §6, §9)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import orjson
import pytest

from codex_app_bridge.machine import (
    ApprovalPolicy,
    Bubblewrap,
    MachineTools,
    SandboxPolicy,
    decide_exec,
    decide_patch,
)
from codex_app_bridge.machine._proc import LIVE
from codex_app_bridge.protocol.core import EventMsg
from tests.machine.conftest import WAIT_S, FakeHost, environ_without_tmpdir, usable_bubblewrap

pytestmark = pytest.mark.anyio

WW = SandboxPolicy("workspace-write", exclude_slash_tmp=True, exclude_tmpdir_env_var=True)


def _args(**kwargs: object) -> str:
    kwargs.setdefault("login", False)
    kwargs.setdefault("yield_time_ms", 30000)
    return orjson.dumps(kwargs).decode()


def _names(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def _exists(path: str) -> bool:
    return os.path.lexists(path)


def _tools(tmp_path: Path, bwrap: Bubblewrap) -> MachineTools:
    return MachineTools(
        bubblewrap=bwrap, codex_home=str(tmp_path / "home"), base_env=environ_without_tmpdir()
    )


@pytest.mark.parametrize("policy", ["never", "on-request", "untrusted"])
async def test_workspace_write_confines_writes_to_the_writable_roots(
    tmp_path: Path, work: Path, policy: str
) -> None:
    bwrap = usable_bubblewrap()
    host = FakeHost(
        str(work),
        approval_policy=ApprovalPolicy.from_wire(policy),
        sandbox_policy=WW,
        decisions=["approved"],
    )
    cmd = "touch ok ../outside .git/x .codex/y; mkdir -p .git; echo done; exit 1"
    async with _tools(tmp_path, bwrap) as tools:
        out = await tools.call(host, "exec_command", "c1", _args(cmd=cmd))
    assert isinstance(out, str)
    assert "Read-only file system" in out
    assert (work / "ok").exists()
    assert not (tmp_path / "outside").exists()
    # the protected directories' mount points are gone from the host afterwards
    assert _names(work) == ["ok"]
    # a sandbox denial is never re-run unsandboxed (0.163.0 does under untrusted)
    assert len(host.requests) == (1 if policy == "untrusted" else 0)


async def test_read_only_writes_nothing_anywhere(tmp_path: Path, work: Path) -> None:
    bwrap = usable_bubblewrap()
    host = FakeHost(str(work), sandbox_policy=SandboxPolicy("read-only"))
    async with _tools(tmp_path, bwrap) as tools:
        out = await tools.call(
            host,
            "exec_command",
            "c1",
            _args(cmd=f"touch x {tmp_path}/y /tmp/z-{os.getpid()}; echo rc=$?"),
        )
    assert isinstance(out, str)
    assert "rc=1" in out
    assert _names(work) == []
    assert not (tmp_path / "y").exists()
    assert not _exists(f"/tmp/z-{os.getpid()}")


@pytest.mark.parametrize("network", [False, True])
async def test_network_is_blocked_unless_allowed(tmp_path: Path, work: Path, network: bool) -> None:
    bwrap = usable_bubblewrap()
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    policy = SandboxPolicy(
        "workspace-write",
        network_access=network,
        exclude_slash_tmp=True,
        exclude_tmpdir_env_var=True,
    )
    host = FakeHost(str(work), sandbox_policy=policy)
    script = (
        "import socket\n"
        "s = socket.socket()\n"
        "s.settimeout(20)\n"
        "try:\n"
        f"    s.connect(('127.0.0.1', {port})); print('connected')\n"
        "except OSError as e:\n"
        "    print('refused', e)\n"
    )
    (work / "probe.py").write_text(script)
    try:
        async with _tools(tmp_path, bwrap) as tools:
            out = await tools.call(host, "exec_command", "c1", _args(cmd="python3 probe.py"))
    finally:
        server.close()
    assert isinstance(out, str)
    assert ("connected" in out) is network, out


@pytest.mark.parametrize("policy", ["never", "on-request", "untrusted"])
async def test_without_a_sandbox_nothing_runs_unconfined_silently(
    tmp_path: Path, work: Path, policy: str
) -> None:
    host = FakeHost(
        str(work),
        approval_policy=ApprovalPolicy.from_wire(policy),
        sandbox_policy=WW,
        decisions=["denied"],
    )
    missing = Bubblewrap.find(search_path=str(tmp_path / "empty-path"))
    assert missing.path is None
    async with _tools(tmp_path, missing) as tools:
        out = await tools.call(host, "exec_command", "c1", _args(cmd="touch ran"))
    assert not (work / "ran").exists()
    if policy == "never":
        assert isinstance(out, str)
        assert out.startswith("sandbox unavailable: bubblewrap (bwrap) was not found on PATH")
        assert host.requests == []
    else:
        request = host.requests[0].model_dump(mode="json")
        assert "sandbox is unavailable" in request["reason"]


def test_escalation_is_refused_under_never_and_asked_under_on_request() -> None:
    never = decide_exec(ApprovalPolicy("never"), WW, escalated=True, sandbox_problem=None)
    assert never.action == "refuse"
    assert never.text == (
        "approval policy is Never; reject command — you cannot ask for escalated permissions if "
        "the approval policy is Never"
    )
    granular = ApprovalPolicy.from_wire(
        {"granular": {"sandbox_approval": False, "rules": True, "mcp_elicitations": True}}
    )
    refused = decide_exec(granular, WW, escalated=True, sandbox_problem=None)
    assert refused.text.startswith(
        "approval policy is Granular(GranularApprovalConfig { sandbox_approval: false, rules: true, "
        "skill_approval: false, request_permissions: false, mcp_elicitations: true }); reject command"
    )
    asked = decide_exec(
        ApprovalPolicy("on-request"), WW, escalated=True, sandbox_problem=None, justification="why"
    )
    assert (asked.action, asked.sandboxed, asked.reason) == ("ask", False, "why")
    plain = decide_exec(ApprovalPolicy("on-request"), WW, escalated=False, sandbox_problem=None)
    assert (plain.action, plain.sandboxed) == ("run", True)
    full = decide_exec(
        ApprovalPolicy("untrusted"),
        SandboxPolicy("danger-full-access"),
        escalated=False,
        sandbox_problem=None,
    )
    assert (full.action, full.sandboxed) == ("ask", False)


def test_patches_outside_the_writable_roots_are_refused_or_asked(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (work / "link").symlink_to(outside)
    inside = [str(work / "a.txt")]
    escapes = [
        [str(tmp_path / "x.txt")],  # ..
        ["/etc/x.txt"],  # absolute
        [str(work / ".git" / "config")],  # a protected directory
    ]
    never, on_request = ApprovalPolicy("never"), ApprovalPolicy("on-request")
    assert decide_patch(never, WW, inside, str(work)).action == "apply"
    # judged by name, as core: the write itself is then refused (test_tools)
    assert decide_patch(never, WW, [str(work / "link" / "x.txt")], str(work)).action == "apply"
    for paths in escapes:
        verdict = decide_patch(never, WW, paths, str(work))
        assert verdict.text == (
            "patch rejected: writing outside of the project; rejected by user approval settings"
        ), paths
        assert decide_patch(on_request, WW, paths, str(work)).action == "ask"
    read_only = decide_patch(never, SandboxPolicy("read-only"), inside, str(work))
    assert read_only.text == (
        "patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings"
    )
    assert decide_patch(ApprovalPolicy("untrusted"), WW, inside, str(work)).action == "ask"
    assert decide_patch(never, WW, [], str(work)).text == "patch rejected: empty patch"


@pytest.mark.parametrize("policy", ["never", "on-request"])
async def test_a_patch_through_a_symlink_out_of_the_cwd_is_refused_at_the_write(
    tmp_path: Path, work: Path, policy: str
) -> None:
    """As 0.163.0 (model-mode ``apply_patch_escape``): judged inside by its name, the patch
    starts its item without a prompt; the write is refused as core's sandbox refuses it (a
    failed item, ``Failed to write file``), and nothing is written outside."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (work / "link").symlink_to(outside)
    host = FakeHost(str(work), approval_policy=ApprovalPolicy.from_wire(policy), sandbox_policy=WW)
    patch = "*** Begin Patch\n*** Add File: link/x.txt\n+x\n*** End Patch\n"
    async with _tools(tmp_path, Bubblewrap(None)) as tools:
        out = await tools.call(host, "apply_patch", "p1", patch)
    assert isinstance(out, str)
    assert out.startswith("Exit code: 1\nWall time: ")
    assert out.endswith(f" seconds\nOutput:\nFailed to write file {work}/link/x.txt\n")
    assert host.requests == []
    assert [e.type for e in host.events] == ["item_started", "item_completed"]
    assert host.of_type("item_completed")[0]["item"]["status"] == "failed"
    assert _names(outside) == []


async def test_a_declined_patch_leaves_no_trace(tmp_path: Path, work: Path) -> None:
    host = FakeHost(
        str(work),
        approval_policy=ApprovalPolicy("untrusted"),
        sandbox_policy=WW,
        decisions=["denied"],
    )
    patch = "*** Begin Patch\n*** Add File: new.txt\n+x\n*** Update File: keep.txt\n@@\n-a\n+b\n*** End Patch\n"
    (work / "keep.txt").write_text("a\n")
    async with _tools(tmp_path, Bubblewrap(None)) as tools:
        out = await tools.call(host, "apply_patch", "p1", patch)
    assert out == "patch rejected by user"
    assert _names(work) == ["keep.txt"]
    assert (work / "keep.txt").read_text() == "a\n"
    assert [e.type for e in host.events] == ["item_started", "item_completed"]
    assert host.of_type("item_completed")[0]["item"]["status"] == "declined"


@dataclass
class _UnansweredHost(FakeHost):
    """Asks and never hears back: the turn is interrupted, the thread unloads or the wait times
    out (each cancels the call) while the request is pending."""

    asked: anyio.Event = field(default_factory=anyio.Event)

    async def request_approval(self, request: EventMsg) -> object:
        self.requests.append(request)
        self.asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("exec_command", _args(cmd="touch ran; sleep 600 & echo $! > pid")),
        ("apply_patch", "*** Begin Patch\n*** Add File: ran\n+x\n*** End Patch\n"),
    ],
)
async def test_an_approval_left_unanswered_leaves_no_trace(
    tmp_path: Path, work: Path, tool: str, arguments: str
) -> None:
    host = _UnansweredHost(
        str(work),
        approval_policy=ApprovalPolicy("untrusted"),
        sandbox_policy=SandboxPolicy("danger-full-access"),
    )
    live_before = set(LIVE)
    async with _tools(tmp_path, Bubblewrap(None)) as tools, anyio.create_task_group() as group:
        group.start_soon(tools.call, host, tool, "c1", arguments)
        with anyio.fail_after(WAIT_S):
            await host.asked.wait()
        group.cancel_scope.cancel()
    assert len(host.requests) == 1
    assert _names(work) == []
    assert set(LIVE) == live_before  # no process was started
