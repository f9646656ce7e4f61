"""The owner's side of ``codex.thread.<id>.control``: another node's submissions, applied here.

A client on a node that does not own a thread still submits through its own runtime; that
node's session (``_follow``) sends each ``Submission`` here, and the owner applies it to the
thread's runtime as a request of its own clients would: a user turn starts a turn (with the
requesting node's turn id, so both nodes name it alike) or is steered into the running one,
input is steered, an interrupt interrupts, an answer goes to the session that asked. What the
owner's source does with them comes back to every node through the log. The first answer to a
request wins: the session that asked takes one answer per call, wherever it came from.

Boundary: no NATS here (``_node`` receives and replies); one table of op type -> action.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from codex_app_bridge.protocol.core import Submission, UserInputOp, UserTurnOp
from codex_app_bridge.server._runtime import ThreadRuntime, TurnOrder
from codex_app_bridge.server._threads import ThreadRecord
from codex_app_bridge.sources import input_text
from codex_app_bridge.sources._replies import ANSWER_OP_TYPES

__all__ = ["apply_submission"]


def _user_turn(record: ThreadRecord, runtime: ThreadRuntime, submission: Submission) -> None:
    op = submission.op
    assert isinstance(op, UserTurnOp)
    if runtime.active_turn_id is not None:
        runtime.steer(op.items)
        return
    record.turns_started += 1
    if not record.preview:
        record.preview = input_text(op.items)
    record.touch()
    runtime.start_turn(
        TurnOrder(
            turn_id=submission.id,
            items=op.items,
            cwd=op.cwd,
            model=op.model,
            approval_policy=op.approval_policy,
            sandbox_policy=op.sandbox_policy,
            effort=op.effort,
            service_tier=op.service_tier,
        )
    )


def _user_input(record: ThreadRecord, runtime: ThreadRuntime, submission: Submission) -> None:
    op = submission.op
    assert isinstance(op, UserInputOp)
    runtime.steer(op.items)


def _interrupt(record: ThreadRecord, runtime: ThreadRuntime, submission: Submission) -> None:
    runtime.interrupt(None)  # the requesting node answers its client when the turn ends


def _answer(record: ThreadRecord, runtime: ThreadRuntime, submission: Submission) -> None:
    runtime.answer(submission)


Action = Callable[[ThreadRecord, ThreadRuntime, Submission], None]

ACTIONS: Final[dict[str, Action]] = {
    "user_turn": _user_turn,
    "user_input": _user_input,
    "interrupt": _interrupt,
    **{str(op.model_fields["type"].default): _answer for op in ANSWER_OP_TYPES},
}
"""What the owner does with each kind of forwarded submission (others are refused)."""


def apply_submission(record: ThreadRecord, submission: Submission) -> str | None:
    """Apply a forwarded submission to the owned thread; ``None``, or why it was refused."""
    runtime = record.runtime
    if runtime is None or not record.loaded:
        return f"thread {record.id} is not loaded on its owner"
    action = ACTIONS.get(submission.op.type)
    if action is None:
        return f"{submission.op.type} is not forwarded to a thread's owner"
    action(record, runtime, submission)
    return None
