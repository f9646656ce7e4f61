"""Item builders: the app-server ``ThreadItem`` s (v2 wire models) made from core values.

One builder per kind of item, shared by every path that produces that item, so that a rule is
written once: :func:`~codex_app_bridge.mapping.thread_item_from_turn_item` (core ``TurnItem`` s),
:func:`~codex_app_bridge.mapping.item_event_to_server_notification` (the legacy begin/end events)
and the listener's synthetic approval items all end up here.

Rules the builders own (the 0.163.0 behaviour, see ``spec/event-mapping.md`` §3):

* command items show ``argv`` as one shell-quoted line with secrets masked, the ``cwd`` URI as a
  native path, ``parsed_cmd`` as command actions (a ``read`` whose path cannot be joined to the
  cwd is left out), an empty aggregated output as ``null``;
* file changes are sorted by path; an update that moves the file gets ``\\n\\nMoved to: <dest>``
  after its diff;
* collab tool calls fail when an agent is ``errored`` or ``not_found``; agent states become
  ``{status, message}``;
* durations are whole milliseconds, truncated (``Duration`` helpers).

Core values are open-ended strings where the 0.163.0 wire has closed enums (statuses, sources,
tool names, ...). A value outside the wire's set raises :class:`UnmappableItemError`: the real
server cannot even read such an event, so there is no item to show. Optional odd values become
``null`` and unknown *entries* inside an item (a parsed command, a file change, a content item
of a type this version does not know) are left out, so one of them does not hide the item.

Boundary: pure functions from core models to v2 models; no I/O, no state, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from codex_app_bridge.mapping._paths import render_cwd, resolve_cwd
from codex_app_bridge.mapping._text import redact_secrets, shlex_join
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import (
    AddPatchChangeKind,
    CollabAgentState,
    CollabAgentStatus,
    CollabAgentTool,
    CollabAgentToolCallStatus,
    CollabAgentToolCallThreadItem,
    CommandAction,
    CommandExecutionSource,
    CommandExecutionStatus,
    CommandExecutionThreadItem,
    DeletePatchChangeKind,
    DynamicToolCallOutputContentItem,
    DynamicToolCallStatus,
    DynamicToolCallThreadItem,
    FileChangeThreadItem,
    FileUpdateChange,
    InputAudioDynamicToolCallOutputContentItem,
    InputImageDynamicToolCallOutputContentItem,
    InputTextDynamicToolCallOutputContentItem,
    ListFilesCommandAction,
    McpToolCallError,
    McpToolCallResult,
    McpToolCallStatus,
    McpToolCallThreadItem,
    PatchApplyStatus,
    PatchChangeKind,
    ReadCommandAction,
    SearchCommandAction,
    SubAgentActivityKind,
    SubAgentActivityThreadItem,
    UnknownCommandAction,
    UpdatePatchChangeKind,
)

__all__ = [
    "UnmappableItemError",
    "build_collab_agent_tool_call_item",
    "build_command_execution_approval_request_item",
    "build_command_execution_begin_item",
    "build_command_execution_end_item",
    "build_command_execution_item",
    "build_dynamic_tool_call_item",
    "build_dynamic_tool_call_response_item",
    "build_file_change_approval_request_item",
    "build_file_change_begin_item",
    "build_file_change_end_item",
    "build_file_change_item",
    "build_mcp_tool_call_begin_item",
    "build_mcp_tool_call_end_item",
    "build_mcp_tool_call_result",
    "build_sub_agent_activity_event_item",
    "build_sub_agent_activity_item",
    "collab_agent_state",
    "collab_agent_states",
    "collab_end_status",
    "collab_status",
    "collab_tool",
    "command_actions",
    "command_status",
    "convert_dynamic_tool_content_items",
    "convert_patch_changes",
    "dynamic_tool_status",
    "patch_status",
]


class UnmappableItemError(ValueError):
    """A core value the 0.163.0 wire protocol has no spelling for (e.g. an unknown status)."""


_T = TypeVar("_T")


def _lookup(table: Mapping[str, _T], value: str, what: str) -> _T:
    try:
        return table[value]
    except KeyError:
        raise UnmappableItemError(f"{what} {value!r} has no 0.163.0 wire value") from None


# Core spellings (snake_case) of the closed wire enums.
_COMMAND_STATUS: dict[str, CommandExecutionStatus] = {
    "in_progress": "inProgress",
    "completed": "completed",
    "failed": "failed",
    "declined": "declined",
}
_COMMAND_SOURCE: dict[str, CommandExecutionSource] = {
    "agent": "agent",
    "user_shell": "userShell",
    "unified_exec_startup": "unifiedExecStartup",
    "unified_exec_interaction": "unifiedExecInteraction",
}
_PATCH_STATUS: dict[str, PatchApplyStatus] = {
    "in_progress": "inProgress",
    "completed": "completed",
    "failed": "failed",
    "declined": "declined",
}
_DYNAMIC_STATUS: dict[str, DynamicToolCallStatus] = {
    "in_progress": "inProgress",
    "completed": "completed",
    "failed": "failed",
}
# McpToolCall turn items are the one core item written in camelCase.
_MCP_STATUS: dict[str, McpToolCallStatus] = {
    "inProgress": "inProgress",
    "completed": "completed",
    "failed": "failed",
}
_COLLAB_TOOL: dict[str, CollabAgentTool] = {
    "spawn_agent": "spawnAgent",
    "send_input": "sendInput",
    "resume_agent": "resumeAgent",
    "wait": "wait",
    "close_agent": "closeAgent",
    "send_message": "sendMessage",
    "followup_task": "followupTask",
    "interrupt_agent": "interruptAgent",
    "list_agents": "listAgents",
}
_COLLAB_STATUS: dict[str, CollabAgentToolCallStatus] = {
    "in_progress": "inProgress",
    "completed": "completed",
    "failed": "failed",
    "interrupted": "interrupted",
}
_AGENT_STATUS: dict[str, CollabAgentStatus] = {
    "pending_init": "pendingInit",
    "running": "running",
    "interrupted": "interrupted",
    "completed": "completed",
    "errored": "errored",
    "shutdown": "shutdown",
    "not_found": "notFound",
}
_SUB_AGENT_KIND: dict[str, SubAgentActivityKind] = {
    "started": "started",
    "interacted": "interacted",
    "interrupted": "interrupted",
    "completed": "completed",
}


# --------------------------------------------------------------------------- commands


def command_actions(parsed_cmd: Iterable[core.ParsedCommand], cwd: str) -> list[CommandAction]:
    """Command actions for a command's ``parsed_cmd``, run in ``cwd`` (a ``file:`` URI or path).

    A ``read`` names its file relative to the cwd; the action shows the joined path in the cwd's
    own convention and is left out when the join is impossible. Command texts and search queries
    are shown with secrets masked. A parsed command of an unknown type is left out.
    """
    base = resolve_cwd(cwd)
    actions: list[CommandAction] = []
    for parsed in parsed_cmd:
        if isinstance(parsed, core.ParsedCommandRead):
            joined = None if base is None else base.join(parsed.path)
            if joined is not None:
                actions.append(
                    ReadCommandAction(
                        command=redact_secrets(parsed.cmd),
                        name=parsed.name,
                        path=joined.native_path(),
                    )
                )
        elif isinstance(parsed, core.ParsedCommandListFiles):
            actions.append(
                ListFilesCommandAction(command=redact_secrets(parsed.cmd), path=parsed.path)
            )
        elif isinstance(parsed, core.ParsedCommandSearch):
            actions.append(
                SearchCommandAction(
                    command=redact_secrets(parsed.cmd),
                    query=None if parsed.query is None else redact_secrets(parsed.query),
                    path=parsed.path,
                )
            )
        elif isinstance(parsed, core.ParsedCommandUnknown):
            actions.append(UnknownCommandAction(command=redact_secrets(parsed.cmd)))
    return actions


def build_command_execution_item(
    *,
    item_id: str,
    argv: Sequence[str],
    cwd: str,
    parsed_cmd: Iterable[core.ParsedCommand],
    source: str,
    status: CommandExecutionStatus,
    process_id: str | None = None,
    aggregated_output: str | None = None,
    exit_code: int | None = None,
    duration_ms: int | None = None,
    plugin_id: str | None = None,
    script_path: str | None = None,
) -> CommandExecutionThreadItem:
    """A ``commandExecution`` item; ``source`` is the core spelling (``unified_exec_startup``)."""
    return CommandExecutionThreadItem(
        id=item_id,
        command=redact_secrets(shlex_join(argv)),
        cwd=render_cwd(cwd),
        command_actions=command_actions(parsed_cmd, cwd),
        process_id=process_id,
        source=_lookup(_COMMAND_SOURCE, source, "command source"),
        status=status,
        aggregated_output=aggregated_output or None,
        exit_code=exit_code,
        duration_ms=duration_ms,
        plugin_id=plugin_id,
        script_path=script_path,
    )


def command_status(status: str) -> CommandExecutionStatus:
    """The wire status of a core command status (``in_progress`` -> ``inProgress``)."""
    return _lookup(_COMMAND_STATUS, status, "command status")


def build_command_execution_begin_item(
    event: core.ExecCommandBeginEvent,
) -> CommandExecutionThreadItem:
    """The in-progress item of an ``exec_command_begin`` (item id = call id)."""
    return build_command_execution_item(
        item_id=event.call_id,
        argv=event.command,
        cwd=event.cwd,
        parsed_cmd=event.parsed_cmd,
        source=event.source,
        status="inProgress",
        process_id=event.process_id,
        plugin_id=event.plugin_id,
        script_path=event.script_path,
    )


def build_command_execution_end_item(event: core.ExecCommandEndEvent) -> CommandExecutionThreadItem:
    """The finished item of an ``exec_command_end``: exit code and duration always present (the
    duration saturates at ``i64::MAX``), ``stdout``/``stderr``/``formatted_output`` ignored."""
    return build_command_execution_item(
        item_id=event.call_id,
        argv=event.command,
        cwd=event.cwd,
        parsed_cmd=event.parsed_cmd,
        source=event.source,
        status=command_status(event.status),
        process_id=event.process_id,
        aggregated_output=event.aggregated_output,
        exit_code=event.exit_code,
        duration_ms=event.duration.whole_ms_saturating(),
        plugin_id=event.plugin_id,
        script_path=event.script_path,
    )


def build_command_execution_approval_request_item(
    event: core.ExecApprovalRequestEvent,
) -> CommandExecutionThreadItem:
    """The synthetic in-progress item the server starts before asking to approve a command:
    no process id yet, source ``agent``."""
    return build_command_execution_item(
        item_id=event.call_id,
        argv=event.command,
        cwd=event.cwd,
        parsed_cmd=event.parsed_cmd,
        source="agent",
        status="inProgress",
    )


# --------------------------------------------------------------------------- file changes


def _patch_change_kind(change: core.FileChange) -> PatchChangeKind | None:
    if isinstance(change, core.FileChangeAdd):
        return AddPatchChangeKind()
    if isinstance(change, core.FileChangeDelete):
        return DeletePatchChangeKind()
    if isinstance(change, core.FileChangeUpdate):
        return UpdatePatchChangeKind(move_path=change.move_path)
    return None


def _patch_diff(change: core.FileChange) -> str:
    if isinstance(change, core.FileChangeAdd | core.FileChangeDelete):
        return change.content
    if isinstance(change, core.FileChangeUpdate):
        if change.move_path is not None:
            return f"{change.unified_diff}\n\nMoved to: {change.move_path}"
        return change.unified_diff
    return ""


def convert_patch_changes(changes: Mapping[str, core.FileChange]) -> list[FileUpdateChange]:
    """A core ``path -> FileChange`` map as the wire's change list, sorted by path.

    ``diff`` is the content of an added or deleted file, or the unified diff of an update, with
    ``\\n\\nMoved to: <dest>`` appended when the update moves the file. A change of an unknown
    type is left out.
    """
    converted: list[FileUpdateChange] = []
    for path, change in changes.items():
        kind = _patch_change_kind(change)
        if kind is not None:
            converted.append(FileUpdateChange(path=path, kind=kind, diff=_patch_diff(change)))
    converted.sort(key=lambda change: change.path)
    return converted


def build_file_change_item(
    item_id: str, changes: Mapping[str, core.FileChange], status: PatchApplyStatus
) -> FileChangeThreadItem:
    """A ``fileChange`` item."""
    return FileChangeThreadItem(id=item_id, changes=convert_patch_changes(changes), status=status)


def patch_status(status: str | None) -> PatchApplyStatus:
    """The wire status of a core patch status; a patch without one is still in progress."""
    return "inProgress" if status is None else _lookup(_PATCH_STATUS, status, "patch status")


def build_file_change_begin_item(event: core.PatchApplyBeginEvent) -> FileChangeThreadItem:
    """The in-progress item of a ``patch_apply_begin`` (item id = call id)."""
    return build_file_change_item(event.call_id, event.changes, "inProgress")


def build_file_change_end_item(event: core.PatchApplyEndEvent) -> FileChangeThreadItem:
    """The finished item of a ``patch_apply_end``, with the event's status."""
    return build_file_change_item(event.call_id, event.changes, patch_status(event.status))


