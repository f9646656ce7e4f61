"""Codex core submissions: ``{"id": <submission id>, "op": <Op>}``, what a client of core sends.

Role: the input half of the two-way source contract (``sources``): the thread runtime submits
these to whatever produces the thread's events, with Codex's own names and shapes (``Op`` in
``codex-rs/protocol``, tagged by ``type`` in snake_case). The output half is ``EventEnvelope``.
Only the operations the app-server bridge submits are modelled field by field; any other tag
parses into ``UnknownOp`` and keeps every field, so a producer may receive and echo them.

A turn's id is the id of the submission that started it (``user_turn`` / ``user_input`` while
idle): the events of that turn come back in envelopes with that id.

Boundary: models and their adapters only.
"""

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field, JsonValue, Tag, TypeAdapter

from codex_app_bridge.protocol._base import CoreModel, union_adapter
from codex_app_bridge.protocol._tagged import UNKNOWN_TAG, tagged_discriminator
from codex_app_bridge.protocol.core._user_input import UserInput

__all__ = [
    "OP_ADAPTER",
    "SUBMISSION_ADAPTER",
    "CompactOp",
    "DynamicToolResponseOp",
    "ExecApprovalOp",
    "InterruptOp",
    "Op",
    "PatchApprovalOp",
    "RequestPermissionsResponseOp",
    "ResolveElicitationOp",
    "RunUserShellCommandOp",
    "ShutdownOp",
    "Submission",
    "UnknownOp",
    "UserInputAnswerOp",
    "UserInputOp",
    "UserTurnOp",
]


class InterruptOp(CoreModel):
    """Abort the running turn; core answers with ``turn_aborted`` (``reason: interrupted``)."""

    type: Literal["interrupt"] = "interrupt"


class UserInputOp(CoreModel):
    """User input: starts a turn when idle, joins the running turn otherwise (steering)."""

    type: Literal["user_input"] = "user_input"
    items: list[UserInput]
    final_output_json_schema: JsonValue = None


class UserTurnOp(CoreModel):
    """User input with the turn's full settings (what an app-server ``turn/start`` submits)."""

    type: Literal["user_turn"] = "user_turn"
    items: list[UserInput]
    cwd: str
    approval_policy: JsonValue
    sandbox_policy: JsonValue
    model: str
    effort: str | None = None
    summary: str | None = None
    service_tier: str | None = None
    final_output_json_schema: JsonValue = None
    collaboration_mode: JsonValue = None
    """The ``CollaborationMode`` the turn selects (sticky; ``None``: unchanged)."""


class ExecApprovalOp(CoreModel):
    """The user's decision on an ``exec_approval_request`` (``id``: the request's call id)."""

    type: Literal["exec_approval"] = "exec_approval"
    id: str
    turn_id: str | None = None
    decision: JsonValue


class PatchApprovalOp(CoreModel):
    """The user's decision on an ``apply_patch_approval_request``."""

    type: Literal["patch_approval"] = "patch_approval"
    id: str
    decision: JsonValue


class UserInputAnswerOp(CoreModel):
    """Answers to a ``request_user_input`` event (``response: {answers: {id: {answers}}}``).

    ``id`` is the id of the turn that asked (Codex answers per turn, not per call)."""

    type: Literal["user_input_answer"] = "user_input_answer"
    id: str
    response: JsonValue


class ResolveElicitationOp(CoreModel):
    """The user's answer to an MCP ``elicitation_request``."""

    type: Literal["resolve_elicitation"] = "resolve_elicitation"
    server_name: str
    request_id: JsonValue
    decision: str
    content: JsonValue = None
    meta: JsonValue = None


class RequestPermissionsResponseOp(CoreModel):
    """The permissions granted for a ``request_permissions`` event (``id``: its call id;
    ``response: {permissions, scope}``)."""

    type: Literal["request_permissions_response"] = "request_permissions_response"
    id: str
    response: JsonValue


class DynamicToolResponseOp(CoreModel):
    """The client's result of a dynamic tool call (``item/tool/call``)."""

    type: Literal["dynamic_tool_response"] = "dynamic_tool_response"
    id: str
    response: JsonValue


class ShutdownOp(CoreModel):
    """Stop the session; core answers with ``shutdown_complete`` and sends nothing after."""

    type: Literal["shutdown"] = "shutdown"


class CompactOp(CoreModel):
    """Compact the thread's history now, as a turn of its own (``thread/compact/start``)."""

    type: Literal["compact"] = "compact"


class RunUserShellCommandOp(CoreModel):
    """Run a command the user typed, as a turn of its own (``thread/shellCommand``); the model
    sees it and its output in its next request (``<user_shell_command>``)."""

    type: Literal["run_user_shell_command"] = "run_user_shell_command"
    command: str
    timeout_ms: int | None = None


class UnknownOp(CoreModel):
    """An operation this version does not model; every field is kept."""

    type: str


_OpVariants: TypeAlias = (
    Annotated[InterruptOp, Tag("interrupt")]
    | Annotated[UserInputOp, Tag("user_input")]
    | Annotated[UserTurnOp, Tag("user_turn")]
    | Annotated[ExecApprovalOp, Tag("exec_approval")]
    | Annotated[PatchApprovalOp, Tag("patch_approval")]
    | Annotated[UserInputAnswerOp, Tag("user_input_answer")]
    | Annotated[ResolveElicitationOp, Tag("resolve_elicitation")]
    | Annotated[DynamicToolResponseOp, Tag("dynamic_tool_response")]
    | Annotated[RequestPermissionsResponseOp, Tag("request_permissions_response")]
    | Annotated[ShutdownOp, Tag("shutdown")]
    | Annotated[CompactOp, Tag("compact")]
    | Annotated[RunUserShellCommandOp, Tag("run_user_shell_command")]
    | Annotated[UnknownOp, Tag(UNKNOWN_TAG)]
)
Op = Annotated[_OpVariants, tagged_discriminator(_OpVariants, "Op")]
"""Core ``Op`` union (tagged by ``type``, unknown variants kept)."""

OP_ADAPTER: TypeAdapter[Any] = union_adapter(Op, title="Op")


class Submission(CoreModel):
    """One submission to core: ``id`` correlates the events it causes, ``op`` is what to do."""

    id: str
    op: Op = Field()


SUBMISSION_ADAPTER: TypeAdapter[Submission] = TypeAdapter(Submission)
