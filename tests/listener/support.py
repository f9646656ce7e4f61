"""Helpers of the listener tests: events from plain dicts, a pure reducer driver, and an
in-memory ``Outbox`` that records what one connection received."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson

from codex_app_bridge.listener import Audience, ReduceContext, Reduction, ThreadState, reduce
from codex_app_bridge.protocol.core import EVENT_ENVELOPE_ADAPTER, EventEnvelope
from codex_app_bridge.protocol.jsonrpc import RequestId
from codex_app_bridge.rpc.outbox import EncodedParams, OutboundNotification

THREAD = "01a229f2-0000-7000-8000-000000000001"
TURN = "01a229f2-0000-7000-8000-0000000000aa"
NOW_MS = 1_796_000_000_000
TIMEOUT = 60


def envelope(msg: dict[str, Any], turn_id: str = TURN) -> EventEnvelope:
    """An ``{id, msg}`` envelope validated like any input."""
    return EVENT_ENVELOPE_ADAPTER.validate_python({"id": turn_id, "msg": msg})


@dataclass
class Driver:
    """Feeds events through the pure reducer and remembers the state between them."""

    state: ThreadState = field(default_factory=ThreadState)
    skipped: list[str] = field(default_factory=list[str])
    ctx: ReduceContext = field(default_factory=lambda: ReduceContext(THREAD, NOW_MS))

    def feed(self, msg: dict[str, Any], turn_id: str = TURN) -> Reduction:
        reduction = reduce(self.state, envelope(msg, turn_id), self.ctx)
        if reduction.skipped is not None:
            self.skipped.append(reduction.skipped)
        self.state = reduction.state
        return reduction

    def notifications(self, msg: dict[str, Any], turn_id: str = TURN) -> list[dict[str, Any]]:
        """``{"method", "params"}`` (plus ``audience`` when not subscribers) per emission."""
        return [
            as_wire(e.method, e.params_dict(), e.audience)
            for e in self.feed(msg, turn_id).emissions
        ]

    def run(self, msgs: Iterable[dict[str, Any]], turn_id: str = TURN) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for msg in msgs:
            out.extend(self.notifications(msg, turn_id))
        return out


def as_wire(method: str, params: dict[str, Any], audience: Audience) -> dict[str, Any]:
    wire: dict[str, Any] = {"method": method, "params": params}
    if audience is not Audience.SUBSCRIBERS:
        wire["audience"] = audience.value
    return wire


def methods(notifications: Iterable[dict[str, Any]]) -> list[str]:
    return [n["method"] for n in notifications]


# --- core payloads seen in 0.163.0 rollouts (shortened) ----------------------------------------


def task_started(
    turn_id: str = TURN, started_at: int = 1_796_000_092, trigger: str | None = None
) -> dict[str, Any]:
    """``trigger``: ``goal`` for a goal-continuation turn."""
    return {
        "type": "task_started",
        "turn_attribution": {
            "turn_id": turn_id,
            "turn_trigger": trigger,
            "parent_turn_id": None,
            "initiating_agent_path": None,
            "root_turn_id": turn_id,
        },
        "turn_id": turn_id,
        "root_turn_id": turn_id,
        "started_at": started_at,
        "model_context_window": 258400,
        "collaboration_mode_kind": "default",
    }


def task_complete(
    turn_id: str = TURN,
    last_agent_message: str | None = "Done.",
    error: dict[str, Any] | None = None,
    duration_ms: int = 154,
) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "type": "task_complete",
        "root_turn_id": turn_id,
        "turn_id": turn_id,
        "last_agent_message": last_agent_message,
        "started_at": 1_796_000_092,
        "completed_at": 1_796_000_093,
        "duration_ms": duration_ms,
        "time_to_first_token_ms": 47,
    }
    if error is not None:
        msg["error"] = error
    return msg


def turn_aborted(turn_id: str = TURN) -> dict[str, Any]:
    return {
        "type": "turn_aborted",
        "root_turn_id": turn_id,
        "turn_id": turn_id,
        "reason": "interrupted",
        "started_at": 1_796_000_092,
        "completed_at": 1_796_000_093,
        "duration_ms": 548,
    }


def agent_message_item(item_id: str, text: str, phase: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "AgentMessage",
        "id": item_id,
        "content": [{"type": "Text", "text": text}],
    }
    if phase is not None:
        item["phase"] = phase
    return item


def item_started(
    item: dict[str, Any], turn_id: str = TURN, at: int = 1_796_000_092_900
) -> dict[str, Any]:
    return {
        "type": "item_started",
        "thread_id": THREAD,
        "turn_id": turn_id,
        "item": item,
        "started_at_ms": at,
    }


def item_completed(
    item: dict[str, Any], turn_id: str = TURN, at: int = 1_796_000_092_950
) -> dict[str, Any]:
    return {
        "type": "item_completed",
        "thread_id": THREAD,
        "turn_id": turn_id,
        "item": item,
        "started_at_ms": at - 50,
        "completed_at_ms": at,
    }


def settings_event(**overrides: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "model": "mock-model",
        "model_provider_id": "mock",
        "approval_policy": "never",
        "approvals_reviewer": "user",
        "permission_profile": {"type": "disabled"},
        "cwd": "/home/dev/project",
        "runtime_workspace_roots": ["/home/dev/project"],
        "reasoning_summary": "detailed",
        "collaboration_mode": {
            "mode": "default",
            "settings": {
                "developer_instructions": None,
                "model": "mock-model",
                "reasoning_effort": None,
            },
        },
        "disabled_plugin_ids": [],
    }
    settings.update(overrides)
    return {"type": "thread_settings_applied", "thread_id": THREAD, "thread_settings": settings}


# --- an Outbox that records ------------------------------------------------------------------


class RecordingOutbox:
    """An ``Outbox`` keeping every notification it accepted, decoded, in order.

    ``opt_out`` imitates ``optOutNotificationMethods``; ``fail`` makes every send raise; setting
    ``closed`` makes the connection look gone.
    """

    def __init__(
        self, connection_id: int, *, opt_out: Iterable[str] = (), fail: bool = False
    ) -> None:
        self._connection_id = connection_id
        self.opt_out = frozenset(opt_out)
        self.fail = fail
        self.closed = False
        self.received: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self.arrived = anyio.Event()

    @property
    def connection_id(self) -> int:
        return self._connection_id

    def wants(self, method: str) -> bool:
        return method not in self.opt_out

    def offer_notification(self, notification: OutboundNotification) -> bool:
        if self.fail:
            raise ConnectionResetError("peer went away")
        if not self.wants(notification.method):
            return False
        self.raw.append(notification.data)
        self.received.append(orjson.loads(notification.data))
        self.arrived.set()
        return True

    async def send_notification(self, notification: OutboundNotification) -> bool:
        return self.offer_notification(notification)

    def offer(self, data: bytes) -> bool:
        self.raw.append(data)
        self.received.append(orjson.loads(data))
        self.arrived.set()
        return True

    congested = False

    async def wait_writable(self) -> None:
        return None

    async def send_server_request(
        self, request_id: RequestId, method: str, params: EncodedParams
    ) -> bool:
        return False

    def methods(self) -> list[str]:
        return [n["method"] for n in self.received]
