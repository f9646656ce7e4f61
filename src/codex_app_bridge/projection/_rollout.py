"""Rollout positions and truncation, and in-memory rollback (Codex 0.163.0).

Three consumers count "turns" differently, exactly as Codex does:

* :func:`user_message_positions_in_rollout` counts ``response_item`` messages that project to a
  ``UserMessage`` and pops ``num_turns`` positions on every ``thread_rolled_back`` event
  (saturating; ``0`` pops nothing). Hook prompts, contextual messages, assistant inter-agent
  instructions and ``agent_message`` items are not counted. It drives
  :func:`truncate_rollout_before_nth_user_message_from_start` (rollback/revert).
* :func:`fork_turn_positions_in_rollout` (fork) also counts assistant inter-agent instructions and
  inter-agent deliveries that trigger a turn, and applies rollbacks to the stack of *instruction*
  turns (:func:`is_user_turn_boundary`), dropping every fork position from the earliest rolled-back
  instruction turn on. A delivery is recorded either as an ``inter_agent_communication`` line or as
  an ``inter_agent_communication_metadata`` line followed by its ``agent_message`` item; the pair
  counts once. It drives :func:`truncate_rollout_to_last_n_fork_turns`.
* :func:`drop_last_n_user_turns` (in-memory history rollback) counts every
  :func:`is_user_turn_boundary` item and then trims contextual messages right above the cut.

Positions are indices into the given lines. The position functions and the two ``*_start`` /
``*_cut`` functions take any iterable and read it once, in order, holding only the positions (a
streaming caller passes a generator; ``codex-app-bridge inspect`` does). Rollout lines are the protocol layer's
``RolloutLine`` models; a caller that could not parse a line can pass ``UnknownRolloutLine`` in its
place to keep indices aligned (such lines never count).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from codex_app_bridge.projection._boundaries import (
    is_user_turn_boundary,
    parse_inter_agent_communication,
)
from codex_app_bridge.projection._contextual import (
    has_non_contextual_dev_message_content,
    is_contextual_dev_message_content,
    is_contextual_user_message_content,
)
from codex_app_bridge.protocol.core import (
    AgentMessageResponseItem,
    EventMsgLine,
    InterAgentCommunicationLine,
    InterAgentCommunicationMetadataLine,
    MessageResponseItem,
    ResponseItem,
    ResponseItemLine,
    RolloutLine,
    ThreadRolledBackEvent,
)

__all__ = [
    "DroppedUserTurns",
    "drop_last_n_user_turns",
    "fork_turn_positions_in_rollout",
    "last_n_fork_turns_start",
    "nth_user_message_cut",
    "projects_to_user_message",
    "truncate_rollout_before_nth_user_message_from_start",
    "truncate_rollout_to_last_n_fork_turns",
    "user_message_positions_in_rollout",
]


def projects_to_user_message(item: ResponseItem) -> bool:
    """Whether ``parse_turn_item(item)`` gives a ``UserMessage`` (without minting an id).

    A user message projects to ``UserMessage`` exactly when it has no contextual fragment: a
    visible hook prompt needs a hook fragment, which is itself contextual.
    """
    return (
        isinstance(item, MessageResponseItem)
        and item.role == "user"
        and not is_contextual_user_message_content(item.content)
    )


def _is_trigger_turn_instruction(item: ResponseItem) -> bool:
    if not isinstance(item, MessageResponseItem) or item.role != "assistant":
        return False
    communication = parse_inter_agent_communication(item.content)
    return communication is not None and communication.trigger_turn


def _rolled_back_turns(line: RolloutLine) -> int | None:
    if isinstance(line, EventMsgLine) and isinstance(line.payload, ThreadRolledBackEvent):
        # num_turns is a u32 in Codex; a negative value would not have parsed there.
        return line.payload.num_turns if line.payload.num_turns >= 0 else None
    return None


def _check_count(name: str, value: int) -> None:
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")


class _Counted:
    """Iterates ``lines`` once, counting them."""

    def __init__(self, lines: Iterable[RolloutLine]) -> None:
        self._lines = lines
        self.count = 0

    def __iter__(self) -> Iterator[RolloutLine]:
        for line in self._lines:
            self.count += 1
            yield line


def user_message_positions_in_rollout(lines: Iterable[RolloutLine]) -> list[int]:
    """Indices of the effective user messages of a rollout, rollbacks applied."""
    positions: list[int] = []
    for index, line in enumerate(lines):
        if isinstance(line, ResponseItemLine):
            if projects_to_user_message(line.payload):
                positions.append(index)
            continue
        turns = _rolled_back_turns(line)
        if turns:
            del positions[max(len(positions) - turns, 0) :]
    return positions


def fork_turn_positions_in_rollout(lines: Iterable[RolloutLine]) -> list[int]:
    """Indices of the fork-turn boundaries of a rollout, rollbacks applied."""
    instruction_turns: list[int] = []
    fork_turns: list[int] = []
    previous: RolloutLine | None = None
    for index, line in enumerate(lines):
        before, previous = previous, line
        if isinstance(line, ResponseItemLine):
            item = line.payload
            delivered_with_metadata = isinstance(item, AgentMessageResponseItem) and isinstance(
                before, InterAgentCommunicationMetadataLine
            )
            if is_user_turn_boundary(item) and not delivered_with_metadata:
                instruction_turns.append(index)
            if projects_to_user_message(item) or _is_trigger_turn_instruction(item):
                fork_turns.append(index)
        elif isinstance(line, InterAgentCommunicationLine | InterAgentCommunicationMetadataLine):
            instruction_turns.append(index)
            if line.payload.trigger_turn:
                fork_turns.append(index)
        else:
            turns = _rolled_back_turns(line)
            if not turns or not instruction_turns:
                continue
            start = (
                instruction_turns[len(instruction_turns) - turns]
                if turns <= len(instruction_turns)
                else instruction_turns[0]
            )
            del instruction_turns[max(len(instruction_turns) - turns, 0) :]
            fork_turns = [position for position in fork_turns if position < start]
    return fork_turns


def nth_user_message_cut(lines: Iterable[RolloutLine], n_from_start: int | None) -> int:
    """Where :func:`truncate_rollout_before_nth_user_message_from_start` cuts (the number of
    lines = no cut)."""
    counted = _Counted(lines)
    if n_from_start is None:
        return sum(1 for _line in counted)
    _check_count("n_from_start", n_from_start)
    positions = user_message_positions_in_rollout(counted)
    if len(positions) <= n_from_start:
        return counted.count
    return positions[n_from_start]


def truncate_rollout_before_nth_user_message_from_start(
    lines: Sequence[RolloutLine], n_from_start: int | None
) -> list[RolloutLine]:
    """The rollout cut strictly before its ``n``-th (0-based) effective user message.

    ``None`` (Codex's ``usize::MAX``) and any ``n`` at or beyond the number of user messages keep
    the whole rollout; ``0`` keeps only what precedes the first user message. Rollback markers in
    the kept prefix stay as they are.
    """
    return list(lines[: nth_user_message_cut(lines, n_from_start)])


def last_n_fork_turns_start(lines: Iterable[RolloutLine], n_from_end: int) -> int:
    """Where :func:`truncate_rollout_to_last_n_fork_turns` starts keeping (the number of lines =
    nothing)."""
    _check_count("n_from_end", n_from_end)
    counted = _Counted(lines)
    if n_from_end == 0:
        return sum(1 for _line in counted)
    positions = fork_turn_positions_in_rollout(counted)
    if not positions:
        return counted.count
    if len(positions) >= n_from_end:
        return positions[len(positions) - n_from_end]
    return positions[0]


def truncate_rollout_to_last_n_fork_turns(
    lines: Sequence[RolloutLine], n_from_end: int
) -> list[RolloutLine]:
    """The rollout suffix holding its last ``n`` fork turns.

    ``0`` or a rollout without fork turns gives ``[]``; fewer fork turns than ``n`` keeps from the
    first one, which still drops the startup prefix before it.
    """
    return list(lines[last_n_fork_turns_start(lines, n_from_end) :])


class DroppedUserTurns(NamedTuple):
    """Result of :func:`drop_last_n_user_turns`."""

    items: list[ResponseItem]
    """The history that remains."""
    reference_context_cleared: bool
    """Whether a trimmed developer message also held persistent (non-contextual) text, so the
    stored reference context baseline no longer matches the history and must be dropped."""


def drop_last_n_user_turns(items: Sequence[ResponseItem], num_turns: int) -> DroppedUserTurns:
    """Drop the last ``num_turns`` instruction turns from in-memory history (thread rollback).

    ``0`` or a history without instruction turns changes nothing. Dropping more turns than exist
    keeps what precedes the first one. Contextual developer/user messages immediately above the
    cut (context updates of the dropped turn) are trimmed too, never past the first turn.
    """
    _check_count("num_turns", num_turns)
    if num_turns == 0:
        return DroppedUserTurns(list(items), False)
    boundaries = [index for index, item in enumerate(items) if is_user_turn_boundary(item)]
    if not boundaries:
        return DroppedUserTurns(list(items), False)
    first = boundaries[0]
    cut = first if num_turns >= len(boundaries) else boundaries[len(boundaries) - num_turns]
    cleared = False
    while cut > first:
        previous = items[cut - 1]
        if not isinstance(previous, MessageResponseItem):
            break
        if previous.role == "developer" and is_contextual_dev_message_content(previous.content):
            cleared = cleared or has_non_contextual_dev_message_content(previous.content)
        elif not (previous.role == "user" and is_contextual_user_message_content(previous.content)):
            break
        cut -= 1
    return DroppedUserTurns(list(items[:cut]), cleared)
