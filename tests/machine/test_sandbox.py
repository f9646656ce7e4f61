"""The sandbox and the policies, enforced: under read-only nothing is written, under
workspace-write only the writable roots (their .git/.agents/.codex/.aws excepted), no network
unless allowed, and without a usable sandbox nothing runs unconfined
(``spec/machine-tools.md`` §5, §6, §9)."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import orjson
import pytest

from codex_app_bridge.conformance.real_codex import real_codex_path
from codex_app_bridge.machine import (
    ApprovalPolicy,
    Bubblewrap,
    MachineTools,
    SandboxPolicy,
    decide_exec,
    decide_patch,
)
from codex_app_bridge.machine._proc import LIVE
from codex_app_bridge.machine._seccomp import SeccompMode, network_filter
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


SYSCALL_PROBE = """\
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)

def call(name, *args):
    if libc.syscall(*(ctypes.c_long(a) for a in args)) < 0:
        raise OSError(ctypes.get_errno(), name)

def pair_send():
    a, b = socket.socketpair()
    a.send(b"x")
    b.recv(1)

def unix_bind():
    socket.socket(socket.AF_UNIX).bind("\\0codex-probe-" + os.urandom(8).hex())

probes = {
    "inet": lambda: socket.socket(socket.AF_INET).close(),
    "inet6": lambda: socket.socket(socket.AF_INET6).close(),
    "unix": lambda: socket.socket(socket.AF_UNIX).close(),
    "netlink": lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW).close(),
    "vsock": lambda: socket.socket(40, socket.SOCK_STREAM).close(),
    "socketpair": lambda: socket.socketpair(),
    "socketpair_send": pair_send,
    "unix_bind": unix_bind,
    "unix_connect": lambda: socket.socket(socket.AF_UNIX).connect("/nonexistent/sock"),
    "ptrace": lambda: call("ptrace", 101, 3, os.getpid(), 0, 0),
    "process_vm_readv": lambda: call("process_vm_readv", 310, os.getpid(), 0, 0, 0, 0, 0),
    "io_uring_setup": lambda: call("io_uring_setup", 425, 1, 0),
}
for name, probe in probes.items():
    try:
        probe()
        print("probe", name, "ok")
    except OSError as e:
        print("probe", name, os.strerror(e.errno))
"""
"""What a sandboxed command may do with sockets and a few other system calls (x86_64 numbers),
one line per probe: ``probe <name> ok`` or the error."""

_DENIED = "Operation not permitted"
_EXPECTED = {
    False: {
        "inet": _DENIED,
        "inet6": _DENIED,
        "unix": "ok",
        "netlink": _DENIED,
        "vsock": _DENIED,
        "socketpair": "ok",
        "socketpair_send": _DENIED,
        "unix_bind": _DENIED,
        "unix_connect": _DENIED,
        "ptrace": _DENIED,
        "process_vm_readv": _DENIED,
        "io_uring_setup": _DENIED,
    },
    True: {
        "inet": "ok",
        "inet6": "ok",
        "unix": "ok",
        "netlink": "ok",
        "vsock": _DENIED,
        "socketpair": "ok",
        "socketpair_send": "ok",
        "unix_bind": "ok",
        "unix_connect": "No such file or directory",
        "ptrace": "No such process",
        "process_vm_readv": "ok",
        "io_uring_setup": _DENIED,
    },
}


def _probe_lines(text: str) -> dict[str, str]:
    """The probe's own lines of a command's output, by probe name. The command runs in a login
    shell, whose start-up may write too: pyenv's ``rehash`` in ``.bashrc`` printed "pyenv: cannot
    rehash: ... isn't writable" inside the sandbox while another test's shell held its lock."""
    lines = (line.split(" ", 2) for line in text.strip().splitlines())
    return {words[1]: words[2] for words in lines if len(words) == 3 and words[0] == "probe"}


def test_only_the_probes_own_lines_are_read() -> None:
    noise = "pyenv: cannot rehash: /root/.pyenv/shims isn't writable"
    text = f"{noise}\nprobe inet Operation not permitted\nprobe unix ok\n"
    assert _probe_lines(text) == {"inet": "Operation not permitted", "unix": "ok"}


def _real_sandbox_probe(work: Path, home: Path, network: bool) -> dict[str, str]:
    """The probe run by 0.163.0's own sandbox (``codex sandbox``, workspace-write); PATH without
    bwrap, so it uses its bundled bubblewrap (the system's needs helper links it refuses to
    make under the temp dir)."""
    home.mkdir()
    config = ["-c", 'sandbox_mode="workspace-write"']
    if network:
        config += ["-c", "sandbox_workspace_write.network_access=true"]
    done = subprocess.run(
        [real_codex_path(), "sandbox", *config, "--", sys.executable, "probe.py"],
        cwd=work,
        env={"PATH": "/nonexistent", "CODEX_HOME": str(home), "HOME": str(home), "LANG": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return _probe_lines(done.stdout)


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the probe uses x86_64 numbers")
@pytest.mark.parametrize("network", [False, True])
async def test_sandboxed_system_calls_are_filtered_as_0_163_0_filters_them(
    tmp_path: Path, work: Path, network: bool
) -> None:
    bwrap = usable_bubblewrap()
    (work / "probe.py").write_text(SYSCALL_PROBE)
    policy = SandboxPolicy(
        "workspace-write",
        network_access=network,
        exclude_slash_tmp=True,
        exclude_tmpdir_env_var=True,
    )
    host = FakeHost(str(work), sandbox_policy=policy)
    cmd = f"{sys.executable} probe.py"
    async with _tools(tmp_path, bwrap) as tools:
        out = await tools.call(host, "exec_command", "c1", _args(cmd=cmd))
    assert isinstance(out, str)
    bridge = _probe_lines(out.split("Output:\n", 1)[1])
    assert bridge == _EXPECTED[network]
    real = await anyio.to_thread.run_sync(
        _real_sandbox_probe, work, tmp_path / "real-home", network
    )
    assert real == bridge


def test_the_filter_kills_other_architectures_and_is_left_out_where_unknown() -> None:
    for machine, audit_arch in (("x86_64", 0xC000003E), ("aarch64", 0xC00000B7)):
        for mode in SeccompMode:
            program = network_filter(mode, machine)
            assert program is not None
            assert len(program) % 8 == 0
            # load the arch, compare, kill the process on a mismatch
            assert program[:24] == struct.pack(
                "=HBBIHBBIHBBI", 0x20, 0, 0, 4, 0x15, 1, 0, audit_arch, 0x06, 0, 0, 0x80000000
            )
    assert network_filter(SeccompMode.RESTRICTED, "riscv64") is None


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
