"""One thread's model session: Codex core's turn loop over a Responses API provider.

Role: a :class:`~codex_app_bridge.sources.CoreSession` that plays each ``user_turn`` the way
0.163.0 core does (spec/model-turn.md §3-§6):

1. ``task_started``; the turn's sticky overrides applied to the thread's config; at the first
   turn the contextual messages recorded (developer: ``developer_instructions``, skills, permissions;
   user: environment context), and again when cwd, sandbox or approval changed; the user
   message recorded (``item_started``, ``raw_response_item``, ``item_completed``);
2. the sampling loop: one streamed request per step (history as it stands), each output item
   recorded when done (``item_completed`` then ``raw_response_item`` for messages, reasoning and
   web searches; tool calls start then, through ``_tools.TOOL_HANDLERS``); after
   ``response.completed`` the tools are awaited and their outputs recorded in call order, then
   ``token_count`` (usage of the response, rate limits of its headers); a response with a tool
   call, or pending steer input, loops;
3. ``task_complete`` with the last assistant text.

Failures (``model.ModelError``): retryable ones re-send the same step after ``stream_error``
``Reconnecting... n/N`` (``stream_max_retries``; the server's hint or 200 ms x 2^(n-1));
a connection that never answers waits for the network (5 s doubling to 60 s) without end, as
core; the rest fail the turn (``error`` + ``task_complete`` with the real ``codexErrorInfo``).
Items completed before a failure stay recorded and are part of the retry's input.

Interrupt: the turn's cancel scope is cancelled at once (the HTTP stream closes, running tools
are cancelled), calls left without output get core's aborted output, the ``<turn_aborted>``
user message is recorded, the pending rate limits go out as ``token_count``, then
``turn_aborted``. Ops queued behind what starts a turn (``user_turn``, ``compact``,
``run_user_shell_command``) before the session's task took it act on that turn as it starts
(``Inbox.started``): an interrupt sent at once to a parked session aborts it there.

Parking (``sources.ParkableSession``): while the thread is idle and its machine tools hold
nothing alive (``MachineTools.idle``), ``run`` returns at the runtime's ``park`` and is run
again for the next submission; history, token totals, settings and turn numbering are the
session's own and stay as they were.

Every ``ResponseItem`` recorded in history is also yielded as ``raw_response_item`` at that
point (storage writes them as rollout ``response_item`` lines). History lives here, in memory,
starting from ``SessionConfig.prior_items``.

Boundary: core events and ops only; HTTP is ``model``'s, the settings ``config``'s.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

import anyio
import orjson

from codex_app_bridge.agent._compact import (
    COMPACTION_WARNING,
    compaction_input,
    replacement_history,
    summary_text,
)
from codex_app_bridge.agent._events import core_error_info, dicts, passthrough, trusted
from codex_app_bridge.agent._goals import GOAL_TOOL_NAMES, GoalSession, is_goal_context
from codex_app_bridge.agent._prompt import (
    TURN_ABORTED_TEXT,
    base_instructions_message,
    collaboration_mode_text,
    environment_context_text,
    permissions_text,
    world_state,
)
from codex_app_bridge.agent._request import (
    RequestMeta,
    reasoning_param,
    request_body,
    request_headers,
    request_input,
    turn_metadata,
)
from codex_app_bridge.agent._tools import (
    TOOL_HANDLERS,
    ToolCall,
    ToolContext,
    ToolOutput,
    model_family,
    tool_specs,
    unsupported_output,
    web_search_mode,
)
from codex_app_bridge.config import collaboration_mode_kind
from codex_app_bridge.projection import approx_token_count, new_item_id, new_response_item_id
from codex_app_bridge.protocol.core import (
    RESPONSE_ITEM_ADAPTER,
    AgentMessageContentDeltaEvent,
    AgentMessageItem,
    AgentReasoningSectionBreakEvent,
    CompactedEvent,
    CompactOp,
    ContextCompactionItem,
    ErrorEvent,
    EventEnvelope,
    EventMsg,
    ItemCompletedEvent,
    ItemStartedEvent,
    Op,
    RateLimitSnapshot,
    RawResponseItemEvent,
    ReasoningContentDeltaEvent,
    ReasoningItem,
    ReasoningRawContentDeltaEvent,
    RunUserShellCommandOp,
    ShutdownCompleteEvent,
    ShutdownOp,
    StreamErrorEvent,
    Submission,
    TaskCompleteEvent,
    TaskError,
    TaskStartedEvent,
    TextAgentMessageContent,
    TokenCountEvent,
    TokenUsage,
    TokenUsageInfo,
    TokenUsageRecordEvent,
    TurnAttribution,
    TurnDiffEvent,
    UserInput,
    UserInputOp,
    UserMessageItem,
    UserTurnOp,
    WarningEvent,
    WebSearchItem,
    WorldStateEvent,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.sources import (
    DEFAULT_CONTEXT_WINDOW,
    SessionConfig,
    aborted_turn,
    goal_budget_limit_text,
)
from codex_app_bridge.sources._replies import Replies
from codex_app_bridge.sources._session import EventQueue, Inbox

if TYPE_CHECKING:
    from codex_app_bridge.agent._tools import ToolHandler
    from codex_app_bridge.config import EffectiveConfig
    from codex_app_bridge.machine import MachineTools, TurnDiff
    from codex_app_bridge.model import ModelError, ResponsesClient

__all__ = ["ModelSession", "SessionServices"]

logger = logging.getLogger(__name__)

MANUAL_COMPACTION: Final = {
    "trigger": "manual",
    "reason": "user_requested",
    "implementation": "responses",
    "phase": "standalone_turn",
    "strategy": "memento",
}
"""The ``compaction`` turn metadata of ``thread/compact/start``'s request (0.163.0, probed)."""

AUTO_PRE_TURN_COMPACTION: Final = {
    "trigger": "auto",
    "reason": "context_limit",
    "implementation": "responses",
    "phase": "pre_turn",
    "strategy": "memento",
}
"""The metadata of an automatic compaction before a turn's first request (0.163.0, probed)."""

AUTO_MID_TURN_COMPACTION: Final = {**AUTO_PRE_TURN_COMPACTION, "phase": "mid_turn"}
"""The metadata of an automatic compaction between a tool call and its follow-up (probed)."""

FALLBACK_CONTEXT_WINDOW: Final = 272_000
"""The context window of a model without catalog metadata (reported as 95 %: 258,400)."""

NETWORK_WAIT_FIRST_S: Final = 5.0
NETWORK_WAIT_MAX_S: Final = 60.0
WAITING_FOR_NETWORK: Final = "Reconnecting... waiting for network"

Item = dict[str, Any]


def _uuid7() -> str:
    return new_item_id()


class SessionServices(Protocol):
    """What sessions share, held by the source (``_source.ModelSource``)."""

    @property
    def installation_id(self) -> str: ...

    def user_agent(self, originator: str | None) -> str: ...

    def base_instructions(self, settings: EffectiveConfig) -> str: ...

    def skills_instructions(self, settings: EffectiveConfig, cwd: str) -> str | None: ...

    def client_for(self, settings: EffectiveConfig) -> ResponsesClient | str: ...

    def builtin_tool(self, name: str, config: SessionConfig) -> ToolHandler | None: ...

    def machine_tools(self) -> MachineTools:
        """The local tools of one thread (``machine``: commands, patches, images)."""
        ...


