"""The answers a turn is waiting for: the optional op hook of turn sources.

A turn source that asks the client something yields the core event that asks
(``exec_approval_request``, ``apply_patch_approval_request``, ``request_permissions``,
``request_user_input``, ``elicitation_request``, ``dynamic_tool_call_request``) and then, if it
wants the answer, awaits ``request.replies.wait_for(event)``: the Codex ``Op`` that answers it
(``exec_approval``, ``patch_approval``, ``request_permissions_response``, ``user_input_answer``,
``resolve_elicitation``, ``dynamic_tool_response``). ``TurnPlayer`` puts every such op submitted
during the turn into the turn's ``Replies``; a source that never waits simply never sees them.
An interrupt cancels the wait with the rest of the turn.

The correlation is Codex's: an approval's op carries the approval id (``approval_id``, else the
call id), a user-input answer the id of the turn that asked, an elicitation's the server name
and request id, the others the call id.

Boundary: no connections, no JSON-RPC.
"""

from __future__ import annotations

from collections.abc import Hashable

import anyio

from codex_app_bridge.protocol.core import (
    ApplyPatchApprovalRequestEvent,
    DynamicToolCallRequestEvent,
    DynamicToolResponseOp,
    ElicitationRequestEvent,
    EventMsg,
    ExecApprovalOp,
    ExecApprovalRequestEvent,
    Op,
    PatchApprovalOp,
    RequestPermissionsEvent,
    RequestPermissionsResponseOp,
    RequestUserInputEvent,
    ResolveElicitationOp,
    UserInputAnswerOp,
)

__all__ = [
    "ANSWER_OP_TYPES",
    "ASKING_EVENT_CLASSES",
    "Replies",
    "answer_key",
    "asks",
    "request_key",
]

ANSWER_OP_TYPES = (
    ExecApprovalOp,
    PatchApprovalOp,
    RequestPermissionsResponseOp,
    UserInputAnswerOp,
    ResolveElicitationOp,
    DynamicToolResponseOp,
)
"""The ops that answer a request a turn raised."""


ASKING_EVENT_CLASSES: frozenset[type[object]] = frozenset(
    {
        ExecApprovalRequestEvent,
        ApplyPatchApprovalRequestEvent,
        RequestPermissionsEvent,
        RequestUserInputEvent,
        ElicitationRequestEvent,
        DynamicToolCallRequestEvent,
    }
)
"""The event classes that ask something (``request_key`` gives their key)."""


def asks(event: EventMsg) -> bool:
    """Whether ``event`` waits for an answer (one set lookup: the hot path of every source)."""
    return type(event) in ASKING_EVENT_CLASSES


def request_key(event: EventMsg, turn_id: str) -> Hashable | None:
    """What the answer to ``event`` will be matched by (``None``: the event asks nothing)."""
    if isinstance(event, ExecApprovalRequestEvent):
        return ("exec_approval", event.effective_approval_id())
    if isinstance(event, ApplyPatchApprovalRequestEvent):
        return ("patch_approval", event.call_id)
    if isinstance(event, RequestPermissionsEvent):
        return ("request_permissions_response", event.call_id)
    if isinstance(event, RequestUserInputEvent):
        return ("user_input_answer", event.turn_id or turn_id)
    if isinstance(event, ElicitationRequestEvent):
        return ("resolve_elicitation", event.server_name, str(event.id))
    if isinstance(event, DynamicToolCallRequestEvent):
        return ("dynamic_tool_response", event.call_id)
    return None


def answer_key(op: Op) -> Hashable | None:
    """The key of the request ``op`` answers (``None``: not an answer)."""
    if isinstance(op, ResolveElicitationOp):
        return ("resolve_elicitation", op.server_name, str(op.request_id))
    if isinstance(op, ANSWER_OP_TYPES):
        return (op.type, op.id)
    return None


class Replies:
    """Answer ops received during one turn, waited for by key."""

    def __init__(self, turn_id: str = "") -> None:
        self._turn_id = turn_id
        self._received: dict[Hashable, Op] = {}
        self._changed = anyio.Event()

    def put(self, op: Op) -> bool:
        """Keep an answer op for whoever waits for it; False if ``op`` answers nothing."""
        key = answer_key(op)
        if key is None:
            return False
        self._received[key] = op
        self._changed.set()
        self._changed = anyio.Event()
        return True

    async def wait_for(self, event: EventMsg) -> Op:
        """The op answering ``event`` (see the module docstring)."""
        key = request_key(event, self._turn_id)
        if key is None:
            raise ValueError(f"{event.type} asks nothing")
        while key not in self._received:
            await self._changed.wait()
        return self._received.pop(key)
