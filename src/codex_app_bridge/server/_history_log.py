"""``HistoryLog``: a loaded thread's history log, its finished turns kept as JSON.

The runtime appends the events thread history needs (``HISTORY_EVENT_TYPES``) as models while a
turn runs; when the turn has ended (``freeze``) they are encoded, one JSON line each, into one
``bytes`` per turn, and dropped as models. Their models are built again, from those lines, only
when something reads the log (``events``: ``thread/read``, ``resume``, ``fork``, a session's
model history), which is rarer than a turn: a loaded thread that waits, idle, holds its history
in about a fifth of the memory (one buffer instead of a hundred small objects), and small objects
made under load are what keeps the allocator's arenas resident after it (issue 23).

The lines are ``dump_trusted_envelope`` 's and are read back with ``parse_trusted_envelope``
(each event with its own model's serializer and validator: the union adapter of every event kind
would be built at a first freeze, tens of milliseconds of a first resume or turn): the
protocol's models parse what they write, losslessly (the rollout reader relies on it too).

Boundary: the runtime is the only writer (``append``, ``freeze``, ``truncate``); readers get a
list of models of their own (``events``), never the log's.
"""

from __future__ import annotations

from collections.abc import Iterable

from codex_app_bridge.protocol.core import (
    EventEnvelope,
    dump_trusted_envelope,
    parse_trusted_envelope,
)

__all__ = ["HistoryLog"]


class HistoryLog:
    """The events a thread's turns are rebuilt from (see the module docstring)."""

    __slots__ = ("_frozen", "_frozen_count", "_live")

    def __init__(self, events: Iterable[EventEnvelope] = ()) -> None:
        self._frozen: list[bytes] = []
        """Finished turns: each the JSON lines of its events, joined by newlines."""
        self._frozen_count = 0
        self._live: list[EventEnvelope] = list(events)
        """Events since the last ``freeze``, as models."""
        self.freeze()

    def __len__(self) -> int:
        return self._frozen_count + len(self._live)

    def append(self, envelope: EventEnvelope) -> None:
        self._live.append(envelope)

    def freeze(self) -> None:
        """Encode the events appended since the last call (a turn that has ended)."""
        live = self._live
        if not live:
            return
        self._frozen.append(b"\n".join([dump_trusted_envelope(e) for e in live]))
        self._frozen_count += len(live)
        self._live = []

    def events(self) -> list[EventEnvelope]:
        """Every event, oldest first, as new models."""
        events = [
            parse_trusted_envelope(line) for chunk in self._frozen for line in chunk.split(b"\n")
        ]
        events.extend(self._live)
        return events

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` events."""
        if length >= len(self):
            return
        if length >= self._frozen_count:
            del self._live[length - self._frozen_count :]
            return
        kept = self.events()[:length]
        self._frozen, self._frozen_count, self._live = [], 0, kept
        self.freeze()

    def copy(self) -> HistoryLog:
        """A log of the same events (the encoded turns shared: they are never changed)."""
        copy = HistoryLog()
        copy._frozen = list(self._frozen)
        copy._frozen_count = self._frozen_count
        copy._live = list(self._live)
        return copy
