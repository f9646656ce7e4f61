"""Conformance against the real ``codex app-server`` 0.163.0: the real binary is the oracle.

Role: test tooling shipped with the package so the normal test command, the benchmarks and
``python -m codex_app_bridge.conformance`` share it. Boundary: it drives processes over their
stdio and a mock model over HTTP; it imports nothing of the server's internals.

- :mod:`.mock_responses`: the scripted Responses API mock (:class:`MockResponses`).
- :mod:`.real_codex`: CODEX_HOME config, command lines, :class:`StdioPeer`.
"""

from codex_app_bridge.conformance.mock_responses import SCENARIOS, MockResponses
from codex_app_bridge.conformance.real_codex import (
    StdioPeer,
    bridge_command,
    codex_env,
    real_codex_command,
    real_codex_path,
    write_codex_config,
)

__all__ = [
    "SCENARIOS",
    "MockResponses",
    "StdioPeer",
    "bridge_command",
    "codex_env",
    "real_codex_command",
    "real_codex_path",
    "write_codex_config",
]
