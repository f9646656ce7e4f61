"""The ``thread/*`` handlers that open, read and follow a thread: ``thread/start``,
``thread/resume``, ``thread/fork``, ``thread/read``, ``thread/unsubscribe``.

Rules (probed from the 0.163.0 binary, see the errors in ``_errors``):

* ``thread/start`` answers the new thread and subscribes the caller; ``thread/started`` goes to
  every connection after the answer, then any ``deprecationNotice`` of a renamed feature flag.
* ``thread/resume`` loads the thread (an unloaded one again, a stored one from its rollout:
  ``ThreadRegistry``) and subscribes the caller; a thread loaded by it gets
  ``thread/status/changed`` ``idle`` before the answer. A thread with no turn has no rollout:
  ``no rollout found``, before any deprecation notice. Pending server requests are replayed to
  the caller after the answer; then every connection gets the thread's goal
  (``thread/goal/updated``, ``turnId: null``), or ``thread/goal/cleared`` when it has none.
* ``thread/resume`` and ``thread/fork`` replay the thread's last token usage to the caller right
  after the answer (``_token_replay`` says when), before a fork's ``thread/started`` and a
  resume's replay of pending requests.
* Full-history hydration (``thread/read includeTurns``, resume and fork without
  ``excludeTurns``) is preceded by a ``deprecationNotice`` to the caller.
* ``thread/read`` answers the listener's read state (``listener._read_state``); a thread that is
  not loaded is read from its rollout (``notLoaded``). Thread ``path`` is ``null`` in memory.

Boundary: what a request means and answers; a thread's life is the registry's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Final, cast

from codex_app_bridge._clock import now_s
from codex_app_bridge.listener import read_state_of_history
from codex_app_bridge.mapping.thread_history import build_turns
from codex_app_bridge.protocol.core import EventEnvelope
from codex_app_bridge.protocol.jsonrpc import JsonValue
from codex_app_bridge.protocol.v2 import (
    CollaborationMode,
    DeprecationNoticeNotification,
    IdleThreadStatus,
    Settings,
    ThreadForkParams,
    ThreadForkResponse,
    ThreadGoalClearedNotification,
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
    dump_json,
)
from codex_app_bridge.rpc import RequestContext
from codex_app_bridge.server._errors import (
    ephemeral_include_turns,
    list_turns_unsupported,
    no_rollout,
    thread_not_loaded,
)
from codex_app_bridge.server._handlers_goals import goal_updated
from codex_app_bridge.server._history import build_thread_turns, fork_events
from codex_app_bridge.server._ids import parse_thread_id
from codex_app_bridge.server._pages import backwards_cursors
from codex_app_bridge.server._shared import shared_thread_object
from codex_app_bridge.server._thread_config import (
    announce_before,
    resolve_thread_config,
    thread_settings,
    warn_after,
)
from codex_app_bridge.server._thread_extras import read_extras, read_state_json, resume_extras
from codex_app_bridge.server._threads import ThreadRecord
from codex_app_bridge.server._token_replay import replayed_token_usage

if TYPE_CHECKING:
    from codex_app_bridge.server._registry import ThreadRegistry
    from codex_app_bridge.server._services import ServerServices

__all__ = ["READ_DEPRECATION", "RESUME_DEPRECATION", "ThreadHandlers", "materialized_thread"]

READ_DEPRECATION: Final = (
    "Full-history hydration is deprecated for paginated threads; omit `includeTurns` or set it to "
    "`false`, then page with `thread/turns/list` and `thread/items/list`."
)
RESUME_DEPRECATION: Final = (
    "Full-history hydration is deprecated for paginated threads; use `excludeTurns: true`, then "
    "page with `thread/turns/list` and `thread/items/list`."
)

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


def _dynamic_tools(params: Any) -> list[dict[str, Any]]:
    extra: dict[str, JsonValue] | None = getattr(params, "model_extra", None)
    tools = extra.get("dynamicTools") if extra is not None else None
    if not isinstance(tools, list):
        return []
    return [tool for tool in tools if isinstance(tool, dict)]


async def _deprecation(ctx: RequestContext, summary: str) -> None:
    notice = DeprecationNoticeNotification(summary=summary, details=None)
    await ctx.connection.notify("deprecationNotice", dump_json(notice))


def _replay_usage(
    ctx: RequestContext, thread_id: str, events: list[EventEnvelope], turns: list[Turn]
) -> None:
    """After the response: ``thread/tokenUsage/updated`` with the thread's last usage, to this
    connection only (``_token_replay``)."""
    notification = replayed_token_usage(thread_id, events, turns)
    if notification is None:
        return

    async def replay() -> None:
        await ctx.connection.notify("thread/tokenUsage/updated", dump_json(notification))

    ctx.after_response(replay)


async def materialized_thread(
    threads: ThreadRegistry, raw_id: str, missing: Callable[[str], Exception]
) -> ThreadRecord:
    """The thread a request names, loaded from its rollout if it was not (``missing``: none);
    one with no turn yet has no rollout (``no rollout found``, as the real binary answers)."""
    thread_id = parse_thread_id(raw_id)
    record = await threads.find_or_load(thread_id)
    if record is None:
        raise missing(thread_id)
    if not record.materialized:
        raise no_rollout(record.id)
    return record


class ThreadHandlers:
    """``thread/start``, ``resume``, ``fork``, ``read``, ``unsubscribe`` of one server."""

    def __init__(self, server: ServerServices) -> None:
        self.server = server

    async def _broadcast_started(self, record: ThreadRecord) -> None:
        notification = ThreadStartedNotification(thread=record.thread())
        await self.server.hub.broadcast("thread/started", dump_json(notification))

    async def thread_start(
        self, ctx: RequestContext, params: ThreadStartParams
    ) -> ThreadStartResponse:
        config = resolve_thread_config(self.server, params)
        settings = thread_settings(self.server, config, params)
        await announce_before(ctx, self.server, params)
        record = self.server.threads.create(
            settings,
            originator=self.server.originator,
            ephemeral=bool(params.ephemeral),
            thread_source=params.thread_source,
            raw_events=_extra_flag(params, "experimentalRawEvents"),
        )
        record.config = config  # before the first turn opens the thread's session
        record.dynamic_tools = _dynamic_tools(params)
        record.listener.subscribe(ctx.connection, raw_events=record.raw_events)
        thread = record.thread()
        ctx.after_response(partial(self._broadcast_started, record))
        notices = _feature_deprecations(params.config)
        if notices:

            async def deprecations() -> None:  # after thread/started, as the real binary
                for notice in notices:
                    await ctx.connection.notify("deprecationNotice", dump_json(notice))

            ctx.after_response(deprecations)
        warn_after(ctx, record.id, config)
        return ThreadStartResponse(thread=thread, **settings.response_fields())

    async def thread_resume(
        self, ctx: RequestContext, params: ThreadResumeParams
    ) -> ThreadResumeResponse:
        threads = self.server.threads
        known = threads.get(parse_thread_id(params.thread_id))
        loading = known is None or not known.loaded
        # before any deprecation notice, with or without excludeTurns (codex-python-sdk relies
        # on the answer for a thread with no turn)
        record = await materialized_thread(threads, params.thread_id, no_rollout)
        config = resolve_thread_config(self.server, params, record.settings)
        exclude_turns = bool(params.exclude_turns)
        if not exclude_turns:
            await _deprecation(ctx, RESUME_DEPRECATION)
        for notice in _feature_deprecations(params.config):
            await ctx.connection.notify("deprecationNotice", dump_json(notice))
        await announce_before(ctx, self.server, params)
        record.settings = thread_settings(self.server, config, params, record.settings)
        record.config = config
        threads.reload(record)
        if loading and threads.storage is not None and not record.ephemeral:
            threads.storage.checkpoint(record)  # as 0.163.0, a cold resume's settings
        record.listener.subscribe(ctx.connection, raw_events=record.raw_events)
        if loading:  # loaded now from its rollout: notLoaded -> idle, before the answer
            status = ThreadStatusChangedNotification(thread_id=record.id, status=IdleThreadStatus())
            await ctx.connection.notify("thread/status/changed", dump_json(status))
        turns: list[Turn] | None = None
        if loading or not exclude_turns:
            # a cold resume always replays the usage, a loaded thread only with its turns
            history = record.history
            all_turns = build_thread_turns(history, running=record.active_turn_id is not None)
            _replay_usage(ctx, record.id, history, all_turns)
            turns = None if exclude_turns else all_turns
        runtime = record.runtime
        if runtime is not None and len(runtime.requests):

            async def replay() -> None:
                # the still-pending server requests, same ids, to this connection only
                runtime.requests.replay_to(ctx.connection)

            ctx.after_response(replay)
        if loading:
            warn_after(ctx, record.id, config)
        pages = await threads.history_pages(record.id)
        assert pages is not None  # a known thread has a history
        turns_cursor, items_cursor = backwards_cursors(pages)
        # every resume tells every connection the thread's goal, or that it has none
        goal = self.server.goals.get(record.id)
        hub = self.server.hub
        if goal is None:
            cleared = ThreadGoalClearedNotification(thread_id=record.id)
            ctx.after_response(partial(hub.broadcast, "thread/goal/cleared", cleared))
        else:
            ctx.after_response(partial(hub.broadcast, "thread/goal/updated", goal_updated(goal)))
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
        threads = self.server.threads
        source = await materialized_thread(threads, params.thread_id, no_rollout)
        exclude_turns = bool(params.exclude_turns)
        events = fork_events(source.history, last_turn_id=params.last_turn_id, now_s=now_s())
        config = resolve_thread_config(self.server, params, source.settings)
        if not exclude_turns:
            await _deprecation(ctx, RESUME_DEPRECATION)
        await announce_before(ctx, self.server, params)
        settings = thread_settings(self.server, config, params, source.settings)
        record = threads.create(
            settings,
            originator=self.server.originator,
            ephemeral=bool(params.ephemeral),
            forked_from_id=source.id,
            thread_source=params.thread_source,
            history=events,
            # the real fork has no preview until its own first turn (probed, with and without
            # a revert before)
            turns_started=source.turns_started,
            raw_events=source.raw_events,
        )
        record.config = config
        record.forked_from_ordinal = len(events)
        record.listener.subscribe(ctx.connection, raw_events=record.raw_events)
        turns = None if exclude_turns else build_thread_turns(events)
        if turns is not None:
            _replay_usage(ctx, record.id, events, turns)
        ctx.after_response(partial(self._broadcast_started, record))
        warn_after(ctx, record.id, config)
        return ThreadForkResponse(thread=record.thread(turns=turns), **settings.response_fields())

    async def thread_read(
        self, ctx: RequestContext, params: ThreadReadParams
    ) -> ThreadReadResponse:
        thread_id = parse_thread_id(params.thread_id)
        record = self.server.threads.get(thread_id)
        if record is None:
            stored = await self._read_stored(thread_id, include_turns=bool(params.include_turns))
            if params.include_turns:
                await _deprecation(ctx, READ_DEPRECATION)
            return stored
        if not params.include_turns:
            return ThreadReadResponse(thread=record.thread(), **read_extras(record.read_state()))
        if record.ephemeral:  # nothing kept to read back, with or without turns
            raise ephemeral_include_turns()
        if not record.materialized:
            raise list_turns_unsupported()
        await _deprecation(ctx, READ_DEPRECATION)
        turns = build_thread_turns(record.history, running=record.active_turn_id is not None)
        return ThreadReadResponse(
            thread=record.thread(turns=turns), **read_extras(record.read_state())
        )

    async def _read_stored(self, thread_id: str, *, include_turns: bool) -> ThreadReadResponse:
        """``thread/read`` of a thread that is not loaded: from its rollout, or ``thread not
        loaded`` when there is none."""
        threads = self.server.threads
        stored = await threads.find_stored(thread_id)
        if stored is None and threads.shared is not None:
            return await self._read_shared(thread_id, include_turns=include_turns)
        if stored is None:
            raise thread_not_loaded(thread_id)
        turns = None
        if include_turns:
            lines = await threads.stored_history(stored)
            if lines is None:
                raise thread_not_loaded(thread_id)
            turns = build_turns(lines, interrupt_stale=True)
        return ThreadReadResponse(
            thread=threads.stored_thread(stored, turns),
            **read_extras(threads.stored_read_state(stored)),
        )

    async def _read_shared(self, thread_id: str, *, include_turns: bool) -> ThreadReadResponse:
        """``thread/read`` of a thread another server of the cluster holds (``notLoaded``
        here): its metadata, and with ``includeTurns`` its turns as its log has them (a turn
        still playing there shows in progress)."""
        shared = self.server.threads.shared
        assert shared is not None
        found = await shared.read(thread_id, history=include_turns)
        if found is None:
            raise thread_not_loaded(thread_id)
        turns = None
        read_state = found.read_state
        if include_turns:
            turns = build_thread_turns(found.history, running=found.playing)
            read_state = read_state_json(thread_id, read_state_of_history(thread_id, found.history))
        return ThreadReadResponse(
            thread=shared_thread_object(found, turns),
            **read_extras(read_state or read_state_json(thread_id, None)),
        )

    def thread_unsubscribe(
        self, ctx: RequestContext, params: ThreadUnsubscribeParams
    ) -> ThreadUnsubscribeResponse:
        thread_id = parse_thread_id(params.thread_id)
        listener = self.server.hub.get(thread_id)
        if listener is None:
            return ThreadUnsubscribeResponse(status="notLoaded")
        return ThreadUnsubscribeResponse(status=listener.unsubscribe(ctx.connection.connection_id))
