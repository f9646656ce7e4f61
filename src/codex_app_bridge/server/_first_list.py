"""The first ``thread/list`` s of a process: read ahead, and answered before the server starts.

A client's first request after ``initialize`` is often ``thread/list`` (its thread picker),
without params. Two things make it cheap on a server that stores threads:

* What it needs is read ahead in a thread of its own (:class:`ListReadAhead`, made by ``serve``
  as soon as it knows ``CODEX_HOME``, ``start`` ed once the server has answered ``initialize``
  and no request is being handled, never if a request made the catalog first): the list
  path's imports (the list handlers, the catalog, SQLite) and the
  catalog's reads of the newest rollouts for the default first page (its rows and its
  threads, ``storage.ThreadCatalog.read_ahead``). A request that comes meanwhile waits for the
  module being imported, or for the read's step in progress (the catalog's lock), and finds
  the rest done. The server takes the catalog from here (``catalog``) and closes it. Begun
  before the ``initialize`` answer, the same work delayed it (the interpreter is shared); a
  list answered before the server (below) makes the catalog itself and reads what it needs
  (``take``: the read-ahead would only make it wait for the same reads made twice).
* On stdio, once ``serve`` has answered the first ``initialize`` itself (``_first_initialize``)
  and before it imports the event loop and the server, the ``thread/list`` requests that come
  next are answered here (:func:`answer_first_lists`) by the list handler itself
  (``ThreadListHandlers.list_threads``) over the stored threads alone (no thread is known to a
  process that has served nothing else), its reads made where they are asked for, with the
  gate's rules (``_handshake.admit``) and the answer encoded as the connection encodes one
  (``rpc._encode.encode_result``). Client notifications (``initialized``) are taken as the
  connection takes them: logged. Once one list is answered the server's modules are imported
  in a thread of their own (``_apart.import_apart``), each waiting while a next list is being
  answered (``_apart.Handling``, for ``_apart.HOLD_S`` in all); the server starts
  when they are, or at the first line not answered here (another method, params the plain
  path does not read or that need the turn source, an answer the handler cannot give without
  the server, anything malformed, end of input), or when no line came within :data:`IDLE_S`
  while no list was answered yet: every byte read and not answered is then the server's, which
  serves the connection from there (``FirstInitialize.answered``: it begins its warm-up as
  after any request it answers).

Boundary: imports and reads through the catalog; answers ``thread/list`` only as its handler
does; no event loop.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn

# imported where used: ``serve`` imports this module for every transport, and what answers the
# first lists (the list handler, the catalog) only when it answers one
if TYPE_CHECKING:
    from codex_app_bridge.protocol.jsonrpc import Request
    from codex_app_bridge.server._apart import Handling
    from codex_app_bridge.server._first_initialize import FirstInitialize
    from codex_app_bridge.server._handlers_lists import ThreadListHandlers
    from codex_app_bridge.server._handshake import ConnectionState
    from codex_app_bridge.server._stored_list import StoredThreadList
    from codex_app_bridge.storage import ThreadCatalog

__all__ = ["IDLE_S", "ListReadAhead", "answer_first_lists"]

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
        """The read-ahead was begun, or its catalog made (``take``)."""
        return self._thread.ident is not None or self._made.is_set()

    def start(self) -> None:
        """Begin the imports and reads in their thread (once; later calls do nothing)."""
        with self._start:
            if not self.started:
                self._thread.start()

    def take(self) -> ThreadCatalog | None:
        """The catalog for a request that needs it now: made in the calling thread when the
        read-ahead was not begun (which then never begins: the request reads what it needs
        itself, instead of waiting for the same reads made twice), else as ``catalog``."""
        with self._start:
            if not self.started:
                self._make()
                return self._catalog
        return self.catalog()

    def _make(self) -> None:
        try:
            from codex_app_bridge.storage import CodexHome, ThreadCatalog

            self._catalog = ThreadCatalog(CodexHome(self._home))
        except Exception:  # the first request imports them itself, in its own words
            logger.debug("thread/list read-ahead: imports failed", exc_info=True)
        finally:
            self._made.set()

    def _run(self) -> None:
        try:
            from codex_app_bridge.server._handlers_lists import (
                FIRST_PAGE,
                THREAD_LIST_DEFAULT_LIMIT,
            )
        except Exception:  # the first request imports it itself, in its own words
            logger.debug("thread/list read-ahead: imports failed", exc_info=True)
            self._made.set()
            return
        self._make()
        catalog = self._catalog
        if catalog is None:
            return
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


IDLE_S: Final = 0.02
"""Seconds a first list is waited for after ``initialize`` (or ``initialized``) before the
server starts anyway: a client that waits before its first request finds the server, and the
start-up work it begins, under way."""


class _NeedsServer(Exception):
    """What a list cannot be answered without: the turn source (a rollout that names no model
    or provider, a ``modelProviders`` filter), the listener hub."""


def _needs_server() -> NoReturn:
    raise _NeedsServer


class _StoredThreadsOnly:
    """``ListServices`` of a process that knows no thread yet: its stored threads alone."""

    def __init__(self, stored: StoredThreadList) -> None:
        self._stored = stored

    @property
    def stored_threads(self) -> StoredThreadList:
        return self._stored

    def known_threads(self) -> None:
        return None

    @property
    def source(self) -> NoReturn:
        _needs_server()

    @property
    def hub(self) -> NoReturn:
        _needs_server()


class _FirstLists:
    """``thread/list`` answered by its handler over the stored threads alone."""

    def __init__(self, state: ConnectionState, catalog: ThreadCatalog) -> None:
        from codex_app_bridge.server._handlers_lists import ThreadListHandlers
        from codex_app_bridge.server._stored_list import StoredThreadList

        self._state = state
        stored = StoredThreadList(catalog, _needs_server, offload=False)
        self._lists: ThreadListHandlers = ThreadListHandlers(_StoredThreadsOnly(stored))

    def answer(self, request: Request) -> bytes | None:
        """The encoded answer to ``request``, or ``None``: the server answers it."""
        from codex_app_bridge.protocol.v2.methods import EXPERIMENTAL_CLIENT_REQUEST_METHODS
        from codex_app_bridge.rpc._encode import encode_result
        from codex_app_bridge.server._handlers_lists import plain_list_query
        from codex_app_bridge.server._handshake import admit

        query = plain_list_query(request.params)
        if query is None:
            return None
        answering = self._lists.list_threads(query)
        try:
            admit(
                self._state,
                request.method,
                request.params,
                experimental=request.method in EXPERIMENTAL_CLIENT_REQUEST_METHODS,
            )
            answering.send(None)
        except StopIteration as done:
            result: Any = done.value
        except Exception:  # refused, or needs the server: its answer, in its words
            logger.debug("first thread/list left to the server", exc_info=True)
            answering.close()
            return None
        else:  # it waited for something only the event loop gives
            answering.close()
            return None
        encoded, ok = encode_result(request.id, result)
        return encoded if ok else None


class _ServerImport:
    """The server's modules imported in a thread of their own, each waiting while a list is
    being answered (``handling``, ``_apart.Handling``); ``done_fd`` becomes readable once they
    are."""

    def __init__(self, modules: Sequence[str], handling: Handling) -> None:
        self._modules = modules
        self._handling = handling
        self.done = threading.Event()
        self.done_fd, self._done_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="server import", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from codex_app_bridge.server._apart import import_apart

        try:
            for name in self._modules:
                if not import_apart(name, self._handling):
                    break
        finally:
            self.done.set()
            os.write(self._done_w, b"\0")

    def join(self) -> None:
        self._thread.join()
        os.close(self.done_fd)
        os.close(self._done_w)


def answer_first_lists(
    first: FirstInitialize,
    data: bytes,
    read_ahead: ListReadAhead,
    server_modules: Sequence[str],
    *,
    limit: int | None,
    in_fd: int = 0,
    out_fd: int = 1,
) -> tuple[FirstInitialize, bytes]:
    """Answer the ``thread/list`` requests after ``first`` (see the module docstring), the
    input's first bytes being ``data``; ``server_modules``: what the server needs imported.
    Returns ``first`` with the count of requests answered and the bytes read that the server
    has still to read."""
    from codex_app_bridge.protocol.jsonrpc import Notification, Request, classify
    from codex_app_bridge.server._apart import Handling
    from codex_app_bridge.server._first_initialize import FirstInput
    from codex_app_bridge.transport._framing import decode_line

    lines = FirstInput(in_fd, limit, data)
    lists: _FirstLists | None = None
    importing: _ServerImport | None = None
    handling = Handling()
    answered = 0
    while importing is None or not importing.done.is_set():
        handling.end()
        line = lines.take()
        if line is None:
            # before any list: IDLE_S at most; after one, until the server's modules are in
            wake = None if importing is None else importing.done_fd
            if lines.fill(IDLE_S if wake is None else None, wake):
                continue
            break
        handling.begin()
        value = decode_line(line, limit=limit)
        message = classify(value) if isinstance(value, dict) else None
        if isinstance(message, Notification):  # as the connection takes one
            logger.info("<- notification: %s", message.method)
            continue
        if not isinstance(message, Request) or message.method != "thread/list":
            lines.put_back(line)
            break
        if lists is None:
            catalog = read_ahead.take()
            lists = None if catalog is None else _FirstLists(first.state, catalog)
        answer = None if lists is None else lists.answer(message)
        if answer is None:
            lines.put_back(line)
            break
        answered += 1
        logger.debug("thread/list %r answered before the server started", message.id)
        try:
            lines.write(out_fd, answer + b"\n")
        except OSError:  # the reader is gone: the server finds out on its first write
            break
        if importing is None:
            importing = _ServerImport(server_modules, handling)
    handling.end()  # what is left of the imports, at full speed: the server waits for them
    if importing is not None:
        importing.join()
    return replace(first, answered=answered), lines.data
