"""Rollout lines: one JSON object per line of a Codex ``rollout-*.jsonl`` session file.

Role: read and write the persisted history of a thread losslessly. Each line is a flattened
``RolloutLine`` ``{"timestamp", "ordinal"?, "type", "payload", "metadata"?}``: ``type`` names
the ``RolloutItem`` variant and ``payload`` holds its body (serde's adjacently tagged form).
0.163.0 writes an ``ordinal`` on every line, and ``metadata`` (Codex harness metadata) next to
``response_item`` payloads. Line types, as the 0.163.0 binary names them: ``session_meta``,
``response_item``, ``inter_agent_communication``, ``inter_agent_communication_metadata``,
``compacted``, ``turn_context``, ``token_usage_record``, ``world_state``,
``security_risk_score``, ``event_msg``, ``realtime_item``; newer writers add
``retained_context`` and ``rollout_reference``. Any other type parses into
``UnknownRolloutLine`` and is written back unchanged.

Boundary: models, adapter and JSONL helpers only; rollout positions, truncation and history
projection live in ``projection/``. Payload models declare the fields the bridge reads; the
rest of each payload (world state, configuration snapshots) is kept verbatim.
"""

from collections.abc import Iterator, Mapping
from typing import Annotated, Literal, TypeAlias

import orjson
from pydantic import Field, JsonValue, Tag, TypeAdapter, ValidationError

from codex_app_bridge.protocol._base import CoreModel, omit_none, union_adapter
from codex_app_bridge.protocol._tagged import UNKNOWN_TAG, tagged_discriminator, variant_tags
from codex_app_bridge.protocol.core._event_msg import EventMsg, TokenUsageRecord
from codex_app_bridge.protocol.core._response_item import ResponseItem

__all__ = [
    "ROLLOUT_LINE_ADAPTER",
    "ROLLOUT_LINE_TAGS",
    "CompactedItem",
    "CompactedLine",
    "EventMsgLine",
    "InterAgentCommunication",
    "InterAgentCommunicationLine",
    "InterAgentCommunicationMetadata",
    "InterAgentCommunicationMetadataLine",
    "RealtimeItemLine",
    "ResponseItemLine",
    "RetainedContextLine",
    "RolloutLine",
    "RolloutParseError",
    "RolloutReferenceItem",
    "RolloutReferenceLine",
    "SecurityRiskScoreLine",
    "SessionMeta",
    "SessionMetaLine",
    "TokenUsageRecord",
    "TokenUsageRecordLine",
    "TurnContextItem",
    "TurnContextLine",
    "UnknownRolloutLine",
    "WorldStateItem",
    "WorldStateLine",
    "dump_rollout_line",
    "dump_rollout_record",
    "iter_rollout_jsonl",
    "parse_rollout_line",
]


# ---------------------------------------------------------------------------------------------
# Payloads
# ---------------------------------------------------------------------------------------------


class SessionMeta(CoreModel):
    """``session_meta`` payload: who started the session, where, with which instructions.

    0.163.0 also writes ``session_id``, ``runtime_workspace_roots``, ``history_mode``,
    ``history_base``, ``context_window``, ``multi_agent_version`` and, for forks,
    ``forked_from_ordinal_exclusive``; the ones not declared here are kept verbatim. Readers
    fall back to the legacy key ``id`` when ``session_id`` is missing (``thread_id``).
    """

    session_id: str | None = omit_none()
    id: str
    forked_from_id: str | None = omit_none()
    timestamp: str
    cwd: str
    originator: str
    cli_version: str
    source: JsonValue = "vscode"
    model_provider: str | None = None
    base_instructions: JsonValue = None
    git: JsonValue = omit_none()

    @property
    def thread_id(self) -> str:
        """The session's thread id: ``session_id``, or the legacy ``id``."""
        return self.session_id if self.session_id is not None else self.id


class TurnContextItem(CoreModel):
    """``turn_context`` payload: the settings one turn ran with (policies kept as JSON)."""

    turn_id: str | None = omit_none()
    cwd: str
    approval_policy: JsonValue
    sandbox_policy: JsonValue
    model: str
    summary: JsonValue = "auto"


