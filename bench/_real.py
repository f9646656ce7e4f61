"""The real ``codex app-server`` 0.163.0 as a benchmark peer: the project's mock Responses
endpoint (``codex_app_bridge.conformance.mock_responses``, shared with the conformance tests) on
127.0.0.1 and, for every spawn, a fresh scratch ``CODEX_HOME`` whose config points at it (the
binary never reaches the network; the user's ``~/.codex`` is never read).
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path
from types import TracebackType

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
    """Spawns real ``codex app-server`` processes against one mock endpoint (a context manager
    that owns the mock and a scratch directory for every spawn's CODEX_HOME and cwd)."""

    def __init__(self) -> None:
        if not real_available():
            raise SystemExit("the real codex binary is not installed (pip install -e '.[test]')")
        self.mock = MockResponses()
        # Not under /tmp: the binary refuses to set up its PATH helpers there (and warns).
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        cache.mkdir(parents=True, exist_ok=True)
        self.scratch = Path(tempfile.mkdtemp(prefix="codex-app-bridge-bench-", dir=cache))
        self._count = itertools.count()

    def __enter__(self) -> RealServers:
        self.mock.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.mock.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def spawn(self) -> tuple[StdioClient, str]:
        """A fresh real server (own CODEX_HOME); returns the client and the cwd to start
        threads in."""
        base = self.scratch / f"real-{next(self._count)}"
        work = base / "work"
        work.mkdir(parents=True)
        codex_home = base / "home" / ".codex"
        write_codex_config(codex_home, self.mock.base_url)
        client = StdioClient(real_codex_command(), codex_env(codex_home, rust_log="error"), work)
        return client, str(work)

    def spawn_streaming(self, deltas: int) -> tuple[StdioClient, str]:
        """``spawn``, with the mock answering every turn with ``deltas`` deltas
        (texts ``real_texts(deltas)``)."""
        self.mock.set_scenario("throughput", n=deltas)
        return self.spawn()
