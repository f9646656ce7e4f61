"""The client-matrix flow for the clients that run in their own venv (:mod:`._client_venvs`).

Run by path, not as a module, under the client's venv interpreter in isolated mode:
``<venv>/bin/python -I .../_venv_flows.py CLIENT SERVER_ARGV_JSON SHIM_DIR``; prints one JSON
outcome. It imports only the standard library and the client library (never this package: the
venv does not have it, and may be a newer Python). CLIENT is ``app_server_sdk``
(``codex-app-server-sdk`` 0.4.1), ``codexed`` (``codexed`` 1.2.2) or ``python_sdk``
(``codex-python-sdk`` 0.2.1).

The flow is :mod:`._client_flows`' as far as each library's public API allows: a thread, a
turn, a second turn, a turn interrupted as early as the library lets its user act, ``thread/list``,
``thread/read`` with turns, then a new client (a new server process: a restart) resuming the
thread. The outcome keeps what a user of the library sees, never timings; a step that raises or
times out is recorded as its error class and message and the other steps still run.

Where a library cannot do a step as the others do:

- ``codex-app-server-sdk``'s ``chat()`` yields completed items only, never deltas, so the
  interrupt is sent at the first completed item (the user message), which precedes the deltas;
  its ``chat_once`` and ``chat`` on an existing thread send ``thread/resume`` before every turn.
- ``codex-python-sdk`` has no public ``thread/resume`` call: after the restart the flow resumes
  through ``responses_events(thread_id=...)`` and closes that stream at its ``thread/ready``
  event, which comes after ``thread/resume`` and before any ``turn/start``. It also sends
  ``thread/resume`` before each turn on an existing thread.
- ``codexed`` sends no ``initialized`` notification and starts ids at 0 (its own habits, kept).
  Its ``turn_stream`` starts listening for the turn's notifications only once ``turn/start`` is
  answered, so those that follow the answer at once (the user message's ``item/completed``) reach
  it or not by how the event loop runs on the day (a loaded machine dropped it against the real
  binary): its outcome leaves the user message out.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import stat
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, cast

FIRST = "First question"
SECOND = "Second question"
LONG = "Please interrupt me: write a very long essay."
MODEL, PROVIDER = "mock-model", "mock"
STEP_TIMEOUT_S = 60.0
"""Every step: a library that hangs (a lost notification, say) is recorded as a TimeoutError."""

Outcome = dict[str, Any]


async def _step(out: Outcome, name: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    try:
        value = await asyncio.wait_for(fn(), STEP_TIMEOUT_S)
    except Exception as exc:  # the outcome records it; the comparison judges it
        out[name] = {"raised": type(exc).__name__, "message": str(exc)[:300]}
        return None
    out[name] = value
    return value


def shim(argv: list[str], directory: Path) -> str:
    """An executable ``directory/codex`` that runs ``argv`` and ignores the argv the client gives
    its "codex binary". ``directory`` is under the flow's scratch, which the caller owns: a
    flow killed mid-run leaves nothing behind elsewhere (a temporary directory removed at exit
    was left in /tmp by every killed run). Here, in the module that imports only the standard
    library, for every flow: ``_client_flows`` imports it."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "codex"
    quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in argv)
    path.write_text(f"#!/bin/sh\nexec {quoted}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _dict(value: object) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


def _turns_summary(thread: dict[str, Any]) -> Outcome:
    turns = [_dict(t) for t in _list(thread.get("turns"))]
    return {
        "statuses": [t.get("status") for t in turns],
        "items": [[_dict(i).get("type") for i in _list(t.get("items"))] for t in turns],
    }


def _completed_types(events: list[dict[str, Any]]) -> list[Any]:
    return [
        _dict(_dict(e.get("params")).get("item")).get("type")
        for e in events
        if e.get("method") == "item/completed"
    ]


# --- codex-app-server-sdk 0.4.1 ----------------------------------------------------------------


async def app_server_sdk(argv: list[str], shim_dir: Path) -> Outcome:
    sdk: Any = importlib.import_module("codex_app_server_sdk")
    out: Outcome = {}

    def connect() -> Any:
        return sdk.CodexClient.connect_stdio(
            command=argv,
            cwd=os.getcwd(),
            env=dict(os.environ),
            request_timeout=STEP_TIMEOUT_S,
            inactivity_timeout=STEP_TIMEOUT_S,
        )

    async with connect() as client:
        config = sdk.ThreadConfig(model=MODEL, model_provider=PROVIDER)
        thread = await asyncio.wait_for(client.start_thread(config), STEP_TIMEOUT_S)
        thread_id: str = thread.thread_id

        async def run(text: str) -> Outcome:
            result = await thread.chat_once(text)
            events = [_dict(e) for e in result.raw_events]
            return {
                "final": result.final_text,
                "source": result.completion_source,
                "items": _completed_types(events),
                "last": events[-1].get("method") if events else None,
            }

        await _step(out, "turn1", lambda: run(FIRST))
        await _step(out, "turn2", lambda: run(SECOND))

        async def interrupted() -> Outcome:
            seen: list[Any] = []
            try:
                async for step in thread.chat(LONG):
                    if not seen:
                        await client.interrupt_turn(step.turn_id, thread_id=thread_id)
                    seen.append(step.item_type)
            except sdk.CodexProtocolError as exc:
                return {"first_step": seen[:1], "raised": type(exc).__name__, "message": str(exc)}
            return {"first_step": seen[:1], "raised": None}

        await _step(out, "turn3", interrupted)

        async def listed() -> Outcome:
            ids = [
                _dict(t).get("id") for t in _list(_dict(await client.list_threads()).get("data"))
            ]
            return {"contains_thread": thread_id in ids, "count": len(ids)}

        await _step(out, "list", listed)

        async def read() -> Outcome:
            return _turns_summary(_dict(_dict(await thread.read(include_turns=True)).get("thread")))

        await _step(out, "read", read)
    async with connect() as client:

        async def resumed() -> Outcome:
            again = await client.resume_thread(thread_id)
            answer = _dict(await client.read_thread(thread_id, include_turns=True))
            turns = _list(_dict(answer.get("thread")).get("turns"))
            return {"same_id": again.thread_id == thread_id, "turns": len(turns)}

        await _step(out, "resume_after_restart", resumed)
    return out


# --- codexed 1.2.2 ------------------------------------------------------------------------------


def _params(event: Any) -> dict[str, Any]:
    params = getattr(event, "params", None)
    dump = getattr(params, "model_dump", None)
    return _dict(dump(mode="json", by_alias=True)) if callable(dump) else _dict(params)


async def codexed(argv: list[str], shim_dir: Path) -> Outcome:
    cx: Any = importlib.import_module("codexed")
    shim_path = shim(argv, shim_dir)
    out: Outcome = {}
    async with cx.CodexClient(codex_command=shim_path) as client:
        session = await asyncio.wait_for(
            client.thread_start(cwd=os.getcwd(), model=MODEL, model_provider=PROVIDER),
            STEP_TIMEOUT_S,
        )
        thread_id: str = session.thread_id

        async def run(text: str) -> Outcome:
            items: list[Any] = []
            final: Any = None
            status: Any = None
            async for event in session.turn_stream(text):
                params = _params(event)
                if event.method == "item/completed":
                    item = _dict(params.get("item"))
                    if item.get("type") != "userMessage":  # a race in the library (above)
                        items.append(item.get("type"))
                    if item.get("type") == "agentMessage":
                        final = item.get("text")
                elif event.method == "turn/completed":
                    status = _dict(params.get("turn")).get("status")
            return {"status": status, "final": final, "items": items}

        await _step(out, "turn1", lambda: run(FIRST))
        await _step(out, "turn2", lambda: run(SECOND))

        async def interrupted() -> Outcome:
            status: Any = None
            sent = False
            async for event in session.turn_stream(LONG):
                params = _params(event)
                if event.method == "item/agentMessage/delta" and not sent:
                    sent = True
                    await session.turn_interrupt(params["turnId"])
                elif event.method == "turn/completed":
                    status = _dict(params.get("turn")).get("status")
            return {"interrupted_at_delta": sent, "status": status}

        await _step(out, "turn3", interrupted)

        async def listed() -> Outcome:
            ids = [t.id for t in (await client.thread_list()).data]
            return {"contains_thread": thread_id in ids, "count": len(ids)}

        await _step(out, "list", listed)

        async def read() -> Outcome:
            answer = await session.read(include_turns=True)
            return _turns_summary(_dict(answer.model_dump(mode="json", by_alias=True)["thread"]))

        await _step(out, "read", read)
    async with cx.CodexClient(codex_command=shim_path) as client:

        async def resumed() -> Outcome:
            again = await client.thread_resume(thread_id)
            answer = await again.read(include_turns=True)
            return {"same_id": again.thread_id == thread_id, "turns": len(answer.thread.turns)}

        await _step(out, "resume_after_restart", resumed)
    return out


# --- codex-python-sdk 0.2.1 ---------------------------------------------------------------------


async def python_sdk(argv: list[str], shim_dir: Path) -> Outcome:
    mod: Any = importlib.import_module("codex_python_sdk")
    shim_path = shim(argv, shim_dir)
    out: Outcome = {}

    def connect() -> Any:
        return mod.AsyncCodexAgenticClient(
            codex_command=shim_path,
            env=dict(os.environ),
            process_cwd=os.getcwd(),
            stream_idle_timeout_seconds=STEP_TIMEOUT_S,
        )

    async with connect() as client:
        started = await asyncio.wait_for(
            client.thread_start(params={"model": MODEL, "modelProvider": PROVIDER}),
            STEP_TIMEOUT_S,
        )
        thread_id: str = started["thread"]["id"]

        async def run(text: str) -> Outcome:
            result = await client.responses_create(
                prompt=text, thread_id=thread_id, include_events=True
            )
            raws = [_dict(e.raw) for e in result.events]
            status = [
                _dict(_dict(r.get("params")).get("turn")).get("status")
                for r in raws
                if r.get("method") == "turn/completed"
            ]
            return {"final": result.text, "items": _completed_types(raws), "status": status}

        await _step(out, "turn1", lambda: run(FIRST))
        await _step(out, "turn2", lambda: run(SECOND))

        async def interrupted() -> Outcome:
            status: Any = None
            sent = False
            events = client.responses_events(prompt=LONG, thread_id=thread_id)
            async with contextlib.aclosing(events):
                async for event in events:
                    raw = _dict(event.raw)
                    if event.type == "item/agentMessage/delta" and not sent:
                        sent = True
                        await client.turn_interrupt(thread_id, event.turn_id)
                    elif event.type == "turn/completed":
                        status = _dict(_dict(raw.get("params")).get("turn")).get("status")
            return {"interrupted_at_delta": sent, "status": status}

        await _step(out, "turn3", interrupted)

        async def listed() -> Outcome:
            ids = [t.get("id") for t in await client.thread_list()]
            return {"contains_thread": thread_id in ids, "count": len(ids)}

        await _step(out, "list", listed)

        async def read() -> Outcome:
            return _turns_summary(_dict(await client.thread_read(thread_id, include_turns=True)))

        await _step(out, "read", read)
    async with connect() as client:

        async def resumed() -> Outcome:
            ready: Any = None
            events = client.responses_events(prompt="(not sent)", thread_id=thread_id)
            async with contextlib.aclosing(events):
                async for event in events:
                    if event.type == "thread/ready":
                        ready = event.thread_id
                        break
            thread = _dict(await client.thread_read(thread_id, include_turns=True))
            return {"same_id": ready == thread_id, "turns": len(_list(thread.get("turns")))}

        await _step(out, "resume_after_restart", resumed)
    return out


FLOWS: dict[str, Callable[[list[str], Path], Coroutine[Any, Any, Outcome]]] = {
    "app_server_sdk": app_server_sdk,
    "codexed": codexed,
    "python_sdk": python_sdk,
}


def main() -> None:
    client, argv, shim_dir = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3])
    flow = FLOWS.get(client)
    if flow is None:
        raise SystemExit(f"unknown client {client!r}")
    print(json.dumps(asyncio.run(flow(argv, shim_dir)), default=str))


if __name__ == "__main__":
    main()
