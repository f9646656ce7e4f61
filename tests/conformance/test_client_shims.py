"""The "codex binary" a client flow hands a library that takes a path (``_venv_flows.shim``, the
one of every flow): an executable in the directory the flow is given, under the run's scratch,
that runs the server's argv whatever argv the library passes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from codex_app_bridge.conformance._venv_flows import shim

TIMEOUT = 60


def test_the_shim_is_written_where_the_flow_says_and_runs_the_server_argv(tmp_path: Path) -> None:
    directory = tmp_path / "client" / "real" / "shim"
    argv = [sys.executable, "-c", "import sys; print(sys.argv[1:])", "it's quoted"]
    path = Path(shim(argv, directory))
    assert path == directory / "codex"
    done = subprocess.run(
        [str(path), "app-server", "--listen", "stdio://"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )
    assert done.stdout == '["it\'s quoted"]\n'
    # a second client of the same flow (the restart) gets the same shim
    assert shim(argv, directory) == str(path)
