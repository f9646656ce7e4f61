"""One client library's whole flow against a server, as a subprocess that prints a JSON outcome.

``python -m codex_app_bridge.conformance._client_flows CLIENT SERVER_ARGV_JSON SHIM_DIR`` with CLIENT ``official``
(``openai-codex`` 0.163.0) or ``app_server_client`` (``codex-app-server-client`` 0.1.0). The
flow: start a thread, a turn, a second turn, a turn interrupted at its first delta,
``thread/list``, ``thread/read`` with turns, then a *new* client (a new server process: a
restart) resuming the thread. The outcome keeps what a user of the library sees (statuses,
final texts, item types, ids found), never timings; each step that raises is recorded as its
error class and message so the other steps still run.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, cast

from codex_app_bridge.conformance._venv_flows import shim

FIRST = "First question"
SECOND = "Second question"
LONG = "Please interrupt me: write a very long essay."
MODEL, PROVIDER = "mock-model", "mock"


def step(out: dict[str, Any], name: str, fn: Callable[[], Any]) -> Any:
    """``out[name]`` = what ``fn`` returns, or the error it raised (class and message)."""
    try:
        value = fn()
    except Exception as exc:  # the outcome records it; the comparison judges it
        out[name] = {"raised": type(exc).__name__, "message": str(exc)[:300]}
        return None
    out[name] = value
    return value


def official(argv: list[str], shim_dir: Path) -> dict[str, Any]:
    from openai_codex import Codex, CodexConfig

    config = CodexConfig(launch_args_override=tuple(argv), env=dict(os.environ), cwd=os.getcwd())
    out: dict[str, Any] = {}
    with Codex(config) as codex:
        thread = codex.thread_start(model=MODEL, model_provider=PROVIDER)

        def run(text: str) -> dict[str, Any]:
            result = thread.run(text)
            return {
                "status": result.status.value,
                "final": result.final_response,
                "items": [item.root.type for item in result.items],
            }

        step(out, "turn1", lambda: run(FIRST))
        step(out, "turn2", lambda: run(SECOND))

        def interrupted() -> dict[str, Any]:
            handle = thread.turn(LONG)
            stream = handle.stream()
            methods: list[str] = []
            for event in stream:
                methods.append(event.method)
                if event.method == "item/agentMessage/delta":
                    break
            answer = handle.interrupt().model_dump(mode="json")
            last: Any = None
            for event in stream:
                methods.append(event.method)
                last = event
            status = last.payload.turn.status.value if last is not None else None
            return {"interrupt_answer": answer, "status": status, "last": methods[-1]}

        step(out, "turn3", interrupted)

        def listed() -> dict[str, Any]:
            ids = [t.id for t in codex.thread_list().data]
            return {"contains_thread": thread.id in ids, "count": len(ids)}

        step(out, "list", listed)

        def read() -> dict[str, Any]:
            turns = thread.read(include_turns=True).thread.turns
            return {
                "statuses": [t.status.value for t in turns],
                "items": [[i.root.type for i in t.items] for t in turns],
            }

        step(out, "read", read)
        thread_id = thread.id
    with Codex(config) as codex:

        def resumed() -> dict[str, Any]:
            again = codex.thread_resume(thread_id, model=MODEL, model_provider=PROVIDER)
            turns = again.read(include_turns=True).thread.turns
            return {"same_id": again.id == thread_id, "turns": len(turns)}

        step(out, "resume_after_restart", resumed)
    return out


def _item_type(item: object) -> object:
    if isinstance(item, dict):
        return cast(dict[str, object], item).get("type")
    return getattr(item, "type", None)


async def app_server_client(argv: list[str], shim_dir: Path) -> dict[str, Any]:
    from codex_app_server_client import (
        CodexAppServer,
        EventAction,
        ThreadListParams,
        ThreadReadParams,
        ThreadStartParams,
    )

    shim_path = shim(argv, shim_dir)
    out: dict[str, Any] = {}

    async def astep(name: str, coro: Any) -> None:
        try:
            out[name] = await coro
        except Exception as exc:
            out[name] = {"raised": type(exc).__name__, "message": str(exc)[:300]}

    async with CodexAppServer(codex_bin=shim_path, env=dict(os.environ)) as server:
        thread = await server.start_thread(ThreadStartParams(model=MODEL, model_provider=PROVIDER))

        async def run(text: str) -> dict[str, Any]:
            result = await thread.run(text, timeout_s=60)
            return {
                "status": result.status,
                "final": result.final_response,
                "items": [item.get("type") for item in result.items],
            }

        await astep("turn1", run(FIRST))
        await astep("turn2", run(SECOND))

        def interrupt_on_delta(method: str, _event: object) -> EventAction | None:
            return EventAction.INTERRUPT if method == "item/agentMessage/delta" else None

        async def interrupted() -> dict[str, Any]:
            result = await thread.run(LONG, timeout_s=60, on_event=interrupt_on_delta)
            return {"status": result.status}

        await astep("turn3", interrupted())
        client = server.low_level

        async def listed() -> dict[str, Any]:
            ids = [t.id for t in (await client.thread_list(ThreadListParams())).data]
            return {"contains_thread": thread.id in ids, "count": len(ids)}

        await astep("list", listed())

        async def read() -> dict[str, Any]:
            answer = await client.thread_read(
                ThreadReadParams(thread_id=thread.id, include_turns=True)
            )
            turns = answer.thread.turns or []
            return {
                "statuses": [str(getattr(t.status, "value", t.status)) for t in turns],
                "items": [[_item_type(i) for i in (t.items or [])] for t in turns],
            }

        await astep("read", read())
        thread_id = thread.id
    async with CodexAppServer(codex_bin=shim_path, env=dict(os.environ)) as server:

        async def resumed() -> dict[str, Any]:
            again = await server.resume_thread(thread_id)
            return {"same_id": again.id == thread_id}

        await astep("resume_after_restart", resumed())
    return out


CLIENTS = ("official", "app_server_client")


def run_client(
    official: Callable[[list[str], Path], dict[str, Any]],
    app_server_client: Callable[[list[str], Path], Coroutine[Any, Any, dict[str, Any]]],
) -> None:
    """A flows module's command line: ``CLIENT SERVER_ARGV_JSON SHIM_DIR`` (where a client that
    takes a binary's path gets the :func:`shim`); the client's outcome is printed as one JSON
    line (this module's flows, and ``_model_client_flows``')."""
    client, argv, shim_dir = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3])
    if client == "official":
        outcome = official(argv, shim_dir)
    elif client == "app_server_client":
        outcome = asyncio.run(app_server_client(argv, shim_dir))
    else:
        raise SystemExit(f"unknown client {client!r}; known: {', '.join(CLIENTS)}")
    print(json.dumps(outcome, default=str))


def main() -> None:
    run_client(official, app_server_client)


if __name__ == "__main__":
    main()
