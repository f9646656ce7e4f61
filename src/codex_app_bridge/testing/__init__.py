"""Test doubles for Codex clients: answers to the server's requests, an in-process or subprocess
bridge with a scenario, a connected client and assertions on what it saw (the pytest plugin is
``codex_app_bridge.testing.plugin``)."""

from __future__ import annotations

from codex_app_bridge.testing._answers import SERVER_REQUEST_METHODS, answer_server_request

__all__ = ["SERVER_REQUEST_METHODS", "answer_server_request"]
