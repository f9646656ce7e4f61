"""The seccomp filter Codex 0.163.0 puts around a sandboxed command, as a classic-BPF program.

Bubblewrap installs it (``--seccomp FD``) right before it runs the command, so the command and
everything it starts carry it; ``--unshare-net`` stays as a second wall. The rule set is core's
(``linux-sandbox/src/seccomp.rs``), checked against the 0.163.0 binary (``codex sandbox``):

* network restricted (``RESTRICTED``): ``socket`` and ``socketpair`` for any family but
  ``AF_UNIX``, and ``connect accept accept4 bind listen getpeername getsockname shutdown sendto
  sendmmsg recvmmsg getsockopt setsockopt`` fail with ``EPERM`` whatever the socket (so a Unix
  socket can be made but not connected, and ``send`` on a socket pair fails too: ``send`` is
  ``sendto``); ``recvfrom``, ``sendmsg`` and ``recvmsg`` stay, as core leaves them;
* network allowed (``VM_SOCKETS``): only ``AF_VSOCK`` sockets are refused (they reach the host
  around the file-system sandbox);
* both: ``io_uring_setup|enter|register`` fail (io_uring can open sockets without ``socket``),
  and under ``RESTRICTED`` also ``ptrace`` and ``process_vm_readv|writev``.

A program for another architecture is killed at its first system call (core's filter does the
same); on x86_64 the x32 system calls (numbers with bit 30 set, which would dodge the numbers
below) fail with ``EPERM``: a hole core's filter leaves open, closed here. Machines other than
x86_64 and aarch64 get no filter (``network_filter`` answers ``None``): the network namespace
alone keeps the network out there.

Pure: builds bytes (``struct sock_filter`` entries, native byte order), runs nothing.
"""

from __future__ import annotations

import platform
import struct
from dataclasses import dataclass
from enum import Enum
from typing import Final

__all__ = ["SeccompMode", "network_filter"]


class SeccompMode(Enum):
    RESTRICTED = "restricted"
    """No network: every socket family but ``AF_UNIX`` refused, socket calls refused."""
    VM_SOCKETS = "vm_sockets"
    """Network allowed, file system confined: only ``AF_VSOCK`` (the host's side door) refused."""


@dataclass(frozen=True, slots=True)
class _Arch:
    audit: int
    """``AUDIT_ARCH_*``, what ``seccomp_data.arch`` holds for this ABI."""
    calls: dict[str, int]
    x32: bool = False


_X86_64: Final = _Arch(
    0xC000003E,
    {
        "socket": 41,
        "connect": 42,
        "accept": 43,
        "sendto": 44,
        "shutdown": 48,
        "bind": 49,
        "listen": 50,
        "getsockname": 51,
        "getpeername": 52,
        "socketpair": 53,
        "setsockopt": 54,
        "getsockopt": 55,
        "ptrace": 101,
        "accept4": 288,
        "recvmmsg": 299,
        "sendmmsg": 307,
        "process_vm_readv": 310,
        "process_vm_writev": 311,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
    },
    x32=True,
)
_AARCH64: Final = _Arch(
    0xC00000B7,
    {
        "socket": 198,
        "socketpair": 199,
        "bind": 200,
        "listen": 201,
        "accept": 202,
        "connect": 203,
        "getsockname": 204,
        "getpeername": 205,
        "sendto": 206,
        "setsockopt": 208,
        "getsockopt": 209,
        "shutdown": 210,
        "ptrace": 117,
        "accept4": 242,
        "recvmmsg": 243,
        "sendmmsg": 269,
        "process_vm_readv": 270,
        "process_vm_writev": 271,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
    },
)
_ARCHES: Final = {"x86_64": _X86_64, "amd64": _X86_64, "aarch64": _AARCH64, "arm64": _AARCH64}

_IO_URING: Final = ("io_uring_setup", "io_uring_enter", "io_uring_register")
_TRACE: Final = ("ptrace", "process_vm_readv", "process_vm_writev")
_SOCKET_CALLS: Final = (
    "connect",
    "accept",
    "accept4",
    "bind",
    "listen",
    "getpeername",
    "getsockname",
    "shutdown",
    "sendto",
    "sendmmsg",
    "recvmmsg",
    "getsockopt",
    "setsockopt",
)
_AF_UNIX: Final = 1
_AF_VSOCK: Final = 40
_X32_BIT: Final = 0x40000000

# classic BPF (linux/filter.h, linux/seccomp.h)
_LD_W_ABS: Final = 0x20
_JEQ_K: Final = 0x15
_JSET_K: Final = 0x45
_RET_K: Final = 0x06
_RET_KILL_PROCESS: Final = 0x80000000
_RET_ERRNO_EPERM: Final = 0x00050000 | 1
_RET_ALLOW: Final = 0x7FFF0000
_NR: Final = 0
_ARCH: Final = 4
_ARG0_LOW: Final = 16
"""``seccomp_data.args[0]``'s low 32 bits on a little-endian machine (core compares a dword)."""

_ALLOW: Final = "allow"
_DENY: Final = "deny"
_Insn = tuple[int, int | str, int | str, int]
"""(code, jump if true, jump if false, k): a jump is 0 (next) or the label it goes to."""


def network_filter(mode: SeccompMode, machine: str | None = None) -> bytes | None:
    """The filter's program for ``mode`` on ``machine`` (default: this one), ``None`` where no
    filter is known (see the module docstring)."""
    arch = _ARCHES.get((machine or platform.machine()).lower())
    if arch is None:
        return None
    denied = list(_IO_URING)
    if mode is SeccompMode.RESTRICTED:
        denied += [*_TRACE, *_SOCKET_CALLS]
    insns: list[_Insn] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 1, 0, arch.audit),
        (_RET_K, 0, 0, _RET_KILL_PROCESS),
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if arch.x32:
        insns.append((_JSET_K, _DENY, 0, _X32_BIT))
    insns += [(_JEQ_K, _DENY, 0, arch.calls[name]) for name in denied]
    for name in ("socket", "socketpair"):
        # not this call: skip the two family checks; else A is overwritten, so both end here
        insns.append((_JEQ_K, 0, 2, arch.calls[name]))
        insns.append((_LD_W_ABS, 0, 0, _ARG0_LOW))
        if mode is SeccompMode.RESTRICTED:
            insns.append((_JEQ_K, _ALLOW, _DENY, _AF_UNIX))
        else:
            insns.append((_JEQ_K, _DENY, _ALLOW, _AF_VSOCK))
    labels = {_ALLOW: len(insns), _DENY: len(insns) + 1}
    insns += [(_RET_K, 0, 0, _RET_ALLOW), (_RET_K, 0, 0, _RET_ERRNO_EPERM)]
    return b"".join(
        struct.pack("=HBBI", code, _jump(jt, at, labels), _jump(jf, at, labels), k)
        for at, (code, jt, jf, k) in enumerate(insns)
    )


def _jump(target: int | str, at: int, labels: dict[str, int]) -> int:
    if isinstance(target, int):
        return target
    offset = labels[target] - at - 1
    if not 0 <= offset <= 255:  # pragma: no cover - the program is far shorter
        raise ValueError(f"seccomp jump too long: {offset}")
    return offset
