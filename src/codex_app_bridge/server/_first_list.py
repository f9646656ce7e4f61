"""The first ``thread/list`` of a process, read ahead while the server starts.

A client's first request after ``initialize`` is often ``thread/list`` without params (its
thread picker). What it needs on a server that stores threads is begun as the server starts,
in a thread of its own (:class:`ListReadAhead`, made by ``serve`` as soon as it knows
``CODEX_HOME``): the list path's imports (the list handlers, the catalog, SQLite) and the
catalog's reads of the newest rollouts for the default first page (its rows and its threads,
``storage.ThreadCatalog.read_ahead``), beside the rest of the server's start-up instead of in
the first request. A request that comes meanwhile waits for the module being imported, or for
the read's step in progress (the catalog's lock), and finds the rest done. The server takes
the catalog from here (``catalog``) and closes it.

The price is paid at start-up: the interpreter is shared, so ``initialize`` is answered later
by what of this work runs before it (bench/stored_threads.py times both, beside the real
binary).

Boundary: imports and reads through the catalog; answers nothing.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codex_app_bridge.storage import ThreadCatalog

__all__ = ["ListReadAhead"]

logger = logging.getLogger(__name__)


class ListReadAhead:
    """The catalog of ``codex_home`` and the default first page read ahead (see the module
    docstring); the work starts when this is made."""

    def __init__(self, codex_home: str | Path) -> None:
        self._home = Path(codex_home)
        self._made = threading.Event()
        self._catalog: ThreadCatalog | None = None
        self._thread = threading.Thread(
            target=self._run, name="thread/list read-ahead", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        try:
            from codex_app_bridge.server._handlers_lists import (
                FIRST_PAGE,
                THREAD_LIST_DEFAULT_LIMIT,
            )
            from codex_app_bridge.storage import CodexHome, ThreadCatalog

            catalog = self._catalog = ThreadCatalog(CodexHome(self._home))
        except Exception:  # the first request imports them itself, in its own words
            logger.debug("thread/list read-ahead: imports failed", exc_info=True)
            return
        finally:
            self._made.set()
        try:
            # the handler asks for one row more than it shows (whether a next page exists)
            catalog.read_ahead(
                FIRST_PAGE, THREAD_LIST_DEFAULT_LIMIT + 1, fetch=THREAD_LIST_DEFAULT_LIMIT
            )
        except Exception:  # what was not read is read by the request that needs it
            logger.debug("thread/list read-ahead failed", exc_info=True)

    def catalog(self) -> ThreadCatalog | None:
        """The catalog (once the read-ahead's imports are made; ``None`` if they failed)."""
        self._made.wait()
        return self._catalog
