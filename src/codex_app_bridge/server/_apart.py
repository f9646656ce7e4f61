"""Imports made beside requests being handled, in a thread of their own.

A module imported in a worker thread shares the interpreter with the thread handling a request:
the two take turns at the interpreter's switch interval (5 ms by default), so a request that
arrives meanwhile would wait up to 5 ms at each of its steps. ``import_apart`` imports with the
interval at :data:`IMPORT_SWITCH_S` and puts it back after. Used by the warm-up (``_warm``) and
by ``serve`` while it answers the first lists before the server starts (``_first_list``).

Even so a request shares the interpreter: each time it lets go of it (a SQLite step, a stat, a
read: a list does hundreds) it waits for the import to let go in turn, and a list of 5 ms alone
took 15-60 ms beside the server's imports. Given a :class:`Handling` (the requests the caller
is handling), the import waits at the start of each module it loads (a module's body runs
whole, a few milliseconds at most) while a request is being handled, for :data:`HOLD_S` in all:
the requests that come right after the import began (a client's first page asked again, a list
with other params) run alone; a client that goes on asking back to back then shares the
interpreter with the import, which ends as before instead of waiting for a pause that never
comes (and the server's warm-up after it: a client's later ``thread/turns/list`` found it
undone, 80-160 ms, when each request of a walk through 50 pages held the import back).

Boundary: loads code; no state of the server is read or written.
"""

from __future__ import annotations

import _imp
import importlib
import logging
import sys
import threading
import time
from typing import TYPE_CHECKING, Final

# not importlib.abc's MetaPathFinder: it imports importlib.resources (5 ms), on the way to the
# first list's answer
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

__all__ = ["HOLD_S", "IMPORT_SWITCH_S", "Handling", "import_apart"]

logger = logging.getLogger(__name__)

IMPORT_SWITCH_S: Final = 0.0005
"""The interpreter's switch interval while such an import runs (5 ms by default): a request
that arrives meanwhile waits at most this long for the interpreter at each of its steps (the
event loop, its worker thread) instead of 5 ms."""

HOLD_S: Final = 0.03
"""Seconds an import made apart waits for requests, in all (see the module docstring): a list
right after the first takes 3-15 ms alone here. Also the longest a request can wait for a
module the import holds half-loaded (a deadlock otherwise: the request waits for the module,
the import for the request)."""


class Handling:
    """The requests a thread is handling, as an import made apart sees them: ``begin`` when one
    is taken, ``end`` once it is answered (or handed on); owned by that thread."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._handling = False
        self._held = 0.0

    @property
    def held(self) -> float:
        """Seconds the imports have waited for requests so far."""
        return self._held

    def begin(self) -> None:
        with self._changed:
            self._handling = True

    def end(self) -> None:
        with self._changed:
            self._handling = False
            self._changed.notify_all()

    def wait(self) -> None:
        """Return once no request is being handled, or once the imports have waited for
        :data:`HOLD_S` in all."""
        with self._changed:
            while self._handling and self._held < HOLD_S:
                began = time.monotonic()
                self._changed.wait(HOLD_S - self._held)
                self._held += time.monotonic() - began


class _YieldingFinder:
    """First on ``sys.meta_path`` (put there once, never taken off: taking it off while another
    thread walks the list would make that thread skip a finder): in a thread importing apart
    with a ``Handling``, each module not loaded yet waits for ``Handling.wait`` before the
    finders after it look for it (without the import lock); it finds nothing."""

    def __init__(self) -> None:
        self.waiting: dict[int, Handling] = {}

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        handling = self.waiting.get(threading.get_ident())
        if handling is None:
            return None
        # called under the interpreter's import lock: let go of it meanwhile, or every other
        # thread's first import of a module (the request's own) would wait for this wait
        try:
            _imp.release_lock()
        except RuntimeError:  # not held here after all: nothing to let go of
            handling.wait()
            return None
        try:
            handling.wait()
        finally:
            _imp.acquire_lock()
        return None


_finder: _YieldingFinder | None = None
_finder_made = threading.Lock()


def _yielding_finder() -> _YieldingFinder:
    global _finder
    with _finder_made:
        if _finder is None:
            _finder = _YieldingFinder()
            sys.meta_path.insert(0, _finder)
        return _finder


def import_apart(name: str, handling: Handling | None = None) -> bool:
    """Import ``name`` with a short switch interval (:data:`IMPORT_SWITCH_S`), each of its
    modules waiting for ``handling``'s request (see the module docstring); whether it was
    imported (a failure is logged: what needs the module fails in its own words)."""
    finder = None if handling is None else _yielding_finder()
    thread = threading.get_ident()
    if finder is not None and handling is not None:
        finder.waiting[thread] = handling
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, IMPORT_SWITCH_S))
    try:
        importlib.import_module(name)
    except Exception:
        logger.debug("import of %s beside the requests failed", name, exc_info=True)
        return False
    finally:
        sys.setswitchinterval(interval)
        if finder is not None:
            finder.waiting.pop(thread, None)
    return True