class CompactedItem(CoreModel):
    """``compacted`` payload: a summary plus the history that replaces the compacted window.

    The binary always writes ``compaction_response_id`` and ``latest_token_usage_record``
    (``null`` when unknown) and omits every other optional field when empty. ``window_id`` may
    still be the legacy numeric window number in older files; it is kept as written.
    """

    message: str
    replacement_history: list[ResponseItem] | None = omit_none()
    replacement_history_metadata: list[dict[str, JsonValue]] | None = omit_none()
    guardian_history: JsonValue = omit_none()
    retained_context: JsonValue = omit_none()
    mcp_resource_origins: JsonValue = omit_none()
    window_number: int | None = omit_none()
    first_window_id: str | None = omit_none()
    previous_window_id: str | None = omit_none()
    window_id: str | int | None = omit_none()
    compaction_response_id: str | None = None
    latest_token_usage_record: TokenUsageRecord | None = None
    resume_metadata: JsonValue = omit_none()


class InterAgentCommunication(CoreModel):
    """``inter_agent_communication`` payload: a message between agents of a multi-agent tree."""

    author: str
    recipient: str
    other_recipients: list[str] = Field(default_factory=list[str])
    content: str
    encrypted_content: str | None = omit_none()
    metadata: JsonValue = omit_none()
    trigger_turn: bool


class InterAgentCommunicationMetadata(CoreModel):
    """``inter_agent_communication_metadata`` payload: whether the delivery triggers a turn."""

    trigger_turn: bool


class WorldStateItem(CoreModel):
    """``world_state`` payload: a full snapshot (``full``) or a patch of the model-visible state."""

    full: bool
    state: JsonValue


class RolloutReferenceItem(CoreModel):
    """``rollout_reference`` payload (newer writers): a pointer to a predecessor rollout file."""

    rollout_path: str
    thread_id: str | None = omit_none()
    rollout_timestamp: str | None = omit_none()
    segment_id: str | None = omit_none()
    max_depth: int | None = omit_none()
    nth_user_message: int | None = omit_none()
    compacted_replacement_history_filter_texts: list[str] | None = omit_none()


# ---------------------------------------------------------------------------------------------
# Lines
# ---------------------------------------------------------------------------------------------


class _RolloutLineBase(CoreModel):
    """Fields every rollout line has: RFC 3339 ``timestamp`` and, since 0.163.0, ``ordinal``."""

    timestamp: str
    ordinal: int | None = omit_none()


class SessionMetaLine(_RolloutLineBase):
    """The first line of a rollout (and of every appended segment)."""

    type: Literal["session_meta"] = "session_meta"
    payload: SessionMeta


class ResponseItemLine(_RolloutLineBase):
    """A model-visible Responses API item; ``metadata`` is Codex harness bookkeeping."""

    type: Literal["response_item"] = "response_item"
    payload: ResponseItem
    metadata: dict[str, JsonValue] | None = omit_none()


class InterAgentCommunicationLine(_RolloutLineBase):
    """A legacy inter-agent delivery."""

    type: Literal["inter_agent_communication"] = "inter_agent_communication"
    payload: InterAgentCommunication


class InterAgentCommunicationMetadataLine(_RolloutLineBase):
    """Delivery metadata for the inter-agent message that follows."""

    type: Literal["inter_agent_communication_metadata"] = "inter_agent_communication_metadata"
    payload: InterAgentCommunicationMetadata


class CompactedLine(_RolloutLineBase):
    """A compaction checkpoint."""

    type: Literal["compacted"] = "compacted"
    payload: CompactedItem


class TurnContextLine(_RolloutLineBase):
    """The settings of a turn, written once per user turn."""

    type: Literal["turn_context"] = "turn_context"
    payload: TurnContextItem


class TokenUsageRecordLine(_RolloutLineBase):
    """Usage of one model response."""

    type: Literal["token_usage_record"] = "token_usage_record"
    payload: TokenUsageRecord


class WorldStateLine(_RolloutLineBase):
    """A snapshot or patch of the model-visible world state."""

    type: Literal["world_state"] = "world_state"
    payload: WorldStateItem


class SecurityRiskScoreLine(_RolloutLineBase):
    """A security risk score record (payload kept as JSON)."""

    type: Literal["security_risk_score"] = "security_risk_score"
    payload: JsonValue


class EventMsgLine(_RolloutLineBase):
    """A persisted core event (0.163.0 persists turn lifecycle, settings, items, token counts)."""

    type: Literal["event_msg"] = "event_msg"
    payload: EventMsg


