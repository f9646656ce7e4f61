"""Shared fixtures: the anyio backend, paths to the captured real-server traffic, how to run
the ``codex-app-bridge`` CLI as a subprocess from the source tree or an installed package, and
how to wait until every task of the test's event loop waits (``all_blocked``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, settings

import codex_app_bridge

DATA_DIR = Path(__file__).parent / "data"
CAPTURES_DIR = DATA_DIR / "captures"
CAPTURE_NAMES = sorted(p.name for p in CAPTURES_DIR.iterdir() if p.is_dir())

# Hypothesis times each example (a 200 ms deadline) and the generation of data (the too_slow
# health check) by the wall clock: on a busy machine a first example that builds models, or a
# preempted one, fails a correct test. Property tests here check results, never speed.
#
# The suite's examples are derandomized: every run (CI's included) draws the same examples, so a
# property test cannot turn a fresh clone red on a draw nobody saw before. To search new ground,
# run with CODEX_APP_BRIDGE_HYPOTHESIS=explore (random examples, more of them) and keep what it
# finds as an @example or a plain test.
settings.register_profile(
    "codex-app-bridge",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.register_profile(
    "explore", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=1000
)
settings.load_profile(
    "explore" if os.environ.get("CODEX_APP_BRIDGE_HYPOTHESIS") == "explore" else "codex-app-bridge"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def all_blocked() -> None:
    """``anyio.wait_all_tasks_blocked``, and again after the callbacks of tasks that just
    finished have run (a task group hears that its child ended through one: until it has run,
    a parent waiting for its children looks blocked)."""
    for _ in range(3):
        await anyio.wait_all_tasks_blocked()
        await anyio.lowlevel.checkpoint()
    await anyio.wait_all_tasks_blocked()


def bridge_command() -> list[str]:
    """argv that runs the CLI of the package under test, whether or not it is installed."""
    return [sys.executable, "-m", "codex_app_bridge"]


def bridge_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for a CLI subprocess that imports the package under test."""
    env = dict(os.environ)
    # a developer's own CODEX_HOME is never written by a test: only a home the test names
    env.pop("CODEX_HOME", None)
    src = str(Path(codex_app_bridge.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    if extra:
        env.update(extra)
    return env


def probe_json(code: str, stdin: str | None = None) -> Any:
    """Run ``code`` in a fresh interpreter that imports the package under test (what a module
    builds or caches once per process is seen there as a server sees it) and read back the JSON
    it prints."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        input=stdin,
        env=bridge_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(result.stdout)


SHARED_SESSION_FILES = frozenset(
    f"tests/conformance/test_model_mode_{name}.py" for name in ("bridge", "goals", "machine")
)
"""The files that share the session fixture ``bridge_model_runs`` (``tests/conformance``): a
session under pytest-xdist is a worker, so these go to one worker together."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` (the README's test command), whole files per worker, except that the
    files of :data:`SHARED_SESSION_FILES` are one unit: apart, the second worker played the
    scenarios again (test_model_mode_machine's took 42 s of a loaded run that way)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedSessionsTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return "model-mode bridge runs" if path in SHARED_SESSION_FILES else path

    return SharedSessionsTogether(config, log)
