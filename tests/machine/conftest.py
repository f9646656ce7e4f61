"""A turn as the machine tools see it, recording what they emit and answering approvals."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from codex_app_bridge.machine import ApprovalPolicy, Bubblewrap, SandboxPolicy, TurnDiff
from codex_app_bridge.protocol.core import EventMsg

WAIT_S = 60


@dataclass
class FakeHost:
    cwd: str
    approval_policy: ApprovalPolicy = field(default_factory=lambda: ApprovalPolicy("never"))
    sandbox_policy: SandboxPolicy = field(
        default_factory=lambda: SandboxPolicy("danger-full-access")
    )
    thread_id: str = "thread-1"
    turn_id: str = "turn-1"
    decisions: list[object] = field(default_factory=list[object])
    events: list[EventMsg] = field(default_factory=list[EventMsg])
    requests: list[EventMsg] = field(default_factory=list[EventMsg])
    changed: anyio.Event = field(default_factory=anyio.Event)
    diff: TurnDiff = field(init=False)
    room_waits: int = 0

    def __post_init__(self) -> None:
        self.diff = TurnDiff(self.cwd)

    def emit(self, event: EventMsg) -> None:
        self.events.append(event)
        self.changed.set()
        self.changed = anyio.Event()

    async def wait_for_room(self) -> None:
        self.room_waits += 1

    async def request_approval(self, request: EventMsg) -> object:
        self.requests.append(request)
        return self.decisions.pop(0)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e.model_dump(mode="json", by_alias=True) for e in self.events if e.type == kind]

    async def wait_for(self, check: Callable[[], bool]) -> None:
        with anyio.fail_after(WAIT_S):
            while not check():
                await self.changed.wait()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


_BWRAP = Bubblewrap.find()


def usable_bubblewrap() -> Bubblewrap:
    problem = _BWRAP.probe()
    if problem is not None:
        pytest.skip(f"no usable sandbox here: {problem}")
    return _BWRAP


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def environ_without_tmpdir() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "TMPDIR"}


async def wait_gone(pid: int) -> None:
    """Until process ``pid`` (any process, not only a child) has exited: its pidfd turns
    readable then."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await anyio.wait_readable(fd)
    finally:
        os.close(fd)
