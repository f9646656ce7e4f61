"""The thread lists: ``thread/list`` (loaded and stored threads) and ``thread/loaded/list``.

Rules (0.163.0, probed on the binary with scratch homes):

* ``thread/list`` shows the loaded threads that have a turn and the stored threads that are not
  loaded (``status: notLoaded``); archived ones only with ``archived: true``. Filters: ``cwd``,
  ``modelProviders``, ``sourceKinds`` (default: the interactive ``cli`` and ``vscode``),
  ``originators``, ``excludedThreadIds``, ``searchTerm`` (in the name or preview, case-folded);
  ``sectionId`` matches nothing (no sections here). Sorting and cursors: ``storage.page_threads``;
  each listed thread's read state goes in ``readStates``. ``limit``: 25 when absent, else
  clamped to 1..100. Stored threads are filtered and sorted
  by what the index keeps of them (``storage.ThreadRow``); only the rows of the page are read
  again, as they are now (``_stored_list.StoredThreadList.page``). Until the thread registry is
  built (no thread made or loaded yet) the process knows no thread and the list is the stored
  threads alone: the first ``thread/list`` of a process loads the storage index and this module,
  not the registry, the runtime or the core models (on stdio ``serve`` answers the first ones
  through ``list_threads`` before the server starts, ``_first_list``). In a cluster, the
  threads other servers share (``SharedThreads.rows``) are listed with them, ``notLoaded`` here
  (the registry, which holds the cluster's hook, is then built by the first list).
* ``thread/loaded/list``: the loaded thread ids in creation order, paged by an id cursor (answered
  from memory, without a task: ``Immediate``).

Boundary: what a request means and answers; the threads are the registry's.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, Protocol, cast

from codex_app_bridge.rpc import ModelParams
from codex_app_bridge.rpc.methods import RawParamsValue
from codex_app_bridge.server._errors import invalid_cursor
from codex_app_bridge.server._stored_list import THREAD_SOURCE
from codex_app_bridge.server._thread_extras import list_extras, read_state_json
from codex_app_bridge.storage import (
    InvalidCursor,
    RowFilter,
    ThreadRow,
    cursor_position,
    key_stamp,
    local_name_key,
    name_key,
    page_threads,
    parse_rollout_name,
)

if TYPE_CHECKING:
    from codex_app_bridge.listener import ListenerHub
    from codex_app_bridge.protocol.v2 import (
        Thread,
        ThreadLoadedListParams,
        ThreadLoadedListResponse,
    )
    from codex_app_bridge.rpc import RequestContext
    from codex_app_bridge.server._registry import ThreadRegistry
    from codex_app_bridge.server._shared import SharedThreads
    from codex_app_bridge.server._stored_list import StoredThreadList
    from codex_app_bridge.server._threads import ThreadRecord
    from codex_app_bridge.sources import EventSource, TurnSource
    from codex_app_bridge.storage import StoredThread

__all__ = [
    "FIRST_PAGE",
    "SORT_DIRECTIONS",
    "THREAD_LIST_DEFAULT_LIMIT",
    "THREAD_SORT_KEYS",
    "THREAD_SOURCE_KINDS",
    "ListServices",
    "ThreadListHandlers",
    "ThreadListParamsSpec",
    "ThreadListQuery",
    "plain_list_query",
]

THREAD_LIST_DEFAULT_LIMIT: Final = 25
THREAD_LIST_MAX_LIMIT: Final = 100
"""0.163.0 clamps ``limit`` to 1..100."""
_INTERACTIVE_SOURCES: Final = frozenset({"cli", "vscode"})
FIRST_PAGE: Final = RowFilter(source_kinds=_INTERACTIVE_SOURCES)
"""The stored rows a ``thread/list`` without params asks for (a client's usual first list:
``_first_list`` reads them ahead)."""
_CREATED_KEY: Final = attrgetter("created_key", "thread_id")
_UPDATED_KEY: Final = attrgetter("updated_key", "thread_id")

_UPDATED_STAMP: Final = attrgetter("updated_at")


SORT_DIRECTIONS: Final = frozenset({"asc", "desc"})
THREAD_SORT_KEYS: Final = frozenset({"created_at", "updated_at", "recency_at", "section_position"})
THREAD_SOURCE_KINDS: Final = frozenset(
    {
        "cli",
        "vscode",
        "exec",
        "appServer",
        "subAgent",
        "subAgentReview",
        "subAgentCompact",
        "subAgentThreadSpawn",
        "subAgentOther",
        "unknown",
    }
)
"""The values of ``SortDirection``, ``ThreadSortKey`` and ``ThreadSourceKind`` (0.163.0's schema;
a test holds them equal to the generated models')."""
_COUNT_LIMIT: Final = 2**31
"""A ``limit`` at or beyond this is left to the validator (as ``rpc.ModelParams`` does)."""


class ThreadListQuery(NamedTuple):
    """``thread/list``'s params as the handler reads them (``ThreadListParams``'s fields)."""

    archived: bool | None = None
    cursor: str | None = None
    cwd: str | list[str] | None = None
    excluded_thread_ids: list[str] | None = None
    limit: int | None = None
    model_providers: list[str] | None = None
    originators: list[str] | None = None
    search_term: str | None = None
    section_id: str | None = None
    sort_direction: Literal["asc", "desc"] | None = None
    sort_key: str | None = None
    source_kinds: list[str] | None = None
    use_state_db_only: bool | None = None


def _is_bool(value: object) -> bool:
    return type(value) is bool


def _is_str(value: object) -> bool:
    return type(value) is str


def _is_strs(value: object) -> bool:
    return type(value) is list and all(type(v) is str for v in cast("list[object]", value))


def _is_count(value: object) -> bool:
    return type(value) is int and 0 <= value < _COUNT_LIMIT


def _among(values: frozenset[str]) -> Callable[[object], bool]:
    return lambda value: type(value) is str and value in values


def _all_among(values: frozenset[str]) -> Callable[[object], bool]:
    return lambda value: _is_strs(value) and values.issuperset(cast("list[str]", value))


_PLAIN_FIELDS: Final[dict[str, tuple[str, Callable[[object], bool]]]] = {
    "archived": ("archived", _is_bool),
    "cursor": ("cursor", _is_str),
    "cwd": ("cwd", lambda value: _is_str(value) or _is_strs(value)),
    "excludedThreadIds": ("excluded_thread_ids", _is_strs),
    "limit": ("limit", _is_count),
    "modelProviders": ("model_providers", _is_strs),
    "originators": ("originators", _is_strs),
    "searchTerm": ("search_term", _is_str),
    "sectionId": ("section_id", _is_str),
    "sortDirection": ("sort_direction", _among(SORT_DIRECTIONS)),
    "sortKey": ("sort_key", _among(THREAD_SORT_KEYS)),
    "sourceKinds": ("source_kinds", _all_among(THREAD_SOURCE_KINDS)),
    "useStateDbOnly": ("use_state_db_only", _is_bool),
}
"""Wire name -> field of ``ThreadListQuery`` and what a value must be to be taken as it is."""


def plain_list_query(raw: object) -> ThreadListQuery | None:
    """``thread/list``'s params read without the wire models: an object whose every member is a
    field given a value of its type (or ``null``); ``None`` for anything else."""
    if not isinstance(raw, dict):
        return None
    values: dict[str, Any] = {}
    for wire, value in cast("dict[str, object]", raw).items():
        plain = _PLAIN_FIELDS.get(wire)
        if plain is None or (value is not None and not plain[1](value)):
            return None
        values[plain[0]] = value
    return ThreadListQuery(**values)


class ThreadListParamsSpec:
    """``thread/list``'s params: plain ones (``plain_list_query``) are read as they are, without
    the wire models (a process's first request is often a list: pydantic and the generated
    models are most of its time); anything else goes through ``ThreadListParams``
    (``rpc.ModelParams``), which words the error as serde does, or reads what the plain path
    does not (positional params)."""

    def __init__(self, field_count: int) -> None:
        """``field_count``: the Rust struct's (positional params' messages)."""
        self._field_count = field_count
        self._model: ModelParams[Any] | None = None

    def decode(self, raw: RawParamsValue) -> ThreadListQuery:
        plain = plain_list_query(raw)
        return self._by_model(raw) if plain is None else plain

    def _by_model(self, raw: RawParamsValue) -> ThreadListQuery:
        if self._model is None:
            from codex_app_bridge.protocol.v2 import ThreadListParams

            self._model = ModelParams(ThreadListParams, field_count=self._field_count)
        params = self._model.decode(raw)
        return ThreadListQuery(*(getattr(params, name) for name in ThreadListQuery._fields))


def _created_stamp(row: ThreadRow) -> str:
    """A ``created_at`` cursor's time: the row's key, the time in its rollout's name (as
    0.163.0's cursors hold it), not ``createdAt``."""
    return key_stamp(row.created_key)


def _name_key_of(record: ThreadRecord) -> int:
    """A loaded thread's place in a ``created_at`` order: the time in its rollout's name, as a
    stored thread's (``ThreadRow.created_key``); one not stored yet, as it will be named."""
    name = None if record.path is None else parse_rollout_name(record.path.rsplit("/", 1)[-1])
    return local_name_key(record.created_at) if name is None else name_key(name.stamp)


def _loaded_row(record: ThreadRecord, shared: SharedThreads | None) -> ThreadRow:
    """A loaded thread as ``thread/list`` filters and sorts it, like a stored one (archived
    only in a cluster, where another server may have archived it: ``SharedThreads``)."""
    created, updated = (
        key_stamp(record.created_at * 1_000_000),
        key_stamp(record.updated_at * 1_000_000),
    )
    return ThreadRow(
        thread_id=record.id,
        archived=shared is not None and shared.is_archived(record.id),
        cwd=record.settings.cwd,
        model_provider=record.settings.model_provider,
        source_kind=THREAD_SOURCE,
        originator=record.originator,
        name=record.name,
        preview=record.preview,
        created_at=created,
        updated_at=updated,
        created_key=_name_key_of(record),
        updated_key=record.updated_at * 1_000_000,
    )


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


class ListServices(Protocol):
    """What the list handlers use of the server (``BridgeServer``; before the server starts,
    the stored threads alone, ``_first_list``)."""

    @property
    def source(self) -> EventSource | TurnSource: ...

    @property
    def hub(self) -> ListenerHub: ...

    @property
    def stored_threads(self) -> StoredThreadList | None: ...

    def known_threads(self) -> ThreadRegistry | None: ...


class ThreadListHandlers:
    """``thread/list`` and ``thread/loaded/list`` of one server."""

    def __init__(self, server: ListServices) -> None:
        self.server = server

    async def thread_list(self, ctx: RequestContext, params: ThreadListQuery) -> dict[str, Any]:
        return await self.list_threads(params)

    async def list_threads(self, params: ThreadListQuery) -> dict[str, Any]:
        """``thread/list``'s answer (``ThreadListResponse`` as JSON data): what its handler
        answers, and what ``_first_list`` answers before the server starts (where no await
        suspends: the stored threads are then read where they are asked for)."""
        server = self.server
        by_updated = params.sort_key in ("updated_at", "recency_at")
        limit = (
            THREAD_LIST_DEFAULT_LIMIT
            if params.limit is None
            else min(max(params.limit, 1), THREAD_LIST_MAX_LIMIT)
        )
        cwds = None if params.cwd is None else params.cwd
        providers = frozenset(params.model_providers) if params.model_providers else None
        where = RowFilter(
            archived=bool(params.archived),
            cwds=None if cwds is None else frozenset([cwds] if isinstance(cwds, str) else cwds),
            # 0.163.0: absent or null lists only its configured provider's threads, [] every
            # provider's; the bridge, which has no configuration of its own, lists every
            # provider's for both (README "Known differences"). A rollout without a provider
            # is the default provider's (shown and filtered so).
            providers=providers,
            default_provider=None if providers is None else server.source.defaults.model_provider,
            source_kinds=frozenset(params.source_kinds or ()) or _INTERACTIVE_SOURCES,
            originators=frozenset(params.originators) if params.originators else None,
            excluded=frozenset(params.excluded_thread_ids or ()),
            search=params.search_term.casefold() if params.search_term else None,
        )
        try:
            after = None if params.cursor is None else cursor_position(params.cursor)
        except InvalidCursor as exc:
            raise invalid_cursor(exc.cursor) from None
        rows: list[ThreadRow] = []
        fetched: dict[str, StoredThread] = {}
        stored_threads = server.stored_threads
        if params.section_id is None:  # no sections here: a section holds nothing
            known = server.known_threads()
            if known is not None:
                loaded = (_loaded_row(record, known.shared) for record in known.listed())
                rows = [row for row in loaded if where.matches(row)]
            if stored_threads is not None:
                stored_rows, fetched = await stored_threads.rows(
                    where,
                    by_updated=by_updated,
                    descending=params.sort_direction != "asc",
                    after=after,
                    limit=limit + 1,
                    skip=frozenset() if known is None else known.known_ids(),
                    # the stored threads alone (no thread known): their first rows are the page
                    fetch=limit if known is None else 0,
                )
                rows += stored_rows
            if known is not None and known.shared is not None:  # a cluster's other threads
                have = frozenset(row.thread_id for row in rows)
                rows += await known.shared.rows(
                    where,
                    by_updated=by_updated,
                    descending=params.sort_direction != "asc",
                    after=after,
                    limit=limit + 1,
                    skip=have | known.known_ids(),
                )
        page = page_threads(
            rows,
            _UPDATED_KEY if by_updated else _CREATED_KEY,
            _UPDATED_STAMP if by_updated else _created_stamp,
            direction=params.sort_direction,
            cursor=params.cursor,
            limit=limit,
        )
        known = server.known_threads()  # made by another request meanwhile, maybe

        def record_of(thread_id: str) -> ThreadRecord | None:
            return None if known is None else known.get(thread_id)

        stored = (
            {}
            if stored_threads is None
            else await stored_threads.page(
                (row.thread_id for row in page.rows if record_of(row.thread_id) is None), fetched
            )
        )
        data: list[Thread | dict[str, Any]] = []
        read_states: dict[str, dict[str, Any]] = {}
        for row in page.rows:
            record = record_of(row.thread_id)
            if record is not None:
                data.append(record.thread(listed=True))
                read_states[row.thread_id] = record.read_state()
            elif row.thread_id in stored:  # else gone since it was listed
                thread, read_states[row.thread_id] = stored[row.thread_id]
                data.append(thread)
            elif (
                known is not None
                and known.shared is not None
                and (shared := known.shared.listed(row.thread_id))
            ):  # on another server of the cluster (imported here: a first list has no cluster)
                from codex_app_bridge.server._shared import shared_thread_json

                data.append(shared_thread_json(shared))
                read_states[row.thread_id] = shared.read_state or read_state_json(
                    row.thread_id, None
                )
        # ``ThreadListResponse`` as JSON data: the stored threads are plain data already, and
        # validating the response would build the validators of every thread item kind
        return {
            "backwardsCursor": page.backwards_cursor,
            "data": data,
            "nextCursor": page.next_cursor,
            **list_extras(read_states),
        }

    def thread_loaded_list(
        self, ctx: RequestContext, params: ThreadLoadedListParams
    ) -> ThreadLoadedListResponse:
        from codex_app_bridge.protocol.v2 import ThreadLoadedListResponse

        page, next_cursor = _page(
            list(self.server.hub.loaded_thread_ids()), params.cursor, params.limit
        )
        return ThreadLoadedListResponse(data=page, next_cursor=next_cursor)
