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

A new namespace is one more property of ``Handlers`` and its rows in ``ROUTES`` (with its params
models in ``_table._SUPPORTED_PARAMS``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final

from codex_app_bridge.rpc import MethodSpec, RequestContext

if TYPE_CHECKING:
    from codex_app_bridge.server._handlers_admin import ThreadAdminHandlers
    from codex_app_bridge.server._handlers_goals import GoalHandlers
    from codex_app_bridge.server._handlers_lists import ThreadListHandlers
    from codex_app_bridge.server._handlers_machine import MachineHandlers
    from codex_app_bridge.server._handlers_pages import HistoryPageHandlers
    from codex_app_bridge.server._handlers_threads import ThreadHandlers
    from codex_app_bridge.server._handlers_turns import TurnHandlers
    from codex_app_bridge.server._services import ServerServices

__all__ = [
    "CONFIG_METHODS",
    "ROUTES",
    "Handlers",
    "Immediate",
    "Route",
    "handler_route",
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
    """Every namespace of handlers, bound to one server. A namespace's module is imported and
    its class created when one of its methods is first routed (``handler_route``): a process
    whose first request is ``thread/list`` loads the list handlers, not the machine's."""

    def __init__(self, server: ServerServices) -> None:
        self.server = server

    def loaded_machine(self) -> MachineHandlers | None:
        """The machine's handlers if one of their methods was routed (``None``: none was, so
        no process or watch of theirs exists)."""
        machine: MachineHandlers | None = vars(self).get("machine")
        return machine

    @cached_property
    def threads(self) -> ThreadHandlers:
        from codex_app_bridge.server._handlers_threads import ThreadHandlers

        return ThreadHandlers(self.server)

    @cached_property
    def lists(self) -> ThreadListHandlers:
        from codex_app_bridge.server._handlers_lists import ThreadListHandlers

        return ThreadListHandlers(self.server)

    @cached_property
    def pages(self) -> HistoryPageHandlers:
        from codex_app_bridge.server._handlers_pages import HistoryPageHandlers

        return HistoryPageHandlers(self.server)

    @cached_property
    def admin(self) -> ThreadAdminHandlers:
        from codex_app_bridge.server._handlers_admin import ThreadAdminHandlers

        return ThreadAdminHandlers(self.server)

    @cached_property
    def turns(self) -> TurnHandlers:
        from codex_app_bridge.server._handlers_turns import TurnHandlers

        return TurnHandlers(self.server)

    @cached_property
    def machine(self) -> MachineHandlers:
        from codex_app_bridge.server._handlers_machine import MachineHandlers

        return MachineHandlers(self.server)

    @cached_property
    def goals(self) -> GoalHandlers:
        from codex_app_bridge.server._handlers_goals import GoalHandlers

        return GoalHandlers(self.server)

    @cached_property
    def config_specs(self) -> dict[str, MethodSpec[Any]]:
        """The rows of the config and account methods (``_config_methods``), by name."""
        from codex_app_bridge.server._config_methods import config_method_specs

        return config_method_specs(self.server)


ROUTES: Final[dict[str, tuple[str, str, bool]]] = {
    # thread/* (ThreadHandlers)
    "thread/start": ("threads", "thread_start", False),
    "thread/resume": ("threads", "thread_resume", False),
    "thread/fork": ("threads", "thread_fork", False),
    "thread/unsubscribe": ("threads", "thread_unsubscribe", True),
    "thread/read": ("threads", "thread_read", False),
    # thread lists (ThreadListHandlers)
    "thread/list": ("lists", "thread_list", False),
    "thread/loaded/list": ("lists", "thread_loaded_list", True),
    # history pages (HistoryPageHandlers)
    "thread/turns/list": ("pages", "thread_turns_list", False),
    "thread/items/list": ("pages", "thread_items_list", False),
    # thread administration (ThreadAdminHandlers)
    "thread/name/set": ("admin", "thread_name_set", False),
    "thread/archive": ("admin", "thread_archive", False),
    "thread/unarchive": ("admin", "thread_unarchive", False),
    "thread/delete": ("admin", "thread_delete", False),
    "thread/metadata/update": ("admin", "thread_metadata_update", False),
    "thread/revert": ("admin", "thread_revert", False),
    # turn/* (TurnHandlers)
    "turn/start": ("turns", "turn_start", False),
    "turn/steer": ("turns", "turn_steer", False),
    "turn/interrupt": ("turns", "turn_interrupt", False),
    "thread/compact/start": ("turns", "thread_compact_start", False),
    "thread/shellCommand": ("turns", "thread_shell_command", False),
    # the machine (MachineHandlers)
    "command/exec": ("machine", "command_exec", False),
    "command/exec/write": ("machine", "command_exec_write", False),
    "command/exec/terminate": ("machine", "command_exec_terminate", False),
    "command/exec/resize": ("machine", "command_exec_resize", False),
    "fs/readFile": ("machine", "fs_read_file", False),
    "fs/writeFile": ("machine", "fs_write_file", False),
    "fs/createDirectory": ("machine", "fs_create_directory", False),
    "fs/getMetadata": ("machine", "fs_get_metadata", False),
    "fs/readDirectory": ("machine", "fs_read_directory", False),
    "fs/remove": ("machine", "fs_remove", False),
    "fs/copy": ("machine", "fs_copy", False),
    "fs/watch": ("machine", "fs_watch", False),
    "fs/unwatch": ("machine", "fs_unwatch", False),
    "fuzzyFileSearch": ("machine", "fuzzy_file_search", False),
    "fuzzyFileSearch/sessionStart": ("machine", "fuzzy_session_start", False),
    "fuzzyFileSearch/sessionUpdate": ("machine", "fuzzy_session_update", False),
    "fuzzyFileSearch/sessionStop": ("machine", "fuzzy_session_stop", False),
    "process/spawn": ("machine", "process_spawn", False),
    "process/writeStdin": ("machine", "process_write_stdin", False),
    "process/kill": ("machine", "process_kill", False),
    "process/resizePty": ("machine", "process_resize_pty", False),
    # thread goals (GoalHandlers)
    "thread/goal/get": ("goals", "thread_goal_get", False),
    "thread/goal/set": ("goals", "thread_goal_set", False),
    "thread/goal/clear": ("goals", "thread_goal_clear", False),
}
"""Method -> (namespace of ``Handlers``, its handler method, routed ``Immediate``) of every
supported method but ``initialize`` (the server's own): the one table of routes."""


CONFIG_METHODS: Final = (
    "model/list",
    "modelProvider/capabilities/read",
    "account/read",
    "account/login/start",
    "account/logout",
    "account/rateLimits/read",
    "account/usage/read",
    "config/read",
    "config/value/write",
    "config/batchWrite",
)
"""The config and account methods: their rows are ``_config_methods``'s (``Handlers.config_specs``),
made together on the first request of one of them."""


def handler_route(handlers: Handlers, method: str) -> Route:
    """The handler of one supported method (its namespace loaded now if it is not yet)."""
    if method == "initialize":
        return handlers.server.initialize
    namespace, name, immediate = ROUTES[method]
    handler = getattr(getattr(handlers, namespace), name)
    return Immediate(handler) if immediate else handler


def handler_routes(handlers: Handlers) -> dict[str, Route]:
    """Method -> handler of every supported method (every namespace loaded)."""
    return {method: handler_route(handlers, method) for method in ("initialize", *ROUTES)}
