#!/usr/bin/env python3
"""Stored threads at scale: ``thread/list``, ``thread/turns/list`` and ``thread/resume`` over N
stored threads (default 10,000), the bridge and the real server side by side in one run.

The threads are written once, by the bridge's own rollout writer (``storage.RolloutWriter``,
``session_meta``) in 0.163.0's format and layout, into a scratch ``CODEX_HOME``
(``sessions/YYYY/MM/DD/rollout-*.jsonl``, one thread every ten minutes going back from now,
each file's modification time its last turn's end); every thread has ``--turns`` turns of a user
message and an agent message, like the ones the bridge's server stores (``task_started``,
``turn_context``, ``item_completed`` x2, ``token_count``,
``task_complete``), provider ``mock`` (the real binary lists only its configured provider's
threads). Each server gets its own copy of the home.

For each server, two processes in a row on its home (the same requests each time):

* **first start**: nothing of the server's own is in the home yet (the bridge's index, the real
  binary's state database): what a user sees on the first start after upgrading, or on a home
  another program wrote;
* **next start**: what the first start left behind (index, database) is there.

Timed in each process, client side: ``initialize`` from the spawn to its answer (what the bridge
leaves for after it, the list path and the server, is paid by the requests that follow); then
(request written -> answer read):
``thread/list`` first page (default params) as the first request of the process (the bridge
answers it before its event loop and server are imported, with the list handler and its
storage index only, ``server/_first_list``; the registry, the
runtime and the models are loaded by the warm-up that follows) and again; a later page (the cursor of the middle row, reached untimed by pages of 100:
both servers give at most 100 rows at once); ``sortKey: updated_at``; ``thread/turns/list`` and
``thread/resume`` of threads in the middle that are not loaded, each twice (the first of its
kind in the process, then another thread); ``thread/turns/list`` of the resumed thread and
``thread/read`` of two more; last, the round trip of a trivial request, the median of
:data:`ROUND_TRIPS` ``thread/loaded/list`` one at a time (both servers answer it from memory).
The answers are checked: both servers list the same ids in the same
order, the turns have the stored texts.

    .venv/bin/python bench/stored_threads.py [--threads 10000] [--turns 2] [--rounds 3]
                                             [--servers bridge,real] [--home DIR]

``--home DIR`` keeps the generated threads in DIR (made if missing, reused if it holds as many
threads), so that later runs skip the writing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import StdioClient, bridge_argv, bridge_env, median, parse_servers, ratio
from _real import real_servers

from codex_app_bridge.conformance.real_codex import codex_env, real_codex_command
from codex_app_bridge.protocol import core
from codex_app_bridge.storage import INDEX_FILE, CodexHome, RolloutWriter, session_meta

PROVIDER = "mock"
MODEL = "mock-model"
CWD = "/home/dev/project"
MARKER = "bench-stored-threads.done"
INDEX_NAME = Path(INDEX_FILE).name


def _thread_id(index: int) -> str:
    return f"01a2cccc-{index // 10**12:04x}-7000-8000-{index % 10**12:012d}"


def _turn_id(thread: int, turn: int) -> str:
    return f"01a2dddd-{turn:04x}-7000-8000-{thread:012d}"


def _events(thread_id: str, turn_id: str, text: str, answer: str, at: int) -> list[Any]:
    """The events the bridge's server stores for one turn (``turn_context`` goes after the
    first, as ``ThreadStorage.persist`` writes it)."""
    ids = {"thread_id": thread_id, "turn_id": turn_id}
    records: list[dict[str, Any]] = [
        {
            "type": "task_started",
            "turn_id": turn_id,
            "started_at": at,
            "model_context_window": 258400,
            "collaboration_mode_kind": "default",
        },
        {
            "type": "item_completed",
            **ids,
            "item": {
                "type": "UserMessage",
                "id": f"{turn_id}-u",
                "content": [{"type": "text", "text": text, "text_elements": []}],
            },
            "started_at_ms": at * 1000,
            "completed_at_ms": at * 1000,
        },
        {
            "type": "item_completed",
            **ids,
            "item": {
                "type": "AgentMessage",
                "id": f"{turn_id}-a",
                "content": [{"type": "Text", "text": answer}],
            },
            "started_at_ms": at * 1000 + 500,
            "completed_at_ms": at * 1000 + 900,
        },
        {
            "type": "token_count",
            "info": {
                "total_token_usage": _usage(),
                "last_token_usage": _usage(),
                "model_context_window": 258400,
            },
            "rate_limits": None,
        },
        {
            "type": "task_complete",
            "turn_id": turn_id,
            "last_agent_message": answer,
            "started_at": at,
            "completed_at": at + 1,
            "duration_ms": 1000,
            "time_to_first_token_ms": 100,
        },
    ]
    return [core.EVENT_MSG_ADAPTER.validate_python(record) for record in records]


def _usage() -> dict[str, int]:
    return {
        "input_tokens": 100,
        "cached_input_tokens": 0,
        "output_tokens": 20,
        "reasoning_output_tokens": 0,
        "total_tokens": 120,
    }


def question(thread: int, turn: int) -> str:
    return f"question {turn} of thread {thread}"


def generate_home(root: Path, threads: int, turns: int) -> list[str]:
    """Write ``threads`` stored threads under ``root`` (see the module docstring); their ids,
    newest first."""
    home = CodexHome(root)
    now = datetime.now(UTC).replace(microsecond=0)
    ids: list[str] = []
    for index in range(threads):
        thread_id = _thread_id(index)
        created = now - timedelta(minutes=10 * (threads - index))
        meta = session_meta(
            thread_id=thread_id,
            created=created,
            cwd=CWD,
            originator="codex-app-bridge",
            model_provider=PROVIDER,
        )
        path = home.new_rollout_path(thread_id, created.astimezone())
        writer = RolloutWriter.create(path, meta, now=created)
        at = int(created.timestamp())
        for turn in range(turns):
            turn_id = _turn_id(index, turn)
            events = _events(thread_id, turn_id, question(index, turn), f"answer {turn}", at)
            started, rest = events[0], events[1:]
            writer.append_event(started, now=created)
            writer.append_turn_context(
                core.TurnContextItem.model_validate(
                    {
                        "turn_id": turn_id,
                        "cwd": CWD,
                        "approval_policy": "never",
                        "approvals_reviewer": "user",
                        "sandbox_policy": {"type": "danger-full-access"},
                        "model": MODEL,
                    }
                ),
                now=created,
            )
            for event in rest:
                writer.append_event(event, now=created)
            at += 60
        writer.close()
        os.utime(path, (at, at))
        ids.append(thread_id)
    (root / MARKER).write_text(f"{threads} {turns}\n")
    ids.reverse()
    return ids


def _ids_of(threads: int) -> list[str]:
    return [_thread_id(index) for index in reversed(range(threads))]


# ---------------------------------------------------------------------------- timing


def timed(client: StdioClient, method: str, params: dict[str, Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = client.call(method, params)
    return time.perf_counter() - started, result


REQUESTS = (
    "initialize (spawn -> answer)",
    "thread/list, first page (first request)",
    "thread/list, first page again",
    "thread/list, a later page",
    "thread/list, by updated_at",
    "thread/turns/list, not loaded (first)",
    "thread/turns/list, not loaded (next)",
    "thread/resume, not loaded (first)",
    "thread/resume, not loaded (next)",
    "thread/turns/list, resumed",
    "thread/read, not loaded (first)",
    "thread/read, not loaded (next)",
    "thread/loaded/list (round trip)",
)
ROUND_TRIPS = 20
"""``thread/loaded/list`` requests one at a time at the end of each process, answered from
memory by both servers: the median is the process's round trip of a trivial request (the floor
under every other figure: the line read, dispatched, answered and written)."""


def run_requests(
    client: StdioClient, ids: list[str], turns: int, process: int, resumed_before: set[str]
) -> dict[str, float]:
    """One process's requests (see the module docstring); the answers are checked."""
    times: dict[str, float] = {}
    client.initialize()
    # spawn -> answer, beside the real binary's (the bridge's first lists are answered after it
    # before its server starts, server._first_list)
    times[REQUESTS[0]] = time.perf_counter() - client.spawned_at

    def first_page(name: str) -> None:
        elapsed, first = timed(client, "thread/list", {})
        listed = [thread["id"] for thread in first["data"]]
        assert listed == ids[: len(listed)], f"first page: {listed[:3]}... != {ids[:3]}..."
        times[name] = elapsed

    first_page(REQUESTS[1])
    first_page(REQUESTS[2])
    # the cursor of the middle, by pages of 100 (the most either server gives at once)
    middle = len(ids) // 2 // 100 * 100
    cursor = None
    for start in range(0, middle, 100):
        page = client.call("thread/list", {"limit": 100, "cursor": cursor})
        assert [t["id"] for t in page["data"]] == ids[start : start + 100]
        cursor = page["nextCursor"]
    elapsed, later = timed(client, "thread/list", {"cursor": cursor, "limit": 25})
    assert [t["id"] for t in later["data"]] == ids[middle : middle + 25]
    times[REQUESTS[3]] = elapsed
    elapsed, updated = timed(client, "thread/list", {"sortKey": "updated_at", "limit": 25})
    # a thread resumed by an earlier process of this home may be newer now (0.163.0 counts a
    # resume as an update)
    unchanged = [t["id"] for t in updated["data"] if t["id"] not in resumed_before]
    assert unchanged == [i for i in ids if i not in resumed_before][: len(unchanged)]
    times[REQUESTS[4]] = elapsed
    # different threads in every process, so that none is loaded already
    pick = middle + 10 + 8 * process
    for name, thread in ((REQUESTS[5], pick), (REQUESTS[6], pick + 1)):
        elapsed, page = timed(client, "thread/turns/list", {"threadId": ids[thread]})
        # 0.163.0 pages a thread that is not loaded from its own history database, which holds
        # nothing of a thread another program wrote until it is resumed: it answers no turns
        assert len(page["data"]) in (0, turns)
        times[name] = elapsed
    for name, thread in ((REQUESTS[7], pick + 2), (REQUESTS[8], pick + 3)):
        resumed_before.add(ids[thread])
        elapsed, resumed = timed(client, "thread/resume", {"threadId": ids[thread]})
        assert len(resumed["thread"]["turns"]) == turns
        times[name] = elapsed
    elapsed, page = timed(client, "thread/turns/list", {"threadId": ids[pick + 3]})
    assert [turn["items"][0]["content"][0]["text"] for turn in reversed(page["data"])] == [
        question(len(ids) - 1 - (pick + 3), turn) for turn in range(turns)
    ]
    times[REQUESTS[9]] = elapsed
    for name, thread in ((REQUESTS[10], pick + 4), (REQUESTS[11], pick + 5)):
        elapsed, read = timed(client, "thread/read", {"threadId": ids[thread]})
        assert read["thread"]["id"] == ids[thread]
        times[name] = elapsed
    trips = sorted(timed(client, "thread/loaded/list", {})[0] for _ in range(ROUND_TRIPS))
    times[REQUESTS[12]] = trips[len(trips) // 2]
    return times


@contextlib.contextmanager
def scratch_dir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-stored-", dir=cache) as tmp:
        yield Path(tmp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--servers", default="bridge,real", help="bridge, real or both")
    parser.add_argument("--home", type=Path, help="keep the generated threads here")
    args = parser.parse_args()
    servers = parse_servers(parser, args.servers, ("bridge", "real"))

    with scratch_dir(args.home) as scratch, contextlib.ExitStack() as stack:
        source = scratch / "threads"
        marker = source / MARKER
        if marker.exists() and marker.read_text().split() == [str(args.threads), str(args.turns)]:
            ids = _ids_of(args.threads)
            print(f"{args.threads:,} stored threads reused from {source}")
        else:
            shutil.rmtree(source, ignore_errors=True)
            started = time.perf_counter()
            ids = generate_home(source, args.threads, args.turns)
            print(
                f"{args.threads:,} stored threads of {args.turns} turns written in "
                f"{time.perf_counter() - started:.1f} s by the bridge's writer"
            )
        size = sum(f.stat().st_size for f in source.rglob("*.jsonl"))
        print(f"  {size / 1e6:.0f} MB of rollouts under {source}")

        real = stack.enter_context(real_servers()) if "real" in servers else None
        spawners: dict[str, Callable[[Path], StdioClient]] = {}
        if "bridge" in servers:

            def bridge(home: Path) -> StdioClient:
                env = bridge_env()
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                argv = bridge_argv("serve", "--codex-home", str(home))
                return StdioClient(argv, env, cwd=home.parent)

            spawners["bridge"] = bridge
        if real is not None:
            mock_url = real.mock.base_url

            def real_server(home: Path) -> StdioClient:
                from codex_app_bridge.conformance.real_codex import write_codex_config

                write_codex_config(home, mock_url)
                return StdioClient(real_codex_command(), codex_env(home, "error"), home.parent)

            spawners["real"] = real_server

        times: dict[tuple[str, str, str], list[float]] = {}
        for round_index in range(args.rounds):
            for name, spawn in spawners.items():
                home = scratch / f"{name}-{round_index}" / ".codex"
                shutil.rmtree(home.parent, ignore_errors=True)
                # never indexed on its first start, whatever ran on the source home before
                shutil.copytree(source, home, ignore=shutil.ignore_patterns(INDEX_NAME + "*"))
                resumed: set[str] = set()
                for process, start in enumerate(("first start", "next start")):
                    with spawn(home) as client:
                        got = run_requests(
                            client, ids, args.turns, round_index * 2 + process, resumed
                        )
                    for request, value in got.items():
                        times.setdefault((start, request, name), []).append(value)
                shutil.rmtree(home.parent, ignore_errors=True)

    print(
        f"\nrequest -> answer, median of {args.rounds} (min-max), in ms, "
        f"{args.threads:,} stored threads:"
    )
    names = list(spawners)
    for start in ("first start", "next start"):
        print(f"  {start}:")
        for request in REQUESTS:
            cells: list[str] = []
            for name in names:
                values = times[(start, request, name)]
                cells.append(
                    f"{name} {median(values) * 1000:7.1f} "
                    f"({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"
                )
            line = f"    {request:<40} " + "   ".join(cells)
            if len(names) == 2:
                a = median(times[(start, request, names[0])])
                b = median(times[(start, request, names[1])])
                line += f"   {names[0]}/{names[1]} {ratio(a, b)}"
            print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
