"""Test doubles for Codex clients: a bridge started in process or as a process with a scenario
(``in_process_bridge``, ``subprocess_bridge``), a connected client (``BridgeClient``: requests,
turns whose server requests it answers, ``TurnResult`` assertions), the answers a client gives
to the server's requests (``answer_server_request``), and the pytest plugin
(``codex_app_bridge.testing.plugin``, loaded through the ``pytest11`` entry point)."""

from __future__ import annotations

from codex_app_bridge.testing._answers import SERVER_REQUEST_METHODS, answer_server_request
from codex_app_bridge.testing._bridge import in_process_bridge, scenario_bytes, subprocess_bridge
from codex_app_bridge.testing._client import BridgeClient, BridgeRpcError, Channel, TurnResult

__all__ = [
    "SERVER_REQUEST_METHODS",
    "BridgeClient",
    "BridgeRpcError",
    "Channel",
    "TurnResult",
    "answer_server_request",
    "in_process_bridge",
    "scenario_bytes",
    "subprocess_bridge",
]
