"""Runs shared by several conformance modules.

Each model-mode scenario is played on the bridge once per test session (a pytest-xdist worker:
``tests/conftest.py`` sends the modules that use it to one worker), however many modules
judge it (``test_model_mode_bridge`` judges them all, ``_goals`` and ``_machine`` look closer at
some): the same scenario on the same server gives the same record, so playing it again proves
nothing more and cost the suite a minute. The bridge's scenarios run up to ``os.cpu_count()``
at a time; the real binary's run one at a time (``REAL_WORKERS``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from pathlib import Path

import pytest

from codex_app_bridge.conformance._model_mode import ModelResult, run_model_suite_sync

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "model_mode"
"""The real binary's recorded model-mode outcomes."""
WORKERS = os.cpu_count() or 1
REAL_WORKERS = 1
"""The real binary races itself under load (a command's ``item/completed`` went missing from
``shell_for_session`` with two of its runs beside two CPU burners on 2 cores: a red CI; that
one is its exit watcher, now placed by ``command_ends_after_their_item``): one run at a time,
as its reference was recorded, keeps such races rare."""


RACED_RUN = "the real binary raced in its first run of "
"""How a :class:`RacedRun` warning begins: a module that runs the real binary a second time
shows it (``pytest.mark.filterwarnings(f"default:{RACED_RUN}")``; the suite turns warnings
into errors)."""


class RacedRun(UserWarning):
    """A scenario's first run on the real binary differed and its second did not: a race of the
    binary's tasks the comparison does not place yet (the message says where)."""


def report_raced(name: str, what: str) -> None:
    """Show that scenario ``name``'s first run raced (``what``: how it differed, and where)."""
    warnings.warn(RacedRun(f"{RACED_RUN}{name}: {what}"), stacklevel=2)


class BridgeModelRuns:
    """The bridge's model-mode runs of this session, compared with :data:`REFERENCE`: each
    scenario is played the first time a module asks for it; its artefacts stay under
    ``scratch/<name>/bridge`` (what the bridge left on disk)."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self._results: dict[str, ModelResult] = {}

    def results(self, names: Iterable[str]) -> dict[str, ModelResult]:
        wanted = list(names)
        missing = [name for name in wanted if name not in self._results]
        if missing:
            # every wait inside has its own timeout (turns 90 s, sessions 240 s)
            found = run_model_suite_sync(
                missing,
                self.scratch,
                reference=REFERENCE,
                servers=("bridge",),
                concurrency=WORKERS,
            )
            self._results.update((r.name, r) for r in found)
        return {name: self._results[name] for name in wanted}


@pytest.fixture(scope="session")
def bridge_model_runs(tmp_path_factory: pytest.TempPathFactory) -> BridgeModelRuns:
    return BridgeModelRuns(tmp_path_factory.mktemp("model-mode-bridge"))
