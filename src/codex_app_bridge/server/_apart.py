"""Imports made beside requests being handled, in a thread of their own.

A module imported in a worker thread shares the interpreter with the thread handling a request:
the two take turns at the interpreter's switch interval (5 ms by default), so a request that
arrives meanwhile would wait up to 5 ms at each of its steps. ``import_apart`` imports with the
interval at :data:`IMPORT_SWITCH_S` and puts it back after. Used by the warm-up (``_warm``) and
by ``serve`` while it answers the first lists before the server starts (``_first_list``).

Boundary: loads code; no state of the server is read or written.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Final

__all__ = ["IMPORT_SWITCH_S", "import_apart"]

logger = logging.getLogger(__name__)

IMPORT_SWITCH_S: Final = 0.0005
"""The interpreter's switch interval while such an import runs (5 ms by default): a request
that arrives meanwhile waits at most this long for the interpreter at each of its steps (the
event loop, its worker thread) instead of 5 ms."""


def import_apart(name: str) -> bool:
    """Import ``name`` with a short switch interval (:data:`IMPORT_SWITCH_S`); whether it was
    imported (a failure is logged: what needs the module fails in its own words)."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, IMPORT_SWITCH_S))
    try:
        importlib.import_module(name)
    except Exception:
        logger.debug("import of %s beside the requests failed", name, exc_info=True)
        return False
    finally:
        sys.setswitchinterval(interval)
    return True