def build_file_change_approval_request_item(
    event: core.ApplyPatchApprovalRequestEvent,
) -> FileChangeThreadItem:
    """The in-progress item for a patch awaiting approval."""
    return build_file_change_item(event.call_id, event.changes, "inProgress")


# --------------------------------------------------------------------------- MCP tool calls


def build_mcp_tool_call_result(result: Mapping[str, Any]) -> McpToolCallResult:
    """An MCP ``CallToolResult`` (``{content, structuredContent, _meta, isError}``) as the item's
    ``result``; ``isError`` is not part of it (the item status carries it)."""
    content = result.get("content")
    return McpToolCallResult(
        content=cast("list[Any]", content) if isinstance(content, list) else [],
        structured_content=result.get("structuredContent"),
        field_meta=result.get("_meta"),
    )


def _mcp_item(
    *,
    call_id: str,
    invocation: core.McpInvocation,
    mcp_app_resource_uri: str | None,
    plugin_id: str | None,
    status: McpToolCallStatus,
    result: McpToolCallResult | None = None,
    error: McpToolCallError | None = None,
    duration_ms: int | None = None,
) -> McpToolCallThreadItem:
    return McpToolCallThreadItem(
        id=call_id,
        server=invocation.server,
        tool=invocation.tool,
        status=status,
        arguments=invocation.arguments,
        mcp_app_resource_uri=mcp_app_resource_uri,
        plugin_id=plugin_id,
        result=result,
        error=error,
        duration_ms=duration_ms,
    )


