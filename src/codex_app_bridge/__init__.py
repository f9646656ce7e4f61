"""codex-app-bridge: a Python implementation of the Codex app-server notification bridge.

The package turns Codex core runtime events (``EventMsg`` in ``{id, msg}`` envelopes) and rollout
history (``ResponseItem`` lines) into the JSON-RPC notifications that ``codex app-server`` 0.163.0
sends to its clients, and serves them over the same wire protocol.

Public surface: the names listed in ``__all__``. Everything else lives in private modules.
"""

from __future__ import annotations

from codex_app_bridge._version import CODEX_PROTOCOL_VERSION, __version__
from codex_app_bridge.mapping import (
    convert_patch_changes,
    item_event_to_server_notification,
    thread_item_from_turn_item,
)

__all__ = [
    "CODEX_PROTOCOL_VERSION",
    "__version__",
    "convert_patch_changes",
    "item_event_to_server_notification",
    "thread_item_from_turn_item",
]
