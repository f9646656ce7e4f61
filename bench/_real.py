"""The real ``codex app-server`` 0.163.0 as a benchmark peer: the project's mock Responses
endpoint (``codex_app_bridge.conformance.mock_responses``, shared with the conformance tests) on
127.0.0.1 and, for every spawn, a fresh scratch ``CODEX_HOME`` whose config points at it (the
binary never reaches the network; the user's ``~/.codex`` is never read).
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _common import StdioClient

from codex_app_bridge.conformance.mock_responses import MockResponses, throughput_chunk
from codex_app_bridge.conformance.real_codex import (
    codex_env,
    real_codex_command,
    write_codex_config,
)


def real_available() -> bool:
    """Whether the real binary (the ``openai-codex-cli-bin`` wheel of the ``test`` extra) is
    installed."""
    try:
        command = real_codex_command()
    except ImportError:
        return False
    return os.access(command[0], os.X_OK)


def real_texts(deltas: int) -> list[str]:
    """The delta texts the mock's ``throughput`` scenario streams."""
    return [throughput_chunk(i) for i in range(deltas)]


class RealServers:
    """Spawns real ``codex app-server`` processes against one mock endpoint, each with its own
    CODEX_HOME and cwd under ``scratch`` (made by ``real_servers``)."""

    def __init__(self, mock: MockResponses, scratch: Path) -> None:
        self.mock = mock
        self.scratch = scratch
        self._count = itertools.count()

    def spawn(self, rust_log: str = "error", *, read_log: bool = False) -> tuple[StdioClient, str]:
        """A fresh real server (own CODEX_HOME, ``RUST_LOG=rust_log``; its stderr piped to the
        client with ``read_log``); returns the client and the cwd to start threads in."""
        base = self.scratch / f"real-{next(self._count)}"
        work = base / "work"
        work.mkdir(parents=True)
        codex_home = base / "home" / ".codex"
        write_codex_config(codex_home, self.mock.base_url)
        env = codex_env(codex_home, rust_log=rust_log)
        client = StdioClient(real_codex_command(), env, work, read_log=read_log)
        return client, str(work)

    def spawn_streaming(self, deltas: int) -> tuple[StdioClient, str]:
        """``spawn``, with the mock answering every turn with ``deltas`` deltas
        (texts ``real_texts(deltas)``)."""
        self.mock.set_scenario("throughput", n=deltas)
        return self.spawn()


@contextmanager
def real_servers() -> Iterator[RealServers]:
    """The mock on a free port and a scratch directory, both gone at exit."""
    if not real_available():
        raise SystemExit("the real codex binary is not installed (pip install -e '.[test]')")
    # Not under /tmp: the binary refuses to set up its PATH helpers there (and warns).
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    cache.mkdir(parents=True, exist_ok=True)
    with (
        MockResponses() as mock,
        tempfile.TemporaryDirectory(prefix="codex-app-bridge-bench-", dir=cache) as scratch,
    ):
        yield RealServers(mock, Path(scratch))