def build_mcp_tool_call_begin_item(event: core.McpToolCallBeginEvent) -> McpToolCallThreadItem:
    """The in-progress item of an ``mcp_tool_call_begin`` (absent arguments are ``null``)."""
    return _mcp_item(
        call_id=event.call_id,
        invocation=event.invocation,
        mcp_app_resource_uri=event.mcp_app_resource_uri,
        plugin_id=event.plugin_id,
        status="inProgress",
    )


def build_mcp_tool_call_end_item(event: core.McpToolCallEndEvent) -> McpToolCallThreadItem:
    """The finished item of an ``mcp_tool_call_end``.

    ``completed`` only when the result is ``Ok`` and not flagged ``isError``; an ``Ok`` result
    fills ``result`` even when flagged (the status is then ``failed`` and ``error`` stays null),
    an ``Err`` fills ``error``. The duration is ``null`` when it overflows an ``i64``.
    """
    outcome = event.result
    return _mcp_item(
        call_id=event.call_id,
        invocation=event.invocation,
        mcp_app_resource_uri=event.mcp_app_resource_uri,
        plugin_id=event.plugin_id,
        status="completed" if event.is_success() else "failed",
        result=build_mcp_tool_call_result(outcome.ok)
        if isinstance(outcome, core.McpToolCallOk)
        else None,
        error=McpToolCallError(message=outcome.err)
        if isinstance(outcome, core.McpToolCallErr)
        else None,
        duration_ms=event.duration.whole_ms(),
    )


