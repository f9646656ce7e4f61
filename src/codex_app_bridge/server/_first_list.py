"""The first ``thread/list`` of a process, read ahead while the server starts.

A client's first request after ``initialize`` is often ``thread/list`` without params (its
thread picker). What it needs on a server that stores threads is begun early, in a thread of
its own (:class:`ListReadAhead`, made by ``serve`` as soon as it knows ``CODEX_HOME`` and
started by the server once its first ``initialize`` is answered, ``start``): the list path's
imports (the list handlers, the catalog, SQLite) and the catalog's reads of the newest rollouts
for the default first page (its rows and its threads, ``storage.ThreadCatalog.read_ahead``),
while the client reads that answer and writes its next request, instead of in that request. A
request that comes meanwhile waits for the module being imported, or for the read's step in
progress (the catalog's lock), and finds the rest done. The server takes the catalog from here
(``catalog``) and closes it.

Begun before the answer, the same work delayed it (the interpreter is shared: the imports take
turns with the handshake's); begun after it, what is not done when the first list arrives is
paid by that list (bench/stored_threads.py and bench/startup.py time both, beside the real
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
    docstring); the work begins with ``start`` (or the first ``catalog``)."""

    def __init__(self, codex_home: str | Path) -> None:
        self._home = Path(codex_home)
        self._made = threading.Event()
        self._catalog: ThreadCatalog | None = None
        self._thread = threading.Thread(
            target=self._run, name="thread/list read-ahead", daemon=True
        )
        self._start = threading.Lock()

    @property
    def started(self) -> bool:
        return self._thread.ident is not None

    def start(self) -> None:
        """Begin the imports and reads in their thread (once; later calls do nothing)."""
        with self._start:
            if not self.started:
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
        """The catalog (once the read-ahead's imports are made, begun now if they were not;
        ``None`` if they failed)."""
        self.start()
        self._made.wait()
        return self._catalog
