"""Server layer: wiring of transports, rpc and the domain; the initialize gate, connection
lifecycle and the request handlers grouped by namespace.

* ``BridgeServer`` (``_server``): one object serving any number of connections; owns the listener
  hub, the thread store, the event source, the method table and the turn runners.
* ``build_method_table`` / ``SUPPORTED_METHODS`` (``_table``): all 175 client methods of 0.163.0,
  in the real order; the supported ones bound to handlers (``_handlers``), the rest answering
  ``UNSUPPORTED`` errors (``_errors``).
* ``with_injection`` (``_inject``): the ``bridge/inject/*`` methods of ``serve --allow-inject``.
* The handshake and gate (``_handshake``), the experimental checks (``_experimental``), thread-id
  parsing (``_ids``), the thread store (``_threads``) and the thread runtime (``_runtime``).
"""

from codex_app_bridge.server._errors import UNSUPPORTED_REASON, unsupported_method
from codex_app_bridge.server._experimental import EXPERIMENTAL_FIELDS, experimental_descriptor
from codex_app_bridge.server._handlers import (
    READ_DEPRECATION,
    RESUME_DEPRECATION,
    Handlers,
)
from codex_app_bridge.server._handshake import ConnectionState, user_agent
from codex_app_bridge.server._ids import new_uuid7, parse_thread_id
from codex_app_bridge.server._inject import INJECT_METHODS, with_injection
from codex_app_bridge.server._runtime import (
    HISTORY_EVENT_TYPES,
    INTERRUPT_GRACE,
    ThreadRuntime,
    TurnOrder,
)
from codex_app_bridge.server._server import BridgeServer
from codex_app_bridge.server._table import SUPPORTED_METHODS, build_method_table
from codex_app_bridge.server._threads import ThreadRecord, ThreadStore

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
    "ThreadRuntime",
    "ThreadStore",
    "TurnOrder",
    "build_method_table",
    "experimental_descriptor",
    "new_uuid7",
    "parse_thread_id",
    "unsupported_method",
    "user_agent",
    "with_injection",
]