# --------------------------------------------------------------------------- dynamic tool calls


def convert_dynamic_tool_content_items(
    items: Iterable[core.DynamicToolCallOutputContentItem],
) -> list[DynamicToolCallOutputContentItem]:
    """Dynamic tool output content on the wire (an image's ``detail`` has no wire field; an item
    of an unknown type is left out)."""
    converted: list[DynamicToolCallOutputContentItem] = []
    for item in items:
        if isinstance(item, core.DynamicToolInputText):
            converted.append(InputTextDynamicToolCallOutputContentItem(text=item.text))
        elif isinstance(item, core.DynamicToolInputImage):
            converted.append(InputImageDynamicToolCallOutputContentItem(image_url=item.image_url))
        elif isinstance(item, core.DynamicToolInputAudio):
            converted.append(InputAudioDynamicToolCallOutputContentItem(audio_url=item.audio_url))
    return converted


def build_dynamic_tool_call_item(
    *,
    item_id: str,
    namespace: str | None,
    tool: str,
    arguments: Any,
    status: DynamicToolCallStatus,
    content_items: Iterable[core.DynamicToolCallOutputContentItem] | None,
    success: bool | None,
    duration: core.Duration | None,
) -> DynamicToolCallThreadItem:
    """A ``dynamicToolCall`` item; ``durationMs`` is ``null`` without a duration or on overflow."""
    return DynamicToolCallThreadItem(
        id=item_id,
        namespace=namespace,
        tool=tool,
        arguments=arguments,
        status=status,
        content_items=None
        if content_items is None
        else convert_dynamic_tool_content_items(content_items),
        success=success,
        duration_ms=None if duration is None else duration.whole_ms(),
    )


def dynamic_tool_status(status: str) -> DynamicToolCallStatus:
    """The wire status of a core dynamic tool call status."""
    return _lookup(_DYNAMIC_STATUS, status, "dynamic tool call status")


