"""Imports made apart (``server._apart``): each module an import loads waits while the caller
handles a request (``Handling``), for ``HOLD_S`` in all; other threads' imports never wait."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
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


@contextlib.contextmanager
def _held_import(name: str, handling: _Seen) -> Iterator[tuple[threading.Thread, list[bool]]]:
    """``name`` imported apart while a request is handled: the block runs once the import
    waits; the request ends and the import is joined after it."""
    handling.begin()
    thread, done = _import_in_thread(name, handling)
    try:
        assert handling.asked.wait(TIMEOUT)
        yield thread, done
    finally:
        handling.end()
        thread.join(TIMEOUT)


def test_an_import_waits_while_a_request_is_handled_and_loads_once_it_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _modules(tmp_path, monkeypatch, "apart_probe_waits", "apart_probe_other")
    monkeypatch.setattr(_apart, "HOLD_S", 3600.0)
    handling = _Seen()
    with _held_import("apart_probe_waits", handling) as (thread, done):
        assert "apart_probe_waits" not in sys.modules
        # the handling thread's own imports are not held meanwhile
        import apart_probe_other  # pyright: ignore[reportMissingImports]

        assert apart_probe_other.LOADED  # pyright: ignore[reportUnknownMemberType]
        assert thread.is_alive()
    assert done == [True]
    assert "apart_probe_waits" in sys.modules


@pytest.mark.parametrize(
    ("hold_s", "answered"),
    [
        pytest.param(0.0, False, id="held for HOLD_S"),
        pytest.param(3600.0, True, id="no request handled"),
    ],
)
def test_an_import_goes_on_once_the_request_is_answered_or_after_hold_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hold_s: float, answered: bool
) -> None:
    _modules(tmp_path, monkeypatch, "apart_probe_goes_on")
    monkeypatch.setattr(_apart, "HOLD_S", hold_s)
    handling = _Seen()
    handling.begin()
    if answered:
        handling.end()
    thread, done = _import_in_thread("apart_probe_goes_on", handling)
    thread.join(TIMEOUT)
    assert handling.asked.is_set()
    assert done == [True]
    assert "apart_probe_goes_on" in sys.modules


def test_the_imports_wait_for_hold_s_in_all_not_for_each_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the imports waited for one request counts against ``HOLD_S``: once it is spent, an
    import goes on while the next request is handled (a client asking back to back never leaves
    the imports a pause), without waiting at all."""
    _modules(tmp_path, monkeypatch, "apart_probe_first", "apart_probe_next")
    monkeypatch.setattr(_apart, "HOLD_S", 3600.0)
    handling = _Seen()
    with _held_import("apart_probe_first", handling) as (_, done):
        pass
    assert done == [True]
    held = handling.held
    assert held > 0
    monkeypatch.setattr(_apart, "HOLD_S", held)  # spent
    handling.begin()  # and never ended
    thread, done = _import_in_thread("apart_probe_next", handling)
    thread.join(TIMEOUT)
    assert done == [True]
    assert handling.held == held
