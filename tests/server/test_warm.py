"""The warm-up: its steps load what the stored-history and resume paths need, and it runs them
only while no request is being handled; the imports too long for a step are made first, in a
worker thread."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import anyio
import pytest

from codex_app_bridge.protocol import v2
from codex_app_bridge.server import _warm
from codex_app_bridge.server._apart import IMPORT_SWITCH_S
from tests.conftest import probe_json


def test_every_step_runs_and_builds_the_models_of_a_resume() -> None:
    for step in _warm.warm_up_steps():
        step()  # a failing step would be skipped (and logged) by warm_up: here it fails
    for model in (v2.Turn, v2.Thread, v2.ThreadResumeResponse):
        assert model.__pydantic_complete__, model


HISTORY_PROBE = """
import json
from codex_app_bridge.server import _warm
from codex_app_bridge.server._stored import envelopes_of
from codex_app_bridge.storage import parse_rollout_bytes
from pathlib import Path
for step in _warm.warm_up_steps():
    step()
lines = parse_rollout_bytes(Path("probe.jsonl"), _warm.SAMPLE_ROLLOUT).lines
kinds = {type(envelope.msg) for envelope in envelopes_of(lines)}
print(json.dumps(sorted(kind.__name__ for kind in kinds if not kind.__pydantic_complete__)))
"""


def test_the_steps_build_every_event_model_a_resumed_threads_history_log_writes() -> None:
    """A resumed thread's history is written at once into its log, each event by its own
    model (``HistoryLog``): a first resume built them all (about 10 ms) before the warm-up did."""
    assert probe_json(HISTORY_PROBE) == []


@pytest.mark.anyio
async def test_no_step_runs_while_a_request_is_handled(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[int] = []
    monkeypatch.setattr(
        _warm, "warm_up_steps", lambda: iter([lambda: ran.append(1), lambda: ran.append(2)])
    )
    polled = anyio.Event()
    handling = True
    polls = 0

    def busy() -> bool:
        nonlocal polls
        polls += 1
        if polls >= 5:
            polled.set()
        return handling

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_warm.warm_up, busy)
            await polled.wait()
            assert ran == []  # asked again and again, never run while busy
            handling = False
        assert ran == [1, 2]


@pytest.mark.anyio
async def test_the_long_imports_are_made_apart_from_the_event_loop_before_the_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "warm_probe_module.py").write_text(
        "import threading\nIMPORTED_IN = threading.current_thread()\n"
    )
    (tmp_path / "warm_probe_broken.py").write_text("raise RuntimeError('broken')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    # a broken import stops the imports made apart (its request reports it), not the steps
    monkeypatch.setattr(
        _warm, "IMPORTED_APART", ("warm_probe_module", "warm_probe_broken", "warm_probe_never")
    )
    ran: list[int] = []
    monkeypatch.setattr(_warm, "warm_up_steps", lambda: iter([lambda: ran.append(1)]))
    with anyio.fail_after(30):
        await _warm.warm_up(lambda: False)
    probe = sys.modules.pop("warm_probe_module")
    assert probe.IMPORTED_IN is not threading.main_thread()
    assert "warm_probe_never" not in sys.modules
    assert ran == [1]


@pytest.mark.anyio
async def test_an_import_made_apart_gives_the_interpreter_back_often_and_restores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a request arriving during the import waits IMPORT_SWITCH_S at most for the interpreter
    (tmp_path / "warm_probe_switch.py").write_text("import sys\nSWITCH = sys.getswitchinterval()\n")
    (tmp_path / "warm_probe_failing.py").write_text(
        "import sys\nSWITCH = sys.getswitchinterval()\nraise RuntimeError('broken')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_warm, "IMPORTED_APART", ("warm_probe_switch", "warm_probe_failing"))
    monkeypatch.setattr(_warm, "warm_up_steps", lambda: iter(()))
    interval = sys.getswitchinterval()
    with anyio.fail_after(30):
        await _warm.warm_up(lambda: False)
    probe = sys.modules.pop("warm_probe_switch")
    assert pytest.approx(min(interval, IMPORT_SWITCH_S)) == probe.SWITCH
    assert "warm_probe_failing" not in sys.modules
    assert sys.getswitchinterval() == interval  # after a failed import too
