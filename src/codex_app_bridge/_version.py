"""Version numbers: this package's own, and the codex app-server release it is wire-compatible with."""

from __future__ import annotations

__version__ = "0.1.0"

#: The ``codex app-server`` release whose wire protocol this bridge speaks.
CODEX_PROTOCOL_VERSION = "0.163.0"
