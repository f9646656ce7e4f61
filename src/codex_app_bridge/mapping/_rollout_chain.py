"""A thread's effective rollout, assembled from the segment files 0.163.0 writes on revert and fork.

0.163.0 does not copy history when a thread is reverted (``thread/revert``) or forked
(``thread/fork``): it starts a new rollout file (a *segment*) whose first line is a
``session_meta`` carrying ``history_base = {thread_id, end_ordinal_exclusive, end_byte_offset}``.
The thread's history is then the lines of that base rollout whose ``ordinal`` is below
``end_ordinal_exclusive`` (the base being resolved the same way, recursively), followed by the
segment's own lines. ``history_base.thread_id`` names a rollout, not necessarily a thread: a
thread's first file is ``rollout-<timestamp>-<thread id>.jsonl``, a segment is
``rollout-<timestamp>-<thread id>_<segment id>.jsonl`` and is named by its segment id (probed with
the ``revert_fork`` capture: the revert segment's base is the thread id, the fork's base is the
revert segment's id). ``end_byte_offset`` is not used: ordinals say the same thing and survive
rewriting of the base file.

:func:`resolve_rollout_history` assembles it in memory; for long rollouts, :func:`history_chain`
follows the bases from their first lines only and :func:`iter_rollout_history` then streams the
history one line at a time, reading each file once (``codex-app-bridge history``).

Boundary: pure. Reading files is the caller's business (``load`` / ``base_of`` / ``read``
callbacks).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from codex_app_bridge.protocol.core import RolloutLine, SessionMetaLine

__all__ = [
    "HistoryBase",
    "HistoryBaseError",
    "history_base_of",
    "history_chain",
    "iter_rollout_history",
    "resolve_rollout_history",
    "rollout_id_from_filename",
]

# The deepest chain of bases followed; real chains are a handful of reverts and forks deep.
MAX_BASE_DEPTH = 64

_FILENAME = re.compile(
    r"^rollout-.*?(?P<thread>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
    r"[0-9a-fA-F]{12})(?:_(?P<segment>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
    r"[0-9a-fA-F]{4}-[0-9a-fA-F]{12}))?\.jsonl$"
)


@dataclass(frozen=True)
class HistoryBase:
    """Where a segment's history starts: the first ``end_ordinal_exclusive`` lines of a rollout."""

    rollout_id: str
    end_ordinal_exclusive: int


class HistoryBaseError(LookupError):
    """A segment's base rollout is missing, or the chain of bases loops or is too deep."""

    def __init__(self, rollout_id: str, reason: str) -> None:
        super().__init__(f"history base {rollout_id}: {reason}")
        self.rollout_id = rollout_id
        self.reason = reason


def rollout_id_from_filename(name: str) -> str | None:
    """The rollout id a file name stands for: the segment id if present, else the thread id."""
    match = _FILENAME.match(name)
    if match is None:
        return None
    return match.group("segment") or match.group("thread")


def history_base_of(lines: Sequence[RolloutLine]) -> HistoryBase | None:
    """The ``history_base`` of the first ``session_meta`` line, if it has a well-formed one."""
    for line in lines:
        if isinstance(line, SessionMetaLine):
            raw = (line.payload.model_extra or {}).get("history_base")
            if not isinstance(raw, Mapping):
                return None
            base = cast("Mapping[str, object]", raw)
            rollout_id = base.get("thread_id")
            end = base.get("end_ordinal_exclusive")
            if isinstance(rollout_id, str) and isinstance(end, int) and not isinstance(end, bool):
                return HistoryBase(rollout_id=rollout_id, end_ordinal_exclusive=end)
            return None
    return None


def history_chain(
    base: HistoryBase | None, base_of: Callable[[str], HistoryBase | None]
) -> list[HistoryBase]:
    """The bases a segment's history goes through, its own ``base`` first, then the base of that
    base's rollout, and so on.

    ``base_of(rollout_id)`` gives that rollout's own ``history_base`` (``None`` if it has none) and
    raises :class:`HistoryBaseError` (``"rollout not found"``) when the rollout cannot be found. A
    chain that loops, or is deeper than ``MAX_BASE_DEPTH``, raises :class:`HistoryBaseError`.
    """
    chain: list[HistoryBase] = []
    while base is not None:
        if any(link.rollout_id == base.rollout_id for link in chain):
            raise HistoryBaseError(base.rollout_id, "the chain of history bases loops")
        if len(chain) >= MAX_BASE_DEPTH:
            raise HistoryBaseError(base.rollout_id, f"more than {MAX_BASE_DEPTH} history bases")
        chain.append(base)
        base = base_of(base.rollout_id)
    return chain


def iter_rollout_history(
    chain: Sequence[HistoryBase],
    own: Iterable[RolloutLine],
    read: Callable[[str], Iterable[RolloutLine]],
) -> Iterator[RolloutLine]:
    """:func:`resolve_rollout_history`, one line at a time: the retained lines of the bases of
    ``chain`` (from :func:`history_chain`), deepest first, then the segment's ``own`` lines.

    ``read(rollout_id)`` gives a base rollout's lines; it is called once per base, when its lines
    are due, and they are read to the end (a base line's ``ordinal`` decides, not its position).
    """

    def level(depth: int) -> Iterator[RolloutLine]:
        if depth < len(chain):
            end = chain[depth].end_ordinal_exclusive
            for position, line in enumerate(level(depth + 1)):
                if (position if line.ordinal is None else line.ordinal) < end:
                    yield line
        yield from own if depth == 0 else read(chain[depth - 1].rollout_id)

    return level(0)


def resolve_rollout_history(
    lines: Sequence[RolloutLine],
    load: Callable[[str], Sequence[RolloutLine] | None],
) -> list[RolloutLine]:
    """The full history of a rollout: its base chain's retained lines, then its own lines.

    ``load(rollout_id)`` returns the parsed lines of that rollout, or ``None`` when it cannot be
    found (then :class:`HistoryBaseError` is raised). A rollout without ``history_base`` is
    returned as is. A base line without an ``ordinal`` (older writers) is placed by its position.
    """
    loaded: dict[str, Sequence[RolloutLine]] = {}

    def base_of(rollout_id: str) -> HistoryBase | None:
        base_lines = load(rollout_id)
        if base_lines is None:
            raise HistoryBaseError(rollout_id, "rollout not found")
        loaded[rollout_id] = base_lines
        return history_base_of(base_lines)

    chain = history_chain(history_base_of(lines), base_of)
    return list(iter_rollout_history(chain, lines, loaded.__getitem__))
