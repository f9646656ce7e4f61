"""Sandbox policies with Codex's meaning, and the Linux sandbox: bubblewrap.

``SandboxPolicy`` is what a thread, turn or ``command/exec`` asks for (``read-only``,
``workspace-write`` with writable roots and a network flag, ``danger-full-access``, or an
external sandbox, which Codex trusts to confine the command itself). What is writable
(``writable_roots``): the cwd, ``/tmp`` (unless ``excludeSlashTmp``), ``$TMPDIR`` (unless
``excludeTmpdirEnvVar``) and the extra roots that exist; inside each root, ``.git``, ``.agents``,
``.codex`` and ``.aws`` stay read-only, present or not. Reads are never restricted.

``Bubblewrap`` wraps a command so the kernel enforces that: the whole file system bound
read-only, each writable root bound writable with its protected directories re-mounted
read-only (an empty read-only tmpfs where one is missing; the mount point bubblewrap had to
create on the host is removed afterwards), a new user, pid, ipc and (unless network is allowed)
network namespace, a new session, and ``--die-with-parent``. It is found on ``PATH``; whether it
works here is tried once (``Bubblewrap.probe``) and said at start-up. Without it a command that
needs the sandbox is never run unconfined: the policy decides between asking and refusing
(``_policy``).

Pure apart from ``probe`` (runs bubblewrap once) and the mount-point cleanup.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from codex_app_bridge.machine._seccomp import SeccompMode, network_filter

__all__ = [
    "PROTECTED_DIRS",
    "Bubblewrap",
    "SandboxPolicy",
    "SandboxUnavailable",
    "WrappedCommand",
]

PROTECTED_DIRS: Final = (".git", ".agents", ".codex", ".aws")
SandboxKind = Literal["danger-full-access", "read-only", "workspace-write", "external-sandbox"]
_WIRE_KINDS: Final[dict[str, SandboxKind]] = {
    "dangerFullAccess": "danger-full-access",
    "readOnly": "read-only",
    "workspaceWrite": "workspace-write",
    "externalSandbox": "external-sandbox",
}


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    kind: SandboxKind = "read-only"
    writable_roots: tuple[str, ...] = ()
    network_access: bool = False
    exclude_tmpdir_env_var: bool = False
    exclude_slash_tmp: bool = False

    @classmethod
    def from_wire(cls, value: object) -> SandboxPolicy:
        """From ``thread/start.sandbox`` (``"workspace-write"``), a ``sandboxPolicy`` object
        (``{"type":"workspaceWrite",...}``) or a core policy (``{"type":"workspace-write"}``)."""
        if isinstance(value, str):
            kind = _WIRE_KINDS.get(value, value)
            if kind not in ("danger-full-access", "read-only", "workspace-write"):
                raise ValueError(f"unknown sandbox mode {value!r}")
            return cls(cast("SandboxKind", kind))
        if not isinstance(value, Mapping):
            raise ValueError(f"unknown sandbox policy {value!r}")
        obj = cast("Mapping[str, Any]", value)
        raw_kind = obj.get("type") or obj.get("mode")
        kind = _WIRE_KINDS.get(str(raw_kind), str(raw_kind))
        if kind not in ("danger-full-access", "read-only", "workspace-write", "external-sandbox"):
            raise ValueError(f"unknown sandbox policy {value!r}")
        network = obj.get("networkAccess", obj.get("network_access", False))
        roots = obj.get("writableRoots", obj.get("writable_roots")) or ()
        return cls(
            kind,
            tuple(str(r) for r in cast("Sequence[object]", roots)),
            network is True or network == "enabled",
            bool(obj.get("excludeTmpdirEnvVar", obj.get("exclude_tmpdir_env_var", False))),
            bool(obj.get("excludeSlashTmp", obj.get("exclude_slash_tmp", False))),
        )

    @property
    def needs_sandbox(self) -> bool:
        """Whether commands under this policy run inside bubblewrap."""
        return self.kind in ("read-only", "workspace-write")

    @property
    def has_full_network(self) -> bool:
        return self.kind in ("danger-full-access", "external-sandbox") or self.network_access

    def writable_roots_for(
        self, cwd: str, env: Mapping[str, str] | None = None, *, resolve: bool = True
    ) -> list[str]:
        """The real paths commands may write under (none for read-only; ``/`` for full access);
        not ``resolve``: the paths as named, made absolute and normalised (no symlink followed)."""
        if self.kind in ("danger-full-access", "external-sandbox"):
            return ["/"]
        if self.kind == "read-only":
            return []
        env = os.environ if env is None else env
        candidates = [cwd]
        if not self.exclude_slash_tmp:
            candidates.append("/tmp")
        tmpdir = env.get("TMPDIR")
        if tmpdir and not self.exclude_tmpdir_env_var:
            candidates.append(tmpdir)
        candidates.extend(os.path.join(cwd, r) for r in self.writable_roots)
        roots: list[str] = []
        for path in candidates:
            real = os.path.realpath(path) if resolve else os.path.normpath(os.path.abspath(path))
            if os.path.isdir(real) and real not in roots:
                roots.append(real)
        return roots

    def can_write(
        self, path: str, cwd: str, env: Mapping[str, str] | None = None, *, resolve: bool = True
    ) -> bool:
        """Whether ``path`` (absolute, symlinks followed as the kernel would) is writable; not
        ``resolve``: judged by its name alone, as core judges a patch's paths (a symlink in a
        writable root to a directory outside it counts as inside)."""
        real = _real_target(path) if resolve else os.path.normpath(os.path.abspath(path))
        for root in self.writable_roots_for(cwd, env, resolve=resolve):
            if root == "/":
                return True
            if real == root or real.startswith(root + os.sep):
                inside = os.path.relpath(real, root).split(os.sep)
                return not (inside and inside[0] in PROTECTED_DIRS)
        return False


def _real_target(path: str) -> str:
    """``path`` with every symlink of its existing part resolved (a missing tail kept)."""
    path = os.path.abspath(path)
    if os.path.islink(path):
        return os.path.realpath(path)
    head, tail = os.path.split(path)
    return os.path.join(os.path.realpath(head), tail) if tail else os.path.realpath(path)


class SandboxUnavailable(Exception):
    """No usable sandbox here: ``str(exc)`` says why (shown to the model and the client)."""


_MOUNT_POINT_USERS: Final[dict[str, int]] = {}
"""Mount points made for missing protected directories -> sandboxes still using them."""


@dataclass(frozen=True, slots=True)
class WrappedCommand:
    argv: list[str]
    created_mount_points: tuple[str, ...] = ()
    hand_over: tuple[int, ...] = ()
    """Descriptors ``argv`` names (the seccomp program's pipe): the child gets them under the
    same numbers, and ``spawn`` closes them in the server, whether the child started or not."""

    def __post_init__(self) -> None:
        for path in self.created_mount_points:
            _MOUNT_POINT_USERS[path] = _MOUNT_POINT_USERS.get(path, 0) + 1

    def cleanup(self) -> None:
        """Once no sandbox uses them, remove the empty mount points bubblewrap created on the
        host for missing protected directories (never a directory with anything in it)."""
        for path in self.created_mount_points:
            users = _MOUNT_POINT_USERS.get(path, 1) - 1
            if users > 0:
                _MOUNT_POINT_USERS[path] = users
                continue
            _MOUNT_POINT_USERS.pop(path, None)
            with contextlib.suppress(OSError):
                os.rmdir(path)


@dataclass
class Bubblewrap:
    """The bubblewrap found on ``PATH`` (``path``), tried once (``probe``)."""

    path: str | None
    _problem: str | None = field(default=None)
    _probed: bool = False

    @classmethod
    def find(cls, search_path: str | None = None) -> Bubblewrap:
        return cls(shutil.which("bwrap", path=search_path))

    def probe(self) -> str | None:
        """``None`` if bubblewrap runs a sandboxed command here, else what is wrong (cached)."""
        if self._probed:
            return self._problem
        self._probed = True
        if self.path is None:
            self._problem = (
                "bubblewrap (bwrap) was not found on PATH; install it (apt-get install "
                "bubblewrap) to run sandboxed commands"
            )
            return self._problem
        wrapped = self.wrap(["/bin/true"], SandboxPolicy("read-only"), "/")
        try:
            done = subprocess.run(
                wrapped.argv,
                capture_output=True,
                timeout=30,
                check=False,
                pass_fds=wrapped.hand_over,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            self._problem = f"bubblewrap at {self.path} cannot run: {exc}"
            return self._problem
        finally:
            for fd in wrapped.hand_over:
                os.close(fd)
        if done.returncode != 0:
            detail = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
            self._problem = f"bubblewrap at {self.path} cannot create a sandbox here: {detail}"
        return self._problem

    def require(self) -> str:
        problem = self.probe()
        if problem is not None or self.path is None:
            raise SandboxUnavailable(problem or "bubblewrap is unavailable")
        return self.path

    def wrap(
        self,
        argv: Sequence[str],
        policy: SandboxPolicy,
        cwd: str,
        env: Mapping[str, str] | None = None,
    ) -> WrappedCommand:
        """``argv`` run inside bubblewrap under ``policy`` (see the module docstring)."""
        bwrap = self.path or "bwrap"
        args = [bwrap, "--new-session", "--die-with-parent", "--ro-bind", "/", "/"]
        args += ["--dev", "/dev"]
        created: list[str] = []
        for root in policy.writable_roots_for(cwd, env):
            args += ["--bind", root, root]
            for name in PROTECTED_DIRS:
                inner = os.path.join(root, name)
                if os.path.lexists(inner):
                    if os.path.isdir(inner) and not os.path.islink(inner):
                        args += ["--ro-bind", inner, inner]
                    continue
                created.append(inner)
                args += ["--perms", "555", "--tmpfs", inner, "--remount-ro", inner]
        args += ["--unshare-user", "--unshare-pid", "--unshare-ipc"]
        if not policy.network_access:
            args.append("--unshare-net")
        mode = SeccompMode.VM_SOCKETS if policy.network_access else SeccompMode.RESTRICTED
        program = network_filter(mode)
        hand_over: tuple[int, ...] = ()
        if program is not None:
            hand_over = (_program_pipe(program),)
            args += ["--seccomp", str(hand_over[0])]
        args += ["--proc", "/proc", "--cap-drop", "ALL", "--chdir", cwd, "--", *argv]
        return WrappedCommand(args, tuple(created), hand_over)


def _program_pipe(program: bytes) -> int:
    """The read end of a pipe that holds ``program`` and then ends (bubblewrap reads it to EOF;
    a program is a few hundred bytes, far below a pipe's buffer)."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, program)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    return read_end
