"""How long the reliability suite runs: a short pass by default (CI), the long campaign with
``CODEX_APP_BRIDGE_LONG=1`` (issue 23's acceptance figures: 1,000 state-machine sequences,
1,000,000 framing inputs, ...)."""

from __future__ import annotations

import os

LONG = os.environ.get("CODEX_APP_BRIDGE_LONG") == "1"


def scale(short: int, long: int) -> int:
    """``short`` in the normal suite, ``long`` behind the flag."""
    return long if LONG else short