@dataclass(slots=True)
class _Turn:
    """The running turn (owned by the session's task; ``submit`` only flags it)."""

    turn_id: str
    started_at_ms: int
    config: EffectiveConfig
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    replies: Replies = field(default_factory=Replies)
    steers: list[Sequence[UserInput]] = field(default_factory=list[Sequence[UserInput]])
    interrupted: bool = False
    last_agent_message: str | None = None
    first_token_ms: int | None = None
    pending_rate_limits: RateLimitSnapshot | None = None
    turn_state: str | None = None
    started_items: dict[str, int] = field(default_factory=dict[str, int])
    """Item id -> ``startedAtMs`` of items started in this turn (a retry re-sends the first)."""
    open_calls: dict[str, ToolCall] = field(default_factory=dict[str, ToolCall])
    """Calls recorded whose output is not recorded yet (an interrupt answers them)."""
    call_started: dict[str, float] = field(default_factory=dict[str, float])
    diff: TurnDiff | None = None
    """The patches applied in the turn (``machine``), once one was."""
    usage: TokenUsage = field(default_factory=TokenUsage)
    """The turn's responses' usage so far (``token_usage_record.turn_token_usage``)."""
    step: _Step | None = None
    """The sampling step running (or last run)."""
    approval_cancelled: bool = False
    """The user answered an approval with ``cancel`` (the turn ends interrupted)."""


class _Step:
    """What one sampling request produced (reset on a retry, minus what was recorded)."""

    __slots__ = (
        "calls",
        "completed",
        "counted",
        "open_message",
        "open_reasoning",
        "outputs",
        "response_id",
        "usage",
    )

    def __init__(self) -> None:
        self.open_message: str | None = None
        self.open_reasoning: str | None = None
        self.calls: list[ToolCall] = []
        self.outputs: dict[str, ToolOutput] = {}
        self.usage: Mapping[str, Any] | None = None
        self.response_id: str | None = None
        self.counted = False
        """``usage`` is in the session's totals."""
        self.completed = False


class _Context:
    """What a tool handler sees of the turn (``_tools.ToolContext``)."""

    __slots__ = ("_session", "_turn")

    def __init__(self, session: ModelSession, turn: _Turn) -> None:
        self._session = session
        self._turn = turn

    @property
    def thread_id(self) -> str:
        return self._session.thread_id

    @property
    def turn_id(self) -> str:
        return self._turn.turn_id

    @property
    def cwd(self) -> str:
        return self._turn.config.cwd or self._session.cwd

    @property
    def config(self) -> EffectiveConfig:
        return self._turn.config

    def emit(self, event: EventMsg) -> None:
        self._session.emit(self._turn.turn_id, event)

    async def ask(self, event: EventMsg) -> Op:
        self.emit(event)
        return await self._turn.replies.wait_for(event)


_INHERITED: Final[tuple[Any, ...]] = ("inherited",)


