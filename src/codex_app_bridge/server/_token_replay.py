"""Token-usage replay: the ``thread/tokenUsage/updated`` a connection gets when it attaches to a
thread that already has usage (``thread/resume``, ``thread/fork``).

Probed on the 0.163.0 binary (two turns, then resumes and forks in the same process and in new
ones): right after the response, to the requesting connection only, the thread's usage as of
its last ``token_count`` (``total`` and ``last`` of that event), attributed to the turn that
was running when that ``token_count`` arrived (the fork's own thread id and history: a fork
through an earlier turn replays that turn's usage). Then, for a fork, ``thread/started``.

* ``thread/resume`` of a thread that is not loaded: always, ``excludeTurns`` or not.
* ``thread/resume`` of a loaded thread: only when the response carries turns.
* ``thread/fork``: only when the response carries turns.
* a history without a ``token_count`` that has usage: nothing.

The turn: the id of the turn running at that ``token_count`` if the rebuilt turns have it, else
the turn at the same position, else the last completed or failed turn, else the last turn
(Codex's ``token_usage_replay`` rules; with the explicit ids of paginated history the first
one decides).

Boundary: pure over a thread's history log and its rebuilt turns.
"""

from __future__ import annotations

from collections.abc import Sequence

from codex_app_bridge.listener._convert import token_usage
from codex_app_bridge.mapping.thread_history import ThreadHistoryBuilder
from codex_app_bridge.protocol.core import EventEnvelope, TokenCountEvent, TokenUsageInfo
from codex_app_bridge.protocol.v2 import ThreadTokenUsageUpdatedNotification, Turn

__all__ = ["replayed_token_usage"]


def replayed_token_usage(
    thread_id: str, events: Sequence[EventEnvelope], turns: Sequence[Turn]
) -> ThreadTokenUsageUpdatedNotification | None:
    """The replay for ``thread_id`` whose history log is ``events`` and turns ``turns``."""
    builder = ThreadHistoryBuilder("paginated")
    info: TokenUsageInfo | None = None
    owner: tuple[str, int] | None = None
    for envelope in events:
        msg = envelope.msg
        if isinstance(msg, TokenCountEvent) and msg.info is not None:
            info = msg.info
            active, position = builder.active_turn_id, builder.active_turn_position
            owner = None if active is None or position is None else (active, position)
        builder.handle_envelope(envelope)
    if info is None:
        return None
    return ThreadTokenUsageUpdatedNotification(
        thread_id=thread_id, turn_id=_turn_id(owner, turns), token_usage=token_usage(info)
    )


def _turn_id(owner: tuple[str, int] | None, turns: Sequence[Turn]) -> str:
    if owner is not None:
        turn_id, position = owner
        if any(turn.id == turn_id for turn in turns):
            return turn_id
        if position < len(turns):
            return turns[position].id
    ended = [turn for turn in turns if turn.status in ("completed", "failed")]
    if ended:
        return ended[-1].id
    return turns[-1].id if turns else ""
