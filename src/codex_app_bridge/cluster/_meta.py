"""A thread's metadata as the cluster's KV bucket keeps it (``thread/list``, names, settings).

One JSON object per thread, written by its owner when the thread is loaded there and whenever a
turn starts or ends (its ``readState`` then too), its ``name`` and ``archived`` state by any node
(each write expects the revision it read, so that none is lost: ``_node``); read by a node that loads the thread from the
log, and kept by every node as a ``thread/list`` row (``row_of_meta``). Wire-side names
(camelCase), so that another tool can read the bucket.

Boundary: pure conversions between a ``ThreadRecord`` and bytes.
"""

from __future__ import annotations

import time
from functools import cache
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import TypeAdapter

from codex_app_bridge.protocol._base import dump_jsonable
from codex_app_bridge.server._threads import THREAD_SOURCE, ThreadRecord, ThreadSettings
from codex_app_bridge.storage import ThreadRow

if TYPE_CHECKING:
    from codex_app_bridge.protocol.core import EventEnvelope
    from codex_app_bridge.server._shared import SharedThread

__all__ = ["meta_of_record", "row_of_meta", "shared_thread"]


def meta_of_record(record: ThreadRecord, owner: str, *, archived: bool = False) -> bytes:
    """The entry of a thread its owner writes (``archived``: as the entry it replaces has it:
    any node archives a thread, ``thread/archive``)."""
    settings = record.settings
    data: dict[str, Any] = {
        "id": record.id,
        "owner": owner,
        "cwd": settings.cwd,
        "model": settings.model,
        "modelProvider": settings.model_provider,
        "approvalPolicy": dump_jsonable(settings.approval_policy),
        "approvalsReviewer": settings.approvals_reviewer,
        "sandbox": dump_jsonable(settings.sandbox),
        "reasoningEffort": settings.reasoning_effort,
        "serviceTier": settings.service_tier,
        "originator": record.originator,
        "name": record.name,
        "preview": record.preview,
        "createdAt": record.created_at,
        "updatedAt": record.updated_at,
        "forkedFromId": record.forked_from_id,
        "turnsStarted": record.turns_started,
        "readState": record.read_state(),
        "archived": archived,
    }
    return orjson.dumps(data)


def _iso(seconds: int) -> str:
    """As a loaded thread's row has it (``_handlers_lists``), at less than half the cost of a
    ``datetime`` (a joining node makes two for every thread of the cluster)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(seconds))


def row_of_meta(data: bytes) -> ThreadRow:
    """A metadata entry as ``thread/list`` filters and sorts it (as a loaded thread's row)."""
    meta: dict[str, Any] = orjson.loads(data)
    created: int = meta.get("createdAt") or 0
    updated: int = meta.get("updatedAt") or 0
    return ThreadRow(
        thread_id=meta["id"],
        archived=bool(meta.get("archived")),
        cwd=meta["cwd"],
        model_provider=meta.get("modelProvider"),
        source_kind=THREAD_SOURCE,
        originator=meta.get("originator"),
        name=meta.get("name"),
        preview=meta.get("preview") or "",
        created_at=_iso(created),
        updated_at=_iso(updated),
        created_key=created * 1_000_000,
        updated_key=updated * 1_000_000,
    )


@cache
def _sandbox_adapter() -> TypeAdapter[Any]:
    from codex_app_bridge.protocol.v2 import SandboxPolicy

    return TypeAdapter[Any](SandboxPolicy)


def _sandbox(value: Any) -> Any:
    return _sandbox_adapter().validate_python(value)


def shared_thread(
    data: bytes, history: list[EventEnvelope], *, playing: bool = False, listing: bool = False
) -> SharedThread:
    """The ``SharedThread`` a metadata entry and the log's history stand for (``playing``: its
    owner holds its lease; ``listing``: for ``thread/list``, which shows no sandbox, so the
    sandbox is not validated: that builds the wire models, about 40 ms of a node's first
    list)."""
    from codex_app_bridge.server._shared import SharedThread

    meta: dict[str, Any] = orjson.loads(data)
    settings = ThreadSettings(
        cwd=meta["cwd"],
        model=meta["model"],
        model_provider=meta["modelProvider"],
        approval_policy=meta.get("approvalPolicy") or "on-request",
        approvals_reviewer=meta.get("approvalsReviewer") or "user",
        reasoning_effort=meta.get("reasoningEffort"),
        service_tier=meta.get("serviceTier"),
    )
    if meta.get("sandbox") is not None and not listing:
        settings.sandbox = _sandbox(meta["sandbox"])
    return SharedThread(
        thread_id=meta["id"],
        settings=settings,
        history=history,
        originator=meta.get("originator"),
        name=meta.get("name"),
        preview=meta.get("preview") or "",
        created_at=meta.get("createdAt") or 0,
        updated_at=meta.get("updatedAt") or 0,
        forked_from_id=meta.get("forkedFromId"),
        read_state=meta.get("readState"),
        playing=playing,
    )