class ModelSession:
    """One thread's session with the model (see the module docstring)."""

    def __init__(
        self, source: SessionServices, config: SessionConfig, settings: EffectiveConfig
    ) -> None:
        self._source = source
        self._config = config
        self.thread_id = config.thread_id
        self.cwd = settings.cwd or config.cwd
        self.settings = settings
        """The thread's config; ``turn/start`` overrides are sticky (kept for later turns)."""
        self.history: list[Item] = [dict(item) for item in config.prior_items]
        """The model-visible history (ResponseItem JSON objects, as recorded)."""
        self._context_key: tuple[Any, ...] | None = _INHERITED if self.history else None
        """The settings the context in history was recorded for (``None``: none recorded yet;
        ``_INHERITED``: a resumed, forked or reloaded history, which holds the context its
        turns ran with: the first turn takes its own settings as that baseline, so nothing is
        re-injected, as core does when the settings match the rollout's last turn)."""
        self._queue = EventQueue()
        self._inbox = Inbox(config.thread_id)
        self._turn: _Turn | None = None
        self._ended = False
        self._info: TokenUsageInfo | None = None
        self._totals = config.token_total or TokenUsage()
        """The thread's running total (seeded from its history on resume and fork, as core)."""
        self._goals = None if config.goals is None else GoalSession(config.goals, self.thread_id)
        """The thread's goal tools and token accounting (``_goals``), when the server keeps goals."""
        self._context_window_id = _uuid7()
        self._window_number = 0
        self._history_initialization = config.history_initialization
        self._rate_limits = RateLimitSnapshot(limit_id="codex")
        """The last rate-limit snapshot a response brought (core's, before any: no limits)."""
        self._mode_recorded: str | None = None
        """The collaboration-mode instructions the history's context holds."""
        self.broken: str | None = None
        """Why this session cannot run turns (its config): each turn fails with it."""
        self._machine: MachineTools | None = None
        """The thread's command sessions and patch tools, while ``run`` runs."""
        self._tools: MachineTools | None = None
        """The same, kept while the session is parked if the user approved something for the
        session in them (else made anew at the next ``run``)."""

    # --- the contract -----------------------------------------------------------------------

    def submit(self, submission: Submission) -> None:
        self._inbox.submit(submission, self._turn)

    def take_events(self) -> list[EventEnvelope]:
        return self._queue.take()

    async def run(self, ready: Callable[[], None]) -> None:
        self._queue.attach(ready)
        tools = self._tools if self._tools is not None else self._source.machine_tools()
        try:
            async with tools as machine:
                self._machine = machine
                await self._loop()
        finally:
            self._machine = None
            self._queue.release()
        if not self._ended and tools.approved:
            self._tools = tools  # parked: the next ``run`` enters them again
        else:
            self._tools = None

    def park(self) -> bool:
        """Let the session's task go while the thread is idle (``ParkableSession``): no turn
        plays, nothing waits, the session has not ended, and its machine tools are idle (a
        command left running for a later ``write_stdin``, or its unread output, keeps the
        task: leaving the tools' block would kill it)."""
        if self._ended or self._turn is not None or self._inbox.pending:
            return False
        machine = self._machine
        if machine is not None and not machine.idle:
            return False
        self._inbox.park()
        return True

    async def _loop(self) -> None:
        while not self._ended:
            submission = await self._inbox.next_or_park()
            if submission is None:
                return  # parked: the runtime runs the session again for its next submission
            op = submission.op
            if isinstance(op, UserTurnOp | UserInputOp):
                await self._play(submission.id, op)
            elif isinstance(op, CompactOp):
                await self._compact(submission.id)
            elif isinstance(op, RunUserShellCommandOp):
                await self._user_shell(submission.id, op)
            elif isinstance(op, ShutdownOp):
                self.emit(submission.id, ShutdownCompleteEvent())
                self._ended = True

    # --- emitting ---------------------------------------------------------------------------

    def emit(self, turn_id: str, event: EventMsg) -> None:
        self._queue.emit(EventEnvelope.trusted(turn_id, event))

    def _record(self, turn_id: str, item: Item) -> None:
        """Append ``item`` to history and yield its ``raw_response_item``."""
        self.history.append(item)
        parsed = RESPONSE_ITEM_ADAPTER.validate_python(item)
        self.emit(turn_id, trusted(RawResponseItemEvent, type="raw_response_item", item=parsed))

    # --- a turn -----------------------------------------------------------------------------

    @staticmethod
    def _key(settings: EffectiveConfig, cwd: str) -> tuple[Any, ...]:
        policy = settings.approval_policy
        # as text: the bytes orjson returns keep the whole buffer it wrote into (4 KiB for a
        # policy name, for as long as the thread is loaded)
        return (cwd, settings.sandbox_mode, orjson.dumps(policy).decode())

    def _turn_settings(self, op: UserTurnOp | UserInputOp) -> EffectiveConfig:
        from codex_app_bridge.config import apply_turn_overrides

        if not isinstance(op, UserTurnOp):
            return self.settings
        sandbox = op.sandbox_policy
        mode: str | None = None
        if isinstance(sandbox, dict):
            kind = sandbox.get("type")
            mode = {
                "danger-full-access": "danger-full-access",
                "dangerFullAccess": "danger-full-access",
                "workspace-write": "workspace-write",
                "workspaceWrite": "workspace-write",
                "read-only": "read-only",
                "readOnly": "read-only",
            }.get(kind if isinstance(kind, str) else "")
        settings = apply_turn_overrides(
            self.settings,
            model=op.model or None,
            effort=op.effort,
            summary=op.summary,
            service_tier=op.service_tier,
            approval_policy=op.approval_policy,
            sandbox_mode=mode,
            cwd=op.cwd or None,
            collaboration_mode=(
                cast("dict[str, Any]", op.collaboration_mode)
                if isinstance(op.collaboration_mode, dict)
                else None
            ),
        )
        self.settings = settings
        return settings

    async def _play(self, turn_id: str, op: UserTurnOp | UserInputOp) -> None:
        started = now_ms()
        if self.broken is not None:
            self._fail_now(turn_id, started, self.broken)
            return
        try:
            settings = self._turn_settings(op)
        except Exception as exc:  # a config that cannot be applied fails the turn, loudly
            logger.exception("turn %s: settings", turn_id)
            settings = self.settings
            self._fail_now(turn_id, started, str(exc))
            return
        turn = _Turn(turn_id, started, settings, replies=Replies(turn_id))
        self._turn = turn
        self._inbox.started(turn)
        try:
            await self._run_turn(turn, list(op.items))
        finally:
            self._turn = None

    def _context_window(self, settings: EffectiveConfig) -> int:
        window = settings.model_context_window
        return window * 95 // 100 if window else DEFAULT_CONTEXT_WINDOW

    def _fail_now(self, turn_id: str, started: int, message: str) -> None:
        self.emit(turn_id, self._task_started(turn_id, started, self.settings))
        self.emit(turn_id, ErrorEvent(message=message, codex_error_info="other"))
        self.emit(
            turn_id,
            self._task_complete(
                turn_id, started, None, TaskError(message=message, codex_error_info="other")
            ),
        )

    def _task_started(
        self, turn_id: str, started: int, settings: EffectiveConfig, trigger: str | None = None
    ) -> TaskStartedEvent:
        """``trigger``: ``turn_attribution.turn_trigger`` (``goal`` for a goal-continuation
        turn, as 0.163.0 writes it; the stored read state tells such turns by it)."""
        attribution = TurnAttribution(turn_id=turn_id, turn_trigger=trigger, root_turn_id=turn_id)
        return TaskStartedEvent(
            turn_attribution=attribution,
            turn_id=turn_id,
            root_turn_id=turn_id,
            started_at=started // 1000,
            model_context_window=self._context_window(settings),
            collaboration_mode_kind=collaboration_mode_kind(settings.collaboration_mode),
        )

    def _task_complete(
        self,
        turn_id: str,
        started: int,
        last_message: str | None,
        error: TaskError | None = None,
        first_token_ms: int | None = None,
    ) -> TaskCompleteEvent:
        done = now_ms()
        return TaskCompleteEvent(
            root_turn_id=turn_id,
            turn_id=turn_id,
            last_agent_message=last_message,
            error=error,
            started_at=started // 1000,
            completed_at=done // 1000,
            duration_ms=max(0, done - started),
            time_to_first_token_ms=(
                None if first_token_ms is None else max(0, first_token_ms - started)
            ),
        )

    def _record_context(self, turn: _Turn) -> None:
        settings = turn.config
        cwd = settings.cwd or self.cwd
        key = self._key(settings, cwd)
        mode = _mode_instructions(settings)
        if self._context_key is _INHERITED:
            self._context_key = key
            self._mode_recorded = mode
            return
        if key == self._context_key:
            if mode != self._mode_recorded:
                self._mode_recorded = mode
                if mode is not None:  # a turn switched modes: its instructions, on their own
                    self._record(
                        turn.turn_id,
                        self._hidden_message(
                            turn.turn_id,
                            "developer",
                            collaboration_mode_text(mode),
                            "collaboration_mode.instructions",
                        ),
                    )
            return
        first = self._context_key is None
        before = self._context_key
        mode_before = self._mode_recorded
        self._context_key = key
        self._mode_recorded = mode
        if before is None:
            items = self._context_items(turn, first=True)
        else:
            # an update carries only what changed, as 0.163.0's: the permissions when the
            # sandbox or the approval policy did, the environment when the cwd or the sandbox
            # did, the mode's instructions when the mode did
            items = self._context_items(
                turn,
                first=False,
                permissions=before[1:] != key[1:],
                environment=before[:2] != key[:2],
                mode=mode != mode_before,
            )
        for item in items:
            self._record(turn.turn_id, item)
        if first:
            self._world_state(turn)

    def _world_state(self, turn: _Turn) -> None:
        """The ``world_state`` of a context baseline (the first context, a compaction's), which
        core writes to its rollout after the context it recorded."""
        settings = turn.config
        cwd = settings.cwd or self.cwd
        workspace = settings.sandbox_workspace_write or {}
        roots = workspace.get("writable_roots")
        permissions = (
            permissions_text(settings.sandbox_mode, settings.approval_policy)
            if settings.include_permissions_instructions
            else None
        )
        state = world_state(
            model=settings.model,
            mode_kind=collaboration_mode_kind(settings.collaboration_mode),
            mode_instructions=_mode_instructions(settings),
            cwd=cwd,
            sandbox_mode=settings.sandbox_mode,
            writable_roots=(
                [str(r) for r in cast("list[object]", roots)] if isinstance(roots, list) else None
            ),
            permissions=permissions,
            skills=self._source.skills_instructions(settings, cwd),
        )
        self.emit(turn.turn_id, WorldStateEvent(full=True, state=state))

    @staticmethod
    def _hidden_message(turn_id: str, role: str, text: str, kind: str) -> Item:
        """A message the model sees and the client does not (``kind``: what it carries, as the
        metadata passthrough names it): a goal's spent budget, a collaboration mode's
        instructions."""
        return {
            "type": "message",
            "id": new_response_item_id("msg"),
            "role": role,
            "content": [{"type": "input_text", "text": text}],
            "internal_chat_message_metadata_passthrough": passthrough(
                turn_id, kinds=[kind], created=True
            ),
        }

    def _context_items(
        self,
        turn: _Turn,
        *,
        first: bool,
        permissions: bool = True,
        environment: bool = True,
        mode: bool = True,
    ) -> list[Item]:
        """The contextual messages of ``turn``'s settings (developer instructions only in the
        ``first`` context of a history; ``permissions`` / ``environment`` / ``mode``: whether
        an update carries that part), not recorded."""
        settings = turn.config
        cwd = settings.cwd or self.cwd
        turn_id = turn.turn_id
        items: list[Item] = []
        developer: list[dict[str, Any]] = []
        kinds: list[str] = []
        if first and settings.developer_instructions:
            developer.append({"type": "input_text", "text": settings.developer_instructions})
            kinds.append("developer.instructions")
        skills = self._source.skills_instructions(settings, cwd) if first else None
        if skills is not None:
            developer.append({"type": "input_text", "text": skills})
            kinds.append("host_skills.instructions")
        if permissions and settings.include_permissions_instructions:
            developer.append(
                {
                    "type": "input_text",
                    "text": permissions_text(settings.sandbox_mode, settings.approval_policy),
                }
            )
            kinds.append("permissions.instructions")
        instructions = _mode_instructions(settings) if mode else None
        if instructions is not None:
            developer.append({"type": "input_text", "text": collaboration_mode_text(instructions)})
            kinds.append("collaboration_mode.instructions")
        message_id = new_response_item_id("msg")
        if developer:
            items.append(
                {
                    "type": "message",
                    "id": message_id,
                    "role": "developer",
                    "content": developer,
                    "internal_chat_message_metadata_passthrough": passthrough(
                        turn_id, kinds=kinds, created=True
                    ),
                }
            )
        if environment and settings.include_environment_context:
            workspace = settings.sandbox_workspace_write or {}
            roots = workspace.get("writable_roots")
            text = environment_context_text(
                cwd,
                settings.sandbox_mode,
                [str(r) for r in cast("list[object]", roots)] if isinstance(roots, list) else None,
            )
            items.append(
                {
                    "type": "message",
                    "id": new_response_item_id("msg"),
                    "role": "user",
                    "content": [{"type": "input_text", "text": text}],
                    "internal_chat_message_metadata_passthrough": passthrough(
                        turn_id, kinds=["environments.environment_context"], created=True
                    ),
                }
            )
        return items

    # --- thread/shellCommand (``machine``: the run; here the turn and the history) ------------

    async def _user_shell(self, turn_id: str, op: RunUserShellCommandOp) -> None:
        """The user's command as a turn of its own, under the thread's sandbox; the model gets
        it and its output as a ``<user_shell_command>`` user message."""
        from codex_app_bridge.machine import SandboxPolicy, user_shell_text

        machine = self._machine
        if machine is None:
            self._fail_now(turn_id, now_ms(), "the thread's machine tools are closed")
            return
        turn = _Turn(turn_id, now_ms(), self.settings, replies=Replies(turn_id))
        self._turn = turn
        self._inbox.started(turn)
        try:
            self.emit(turn_id, self._task_started(turn_id, turn.started_at_ms, turn.config))
            sandbox = SandboxPolicy.from_wire(self.settings.sandbox_policy())
            result = None
            with turn.scope:
                result = await machine.user_shell(
                    op.command,
                    thread_id=self.thread_id,
                    turn_id=turn_id,
                    cwd=self.cwd,
                    sandbox=sandbox,
                    emit=lambda event: self.emit(turn_id, event),
                    room=self._queue.wait_for_room,
                    timeout_ms=op.timeout_ms,
                )
            if turn.interrupted or result is None:
                self._abort(turn)
                return
            self._record(
                turn_id,
                {
                    "type": "message",
                    "id": new_response_item_id("msg"),
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": user_shell_text(op.command, result)}
                    ],
                    _PT: passthrough(turn_id, kinds=["shell.user_command"], created=True),
                },
            )
            self.emit(turn_id, self._task_complete(turn_id, turn.started_at_ms, None))
        finally:
            self._turn = None

    # --- compaction (``_compact``: the request and the history it leaves) ----------------------

    async def _compact(self, turn_id: str) -> None:
        turn = _Turn(turn_id, now_ms(), self.settings, replies=Replies(turn_id))
        self._turn = turn
        self._inbox.started(turn)
        try:
            await self._run_compaction(turn)
        finally:
            self._turn = None

    async def _run_compaction(self, turn: _Turn) -> None:
        from codex_app_bridge.model import ModelError

        turn_id = turn.turn_id
        self.emit(turn_id, self._task_started(turn_id, turn.started_at_ms, turn.config))
        failure: ModelError | None = None
        config_failure: str | None = None
        done = False
        with turn.scope:
            try:
                await self._compact_history(turn, MANUAL_COMPACTION)
                done = True
            except ModelError as exc:
                failure = exc
            except _ConfigFailure as exc:
                config_failure = exc.message
        if turn.interrupted:
            self._abort(turn)
            return
        if not done:
            message = config_failure or (failure.message if failure is not None else "")
            info = "other" if failure is None else core_error_info(failure.codex_error_info)
            self.emit(turn_id, ErrorEvent(message=message, codex_error_info=info))
            self.emit(
                turn_id,
                self._task_complete(
                    turn_id,
                    turn.started_at_ms,
                    None,
                    TaskError(message=message, codex_error_info=info),
                ),
            )
            return
        self.emit(turn_id, self._task_complete(turn_id, turn.started_at_ms, None))

    async def _compact_history(self, turn: _Turn, compaction: Mapping[str, str]) -> None:
        """One compaction inside ``turn``: the ``contextCompaction`` item, the usage before the
        request, the request (``ModelError`` / ``_ConfigFailure`` when it fails), the history
        replaced, the estimate, the item completed and core's warning."""
        turn_id = turn.turn_id
        item = ContextCompactionItem(id=new_item_id())
        started = now_ms()
        self.emit(
            turn_id,
            ItemStartedEvent(
                thread_id=self.thread_id, turn_id=turn_id, item=item, started_at_ms=started
            ),
        )
        # core reports the usage as it stands before the request (0.163.0, probed)
        self.emit(turn_id, TokenCountEvent(info=self._info, rate_limits=self._rate_limits))
        summary = await self._compaction_request(turn, compaction)
        settings = turn.config
        context = self._context_items(turn, first=True)
        history = replacement_history(context, self.history, summary)
        self.emit(
            turn_id,
            CompactedEvent(
                message=summary_text(summary),
                replacement_history=[RESPONSE_ITEM_ADAPTER.validate_python(i) for i in history],
            ),
        )
        self.history = history
        self._context_key = self._key(settings, settings.cwd or self.cwd)
        self._mode_recorded = _mode_instructions(settings)
        self._world_state(turn)
        self._report_estimate(turn)
        self._window_number += 1
        self._context_window_id = _uuid7()
        self.emit(
            turn_id,
            ItemCompletedEvent(
                thread_id=self.thread_id,
                turn_id=turn_id,
                item=item,
                started_at_ms=started,
                completed_at_ms=now_ms(),
            ),
        )
        self.emit(turn_id, WarningEvent(message=COMPACTION_WARNING))

    def _over_compaction_limit(self, settings: EffectiveConfig) -> bool:
        """Whether the last response's tokens reached the automatic compaction limit:
        ``model_auto_compact_token_limit`` capped at 90 % of the model's context window."""
        info = self._info
        if info is None:
            return False
        window = settings.model_context_window or FALLBACK_CONTEXT_WINDOW
        limit = window * 9 // 10
        configured = settings.model_auto_compact_token_limit
        if configured is not None and configured > 0:
            limit = min(limit, configured)
        return info.last_token_usage.total_tokens >= limit

    async def _compaction_request(self, turn: _Turn, compaction: Mapping[str, str]) -> str:
        """The summary the model writes (its last message), with the turn-level retries."""
        from codex_app_bridge.model import ModelError, backoff_s, rate_limits_from_headers

        client = self._source.client_for(turn.config)
        if isinstance(client, str):
            raise _ConfigFailure(client)
        settings = turn.config
        max_retries = settings.provider.stream_max_retries
        attempt = 0
        while True:
            meta = self._meta(turn, "compaction", compaction)
            metadata = turn_metadata(meta)
            base = base_instructions_message(
                self.thread_id, self._source.base_instructions(settings)
            )
            body = request_body(
                meta,
                metadata,
                input=request_input(
                    base,
                    compaction_input(self.history),
                    openai=settings.provider.name == "OpenAI",
                ),
                tools=[],
                parallel_tool_calls=False,
                reasoning=reasoning_param(
                    settings.model_reasoning_effort, settings.model_reasoning_summary
                ),
                service_tier=settings.service_tier,
            )
            headers = request_headers(meta, metadata, turn.turn_state)
            step = _Step()
            messages: list[Item] = []
            try:
                async with client.stream(body, headers) as stream:
                    turn.pending_rate_limits = rate_limits_from_headers(stream.headers)
                    async for batch in stream.batches():
                        for event in batch:
                            kind = event.get("type")
                            if kind == "response.output_item.done":
                                done = event.get("item")
                                if isinstance(done, dict):
                                    done_item = cast("Item", done)
                                    if done_item.get("type") == "message":
                                        messages.append(done_item)
                            elif kind == "response.completed":
                                response = event.get("response")
                                usage = (
                                    cast("dict[str, Any]", response).get("usage")
                                    if isinstance(response, dict)
                                    else None
                                )
                                step.usage = (
                                    cast("Mapping[str, Any]", usage)
                                    if isinstance(usage, dict)
                                    else None
                                )
            except ModelError as error:
                self._flush_rate_limits(turn)
                if not error.retryable or attempt >= max_retries:
                    raise
                attempt += 1
                self.emit(
                    turn.turn_id,
                    StreamErrorEvent(
                        message=f"Reconnecting... {attempt}/{max_retries}",
                        codex_error_info=core_error_info(error.notice_codex_error_info),
                        additional_details=error.notice_details,
                    ),
                )
                delay = error.retry_after_s
                await anyio.sleep(backoff_s(attempt) if delay is None else delay)
                continue
            summary = ""
            for message in messages:
                self._record(turn.turn_id, message)
                if message.get("role") == "assistant":
                    summary = _message_text(message)
            self._token_count(turn, step)
            return summary

    def _record_user(self, turn: _Turn, inputs: Sequence[UserInput]) -> None:
        if not inputs:
            return
        turn_id = turn.turn_id
        content: list[dict[str, Any]] = []
        kinds: list[str] = []
        for part in inputs:
            kind = part.type
            if kind == "text":
                content.append({"type": "input_text", "text": getattr(part, "text", "")})
                kinds.append("user.text")
            elif kind == "image":
                content.append({"type": "input_image", "image_url": getattr(part, "url", "")})
                kinds.append("user.image")
            elif kind == "local_image":
                content.append(_local_image(str(getattr(part, "path", ""))))
                kinds.append("user.image")
        message: Item = {
            "type": "message",
            "id": new_response_item_id("msg"),
            "role": "user",
            "content": content,
            "internal_chat_message_metadata_passthrough": passthrough(
                turn_id, kinds=kinds, created=True
            ),
        }
        if self._goals is not None and is_goal_context(inputs):
            # hidden context for the model: no userMessage item
            self._goals.goal_turn_id = turn_id
            self._record(turn_id, message)
            return
        item = UserMessageItem(id=new_item_id(), content=list(inputs))
        at = now_ms()
        self.emit(
            turn_id,
            ItemStartedEvent(
                thread_id=self.thread_id, turn_id=turn_id, item=item, started_at_ms=at
            ),
        )
        self._record(turn_id, message)
        self.emit(
            turn_id,
            ItemCompletedEvent(
                thread_id=self.thread_id,
                turn_id=turn_id,
                item=item,
                started_at_ms=at,
                completed_at_ms=at,
            ),
        )

    async def _run_turn(self, turn: _Turn, inputs: Sequence[UserInput]) -> None:
        from codex_app_bridge.model import ModelError

        turn_id = turn.turn_id
        goal_turn = self._goals is not None and is_goal_context(inputs)
        trigger = "goal" if goal_turn else None
        self.emit(turn_id, self._task_started(turn_id, turn.started_at_ms, turn.config, trigger))
        if self._goals is not None:
            self._goals.turn_started(self._totals)
        self._record_context(turn)
        failure: ModelError | None = None
        config_failure: str | None = None
        with turn.scope:
            try:
                if self._over_compaction_limit(turn.config):
                    # 0.163.0 compacts inside the turn, before its user message is recorded
                    await self._compact_history(turn, AUTO_PRE_TURN_COMPACTION)
                self._record_user(turn, inputs)
                while True:
                    follow_up = await self._sample(turn)
                    if follow_up and self._over_compaction_limit(turn.config):
                        # a follow-up over the limit goes on from the compacted history
                        await self._compact_history(turn, AUTO_MID_TURN_COMPACTION)
                    if turn.steers:
                        while turn.steers:
                            self._record_user(turn, turn.steers.pop(0))
                        follow_up = True
                    if not follow_up:
                        break
            except ModelError as exc:
                failure = exc
            except _ConfigFailure as exc:
                config_failure = exc.message
        if turn.interrupted:
            self._abort(turn)
            return
        if config_failure is not None:
            if self._goals is not None:
                self._goals.turn_failed(turn_id, partial(self.emit, turn_id))
            self.emit(turn_id, ErrorEvent(message=config_failure, codex_error_info="other"))
            self.emit(
                turn_id,
                self._task_complete(
                    turn_id,
                    turn.started_at_ms,
                    None,
                    TaskError(message=config_failure, codex_error_info="other"),
                ),
            )
            return
        if failure is not None:
            self._flush_rate_limits(turn)
            self._account_goal(turn)
            if self._goals is not None:
                self._goals.turn_failed(turn_id, partial(self.emit, turn_id))
            info = core_error_info(failure.codex_error_info)
            self.emit(turn_id, ErrorEvent(message=failure.message, codex_error_info=info))
            self.emit(
                turn_id,
                self._task_complete(
                    turn_id,
                    turn.started_at_ms,
                    None,
                    TaskError(message=failure.message, codex_error_info=info),
                ),
            )
            return
        self._account_goal(turn)
        self.emit(
            turn_id,
            self._task_complete(
                turn_id, turn.started_at_ms, turn.last_agent_message, None, turn.first_token_ms
            ),
        )

    def _report_estimate(self, turn: _Turn) -> None:
        """After a compaction, core reports the new history's estimated size as the last usage
        (``total_tokens`` only; the thread's total unchanged), with the rate limits as they
        stand: a token per four bytes of the base instructions and of every text the history
        holds."""
        base = self._source.base_instructions(turn.config)
        estimate = approx_token_count(base) + sum(
            approx_token_count(text) for text in _item_texts(self.history)
        )
        self._info = TokenUsageInfo(
            total_token_usage=self._totals,
            last_token_usage=TokenUsage(total_tokens=estimate),
            model_context_window=self._context_window(turn.config),
        )
        self.emit(turn.turn_id, TokenCountEvent(info=self._info, rate_limits=self._rate_limits))

    def _account_goal(self, turn: _Turn) -> None:
        """Charge the thread's goal what the turn used (at its end, as core)."""
        if self._goals is not None:
            self._goals.account(turn.turn_id, self._totals, partial(self.emit, turn.turn_id))

    def _flush_rate_limits(self, turn: _Turn) -> None:
        snapshot = turn.pending_rate_limits
        if snapshot is not None:
            turn.pending_rate_limits = None
            self.emit(turn.turn_id, TokenCountEvent(info=self._info, rate_limits=snapshot))

    def _abort(self, turn: _Turn) -> None:
        turn_id = turn.turn_id
        for call_id, call in list(turn.open_calls.items()):
            started = turn.call_started.get(call_id, time.monotonic())
            wall = time.monotonic() - started
            text = f"Wall time: {math.floor(wall * 10) / 10} seconds\naborted by user"
            self._record_output(turn, call, ToolOutput(output=text))
        if turn.approval_cancelled and turn.step is not None:
            # the response had completed before its tool asked: 0.163.0 counts its usage
            # (thread/tokenUsage/updated before the turn's end), as after any response
            self._add_usage(turn, turn.step)
        self._record(
            turn_id,
            {
                "type": "message",
                "id": new_response_item_id("msg"),
                "role": "user",
                "content": [{"type": "input_text", "text": TURN_ABORTED_TEXT}],
                "internal_chat_message_metadata_passthrough": passthrough(
                    turn_id, kinds=["generic.turn_aborted"], created=True
                ),
            },
        )
        self._flush_rate_limits(turn)
        self.emit(turn_id, aborted_turn(turn_id, turn.started_at_ms, now_ms()))

    # --- sampling ---------------------------------------------------------------------------

    def _meta(
        self,
        turn: _Turn,
        request_kind: str = "turn",
        compaction: Mapping[str, str] | None = None,
    ) -> RequestMeta:
        source = self._source
        forked = self._config.forked_from
        return RequestMeta(
            thread_id=self.thread_id,
            turn_id=turn.turn_id,
            installation_id=source.installation_id,
            context_window_id=self._context_window_id,
            model=turn.config.model,
            reasoning_effort=_reasoning_effort(turn.config),
            sandbox_mode=turn.config.sandbox_mode,
            turn_started_at_ms=turn.started_at_ms,
            originator=self._config.originator or "codex_app_bridge",
            user_agent=self._config.user_agent or source.user_agent(self._config.originator),
            window_number=self._window_number,
            request_kind=request_kind,
            history_initialization=self._history_initialization,
            forked_from_thread_id=forked[0] if forked is not None else None,
            forked_from_ordinal_exclusive=forked[1] if forked is not None else None,
            compaction=compaction,
            turn_trigger=None if self._goals is None else self._goals.trigger(turn.turn_id),
        )

    def _body(self, turn: _Turn, meta: RequestMeta, metadata: str) -> bytes:
        settings = turn.config
        base = base_instructions_message(self.thread_id, self._source.base_instructions(settings))
        openai = settings.provider.name == "OpenAI"
        info = settings.model_info or {}
        parallel = bool(info.get("supportsParallelToolCalls", True)) if info else True
        family = model_family(settings.model)
        verbosity = settings.model_verbosity or family.verbosity
        return request_body(
            meta,
            metadata,
            input=request_input(base, self.history, openai=openai),
            tools=tool_specs(
                self._config.dynamic_tools,
                family=family,
                web_search=web_search_mode(settings.raw.get("web_search"), settings.sandbox_mode),
            ),
            parallel_tool_calls=parallel,
            reasoning=reasoning_param(meta.reasoning_effort, settings.model_reasoning_summary),
            text={"verbosity": verbosity} if family.verbosity and verbosity else None,
            service_tier=settings.service_tier,
        )

    async def _sample(self, turn: _Turn) -> bool:
        """One sampling step with the turn-level retries; whether the loop goes on."""
        from codex_app_bridge.model import backoff_s

        client = self._source.client_for(turn.config)
        if isinstance(client, str):
            raise _ConfigFailure(client)
        max_retries = turn.config.provider.stream_max_retries
        attempt = 0
        network_wait = NETWORK_WAIT_FIRST_S
        while True:
            meta = self._meta(turn)
            metadata = turn_metadata(meta)
            body = self._body(turn, meta, metadata)
            headers = request_headers(meta, metadata, turn.turn_state)
            step = turn.step = _Step()
            try:
                return await self._stream(turn, client, body, headers, step)
            except _StepFailed as failed:
                error = failed.error
            self._flush_rate_limits(turn)
            if error.connection_failed:
                self.emit(
                    turn.turn_id,
                    StreamErrorEvent(
                        message=WAITING_FOR_NETWORK,
                        codex_error_info=core_error_info(error.notice_codex_error_info),
                        additional_details=error.notice_details,
                    ),
                )
                await anyio.sleep(network_wait)
                network_wait = min(network_wait * 2, NETWORK_WAIT_MAX_S)
                continue
            if not error.retryable or attempt >= max_retries:
                raise error
            attempt += 1
            self.emit(
                turn.turn_id,
                StreamErrorEvent(
                    message=f"Reconnecting... {attempt}/{max_retries}",
                    codex_error_info=core_error_info(error.notice_codex_error_info),
                    additional_details=error.notice_details,
                ),
            )
            delay = error.retry_after_s
            await anyio.sleep(backoff_s(attempt) if delay is None else delay)

    async def _stream(
        self,
        turn: _Turn,
        client: ResponsesClient,
        body: bytes,
        headers: Mapping[str, str],
        step: _Step,
    ) -> bool:
        from codex_app_bridge.model import ModelError, rate_limits_from_headers

        failure: ModelError | None = None
        async with anyio.create_task_group() as tools:
            try:
                async with client.stream(body, headers) as stream:
                    turn.pending_rate_limits = rate_limits_from_headers(stream.headers)
                    state = stream.headers.get("x-codex-turn-state")
                    if state is not None:
                        turn.turn_state = state
                    queue = self._queue
                    handle = self._handle
                    async for batch in stream.batches():
                        for event in batch:
                            handle(turn, step, event, tools)
                        if queue.full:
                            await queue.wait_for_room()
            except ModelError as exc:
                failure = exc
        self._add_usage(turn, step)
        if self._goals is not None and step.calls and failure is None:
            self._answer_goal_calls(turn, step, self._goals)
        # every tool that started has ended: record the outputs in call order
        for call in step.calls:
            output = step.outputs.get(call.call_id)
            if output is not None:
                self._record_output(turn, call, output)
        if failure is not None:
            raise _StepFailed(failure)
        self._token_count(turn, step)
        if self._goals is not None and step.calls:
            limited = self._goals.take_budget_limit()
            if limited is not None:  # 0.163.0 tells the model before the follow-up request
                self._record(
                    turn.turn_id,
                    self._hidden_message(
                        turn.turn_id,
                        "user",
                        goal_budget_limit_text(limited),
                        "goal.budget_limit",
                    ),
                )
        diff = turn.diff
        if diff is not None and (unified := diff.unified_diff()) is not None:
            # 0.163.0 re-sends the turn's diff after every response once a patch applied
            self.emit(turn.turn_id, TurnDiffEvent(unified_diff=unified))
        return bool(step.calls)

    def _answer_goal_calls(self, turn: _Turn, step: _Step, goals: GoalSession) -> None:
        """The goal tools' outputs, once the response's usage is known, then the goal charged
        at this tool boundary (``_goals``)."""
        emit = partial(self.emit, turn.turn_id)
        for call in step.calls:
            if call.namespace is None and call.name in GOAL_TOOL_NAMES:
                step.outputs[call.call_id] = goals.answer(call, turn.turn_id, self._totals, emit)
        goals.account(turn.turn_id, self._totals, emit)

    def _token_count(self, turn: _Turn, step: _Step) -> None:
        self._add_usage(turn, step)
        snapshot = turn.pending_rate_limits
        turn.pending_rate_limits = None
        if snapshot is not None:
            self._rate_limits = snapshot
        if step.usage is None and snapshot is None:
            return
        self.emit(
            turn.turn_id,
            TokenCountEvent(
                info=self._info if step.usage is not None else None, rate_limits=snapshot
            ),
        )

    def _add_usage(self, turn: _Turn, step: _Step) -> None:
        """Add the step's usage to the session's totals (once: a step counted is marked)."""
        from codex_app_bridge.model import token_usage_from

        usage = step.usage
        if usage is not None and not step.counted:
            step.counted = True
            last = token_usage_from(usage)
            totals = self._totals = _sum_usage(self._totals, last)
            self._info = TokenUsageInfo(
                total_token_usage=totals,
                last_token_usage=last,
                model_context_window=self._context_window(turn.config),
            )
            turn.usage = _sum_usage(turn.usage, last)
            # core records each response's usage in its rollout right after the response's
            # items (before the tool outputs and the token_count)
            self.emit(
                turn.turn_id,
                TokenUsageRecordEvent(
                    thread_id=self.thread_id,
                    turn_id=turn.turn_id,
                    session_id=self.thread_id,
                    root_turn_id=turn.turn_id,
                    response_id=step.response_id,
                    usage=last,
                    turn_token_usage=turn.usage,
                    thread_token_usage=totals,
                ),
            )

    # --- one SSE event ----------------------------------------------------------------------

    def _handle(
        self, turn: _Turn, step: _Step, event: dict[str, Any], tools: anyio.abc.TaskGroup
    ) -> None:
        kind = event["type"]
        if kind == "response.output_text.delta":
            item_id = step.open_message
            if item_id is None:
                return
            if turn.first_token_ms is None:
                turn.first_token_ms = now_ms()
            self.emit(
                turn.turn_id,
                trusted(
                    AgentMessageContentDeltaEvent,
                    type="agent_message_content_delta",
                    thread_id=self.thread_id,
                    turn_id=turn.turn_id,
                    item_id=item_id,
                    delta=_text(event.get("delta")),
                ),
            )
        elif kind == "response.reasoning_summary_text.delta":
            item_id = step.open_reasoning
            if item_id is None:
                return
            if turn.first_token_ms is None:
                turn.first_token_ms = now_ms()
            self.emit(
                turn.turn_id,
                trusted(
                    ReasoningContentDeltaEvent,
                    type="reasoning_content_delta",
                    thread_id=self.thread_id,
                    turn_id=turn.turn_id,
                    item_id=item_id,
                    delta=_text(event.get("delta")),
                    summary_index=_int(event.get("summary_index")),
                ),
            )
        elif kind == "response.reasoning_text.delta":
            item_id = step.open_reasoning
            if item_id is None:
                return
            self.emit(
                turn.turn_id,
                trusted(
                    ReasoningRawContentDeltaEvent,
                    type="reasoning_raw_content_delta",
                    thread_id=self.thread_id,
                    turn_id=turn.turn_id,
                    item_id=item_id,
                    delta=_text(event.get("delta")),
                    content_index=_int(event.get("content_index")),
                ),
            )
        elif kind == "response.reasoning_summary_part.added":
            item_id = step.open_reasoning
            if item_id is None:
                return
            self.emit(
                turn.turn_id,
                AgentReasoningSectionBreakEvent(
                    item_id=item_id, summary_index=_int(event.get("summary_index"))
                ),
            )
        elif kind == "response.output_item.added":
            item = event.get("item")
            if isinstance(item, dict):
                self._item_added(turn, step, item)  # pyright: ignore[reportUnknownArgumentType]
        elif kind == "response.output_item.done":
            item = event.get("item")
            if isinstance(item, dict):
                self._item_done(turn, step, item, tools)  # pyright: ignore[reportUnknownArgumentType]
        elif kind == "response.completed":
            response = event.get("response")
            usage = response.get("usage") if isinstance(response, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            step.usage = usage if isinstance(usage, dict) else None  # pyright: ignore[reportUnknownArgumentType]
            response_id = response.get("id") if isinstance(response, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            step.response_id = response_id if isinstance(response_id, str) else None
            step.completed = True

    def _started_at(self, turn: _Turn, item_id: str) -> int:
        at = turn.started_items.get(item_id)
        if at is None:
            at = turn.started_items[item_id] = now_ms()
        return at

    def _item_added(self, turn: _Turn, step: _Step, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "message" and item.get("role") == "assistant":
            item_id = _text(item.get("id")) or new_response_item_id("msg")
            step.open_message = item_id
            self.emit(
                turn.turn_id,
                ItemStartedEvent(
                    thread_id=self.thread_id,
                    turn_id=turn.turn_id,
                    item=AgentMessageItem(id=item_id, content=[], phase=_phase(item)),
                    started_at_ms=self._started_at(turn, item_id),
                ),
            )
        elif kind == "reasoning":
            item_id = _text(item.get("id")) or new_response_item_id("rs")
            step.open_reasoning = item_id
            self.emit(
                turn.turn_id,
                ItemStartedEvent(
                    thread_id=self.thread_id,
                    turn_id=turn.turn_id,
                    item=ReasoningItem(id=item_id, summary_text=[], raw_content=[]),
                    started_at_ms=self._started_at(turn, item_id),
                ),
            )
        elif kind == "web_search_call":
            item_id = _text(item.get("id")) or new_response_item_id("ws")
            self.emit(
                turn.turn_id,
                ItemStartedEvent(
                    thread_id=self.thread_id,
                    turn_id=turn.turn_id,
                    item=_web_search_item(item_id, item),
                    started_at_ms=self._started_at(turn, item_id),
                ),
            )

    def _item_done(
        self, turn: _Turn, step: _Step, item: dict[str, Any], tools: anyio.abc.TaskGroup
    ) -> None:
        kind = item.get("type")
        turn_id = turn.turn_id
        recorded = dict(item)
        if kind == "message" and item.get("role") == "assistant":
            item_id = _text(item.get("id")) or step.open_message or new_response_item_id("msg")
            text = "".join(
                _text(part.get("text"))
                for part in dicts(item.get("content"))
                if part.get("type") == "output_text"
            )
            turn_item = AgentMessageItem(
                id=item_id, content=[TextAgentMessageContent(text=text)], phase=_phase(item)
            )
            if item_id not in turn.started_items or step.open_message != item_id:
                started = self._started_at(turn, item_id)
                if step.open_message != item_id:
                    self.emit(
                        turn_id,
                        ItemStartedEvent(
                            thread_id=self.thread_id,
                            turn_id=turn_id,
                            item=turn_item,
                            started_at_ms=started,
                        ),
                    )
            step.open_message = None
            self.emit(
                turn_id,
                ItemCompletedEvent(
                    thread_id=self.thread_id,
                    turn_id=turn_id,
                    item=turn_item,
                    started_at_ms=turn.started_items.get(item_id, now_ms()),
                    completed_at_ms=now_ms(),
                ),
            )
            turn.last_agent_message = text
            recorded[_PT] = passthrough(turn_id, kinds=["unknown"])
            self._record(turn_id, recorded)
        elif kind == "reasoning":
            item_id = _text(item.get("id")) or step.open_reasoning or new_response_item_id("rs")
            summary = [_text(part.get("text")) for part in dicts(item.get("summary"))]
            content = [_text(part.get("text")) for part in dicts(item.get("content"))]
            turn_item = ReasoningItem(id=item_id, summary_text=summary, raw_content=content)
            if step.open_reasoning != item_id:
                self.emit(
                    turn_id,
                    ItemStartedEvent(
                        thread_id=self.thread_id,
                        turn_id=turn_id,
                        item=turn_item,
                        started_at_ms=self._started_at(turn, item_id),
                    ),
                )
            step.open_reasoning = None
            self.emit(
                turn_id,
                ItemCompletedEvent(
                    thread_id=self.thread_id,
                    turn_id=turn_id,
                    item=turn_item,
                    started_at_ms=turn.started_items.get(item_id, now_ms()),
                    completed_at_ms=now_ms(),
                ),
            )
            recorded.setdefault("content", None)
            recorded[_PT] = passthrough(turn_id)
            self._record(turn_id, recorded)
        elif kind == "web_search_call":
            item_id = _text(item.get("id")) or new_response_item_id("ws")
            turn_item = _web_search_item(item_id, item)
            self.emit(
                turn_id,
                ItemCompletedEvent(
                    thread_id=self.thread_id,
                    turn_id=turn_id,
                    item=turn_item,
                    started_at_ms=self._started_at(turn, item_id),
                    completed_at_ms=now_ms(),
                ),
            )
            recorded[_PT] = passthrough(turn_id)
            self._record(turn_id, recorded)
        elif kind in ("function_call", "custom_tool_call"):
            call = ToolCall(
                kind="function" if kind == "function_call" else "custom",
                name=_text(item.get("name")),
                call_id=_text(item.get("call_id")),
                arguments=_text(item.get("arguments" if kind == "function_call" else "input")),
                namespace=_text(item.get("namespace")) or None,
                item=item,
            )
            recorded[_PT] = passthrough(turn_id)
            self._record(turn_id, recorded)
            step.calls.append(call)
            turn.open_calls[call.call_id] = call
            turn.call_started[call.call_id] = time.monotonic()
            tools.start_soon(self._run_tool, turn, step, call)
        else:
            recorded[_PT] = passthrough(turn_id)
            self._record(turn_id, recorded)

    # --- tools ------------------------------------------------------------------------------

    async def _run_tool(self, turn: _Turn, step: _Step, call: ToolCall) -> None:
        name = f"{call.namespace}.{call.name}" if call.namespace else call.name
        if self._goals is not None and name in GOAL_TOOL_NAMES:
            return  # answered once the response ends (_answer_goal_calls)
        handler = TOOL_HANDLERS.get(name)
        machine = self._machine
        if handler is None and machine is not None and name in machine.handlers:
            handler = self._machine_handler(machine)
        if handler is None:
            handler = self._source.builtin_tool(name, self._config)
        if handler is None:
            logger.error("unsupported call: %s", call.name)
            step.outputs[call.call_id] = ToolOutput(output=unsupported_output(call))
            return
        try:
            output = await handler(call, _Context(self, turn))
        except Exception as exc:
            from codex_app_bridge.agent._tools import ToolError

            if isinstance(exc, ToolError):
                output = ToolOutput(output=exc.text, success=False)
            else:
                logger.exception("tool %s failed", name)
                output = ToolOutput(output=f"tool {name} failed: {exc}", success=False)
        step.outputs[call.call_id] = output

    def _machine_handler(self, machine: MachineTools) -> ToolHandler:
        async def handler(call: ToolCall, ctx: ToolContext) -> ToolOutput:
            from codex_app_bridge.machine import TurnCancelled

            turn = self._turn
            assert turn is not None
            try:
                output = await machine.call(
                    _MachineHost(self, turn), call.name, call.call_id, call.arguments
                )
            except TurnCancelled:
                # the user cancelled an approval: the turn ends interrupted, no output recorded
                turn.open_calls.pop(call.call_id, None)
                turn.interrupted = True
                turn.approval_cancelled = True
                turn.scope.cancel()
                raise
            return ToolOutput(output=output)

        return handler

    def _record_output(self, turn: _Turn, call: ToolCall, output: ToolOutput) -> None:
        turn.open_calls.pop(call.call_id, None)
        turn.call_started.pop(call.call_id, None)
        if call.kind == "custom":
            item: Item = {
                "type": "custom_tool_call_output",
                "id": new_response_item_id("ctco"),
                "call_id": call.call_id,
                "output": output.output,
            }
        else:
            item = {
                "type": "function_call_output",
                "id": new_response_item_id("fco"),
                "call_id": call.call_id,
                "output": output.output,
            }
        item[_PT] = passthrough(turn.turn_id, created=True)
        self._record(turn.turn_id, item)


_PT: Final = "internal_chat_message_metadata_passthrough"


class _MachineHost(_Context):
    """The turn as ``machine`` tools see it (``machine.ToolHost``): a tool handler's view, with
    the turn's policies (a session's ``item_completed`` may come after the turn ended, when its
    process exits: ``emit`` still names the turn)."""

    __slots__ = ()

    @property
    def approval_policy(self) -> Any:
        from codex_app_bridge.machine import ApprovalPolicy

        return ApprovalPolicy.from_wire(self._turn.config.approval_policy)

    @property
    def sandbox_policy(self) -> Any:
        from codex_app_bridge.machine import SandboxPolicy

        config = self._turn.config
        return SandboxPolicy.from_wire(config.sandbox_policy())

    @property
    def diff(self) -> TurnDiff:
        from codex_app_bridge.machine import TurnDiff

        turn = self._turn
        if turn.diff is None:
            turn.diff = TurnDiff(self.cwd)
        return turn.diff

    async def wait_for_room(self) -> None:
        queue = self._session._queue  # pyright: ignore[reportPrivateUsage]
        if queue.full:
            await queue.wait_for_room()

    async def request_approval(self, request: EventMsg) -> object:
        answer = await self.ask(request)
        return getattr(answer, "decision", "denied")


def _sum_usage(a: TokenUsage, b: TokenUsage) -> TokenUsage:
    return TokenUsage(
        input_tokens=a.input_tokens + b.input_tokens,
        cached_input_tokens=a.cached_input_tokens + b.cached_input_tokens,
        cache_write_input_tokens=a.cache_write_input_tokens + b.cache_write_input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        reasoning_output_tokens=a.reasoning_output_tokens + b.reasoning_output_tokens,
        total_tokens=a.total_tokens + b.total_tokens,
    )


class _StepFailed(Exception):
    def __init__(self, error: ModelError) -> None:
        super().__init__(error.message)
        self.error = error


class _ConfigFailure(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _item_texts(items: Sequence[Mapping[str, Any]]) -> Iterable[str]:
    """Every text a history holds: message parts, reasoning summaries, tool arguments and
    outputs."""
    for item in items:
        yield from _part_texts(item.get("content"))
        for key in ("arguments", "output", "input"):
            value = item.get(key)
            if isinstance(value, str):
                yield value
        yield from _part_texts(item.get("summary"))


def _part_texts(parts: object) -> Iterable[str]:
    """The ``text`` of each part of a content or summary list (anything else: none)."""
    if isinstance(parts, list):
        for part in cast("list[object]", parts):
            if isinstance(part, dict):
                text = cast("dict[str, Any]", part).get("text")
                if isinstance(text, str):
                    yield text


def _mode_instructions(settings: EffectiveConfig) -> str | None:
    """The collaboration mode's instructions (``None`` when it has none: no fragment)."""
    mode = settings.collaboration_mode
    raw = mode.get("settings") if mode is not None else None
    text = (
        cast("dict[str, Any]", raw).get("developer_instructions") if isinstance(raw, dict) else None
    )
    return text if isinstance(text, str) and text else None


def _message_text(message: Mapping[str, Any]) -> str:
    """The text of a message's ``output_text`` / ``input_text`` parts, joined."""
    content = message.get("content")
    parts = cast("list[object]", content) if isinstance(content, list) else []
    return "".join(
        str(cast("dict[str, Any]", part).get("text", ""))
        for part in parts
        if isinstance(part, dict)
        and cast("dict[str, Any]", part).get("type") in ("output_text", "input_text")
    )


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _phase(item: Mapping[str, Any]) -> Any:
    phase = item.get("phase")
    return phase if isinstance(phase, str) else None


def _web_search_item(item_id: str, item: Mapping[str, Any]) -> WebSearchItem:
    action = item.get("action")
    query = ""
    if isinstance(action, dict):
        q = action.get("query")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        query = q if isinstance(q, str) else ""
    return WebSearchItem.model_validate(
        {
            "id": item_id,
            "query": query,
            "action": action if isinstance(action, dict) else {"type": "other"},
        }
    )


def _local_image(path: str) -> dict[str, Any]:
    import base64
    import mimetypes

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return {
            "type": "input_text",
            "text": "image content omitted because it could not be processed",
        }
    mime = mimetypes.guess_type(path)[0] or "image/png"
    return {
        "type": "input_image",
        "image_url": f"data:{mime};base64,{base64.b64encode(data).decode()}",
    }


def _reasoning_effort(settings: EffectiveConfig) -> str | None:
    """The effort a request asks for: the configured one, else the catalog model's default
    (``defaultReasoningEffort``; none for fallback metadata)."""
    info = settings.model_info or {}
    default = info.get("defaultReasoningEffort")
    return settings.model_reasoning_effort or (str(default) if default else None)
