"""Server layer: wiring of transports, rpc and the domain; the initialize gate, connection
lifecycle and the request handlers grouped by namespace.

* ``BridgeServer`` (``_server``): one object serving any number of connections; owns the listener
  hub, the thread registry, the event source, the method table and the thread runtimes.
* ``ThreadRegistry`` (``_registry``): every thread (loaded, unloaded, stored) and the one owner
  of their lives; ``ThreadRecord`` (``_threads``) is what it keeps of one.
* ``build_method_table`` / ``SUPPORTED_METHODS`` (``_table``): all 175 client methods of 0.163.0,
  in the real order; the supported ones bound to handlers (``_handlers``, one class per
  namespace), the rest answering ``UNSUPPORTED`` errors (``_errors``).
* ``with_injection`` (``_inject``): the ``bridge/inject/*`` methods of ``serve --allow-inject``.
* The handshake and gate (``_handshake``), the experimental checks (``_experimental``), thread-id
  parsing (``_ids``) and the thread runtime (``_runtime``).
"""

from __future__ import annotations

import typing as _typing

from codex_app_bridge._reexports import import_reexport as _import_reexport

if _typing.TYPE_CHECKING:
    from codex_app_bridge.server._errors import UNSUPPORTED_REASON, unsupported_method
    from codex_app_bridge.server._experimental import EXPERIMENTAL_FIELDS, experimental_descriptor
    from codex_app_bridge.server._handlers import Handlers
    from codex_app_bridge.server._handlers_threads import READ_DEPRECATION, RESUME_DEPRECATION
    from codex_app_bridge.server._handshake import ConnectionState, user_agent
    from codex_app_bridge.server._ids import new_uuid7, parse_thread_id
    from codex_app_bridge.server._inject import INJECT_METHODS, with_injection
    from codex_app_bridge.server._registry import ThreadRegistry
    from codex_app_bridge.server._runtime import (
        HISTORY_EVENT_TYPES,
        INTERRUPT_GRACE,
        ThreadRuntime,
        TurnOrder,
    )
    from codex_app_bridge.server._server import BridgeServer
    from codex_app_bridge.server._table import SUPPORTED_METHODS, build_method_table
    from codex_app_bridge.server._threads import ThreadRecord

# where each public name lives: its module is imported on first use, so that importing this
# package (or one of its light modules) does not load every other
_SOURCES: dict[str, str] = {
    **dict.fromkeys(
        ("UNSUPPORTED_REASON", "unsupported_method"), "codex_app_bridge.server._errors"
    ),
    **dict.fromkeys(
        ("EXPERIMENTAL_FIELDS", "experimental_descriptor"), "codex_app_bridge.server._experimental"
    ),
    **dict.fromkeys(("Handlers",), "codex_app_bridge.server._handlers"),
    **dict.fromkeys(
        ("READ_DEPRECATION", "RESUME_DEPRECATION"), "codex_app_bridge.server._handlers_threads"
    ),
    **dict.fromkeys(("ConnectionState", "user_agent"), "codex_app_bridge.server._handshake"),
    **dict.fromkeys(("new_uuid7", "parse_thread_id"), "codex_app_bridge.server._ids"),
    **dict.fromkeys(("INJECT_METHODS", "with_injection"), "codex_app_bridge.server._inject"),
    **dict.fromkeys(
        ("HISTORY_EVENT_TYPES", "INTERRUPT_GRACE", "ThreadRuntime", "TurnOrder"),
        "codex_app_bridge.server._runtime",
    ),
    **dict.fromkeys(("BridgeServer",), "codex_app_bridge.server._server"),
    **dict.fromkeys(("SUPPORTED_METHODS", "build_method_table"), "codex_app_bridge.server._table"),
    **dict.fromkeys(("ThreadRegistry",), "codex_app_bridge.server._registry"),
    **dict.fromkeys(("ThreadRecord",), "codex_app_bridge.server._threads"),
}

__all__ = [
    "EXPERIMENTAL_FIELDS",
    "HISTORY_EVENT_TYPES",
    "INJECT_METHODS",
    "INTERRUPT_GRACE",
    "READ_DEPRECATION",
    "RESUME_DEPRECATION",
    "SUPPORTED_METHODS",
    "UNSUPPORTED_REASON",
    "BridgeServer",
    "ConnectionState",
    "Handlers",
    "ThreadRecord",
    "ThreadRegistry",
    "ThreadRuntime",
    "TurnOrder",
    "build_method_table",
    "experimental_descriptor",
    "new_uuid7",
    "parse_thread_id",
    "unsupported_method",
    "user_agent",
    "with_injection",
]


def __getattr__(name: str) -> object:
    return _import_reexport(__name__, globals(), _SOURCES, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
