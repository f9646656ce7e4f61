"""Imports made apart (``server._apart``): each module an import loads waits while the caller
handles a request (``Handling``), for ``YIELD_S`` of that request at most; other threads'
imports never wait."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from codex_app_bridge.server import _apart
from codex_app_bridge.server._apart import Handling, import_apart

TIMEOUT = 30


class _Seen(Handling):
    """A ``Handling`` that tells when an import first waits on it."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()

    def wait(self) -> None:
        self.asked.set()
        super().wait()


def _modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    for name in names:
        (tmp_path / f"{name}.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in names:
        monkeypatch.delitem(sys.modules, name, raising=False)


def _import_in_thread(name: str, handling: Handling) -> tuple[threading.Thread, list[bool]]:
    done: list[bool] = []
    thread = threading.Thread(target=lambda: done.append(import_apart(name, handling)))
    thread.start()
    return thread, done


def test_an_import_waits_while_a_request_is_handled_and_loads_once_it_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _modules(tmp_path, monkeypatch, "apart_probe_waits", "apart_probe_other")
    monkeypatch.setattr(_apart, "YIELD_S", 3600.0)
    handling = _Seen()
    handling.begin()
    thread, done = _import_in_thread("apart_probe_waits", handling)
    try:
        assert handling.asked.wait(TIMEOUT)
        assert "apart_probe_waits" not in sys.modules
        # the handling thread's own imports are not held meanwhile
        import apart_probe_other  # pyright: ignore[reportMissingImports]

        assert apart_probe_other.LOADED  # pyright: ignore[reportUnknownMemberType]
        assert thread.is_alive()
    finally:
        handling.end()
        thread.join(TIMEOUT)
    assert done == [True]
    assert "apart_probe_waits" in sys.modules


@pytest.mark.parametrize(
    ("yield_s", "answered"),
    [
        pytest.param(0.0, False, id="a request handled for YIELD_S"),
        pytest.param(3600.0, True, id="no request handled"),
    ],
)
def test_an_import_goes_on_once_the_request_is_answered_or_after_yield_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, yield_s: float, answered: bool
) -> None:
    _modules(tmp_path, monkeypatch, "apart_probe_goes_on")
    monkeypatch.setattr(_apart, "YIELD_S", yield_s)
    handling = _Seen()
    handling.begin()
    if answered:
        handling.end()
    thread, done = _import_in_thread("apart_probe_goes_on", handling)
    thread.join(TIMEOUT)
    assert handling.asked.is_set()
    assert done == [True]
    assert "apart_probe_goes_on" in sys.modules