def build_dynamic_tool_call_response_item(
    event: core.DynamicToolCallResponseEvent,
) -> DynamicToolCallThreadItem:
    """The finished item of a ``dynamic_tool_call_response``: ``completed`` or ``failed`` by
    ``success``, content always a list."""
    return build_dynamic_tool_call_item(
        item_id=event.call_id,
        namespace=event.namespace,
        tool=event.tool,
        arguments=event.arguments,
        status="completed" if event.success else "failed",
        content_items=event.content_items,
        success=event.success,
        duration=event.duration,
    )


# --------------------------------------------------------------------------- collab agents


def _agent_status_parts(status: object) -> tuple[str, str | None]:
    """``(kind, message)`` of a core ``AgentStatus``, parsed or still raw JSON."""
    if isinstance(status, core.AgentStatusCompleted):
        return "completed", status.completed
    if isinstance(status, core.AgentStatusErrored):
        return "errored", status.errored
    if isinstance(status, str):
        return status, None
    if isinstance(status, Mapping) and len(cast("Mapping[object, object]", status)) == 1:
        ((kind, message),) = cast("Mapping[object, object]", status).items()
        return str(kind), message if isinstance(message, str) else None
    return "", None


def collab_agent_state(status: object) -> CollabAgentState | None:
    """``{status, message}`` of a core ``AgentStatus`` (only ``completed``/``errored`` carry a
    message); ``None`` for a status this version does not know."""
    kind, message = _agent_status_parts(status)
    wire = _AGENT_STATUS.get(kind)
    return None if wire is None else CollabAgentState(status=wire, message=message)


def collab_end_status(*statuses: object) -> CollabAgentToolCallStatus:
    """``failed`` if any agent ended ``errored`` or ``not_found``, else ``completed``."""
    failed = any(_agent_status_parts(status)[0] in ("errored", "not_found") for status in statuses)
    return "failed" if failed else "completed"


def collab_agent_states(statuses: Mapping[str, object]) -> dict[str, CollabAgentState]:
    """Agent states by thread id; a status this version does not know is left out."""
    states: dict[str, CollabAgentState] = {}
    for thread_id, status in statuses.items():
        state = collab_agent_state(status)
        if state is not None:
            states[thread_id] = state
    return states


def build_collab_agent_tool_call_item(
    *,
    call_id: str,
    tool: CollabAgentTool,
    status: CollabAgentToolCallStatus,
    sender_thread_id: str,
    receiver_thread_ids: Sequence[str] = (),
    prompt: str | None = None,
    model: str | None = None,
    reasoning_effort: str | None = None,
    agent_statuses: Mapping[str, object] | None = None,
) -> CollabAgentToolCallThreadItem:
    """A ``collabAgentToolCall`` item; ``agent_statuses`` are core ``AgentStatus`` values."""
    return CollabAgentToolCallThreadItem(
        id=call_id,
        tool=tool,
        status=status,
        sender_thread_id=sender_thread_id,
        receiver_thread_ids=list(receiver_thread_ids),
        prompt=prompt,
        model=model,
        reasoning_effort=reasoning_effort or None,
        agents_states=collab_agent_states(agent_statuses or {}),
    )


def collab_tool(tool: str) -> CollabAgentTool:
    """The wire name of a core collab tool (``spawn_agent`` -> ``spawnAgent``)."""
    return _lookup(_COLLAB_TOOL, tool, "collab tool")


def collab_status(status: str) -> CollabAgentToolCallStatus:
    """The wire status of a core collab tool call status."""
    return _lookup(_COLLAB_STATUS, status, "collab tool call status")


# --------------------------------------------------------------------------- sub-agents


def build_sub_agent_activity_item(
    *,
    item_id: str,
    kind: str,
    agent_thread_id: str,
    agent_path: str,
    model: str | None,
    reasoning_effort: str | None,
) -> SubAgentActivityThreadItem:
    """A ``subAgentActivity`` item; ``kind`` is ``started``/``interacted``/``interrupted``/
    ``completed``."""
    return SubAgentActivityThreadItem(
        id=item_id,
        kind=_lookup(_SUB_AGENT_KIND, kind, "sub-agent activity kind"),
        agent_thread_id=agent_thread_id,
        agent_path=agent_path,
        model=model,
        reasoning_effort=reasoning_effort or None,
    )


def build_sub_agent_activity_event_item(
    event: core.SubAgentActivityEvent,
) -> SubAgentActivityThreadItem:
    """The item of a ``sub_agent_activity`` event (item id = the event id)."""
    return build_sub_agent_activity_item(
        item_id=event.event_id,
        kind=event.kind,
        agent_thread_id=event.agent_thread_id,
        agent_path=event.agent_path,
        model=event.model,
        reasoning_effort=event.reasoning_effort,
    )
