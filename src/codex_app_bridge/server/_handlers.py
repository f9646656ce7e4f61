"""The request handlers of the supported methods, by namespace, and the one table of their routes.

Each namespace is a plain class over ``ServerServices`` (``_services``), one module each:

* ``ThreadHandlers`` (``_handlers_threads``): ``thread/start``, ``resume``, ``fork``, ``read``,
  ``unsubscribe``;
* ``ThreadListHandlers`` (``_handlers_lists``): ``thread/list``, ``thread/loaded/list``;
* ``HistoryPageHandlers`` (``_handlers_pages``): ``thread/turns/list``, ``thread/items/list``;
* ``ThreadAdminHandlers`` (``_handlers_admin``): names, metadata, archive, unarchive, delete,
  revert;
* ``TurnHandlers`` (``_handlers_turns``): ``turn/start``, ``turn/steer``, ``turn/interrupt``;
* ``MachineHandlers`` (``_handlers_machine``): ``command/exec*``, ``fs/*``, ``fuzzyFileSearch``;
* ``GoalHandlers`` (``_handlers_goals``): ``thread/goal/get``, ``set``, ``clear``;

and ``initialize`` is the server's own. A handler is ``async (ctx, params) -> response model``
(or a plain function, routed ``Immediate``, when it answers from memory without awaiting) and
raises ``RpcError`` to refuse. What they share (probed from the 0.163.0 binary):

* Thread ids are parsed as the real server parses them (``_ids.parse_thread_id``) and reported in
  canonical form.
* A response always precedes the notifications it causes: everything a handler triggers is
  registered with ``ctx.after_response`` (``thread/started`` broadcasts, starting a turn,
  steering input); notifications that *precede* a response in the real server
  (``deprecationNotice`` on full-history hydration) are sent to the caller before returning.
* A thread's life (create, load, reload, unload, forget) is the ``ThreadRegistry``'s
  (``_registry``): a handler asks it, never builds a listener, runtime or writer itself.

A new namespace is one more class here and its rows in ``handler_routes`` (with its params
models in ``_table._SUPPORTED_PARAMS``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from codex_app_bridge.rpc import RequestContext
from codex_app_bridge.server._handlers_admin import ThreadAdminHandlers
from codex_app_bridge.server._handlers_goals import GoalHandlers
from codex_app_bridge.server._handlers_lists import ThreadListHandlers
from codex_app_bridge.server._handlers_machine import MachineHandlers
from codex_app_bridge.server._handlers_pages import HistoryPageHandlers
from codex_app_bridge.server._handlers_threads import (
    READ_DEPRECATION,
    RESUME_DEPRECATION,
    ThreadHandlers,
)
from codex_app_bridge.server._handlers_turns import TurnHandlers

if TYPE_CHECKING:
    from codex_app_bridge.server._services import ServerServices

__all__ = [
    "READ_DEPRECATION",
    "RESUME_DEPRECATION",
    "Handlers",
    "Immediate",
    "Route",
    "handler_routes",
]

MethodHandler = Callable[[RequestContext, Any], Awaitable[object]]


@dataclass(frozen=True, slots=True)
class Immediate:
    """A route whose handler answers from memory without awaiting: the connection calls it as
    the request arrives, with no task of its own (``rpc.MethodSpec.immediate``)."""

    handler: Callable[[RequestContext, Any], object]


Route = MethodHandler | Immediate


class Handlers:
    """Every namespace of handlers, bound to one server."""

    def __init__(self, server: ServerServices) -> None:
        self.server = server
        self.threads = ThreadHandlers(server)
        self.lists = ThreadListHandlers(server)
        self.pages = HistoryPageHandlers(server)
        self.admin = ThreadAdminHandlers(server)
        self.turns = TurnHandlers(server)
        self.machine = MachineHandlers(server)
        self.goals = GoalHandlers(server)


def handler_routes(handlers: Handlers) -> dict[str, Route]:
    """Method -> handler of every supported method, grouped by namespace (the one table)."""
    threads, lists, pages = handlers.threads, handlers.lists, handlers.pages
    admin, turns, machine = handlers.admin, handlers.turns, handlers.machine
    return {
        "initialize": handlers.server.initialize,
        # thread/* (ThreadHandlers)
        "thread/start": threads.thread_start,
        "thread/resume": threads.thread_resume,
        "thread/fork": threads.thread_fork,
        "thread/unsubscribe": Immediate(threads.thread_unsubscribe),
        "thread/read": threads.thread_read,
        # thread lists (ThreadListHandlers)
        "thread/list": lists.thread_list,
        "thread/loaded/list": Immediate(lists.thread_loaded_list),
        # history pages (HistoryPageHandlers)
        "thread/turns/list": pages.thread_turns_list,
        "thread/items/list": pages.thread_items_list,
        # thread administration (ThreadAdminHandlers)
        "thread/name/set": admin.thread_name_set,
        "thread/archive": admin.thread_archive,
        "thread/unarchive": admin.thread_unarchive,
        "thread/delete": admin.thread_delete,
        "thread/metadata/update": admin.thread_metadata_update,
        "thread/revert": admin.thread_revert,
        # turn/* (TurnHandlers)
        "turn/start": turns.turn_start,
        "turn/steer": turns.turn_steer,
        "turn/interrupt": turns.turn_interrupt,
        # the machine (MachineHandlers)
        "command/exec": machine.command_exec,
        "command/exec/write": machine.command_exec_write,
        "command/exec/terminate": machine.command_exec_terminate,
        "command/exec/resize": machine.command_exec_resize,
        "fs/readFile": machine.fs_read_file,
        "fs/writeFile": machine.fs_write_file,
        "fs/createDirectory": machine.fs_create_directory,
        "fs/getMetadata": machine.fs_get_metadata,
        "fs/readDirectory": machine.fs_read_directory,
        "fs/remove": machine.fs_remove,
        "fs/copy": machine.fs_copy,
        "fs/watch": machine.fs_watch,
        "fs/unwatch": machine.fs_unwatch,
        "fuzzyFileSearch": machine.fuzzy_file_search,
        "fuzzyFileSearch/sessionStart": machine.fuzzy_session_start,
        "fuzzyFileSearch/sessionUpdate": machine.fuzzy_session_update,
        "fuzzyFileSearch/sessionStop": machine.fuzzy_session_stop,
        "process/spawn": machine.process_spawn,
        "process/writeStdin": machine.process_write_stdin,
        "process/kill": machine.process_kill,
        "process/resizePty": machine.process_resize_pty,
        "thread/compact/start": turns.thread_compact_start,
        # thread goals (GoalHandlers)
        "thread/goal/get": handlers.goals.thread_goal_get,
        "thread/goal/set": handlers.goals.thread_goal_set,
        "thread/goal/clear": handlers.goals.thread_goal_clear,
        "thread/shellCommand": turns.thread_shell_command,
    }
