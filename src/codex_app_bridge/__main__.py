"""``python -m codex_app_bridge``: the same entry point as the ``codex-app-bridge`` script."""

from __future__ import annotations

import sys

from codex_app_bridge.cli import main

if __name__ == "__main__":
    sys.exit(main())
