"""The one clock and source of randomness of the process: wall time, fresh ids' random bits.

Everything that stamps a time (``emittedAtMs``, ``createdAt``, turn and item times, rollout
names) or mints an id (thread, turn, item ids, the installation id) asks this module, never
``time`` or ``os.urandom`` directly, so that a run can be made reproducible: under a
``SeededClock`` (``serve --seed N``, ``replay --seed N``, the pytest plugin) time stands still at
``SEEDED_EPOCH_MS`` and the random bits come from a generator seeded with ``N``, so two runs of
the same client flow over the same source write the same bytes.

The clock in force is a context variable: ``use_clock(clock)`` sets it for the current context
and every task started from it (an in-process server started under it keeps it; another server
in the same process may use another); ``install_clock(clock)`` sets it for the whole process
(before the event loop starts). Timers and timeouts use the event loop's monotonic clock, not
this one: a seeded run waits as long as any other.

Boundary: the standard library only; imported by every layer, it imports nothing of the package.
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Final

__all__ = [
    "SEEDED_EPOCH_MS",
    "Clock",
    "SeededClock",
    "current_clock",
    "install_clock",
    "now_ms",
    "now_ns",
    "now_s",
    "random_bits",
    "use_clock",
    "utc_now",
    "uuid4",
    "uuid7",
]

SEEDED_EPOCH_MS: Final = 1_735_689_600_000
"""The time of a seeded run: 2025-01-01T00:00:00Z."""


class Clock:
    """The real clock: wall time and ``os.urandom``."""

    seed: int | None = None

    def now_ns(self) -> int:
        return time.time_ns()

    def random_bits(self, bits: int) -> int:
        return int.from_bytes(os.urandom((bits + 7) // 8), "big") >> (-bits % 8)


class SeededClock(Clock):
    """A reproducible clock: time stands still at ``epoch_ms``; random bits come from a
    generator seeded with ``seed`` (one stream for the whole run, in the order they are asked)."""

    def __init__(self, seed: int, *, epoch_ms: int = SEEDED_EPOCH_MS) -> None:
        self.seed = seed
        self._ns = epoch_ms * 1_000_000
        self._random = random.Random(seed)
        self._lock = threading.Lock()  # storage mints in worker threads

    def now_ns(self) -> int:
        return self._ns

    def advance(self, seconds: float) -> None:
        """Move the standing time forward (a scenario's virtual delay, a test's step)."""
        self._ns += round(seconds * 1_000_000_000)

    def random_bits(self, bits: int) -> int:
        with self._lock:
            return self._random.getrandbits(bits)


_REAL: Final = Clock()
_CURRENT: ContextVar[Clock] = ContextVar("codex_app_bridge_clock", default=_REAL)


def current_clock() -> Clock:
    return _CURRENT.get()


def install_clock(clock: Clock) -> None:
    """Make ``clock`` the clock of the current context: call it before the event loop starts
    (``anyio.run`` copies the context into its tasks) to set it for a whole command."""
    _CURRENT.set(clock)


@contextmanager
def use_clock(clock: Clock) -> Generator[Clock]:
    """``clock`` for the current context while the block runs (tasks started inside keep it)."""
    token = _CURRENT.set(clock)
    try:
        yield clock
    finally:
        _CURRENT.reset(token)


def now_ns() -> int:
    return _CURRENT.get().now_ns()


def now_ms() -> int:
    return _CURRENT.get().now_ns() // 1_000_000


def now_s() -> int:
    """Unix time in whole seconds (``createdAt``, ``updatedAt``)."""
    return _CURRENT.get().now_ns() // 1_000_000_000


def utc_now() -> datetime:
    """The time as an aware UTC ``datetime`` (rollout names and line timestamps)."""
    ns = _CURRENT.get().now_ns()
    return datetime.fromtimestamp(ns // 1_000_000_000, UTC).replace(
        microsecond=ns // 1000 % 1_000_000
    )


def random_bits(bits: int) -> int:
    return _CURRENT.get().random_bits(bits)


def uuid7(unix_ms: int | None = None) -> uuid.UUID:
    """A version 7 UUID (RFC 9562) for ``unix_ms`` (default: now): 48 bits of Unix
    milliseconds, the version, 12 random bits, the variant and 62 random bits."""
    clock = _CURRENT.get()
    millis = clock.now_ns() // 1_000_000 if unix_ms is None else unix_ms
    rand = clock.random_bits(74)
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= (rand >> 62) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return uuid.UUID(int=value)


def uuid4() -> uuid.UUID:
    """A version 4 (random) UUID."""
    return uuid.UUID(int=_CURRENT.get().random_bits(128), version=4)
