"""The reducer's state and result types, and the small constructors every concern shares.

Role: what one thread's reducer remembers (``ThreadState``: the status watch, the running turn's
``TurnSummary``, what the thread's producer has shown of itself, the last settings and token usage
reported) and what one reduction returns (``Reduction``: the next state and the ``Emission`` s,
each tagged with its ``Audience``). The thread status is derived here, from ``ThreadWatch``, and
so is the ``thread/status/changed`` emission that a change of it gives (``status_change``).

Boundary: data and pure helpers only. Which event changes which part of the state is decided by
the concern modules above this one: ``_turns`` (turn lifecycle: the watch and ``TurnSummary``),
``_items`` (the item ledger), ``_rows`` (one-to-one rows, and the two values they remember), and
``_requests``; ``_reducer`` dispatches to them. Nothing here imports them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final, TypeAlias

import orjson
from pydantic import JsonValue

from codex_app_bridge.listener._read_state import ReadState
from codex_app_bridge.mapping import map_event
from codex_app_bridge.protocol._base import WireModel, dump_json
from codex_app_bridge.protocol.core import EventEnvelope, EventMsg
from codex_app_bridge.protocol.v2 import (
    ActiveThreadStatus,
    IdleThreadStatus,
    NotLoadedThreadStatus,
    SystemErrorThreadStatus,
    ThreadSettings,
    ThreadStatusChangedNotification,
    TurnError,
)

__all__ = [
    "REQUEST_EVENT_TYPES",
    "Audience",
    "Emission",
    "Handler",
    "ItemLedger",
    "Params",
    "ReduceContext",
    "Reduction",
    "ThreadState",
    "ThreadStatusModel",
    "ThreadWatch",
    "TurnSummary",
    "emit",
    "mapped",
    "status_change",
    "validated",
]

REQUEST_EVENT_TYPES: Final = frozenset(
    {
        "exec_approval_request",
        "apply_patch_approval_request",
        "request_permissions",
        "request_user_input",
        "elicitation_request",
        "dynamic_tool_call_request",
    }
)
"""Core events that become a server -> client request: ``_requests`` raises them, the reducer
never reduces them (the one list of them)."""

ThreadStatusModel: TypeAlias = (
    NotLoadedThreadStatus | IdleThreadStatus | SystemErrorThreadStatus | ActiveThreadStatus
)
Params: TypeAlias = WireModel | dict[str, JsonValue]


class Audience(enum.Enum):
    """Who receives a notification (runtime spec §2.3)."""

    SUBSCRIBERS = "subscribers"
    """Connections subscribed to the thread (turn, item, error, token traffic)."""
    BROADCAST = "broadcast"
    """Every initialized connection (``thread/status/changed``, ``thread/goal/updated``)."""
    RAW = "raw"
    """Subscribers that opted in to raw events (``rawResponseItem/*``, ``rawResponse/*``)."""


@dataclass(frozen=True, slots=True)
class Emission:
    """One notification the reduction produced: method, params and audience."""

    method: str
    params: Params
    audience: Audience = Audience.SUBSCRIBERS

    def params_json(self) -> bytes:
        """The params as wire JSON (the model decides null versus absent)."""
        return dump_json(self.params)

    def params_dict(self) -> dict[str, Any]:
        """The params as plain JSON data (tests and the CLI compare these)."""
        loaded: dict[str, Any] = orjson.loads(self.params_json())
        return loaded


@dataclass(frozen=True, slots=True)
class ReduceContext:
    """What a reduction needs besides the state and the event."""

    thread_id: str
    now_ms: int
    """Wall clock (unix ms) of this reduction; used only for the synthetic items' timestamps."""


@dataclass(frozen=True, slots=True)
class ThreadWatch:
    """The facts the thread status is derived from (Codex ``ThreadWatchManager``)."""

    loaded: bool = True
    running: bool = False
    system_error: bool = False
    pending_approvals: int = 0
    """Approval requests (command, file change, permissions, elicitation) not answered yet."""
    pending_user_inputs: int = 0
    """``item/tool/requestUserInput`` requests not answered yet."""

    def active_flags(self) -> list[str]:
        flags: list[str] = []
        if self.pending_approvals:
            flags.append("waitingOnApproval")
        if self.pending_user_inputs:
            flags.append("waitingOnUserInput")
        return flags

    def status(self) -> ThreadStatusModel:
        if not self.loaded:
            return NotLoadedThreadStatus()
        flags = self.active_flags()
        if self.running or flags:
            return ActiveThreadStatus(active_flags=flags)  # pyright: ignore[reportArgumentType]
        if self.system_error:
            return SystemErrorThreadStatus()
        return IdleThreadStatus()

    def key(self) -> str:
        """Equal for equal statuses (``thread/status/changed`` fires when it changes)."""
        status = self.status()
        if isinstance(status, ActiveThreadStatus):
            return "active:" + ",".join(self.active_flags())
        return status.type


_EMPTY: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ItemLedger:
    """Which of the turn's items were shown (``item/started``, ``item/completed``) and how.

    ``_items`` keeps it by the rules of its docstring; ``_requests`` records the
    synthetic items it starts and completes for approval requests.
    """

    started_ids: frozenset[str] = _EMPTY
    """Every item id an ``item/started`` was sent for in this turn."""
    completed_ids: frozenset[str] = _EMPTY
    """Every item id an ``item/completed`` was sent for in this turn."""
    legacy_started_ids: frozenset[str] = _EMPTY
    """The ``started_ids`` a legacy begin event (or a synthetic start in its place) gave."""
    legacy_completed_ids: frozenset[str] = _EMPTY
    """The ``completed_ids`` a legacy end event (or a synthetic completion) gave."""
    command_execution_started: frozenset[str] = _EMPTY
    """Command item ids whose ``item/started`` was sent (core or synthetic), until completed."""

    def start(self, item_id: str, *, legacy: bool = False, command: bool = False) -> ItemLedger:
        """``item/started`` was sent for ``item_id`` (for a legacy event; for a command)."""
        return ItemLedger(
            started_ids=self.started_ids | {item_id},
            completed_ids=self.completed_ids,
            legacy_started_ids=(self.legacy_started_ids | {item_id})
            if legacy
            else self.legacy_started_ids,
            legacy_completed_ids=self.legacy_completed_ids,
            command_execution_started=(self.command_execution_started | {item_id})
            if command
            else self.command_execution_started,
        )

    def complete(self, item_id: str, *, legacy: bool = False, command: bool = False) -> ItemLedger:
        """``item/completed`` was sent for ``item_id`` (for a legacy event; ends a command)."""
        return ItemLedger(
            started_ids=self.started_ids,
            completed_ids=self.completed_ids | {item_id},
            legacy_started_ids=self.legacy_started_ids,
            legacy_completed_ids=(self.legacy_completed_ids | {item_id})
            if legacy
            else self.legacy_completed_ids,
            command_execution_started=(self.command_execution_started - {item_id})
            if command
            else self.command_execution_started,
        )

    def command_started(self, item_id: str) -> ItemLedger:
        """A command item started without an ``item/started`` of its own being sent."""
        return replace(self, command_execution_started=self.command_execution_started | {item_id})

    def command_ended(self, item_id: str) -> ItemLedger:
        """A command item ended without an ``item/completed`` of its own being sent."""
        return replace(self, command_execution_started=self.command_execution_started - {item_id})


_NO_ITEMS = ItemLedger()


@dataclass(frozen=True, slots=True)
class TurnSummary:
    """Per-turn facts (Codex ``TurnSummary``): the lifecycle's (``_turns``) and, in ``items``
    and ``last_agent_message``, the item ledger's (``_items``)."""

    turn_id: str | None = None
    root_turn_id: str | None = None
    started_at: int | None = None
    last_error: TurnError | None = None
    last_agent_message: WireModel | None = None
    """The turn's summary item so far (the last final-answer agent message)."""
    items: ItemLedger = _NO_ITEMS
    goal_continues: bool = False
    """The turn's last goal update left the goal active: a goal turn follows (``_rows``)."""


@dataclass(frozen=True, slots=True)
class ThreadState:
    """Everything the listener remembers about one thread; each part has one concern that
    changes it."""

    watch: ThreadWatch = field(default_factory=ThreadWatch)
    """The status facts: ``_turns`` (``_requests`` moves the pending counters)."""
    turn: TurnSummary = field(default_factory=TurnSummary)
    """The running turn (empty between turns): ``_turns``, its ``items`` ``_items``."""
    first_class_kinds: frozenset[str] = _EMPTY
    """TurnItem kinds this producer has sent as ``item_started`` / ``item_completed``
    (``_items``)."""
    thread_settings: ThreadSettings | None = None
    """The settings last reported (or seeded); ``None`` until the first is seen (``_rows``)."""
    read_state: ReadState = field(default_factory=ReadState)
    """``firstUnread`` and revision (``_read_state``): moved by each turn that ends completed or
    failed (``_turns``)."""

    @property
    def active_turn_id(self) -> str | None:
        """The running turn's id, ``None`` between turns."""
        return self.turn.turn_id


@dataclass(frozen=True, slots=True)
class Reduction:
    """The result of reducing one event."""

    state: ThreadState
    emissions: tuple[Emission, ...] = ()
    turn_ended: bool = False
    """The event ended the active turn (``task_complete`` / ``turn_aborted``)."""
    skipped: str | None = None
    """Why the event was skipped (unknown, malformed, out of scope); ``None`` when handled."""


Handler: TypeAlias = Callable[[ThreadState, EventEnvelope, Any, ReduceContext], Reduction]
"""What a dispatch-table row is: ``(state, envelope, msg, ctx) -> Reduction``."""


def status_change(before: ThreadWatch, after: ThreadWatch, thread_id: str) -> tuple[Emission, ...]:
    """``thread/status/changed`` (to every connection) when the derived status differs."""
    if before.key() == after.key():
        return ()
    params = ThreadStatusChangedNotification(thread_id=thread_id, status=after.status())
    return (Emission("thread/status/changed", params, Audience.BROADCAST),)


def emit(method: str, params: Params) -> Emission:
    """A notification for the thread's subscribers."""
    return Emission(method, params, Audience.SUBSCRIBERS)


def validated(model: type[WireModel], data: dict[str, Any]) -> WireModel:
    """``model`` from wire-shaped data (for params whose enums come from core strings)."""
    return model.model_validate(data)


def mapped(msg: EventMsg, ctx: ReduceContext, turn_id: str) -> Emission | None:
    """The stateless mapper's notification for ``msg`` as an emission (``None`` if none)."""
    result = map_event(msg, ctx.thread_id, turn_id)
    if result is None:
        return None
    return emit(*result)
