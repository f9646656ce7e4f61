"""How long the reliability suite runs: a short pass by default (CI), the long campaign with
``CODEX_APP_BRIDGE_LONG=1`` (issue 23's acceptance figures: 1,000 state-machine sequences,
1,000,000 framing inputs, ...). A fraction (``CODEX_APP_BRIDGE_LONG=0.05``) runs that share of
the long campaign, so that it can be split into runs that each end in time and are summed.

The short pass draws the suite's derandomized examples (the same on every run). The long one
draws random ones (``DERANDOMIZE`` is False there): with the suite's derandomized profile every
piece of a split campaign drew the same examples as the others, so ten runs of a twentieth
checked one twentieth ten times. ``pytest --hypothesis-seed=N`` repeats a piece."""

from __future__ import annotations

import os
import sys


def _fraction(value: str) -> float:
    try:
        fraction = float(value)
    except ValueError:
        return 0.0
    return fraction if 0.0 < fraction <= 1.0 else 0.0


FRACTION = _fraction(os.environ.get("CODEX_APP_BRIDGE_LONG", ""))
LONG = FRACTION > 0.0
DERANDOMIZE = not LONG


def scale(short: int, long: int) -> int:
    """``short`` in the normal suite, ``long`` (or the flag's share of it, never less than
    ``short``) behind the flag."""
    return max(short, round(long * FRACTION)) if LONG else short


def report(line: str) -> None:
    """A campaign's count (inputs, sequences), on stderr in the long pass (``pytest -s`` shows
    it; the normal suite stays quiet)."""
    if LONG:
        print(f"[reliability] {line}", file=sys.stderr, flush=True)
