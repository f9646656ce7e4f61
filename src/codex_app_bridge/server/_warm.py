"""Warm-up: what the first request of each common kind would load, loaded while the server idles.

A fresh process answers ``initialize`` and then its first requests with nothing built: each
namespace of handlers is imported, and each model's validator and serializer built, by the first
request that needs it (``_table.DeferredMethodTable``, pydantic's ``defer_build``), so the first
``thread/turns/list`` or ``thread/resume`` of a process pays for it. Once the server has answered
its first request other than ``initialize``, ``warm_up`` runs the same work in small steps on the
event loop: the stored-history path (a small rollout in 0.163.0's format parsed, paged into turns
and written as ``thread/turns/list`` writes them) and the handlers and models of a resume.

Each step is one import or one model's validator, a few milliseconds, run only while no request
is being handled and no turn runs (``busy``); between steps every task that is ready (a request
that arrived meanwhile) runs first, so a request waits at most for the step in progress, never
for the whole warm-up; a step that fails is logged and skipped (what it would have loaded is then
loaded by the request that needs it, as without a warm-up).

Some imports are too long for a step: the core models, the mapping, the listener, the thread
registry and the runtime (about 100 ms each on a loaded machine; a process's first
``thread/list`` answers without them, ``_stored_list``). Those modules (``IMPORTED_APART``) are
imported first, one at a time in a worker thread beside the event loop: a request that arrives
meanwhile shares the interpreter with the import instead of waiting for it, and gets it back
within ``_apart.IMPORT_SWITCH_S`` (not the default 5 ms) at each of its steps (the event loop,
its worker thread); one that needs a module being imported waits for that module only. (Waiting
for a pause in the requests before each import was tried: a client's next request then found
the interpreter free, but a client that never pauses 5 ms, such as bench/stored_threads.py's
pages, moved the imports onto its later requests.)

Boundary: loads code and builds validators; no state of the server is read or written.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import logging
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Final, get_args

import anyio
import anyio.to_thread
import orjson

from codex_app_bridge.server._apart import import_apart
from codex_app_bridge.server._server import wait_idle

if TYPE_CHECKING:
    from pydantic import BaseModel

    from codex_app_bridge.protocol.core import EventEnvelope, RolloutLine

__all__ = ["IMPORTED_APART", "SAMPLE_ROLLOUT", "warm_up", "warm_up_steps"]

logger = logging.getLogger(__name__)

IMPORTED_APART: Final = (
    "codex_app_bridge.protocol.core",
    "codex_app_bridge.mapping",
    "codex_app_bridge.listener._hub",
    "codex_app_bridge.server._runtime",
    "codex_app_bridge.server._registry",
)
"""Modules imported in a worker thread before the steps (see the module docstring), in order."""

_THREAD: Final = "00000000-0000-7000-8000-000000000000"
_TURN: Final = "00000000-0000-7000-8000-000000000001"
_AT: Final = "2026-01-01T00:00:00.000Z"


def _line(ordinal: int, kind: str, payload: dict[str, object]) -> bytes:
    return orjson.dumps({"timestamp": _AT, "ordinal": ordinal, "type": kind, "payload": payload})


_USAGE: Final = {
    "input_tokens": 1,
    "cached_input_tokens": 0,
    "output_tokens": 1,
    "reasoning_output_tokens": 0,
    "total_tokens": 2,
}

SAMPLE_ROLLOUT: Final = b"\n".join(
    [
        _line(
            0,
            "session_meta",
            {
                "id": _THREAD,
                "timestamp": _AT,
                "cwd": "/",
                "originator": "warm-up",
                "cli_version": "0.163.0",
                "source": "vscode",
                "model_provider": "openai",
            },
        ),
        _line(1, "event_msg", {"type": "task_started", "turn_id": _TURN, "started_at": 0}),
        _line(
            2,
            "turn_context",
            {
                "turn_id": _TURN,
                "cwd": "/",
                "approval_policy": "never",
                "sandbox_policy": {"type": "danger-full-access"},
                "model": "m",
                "summary": "auto",
            },
        ),
        _line(
            3,
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]},
        ),
        _line(4, "event_msg", {"type": "user_message", "message": "q", "images": []}),
        _line(
            5,
            "event_msg",
            {
                "type": "item_completed",
                "thread_id": _THREAD,
                "turn_id": _TURN,
                "item": {
                    "type": "UserMessage",
                    "id": "u",
                    "content": [{"type": "text", "text": "q", "text_elements": []}],
                },
            },
        ),
        _line(
            6,
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "a"}],
            },
        ),
        _line(7, "event_msg", {"type": "agent_message", "message": "a"}),
        _line(
            8,
            "event_msg",
            {
                "type": "item_completed",
                "thread_id": _THREAD,
                "turn_id": _TURN,
                "item": {
                    "type": "AgentMessage",
                    "id": "a",
                    "content": [{"type": "Text", "text": "a"}],
                },
            },
        ),
        _line(
            9,
            "event_msg",
            {
                "type": "token_count",
                "info": {
                    "total_token_usage": _USAGE,
                    "last_token_usage": _USAGE,
                    "model_context_window": 1000,
                },
                "rate_limits": None,
            },
        ),
        _line(
            10,
            "event_msg",
            {"type": "task_complete", "turn_id": _TURN, "last_agent_message": "a"},
        ),
    ]
)
"""One completed turn as a stored rollout holds it (the line kinds every stored thread has)."""


def _module(name: str) -> Iterator[Callable[[], object]]:
    """The steps of importing one module: each wire model it imports by name made first, one
    per step (what most of a handler module's own import time is), then the module."""
    spec = importlib.util.find_spec(name)
    origin = None if spec is None else spec.origin
    if origin is not None and name not in sys.modules:
        from codex_app_bridge.protocol import v2

        tree = ast.parse(Path(origin).read_bytes())
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == "codex_app_bridge.protocol.v2":
                for alias in node.names:
                    yield partial(getattr, v2, alias.name, None)
    yield partial(importlib.import_module, name)


def _validators(model: type[BaseModel]) -> Iterator[Callable[[], object]]:
    """The steps of building ``model``'s validator: each model its fields refer to first (those
    it refers to before it), one per step, then its own (which reuses theirs)."""
    import pydantic

    seen: set[type[BaseModel]] = set()
    order: list[type[BaseModel]] = []

    def visit(annotation: object) -> None:
        if type(annotation).__name__ == "TypeAliasType":  # typing's or typing_extensions'
            visit(getattr(annotation, "__value__", None))
        elif isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
            if annotation in seen:
                return
            seen.add(annotation)
            for info in annotation.model_fields.values():
                visit(info.annotation)
            order.append(annotation)
        else:
            for argument in get_args(annotation):
                visit(argument)

    visit(model)
    for each in order:
        yield each.model_rebuild


_SAMPLE_PATH: Final = Path("warm-up.jsonl")


def _sample_lines() -> list[RolloutLine]:
    """:data:`SAMPLE_ROLLOUT` read as a stored rollout is."""
    from codex_app_bridge.storage import parse_rollout_bytes

    return parse_rollout_bytes(_SAMPLE_PATH, SAMPLE_ROLLOUT).lines


def _history_pages() -> Iterator[Callable[[], object]]:
    """The steps of ``thread/turns/list`` over a stored rollout: read, paged, written."""
    yield from _module("codex_app_bridge.server._handlers_pages")
    from codex_app_bridge.rpc._encode import encode_result
    from codex_app_bridge.server._handlers_pages import turn_json
    from codex_app_bridge.server._pages import HistoryPages, positioned_events
    from codex_app_bridge.server._stored import envelopes_of
    from codex_app_bridge.storage import parse_rollout_bytes

    yield lambda: None  # the imports above were this step
    for raw in SAMPLE_ROLLOUT.split(b"\n"):  # each kind of line's validator, one per step
        yield partial(parse_rollout_bytes, _SAMPLE_PATH, raw)
    lines = _sample_lines()
    yield partial(envelopes_of, lines)
    pages = HistoryPages(_THREAD, positioned_events(lines))
    yield lambda: None
    for view in ("summary", "full"):
        page = pages.turns(items_view=view, direction=None, cursor=None, limit=None)
        yield partial(encode_result, 0, {"data": [turn_json(turn) for turn in page.rows]})


def _resume() -> Iterator[Callable[[], object]]:
    """The steps of ``thread/resume`` beyond the history: its handlers and answer's models, and
    the loaded thread's history log (each kind of event written and read by its own model,
    ``HistoryLog``)."""
    yield from _module("codex_app_bridge.server._handlers_threads")
    from codex_app_bridge.protocol import v2
    from codex_app_bridge.protocol.core import dump_trusted_envelope, parse_trusted_envelope
    from codex_app_bridge.server._stored import envelopes_of

    def round_trip(envelope: EventEnvelope) -> object:  # as a history log writes and reads it
        return parse_trusted_envelope(dump_trusted_envelope(envelope))

    for envelope in envelopes_of(_sample_lines()):  # each kind's model, one per step
        yield partial(round_trip, envelope)

    for model in (v2.Turn, v2.Thread, v2.ThreadResumeResponse, v2.ThreadReadResponse):
        yield from _validators(model)


def warm_up_steps() -> Iterator[Callable[[], object]]:
    """Every step, in order (each one's own imports are made while the previous runs)."""
    yield from _history_pages()
    yield from _resume()


async def warm_up(busy: Callable[[], bool]) -> None:
    """Run every step while no request is being handled (``busy()`` false), letting every ready
    task run before each (see the module docstring)."""
    for name in IMPORTED_APART:  # each begins while no request is being handled
        await wait_idle(busy)
        if not await anyio.to_thread.run_sync(import_apart, name, abandon_on_cancel=True):
            break
    steps = warm_up_steps()
    while True:
        await wait_idle(busy)
        try:
            step = next(steps)
        except StopIteration:
            return
        except Exception:  # a step's own imports failed: the requests load it themselves
            logger.debug("warm-up stopped", exc_info=True)
            return
        await wait_idle(busy)
        try:
            step()
        except Exception:
            logger.debug("warm-up step %r failed", step, exc_info=True)
