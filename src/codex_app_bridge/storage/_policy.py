"""Which core events a 0.163.0 rollout persists (the ``event_msg`` lines of a paginated thread).

Probed on the real 0.163.0 binary (the captures in ``tests/data/captures`` and scratch
``CODEX_HOME`` runs): a paginated thread's rollout holds the turn lifecycle (``task_started``,
``task_complete``, ``turn_aborted``), ``thread_settings_applied``, one ``item_completed`` per item
and ``token_count``. Nothing else appears: not ``item_started``, not the legacy item events
(``user_message``, ``agent_message``, reasoning, tool begin/end; ``item_completed`` carries those
items), not ``error`` (a failed turn's error travels in its ``task_complete``), not ``warning`` and
no deltas. ``turn_started`` / ``turn_complete`` are the older spellings of the lifecycle tags.

Boundary: data only; the writer and the thread runtime decide what to do with it.
"""

from __future__ import annotations

__all__ = ["PERSISTED_EVENT_TYPES", "is_persisted_event_type"]

PERSISTED_EVENT_TYPES: frozenset[str] = frozenset(
    {
        "task_started",
        "turn_started",
        "task_complete",
        "turn_complete",
        "turn_aborted",
        "thread_settings_applied",
        "item_completed",
        "token_count",
    }
)
"""``EventMsg.type`` values a 0.163.0 paginated rollout holds as ``event_msg`` lines."""


def is_persisted_event_type(event_type: str) -> bool:
    """Whether 0.163.0 writes an event of this type to the rollout."""
    return event_type in PERSISTED_EVENT_TYPES
