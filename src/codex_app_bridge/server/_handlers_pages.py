"""The history pages: ``thread/turns/list`` and ``thread/items/list``.

Both page over a thread's history as the registry reads it (``ThreadRegistry.history_pages``:
the rollout's ordinals, or the history log of a thread only in memory); the paging rules are
``_pages``'s. A thread neither known nor stored answers ``-32600 thread not loaded: <id>``
(``turns/list``) or ``-32601 thread/items/list is not supported yet`` (``items/list``), as
0.163.0 does.

Boundary: what a request means and answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from codex_app_bridge.protocol.v2 import (
    ThreadItemsListParams,
    ThreadItemsListResponse,
    ThreadTurnsListParams,
    Turn,
)
from codex_app_bridge.rpc import METHOD_NOT_FOUND, RequestContext, RpcError
from codex_app_bridge.server._errors import thread_not_loaded
from codex_app_bridge.server._ids import parse_thread_id
from codex_app_bridge.server._pages import HistoryPages

if TYPE_CHECKING:
    from codex_app_bridge.server._services import ServerServices

__all__ = ["HistoryPageHandlers"]


def turn_json(turn: Turn) -> dict[str, Any]:
    """A ``Turn`` as its JSON data, its items and error left as their models."""
    return {
        "completedAt": turn.completed_at,
        "durationMs": turn.duration_ms,
        "error": turn.error,
        "id": turn.id,
        "items": turn.items,
        "itemsView": turn.items_view,
        "rootTurnId": turn.root_turn_id,
        "startedAt": turn.started_at,
        "status": turn.status,
    }


def _items_unsupported(_thread_id: str) -> RpcError:
    return RpcError(METHOD_NOT_FOUND, "thread/items/list is not supported yet")


class HistoryPageHandlers:
    """``thread/turns/list`` and ``thread/items/list`` of one server."""

    def __init__(self, server: ServerServices) -> None:
        self.server = server

    async def _pages(self, raw_id: str, missing: Callable[[str], Exception]) -> HistoryPages:
        thread_id = parse_thread_id(raw_id)
        pages = await self.server.threads.history_pages(thread_id)
        if pages is None:
            raise missing(thread_id)
        return pages

    async def thread_turns_list(
        self, ctx: RequestContext, params: ThreadTurnsListParams
    ) -> dict[str, Any]:
        pages = await self._pages(params.thread_id, thread_not_loaded)
        page = pages.turns(
            items_view=params.items_view,
            direction=params.sort_direction,
            cursor=params.cursor,
            limit=params.limit,
        )
        # ``ThreadTurnsListResponse`` as JSON data: its turns are trusted models already, and
        # serializing them as ``Turn`` s would build the serializer of every thread item kind
        # (each item is written by its own)
        return {
            "backwardsCursor": page.backwards_cursor,
            "data": [turn_json(turn) for turn in page.rows],
            "nextCursor": page.next_cursor,
        }

    async def thread_items_list(
        self, ctx: RequestContext, params: ThreadItemsListParams
    ) -> ThreadItemsListResponse:
        pages = await self._pages(params.thread_id, _items_unsupported)
        page = pages.items(
            turn_id=params.turn_id,
            direction=params.sort_direction,
            cursor=params.cursor,
            limit=params.limit,
        )
        return ThreadItemsListResponse(
            data=page.rows, next_cursor=page.next_cursor, backwards_cursor=page.backwards_cursor
        )
