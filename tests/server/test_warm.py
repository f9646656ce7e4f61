"""The warm-up: its steps load what the stored-history and resume paths need, and it runs them
only while no request is being handled."""

from __future__ import annotations

import anyio
import pytest

from codex_app_bridge.protocol import v2
from codex_app_bridge.server import _warm


def test_every_step_runs_and_builds_the_models_of_a_resume() -> None:
    for step in _warm.warm_up_steps():
        step()  # a failing step would be skipped (and logged) by warm_up: here it fails
    for model in (v2.Turn, v2.Thread, v2.ThreadResumeResponse):
        assert model.__pydantic_complete__, model


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