class RealtimeItemLine(_RolloutLineBase):
    """A sparse realtime presentation fact (payload kept as JSON)."""

    type: Literal["realtime_item"] = "realtime_item"
    payload: JsonValue


class RetainedContextLine(_RolloutLineBase):
    """Retained context (newer writers; payload kept as JSON)."""

    type: Literal["retained_context"] = "retained_context"
    payload: JsonValue


class RolloutReferenceLine(_RolloutLineBase):
    """A reference to a predecessor rollout (newer writers)."""

    type: Literal["rollout_reference"] = "rollout_reference"
    payload: RolloutReferenceItem


class UnknownRolloutLine(CoreModel):
    """A line whose ``type`` this bridge does not know; every field is kept and written back."""

    timestamp: str | None = omit_none()
    ordinal: int | None = omit_none()
    type: str


_RolloutLineVariants: TypeAlias = (
    Annotated[SessionMetaLine, Tag("session_meta")]
    | Annotated[ResponseItemLine, Tag("response_item")]
    | Annotated[InterAgentCommunicationLine, Tag("inter_agent_communication")]
    | Annotated[InterAgentCommunicationMetadataLine, Tag("inter_agent_communication_metadata")]
    | Annotated[CompactedLine, Tag("compacted")]
    | Annotated[TurnContextLine, Tag("turn_context")]
    | Annotated[TokenUsageRecordLine, Tag("token_usage_record")]
    | Annotated[WorldStateLine, Tag("world_state")]
    | Annotated[SecurityRiskScoreLine, Tag("security_risk_score")]
    | Annotated[EventMsgLine, Tag("event_msg")]
    | Annotated[RealtimeItemLine, Tag("realtime_item")]
    | Annotated[RetainedContextLine, Tag("retained_context")]
    | Annotated[RolloutReferenceLine, Tag("rollout_reference")]
    | Annotated[UnknownRolloutLine, Tag(UNKNOWN_TAG)]
)

ROLLOUT_LINE_TAGS: Mapping[str, str] = variant_tags(_RolloutLineVariants)
"""Every rollout line ``type`` the bridge knows."""

RolloutLine = Annotated[
    _RolloutLineVariants, tagged_discriminator(_RolloutLineVariants, "RolloutLine")
]
"""One line of a rollout file; unknown line types become ``UnknownRolloutLine``."""

ROLLOUT_LINE_ADAPTER: TypeAdapter[RolloutLine] = union_adapter(RolloutLine, title="RolloutLine")


class RolloutParseError(ValueError):
    """A rollout JSONL line failed validation; ``line_number`` is 1-based."""

    def __init__(self, line_number: int, error: ValidationError) -> None:
        super().__init__(f"rollout line {line_number}: {error}")
        self.line_number = line_number
        self.error = error


def parse_rollout_line(data: bytes | str) -> RolloutLine:
    """Validate one JSON-encoded rollout line (``pydantic.ValidationError`` when malformed)."""
    return ROLLOUT_LINE_ADAPTER.validate_json(data)


def dump_rollout_line(line: RolloutLine) -> bytes:
    """The line as compact JSON bytes (no newline), with the binary's null-versus-absent choices."""
    return ROLLOUT_LINE_ADAPTER.dump_json(line, by_alias=True)


def dump_rollout_record(
    kind: str, payload: CoreModel, *, timestamp: str, ordinal: int | None = None
) -> bytes:
    """The bytes :func:`dump_rollout_line` gives for the line ``{timestamp, ordinal, type: kind,
    payload}``, from a payload model that is already valid (the writer's every line).

    Only the payload's own serializer runs: no line model is validated around a trusted payload,
    and the line union's serializer, which is every event and item type (built on its first
    use, a large share of a first turn's time), is not needed."""
    head: dict[str, str | int] = {"timestamp": timestamp}
    if ordinal is not None:
        head["ordinal"] = ordinal
    head["type"] = kind
    body = payload.__pydantic_serializer__.to_json(payload, by_alias=True)
    return orjson.dumps(head)[:-1] + b',"payload":' + body + b"}"


def iter_rollout_jsonl(data: bytes) -> Iterator[RolloutLine]:
    """Parse a whole rollout file, skipping blank lines; ``RolloutParseError`` names the line."""
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            yield ROLLOUT_LINE_ADAPTER.validate_json(raw)
        except ValidationError as exc:
            raise RolloutParseError(number, exc) from exc
