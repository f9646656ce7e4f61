"""Request handlers of the supported methods, grouped by namespace: ``initialize``, ``thread/*``,
``turn/*``. Each is ``async (ctx, params) -> response model`` and raises ``RpcError`` to refuse.

Rules they share (probed from the 0.163.0 binary, see the errors in ``_errors``):

* Thread ids are parsed as the real server parses them (``_ids.parse_thread_id``) and reported in
  canonical form.
* A response always precedes the notifications it causes: everything a handler triggers is
  registered with ``ctx.after_response`` (``thread/started`` broadcasts, starting a turn runner,
  steering input); notifications that *precede* a response in the real server
  (``deprecationNotice`` on full-history hydration) are sent to the caller before returning.
* ``turn/start`` answers at once with the new turn (``inProgress``, ``startedAt: null``) and
  records and starts it only after the response (a turn whose answer cannot be delivered never
  exists); while a turn is running, ``turn/start`` answers that running turn and adds its input
  to it (0.163.0 behaviour: no error).
* ``turn/interrupt`` answers ``{}`` once the abort has happened and before ``turn/completed``: the
  handler defers its answer to the thread runtime (``ctx.defer()``), which writes it right before
  the terminal notifications, so the request does not hold the thread's request queue while the
  turn winds down (a second interrupt is answered the same way).

``thread/resume`` and ``thread/fork`` replay the thread's last token usage to the requesting
connection right after the response (``_token_replay`` says when), before a fork's
``thread/started`` and a resume's replay of pending server requests.

Goals are not kept: a ``thread/resume`` is followed by ``thread/goal/cleared`` to every connection,
as the real server does for a thread without a goal. ``thread/read`` answers the listener's read
state (``listener._read_state``). Thread ``path`` is ``null`` when threads live in memory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Self, cast

from codex_app_bridge.protocol.core import EventEnvelope, UserInput
from codex_app_bridge.protocol.jsonrpc import JsonValue
from codex_app_bridge.protocol.v2 import (
    CollaborationMode,
    DeprecationNoticeNotification,
    IdleThreadStatus,
    InitializeParams,
    InitializeResponse,
    Settings,
    ThreadForkParams,
    ThreadForkResponse,
    ThreadGoalClearedNotification,
    ThreadLoadedListParams,
    ThreadLoadedListResponse,
    ThreadReadParams,
    ThreadReadResponse,
    ThreadResumeParams,
    ThreadResumeResponse,
    ThreadStartedNotification,
    ThreadStartParams,
    ThreadStartResponse,
    ThreadStatusChangedNotification,
    ThreadUnsubscribeParams,
    ThreadUnsubscribeResponse,
    Turn,
    TurnInterruptParams,
    TurnInterruptResponse,
    TurnStartParams,
    TurnStartResponse,
    TurnSteerParams,
    TurnSteerResponse,
    dump_json,
)
from codex_app_bridge.rpc import RequestContext
from codex_app_bridge.server._errors import (
    active_turn_mismatch,
    empty_input,
    ephemeral_include_turns,
    invalid_cursor,
    list_turns_unsupported,
    no_active_turn,
    no_rollout,
    steer_turn_mismatch,
    thread_not_found,
)
from codex_app_bridge.server._history import build_thread_turns, fork_events
from codex_app_bridge.server._ids import new_uuid7, parse_thread_id
from codex_app_bridge.server._inputs import core_inputs
from codex_app_bridge.server._runtime import ThreadRuntime, TurnOrder
from codex_app_bridge.server._stored_handlers import StoredThreadMethods
from codex_app_bridge.server._thread_extras import read_extras, resume_extras
from codex_app_bridge.server._threads import ThreadRecord, ThreadSettings, sandbox_policy
from codex_app_bridge.server._token_replay import replayed_token_usage
from codex_app_bridge.sources import SessionConfig, input_text, open_session

if TYPE_CHECKING:
    from codex_app_bridge.server._services import ServerServices

__all__ = [
    "READ_DEPRECATION",
    "RESUME_DEPRECATION",
    "THREAD_LIST_DEFAULT_LIMIT",
    "Handlers",
]

THREAD_LIST_DEFAULT_LIMIT: Final = 25

READ_DEPRECATION: Final = (
    "Full-history hydration is deprecated for paginated threads; omit `includeTurns` or set it to "
    "`false`, then page with `thread/turns/list` and `thread/items/list`."
)
RESUME_DEPRECATION: Final = (
    "Full-history hydration is deprecated for paginated threads; use `excludeTurns: true`, then "
    "page with `thread/turns/list` and `thread/items/list`."
)
_INTERACTIVE_SOURCES: Final = frozenset({"cli", "vscode"})


_RENAMED_FEATURES: Final = {"codex_hooks": "hooks"}
"""Feature flags 0.163.0 answers with a deprecation notice when a thread's ``config.features``
names them (as observed with codexed, which sends ``codex_hooks``), and their new names."""


def _feature_deprecations(config: dict[str, Any] | None) -> list[DeprecationNoticeNotification]:
    features = (config or {}).get("features")
    if not isinstance(features, dict):
        return []
    named = cast("dict[str, Any]", features)
    return [
        DeprecationNoticeNotification(
            summary=f"`[features].{old}` is deprecated. Use `[features].{new}` instead.",
            details=f"Enable it with `--enable {new}` or `[features].{new}` in config.toml."
            " See https://developers.openai.com/codex/config-basic#feature-flags for details.",
        )
        for old, new in _RENAMED_FEATURES.items()
        if old in named
    ]


def _extra_flag(params: Any, name: str) -> bool:
    extra: dict[str, JsonValue] | None = getattr(params, "model_extra", None)
    return extra is not None and extra.get(name) is True


def _page(ids: list[str], cursor: str | None, limit: int | None) -> tuple[list[str], str | None]:
    """One page of ``ids`` after ``cursor`` (an id of the list; opaque to clients)."""
    start = 0
    if cursor is not None:
        if cursor not in ids:
            raise invalid_cursor(cursor)
        start = ids.index(cursor) + 1
    end = len(ids) if not limit else min(len(ids), start + limit)
    page = ids[start:end]
    next_cursor = page[-1] if end < len(ids) and page else None
    return page, next_cursor


def _pending_turn(turn_id: str) -> Turn:
    """A turn as ``turn/start`` answers it: just accepted, not started yet."""
    return Turn(
        id=turn_id,
        root_turn_id=turn_id,
        items=[],
        items_view="notLoaded",
        status="inProgress",
        error=None,
        started_at=None,
        completed_at=None,
        duration_ms=None,
    )


@dataclass
class _Overrides:
    """Settings a request may change (thread/start, resume, fork, turn/start)."""

    cwd: str | None = None
    model: str | None = None
    model_provider: str | None = None
    approval_policy: Any = None
    approvals_reviewer: Any = None
    sandbox_mode: Any = None
    sandbox_policy: Any = None
    reasoning_effort: str | None = None
    service_tier: str | None = None

    @classmethod
    def of_thread(cls, params: ThreadStartParams | ThreadResumeParams | ThreadForkParams) -> Self:
        """The overrides of thread/start, thread/resume and thread/fork (the same fields)."""
        return cls(
            cwd=params.cwd,
            model=params.model,
            model_provider=params.model_provider,
            approval_policy=params.approval_policy,
            approvals_reviewer=params.approvals_reviewer,
            sandbox_mode=params.sandbox,
            service_tier=params.service_tier,
        )

    def apply(self, settings: ThreadSettings) -> ThreadSettings:
        cwd = os.path.abspath(self.cwd) if self.cwd else settings.cwd
        updated = replace(
            settings,
            cwd=cwd,
            model=self.model or settings.model,
            model_provider=self.model_provider or settings.model_provider,
            approval_policy=self.approval_policy or settings.approval_policy,
            approvals_reviewer=self.approvals_reviewer or settings.approvals_reviewer,
            reasoning_effort=self.reasoning_effort or settings.reasoning_effort,
            service_tier=self.service_tier or settings.service_tier,
        )
        if self.sandbox_policy is not None:
            updated.sandbox = self.sandbox_policy
        elif self.sandbox_mode is not None:
            updated.sandbox = sandbox_policy(self.sandbox_mode, cwd)
        return updated


class Handlers(StoredThreadMethods):
    """The supported methods, bound to one ``BridgeServer``."""

    def __init__(self, server: ServerServices) -> None:
        self.server = server

    # ------------------------------------------------------------------ helpers

    def _record(self, raw_id: str, missing: Callable[[str], Exception]) -> ThreadRecord:
        thread_id = parse_thread_id(raw_id)
        record = self.server.store.get(thread_id)
        if record is None:
            raise missing(thread_id)
        return record

    def _loaded_record(self, raw_id: str) -> ThreadRecord:
        """A loaded thread (``turn/*``): an unloaded one is not found, as the real server."""
        record = self._record(raw_id, thread_not_found)
        if not record.loaded:
            raise thread_not_found(record.id)
        return record

    async def _broadcast_started(self, record: ThreadRecord) -> None:
        notification = ThreadStartedNotification(thread=record.thread())
        await self.server.hub.broadcast("thread/started", dump_json(notification))

    @staticmethod
    def _replay_usage(
        ctx: RequestContext, thread_id: str, events: list[EventEnvelope], turns: list[Turn]
    ) -> None:
        """After the response: ``thread/tokenUsage/updated`` with the thread's last usage, to
        this connection only (``_token_replay``)."""
        notification = replayed_token_usage(thread_id, events, turns)
        if notification is None:
            return

        async def replay() -> None:
            await ctx.connection.notify("thread/tokenUsage/updated", dump_json(notification))

        ctx.after_response(replay)

    @staticmethod
    async def _deprecation(ctx: RequestContext, summary: str) -> None:
        notice = DeprecationNoticeNotification(summary=summary, details=None)
        await ctx.connection.notify("deprecationNotice", dump_json(notice))

    def _default_settings(self) -> ThreadSettings:
        defaults = self.server.source.defaults
        return ThreadSettings(
            cwd=self.server.default_cwd,
            model=defaults.model,
            model_provider=defaults.model_provider,
        )

    def _new_record(
        self,
        settings: ThreadSettings,
        *,
        ephemeral: bool,
        forked_from_id: str | None = None,
        thread_source: str | None = None,
        history: list[EventEnvelope] | None = None,
        thread_id: str | None = None,
        attach: bool = True,
    ) -> ThreadRecord:
        server = self.server
        thread_id = thread_id or new_uuid7()
        listener = server.hub.create_thread(thread_id)
        record = ThreadRecord(
            id=thread_id,
            settings=settings,
            listener=listener,
            originator=server.originator,
            ephemeral=ephemeral,
            forked_from_id=forked_from_id,
            thread_source=thread_source,
        )
        self._start_runtime(record, history)
        server.store.add(record)
        if attach and server.storage is not None:
            server.storage.attach(record)
        return record

    def _start_runtime(self, record: ThreadRecord, history: list[EventEnvelope] | None) -> None:
        server = self.server
        thread_id = record.id

        def session() -> Any:
            # opened by the first turn: the turns before it are the history's (a fork's)
            config = SessionConfig(
                thread_id,
                record.settings.model,
                record.settings.cwd,
                first_turn_index=max(0, record.turns_started - 1),
            )
            return open_session(server.source, config)

        record.runtime = ThreadRuntime(
            thread_id,
            record.listener,
            session,
            history=history,
            on_turn_end=record.touch,
            interrupt_grace=server.interrupt_grace,
            server_requests=server.server_requests,
            pending_interrupts=partial(server.unhandled_requests, "turn/interrupt", thread_id),
        )
        if server.storage is not None:
            server.storage.rebind(record)  # a reloaded thread keeps writing its rollout
        server.start_runtime(record.runtime)

    def _reload(self, record: ThreadRecord) -> None:
        """Load an unloaded thread again: a new listener and runtime over its history."""
        history = record.history
        record.listener = self.server.hub.create_thread(record.id)
        record.loaded = True
        self._start_runtime(record, history)

    def new_record_for_storage(
        self, settings: ThreadSettings, *, thread_id: str, history: list[EventEnvelope]
    ) -> ThreadRecord:
        return self._new_record(
            settings, ephemeral=False, thread_id=thread_id, history=history, attach=False
        )

    # ------------------------------------------------------------------ initialize

    async def initialize(self, ctx: RequestContext, params: InitializeParams) -> InitializeResponse:
        return await self.server.initialize(ctx, params)

    # ------------------------------------------------------------------ thread/*

    async def thread_start(
        self, ctx: RequestContext, params: ThreadStartParams
    ) -> ThreadStartResponse:
        settings = _Overrides.of_thread(params).apply(self._default_settings())
        record = self._new_record(
            settings, ephemeral=bool(params.ephemeral), thread_source=params.thread_source
        )
        record.raw_events = _extra_flag(params, "experimentalRawEvents")
        record.listener.subscribe(ctx.connection, raw_events=record.raw_events)
        thread = record.thread()
        ctx.after_response(partial(self._broadcast_started, record))
        notices = _feature_deprecations(params.config)
        if notices:

            async def deprecations() -> None:  # after thread/started, as the real binary
                for notice in notices:
                    await ctx.connection.notify("deprecationNotice", dump_json(notice))

            ctx.after_response(deprecations)
        return ThreadStartResponse(thread=thread, **settings.response_fields())

    async def thread_resume(
        self, ctx: RequestContext, params: ThreadResumeParams
    ) -> ThreadResumeResponse:
        known = self.server.store.get(parse_thread_id(params.thread_id))
        loading = known is None or not known.loaded
        record = self.loaded_or_stored(params.thread_id, no_rollout)
        # a thread with no turn yet has no rollout: the real binary answers so, with or
        # without excludeTurns and before any deprecation notice (codex-python-sdk relies on it)
        if not record.materialized:
            raise no_rollout(record.id)
        exclude_turns = bool(params.exclude_turns)
        if not exclude_turns:
            await self._deprecation(ctx, RESUME_DEPRECATION)
        for notice in _feature_deprecations(params.config):
            await ctx.connection.notify("deprecationNotice", dump_json(notice))
        record.settings = _Overrides.of_thread(params).apply(record.settings)
        if not record.loaded:
            self._reload(record)
        record.listener.subscribe(ctx.connection, raw_events=record.raw_events)
        if loading:  # loaded now from its rollout: notLoaded -> idle, before the answer
            status = ThreadStatusChangedNotification(thread_id=record.id, status=IdleThreadStatus())
            await ctx.connection.notify("thread/status/changed", dump_json(status))
        turns: list[Turn] | None = None
        if loading or not exclude_turns:
            # a cold resume always replays the usage, a loaded thread only with its turns
            all_turns = build_thread_turns(
                record.history, running=record.active_turn_id is not None
            )
            self._replay_usage(ctx, record.id, record.history, all_turns)
            turns = None if exclude_turns else all_turns
        runtime = record.runtime
        if runtime is not None and len(runtime.requests):

            async def replay() -> None:
                # the still-pending server requests, same ids, to this connection only
                runtime.requests.replay_to(ctx.connection)

            ctx.after_response(replay)
        turns_cursor, items_cursor = self.backwards_cursors(record.id)
        # the bridge keeps no goals: every resume tells every connection there is none
        cleared = ThreadGoalClearedNotification(thread_id=record.id)
        ctx.after_response(partial(self.server.hub.broadcast, "thread/goal/cleared", cleared))
        settings = record.settings
        return ThreadResumeResponse(
            thread=record.thread(turns=turns),
            **settings.response_fields(),
            collaboration_mode=CollaborationMode(
                mode="default",
                settings=Settings(model=settings.model, reasoning_effort=settings.reasoning_effort),
            ),
            turns_backwards_cursor=turns_cursor,
            items_backwards_cursor=items_cursor,
            **resume_extras(),
        )

    async def thread_fork(
        self, ctx: RequestContext, params: ThreadForkParams
    ) -> ThreadForkResponse:
        source = self.loaded_or_stored(params.thread_id, no_rollout)
        if not source.materialized:
            raise no_rollout(source.id)
        exclude_turns = bool(params.exclude_turns)
        events = fork_events(
            source.history, last_turn_id=params.last_turn_id, now_s=int(time.time())
        )
        if not exclude_turns:
            await self._deprecation(ctx, RESUME_DEPRECATION)
        settings = _Overrides.of_thread(params).apply(replace(source.settings))
        record = self._new_record(
            settings,
            ephemeral=bool(params.ephemeral),
            forked_from_id=source.id,
            thread_source=params.thread_source,
            history=events,
        )
        # the real fork has no preview until its own first turn (probed, with and without a
        # revert before)
        record.turns_started = source.turns_started
        record.raw_events = source.raw_events
        if self.server.storage is not None:
            self.server.storage.write_all(record)
        record.listener.subscribe(ctx.connection, raw_events=record.raw_events)
        turns = None if exclude_turns else build_thread_turns(events)
        if turns is not None:
            self._replay_usage(ctx, record.id, events, turns)
        ctx.after_response(partial(self._broadcast_started, record))
        return ThreadForkResponse(thread=record.thread(turns=turns), **settings.response_fields())

    async def thread_read(
        self, ctx: RequestContext, params: ThreadReadParams
    ) -> ThreadReadResponse:
        thread_id = parse_thread_id(params.thread_id)
        record = self.server.store.get(thread_id)
        if record is None:
            stored = self.read_stored(thread_id, include_turns=bool(params.include_turns))
            if params.include_turns:
                await self._deprecation(ctx, READ_DEPRECATION)
            return stored
        if not params.include_turns:
            return ThreadReadResponse(thread=record.thread(), **read_extras(record.read_state()))
        if record.ephemeral:  # nothing kept to read back, with or without turns
            raise ephemeral_include_turns()
        if not record.materialized:
            raise list_turns_unsupported()
        await self._deprecation(ctx, READ_DEPRECATION)
        turns = build_thread_turns(record.history, running=record.active_turn_id is not None)
        return ThreadReadResponse(
            thread=record.thread(turns=turns), **read_extras(record.read_state())
        )

    def thread_loaded_list(
        self, ctx: RequestContext, params: ThreadLoadedListParams
    ) -> ThreadLoadedListResponse:
        page, next_cursor = _page(
            list(self.server.hub.loaded_thread_ids()), params.cursor, params.limit
        )
        return ThreadLoadedListResponse(data=page, next_cursor=next_cursor)

    def thread_unsubscribe(
        self, ctx: RequestContext, params: ThreadUnsubscribeParams
    ) -> ThreadUnsubscribeResponse:
        thread_id = parse_thread_id(params.thread_id)
        listener = self.server.hub.get(thread_id)
        if listener is None:
            return ThreadUnsubscribeResponse(status="notLoaded")
        return ThreadUnsubscribeResponse(status=listener.unsubscribe(ctx.connection.connection_id))

    # ------------------------------------------------------------------ turn/*

    @staticmethod
    def _runtime(record: ThreadRecord) -> ThreadRuntime:
        assert record.runtime is not None
        return record.runtime

    async def turn_start(self, ctx: RequestContext, params: TurnStartParams) -> TurnStartResponse:
        record = self._loaded_record(params.thread_id)
        runtime = self._runtime(record)
        inputs = core_inputs(params.input)
        running = runtime.active_turn_id
        if running is not None:
            # 0.163.0: a turn/start during a turn answers that turn and adds its input to it.
            if inputs:

                async def steer() -> None:
                    runtime.steer(inputs)

                ctx.after_response(steer)
            return TurnStartResponse(turn=_pending_turn(running))

        overrides = _Overrides(
            cwd=params.cwd,
            model=params.model,
            approval_policy=params.approval_policy,
            approvals_reviewer=params.approvals_reviewer,
            sandbox_policy=params.sandbox_policy,
            reasoning_effort=params.effort,
            service_tier=params.service_tier,
        )
        turn_id = new_uuid7()

        async def start() -> None:
            # The turn exists once its answer is out: were it recorded before, an answer that
            # cannot be delivered (the client is gone) would leave the thread "active" with a
            # turn that never starts.
            self._begin_turn(record, overrides, turn_id, inputs)

        ctx.after_response(start)
        return TurnStartResponse(turn=_pending_turn(turn_id))

    def _begin_turn(
        self,
        record: ThreadRecord,
        overrides: _Overrides,
        turn_id: str,
        inputs: list[UserInput],
    ) -> None:
        runtime = self._runtime(record)
        if runtime.active_turn_id is not None:
            runtime.steer(inputs)
            return
        settings = record.settings = overrides.apply(record.settings)
        record.turns_started += 1
        if not record.preview:
            record.preview = input_text(inputs)
        record.touch()
        runtime.start_turn(
            TurnOrder(
                turn_id=turn_id,
                items=inputs,
                cwd=settings.cwd,
                model=settings.model,
                approval_policy=settings.approval_policy,
                sandbox_policy=settings.sandbox,
                effort=settings.reasoning_effort,
                service_tier=settings.service_tier,
            )
        )

    async def turn_interrupt(
        self, ctx: RequestContext, params: TurnInterruptParams
    ) -> TurnInterruptResponse:
        record = self._loaded_record(params.thread_id)
        runtime = self._runtime(record)
        running = runtime.active_turn_id
        if running is None:
            raise no_active_turn("interrupt")
        if params.turn_id != running:
            raise active_turn_mismatch(params.turn_id, running)
        # answered by the runtime, right before the turn's terminal notifications
        runtime.interrupt(ctx.defer())
        return TurnInterruptResponse()

    async def turn_steer(self, ctx: RequestContext, params: TurnSteerParams) -> TurnSteerResponse:
        record = self._loaded_record(params.thread_id)
        runtime = self._runtime(record)
        running = runtime.active_turn_id
        if running is None:
            raise no_active_turn("steer")
        if params.expected_turn_id != running:
            raise steer_turn_mismatch(params.expected_turn_id, running)
        if not params.input:
            raise empty_input()
        inputs = core_inputs(params.input)

        async def steer() -> None:
            runtime.steer(inputs)

        ctx.after_response(steer)
        return TurnSteerResponse(turn_id=running)


MethodHandler = Callable[[RequestContext, Any], Awaitable[object]]


@dataclass(frozen=True, slots=True)
class Immediate:
    """A route whose handler answers from memory without awaiting: the connection calls it as
    the request arrives, with no task of its own (``rpc.MethodSpec.immediate``)."""

    handler: Callable[[RequestContext, Any], object]


Route = MethodHandler | Immediate


def handler_routes(handlers: Handlers) -> dict[str, Route]:
    """Method -> handler of every supported method, grouped by namespace (one table)."""
    return {
        "initialize": handlers.initialize,
        # thread/*
        "thread/start": handlers.thread_start,
        "thread/resume": handlers.thread_resume,
        "thread/fork": handlers.thread_fork,
        "thread/unsubscribe": Immediate(handlers.thread_unsubscribe),
        "thread/list": handlers.thread_list,
        "thread/loaded/list": Immediate(handlers.thread_loaded_list),
        "thread/read": handlers.thread_read,
        "thread/turns/list": handlers.thread_turns_list,
        "thread/items/list": handlers.thread_items_list,
        "thread/name/set": handlers.thread_name_set,
        "thread/archive": handlers.thread_archive,
        "thread/unarchive": handlers.thread_unarchive,
        "thread/delete": handlers.thread_delete,
        "thread/metadata/update": handlers.thread_metadata_update,
        "thread/revert": handlers.thread_revert,
        # turn/*
        "turn/start": handlers.turn_start,
        "turn/steer": handlers.turn_steer,
        "turn/interrupt": handlers.turn_interrupt,
    }
