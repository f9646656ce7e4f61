#!/usr/bin/env python3
"""Memory of the bridge, side by side with the real server where both can do the same thing:

* RSS idle (after ``initialize`` and one ``thread/start``): the bridge without a script, the
  bridge holding the script of the next point, the real binary;
* RSS after each of T turns of N agent-message deltas on one thread (default 10 x 20,000; it
  must not grow turn after turn): the bridge plays them from a ``--script``, the real binary
  streams them from the mock Responses endpoint; the two servers take turns;
* RSS with K loaded threads (default 1,000 ``thread/start``);
* peak RSS and wall time of ``codex-app-bridge history`` and ``map`` over a generated rollout of
  L lines (default 1,000,000; the bridge only: the real binary has no such command).

    .venv/bin/python bench/memory.py [--turns 10] [--deltas 20000] [--threads 1000]
                                     [--rollout-lines 1000000]
                                     [--servers bridge,real]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import tempfile
import time
from pathlib import Path

import orjson
from _common import (
    ROOT,
    StdioClient,
    bridge_argv,
    bridge_env,
    check_deltas,
    parse_servers,
    rss_kb,
    write_delta_script,
)
from _real import real_servers, real_texts

ROLLOUT_META = ROOT / "tests" / "data" / "captures" / "plain" / "rollout.jsonl"
TURN_LINES = 10


def write_rollout(path: Path, lines: int) -> int:
    """A rollout of about ``lines`` lines: the plain capture's session_meta, then turns of
    ``TURN_LINES`` lines (task_started, a user message, 7 assistant messages, task_complete).
    Returns the number of turns."""
    meta = ROLLOUT_META.read_bytes().split(b"\n", 1)[0]
    turns = max(1, -(-(lines - 1) // TURN_LINES))
    stamp = "2026-11-30T00:54:51.103Z"
    ordinal = 0

    def line(kind: str, payload: dict[str, object]) -> bytes:
        nonlocal ordinal
        ordinal += 1
        record = {"timestamp": stamp, "ordinal": ordinal, "type": kind, "payload": payload}
        return orjson.dumps(record) + b"\n"

    def message(role: str, kind: str, text: str) -> bytes:
        content = [{"type": kind, "text": text}]
        return line("response_item", {"type": "message", "role": role, "content": content})

    with path.open("wb") as f:
        f.write(meta + b"\n")
        for turn in range(turns):
            turn_id = f"01a2bbbb-0000-7000-8000-{turn:012d}"
            f.write(
                line(
                    "event_msg",
                    {"type": "task_started", "turn_id": turn_id, "started_at": 1796000000},
                )
            )
            f.write(message("user", "input_text", f"question {turn}"))
            f.writelines(
                message("assistant", "output_text", f"answer {turn}.{i}") for i in range(7)
            )
            f.write(
                line(
                    "event_msg",
                    {
                        "type": "task_complete",
                        "turn_id": turn_id,
                        "last_agent_message": f"answer {turn}.6",
                        "completed_at": 1796000001,
                        "duration_ms": 1000,
                    },
                )
            )
    return turns


def cli_peak(args: list[str]) -> tuple[float, float, int]:
    """Run a bridge CLI command, output discarded: (wall s, CPU s, peak RSS kB) from wait4."""
    started = time.perf_counter()
    proc = subprocess.Popen(bridge_argv(*args), env=bridge_env(), stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{args[0]} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def mb(kb: int) -> str:
    return f"{kb / 1024:.0f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--threads", type=int, default=1_000)
    parser.add_argument("--rollout-lines", type=int, default=1_000_000)
    parser.add_argument("--servers", default="bridge,real", help="bridge, real or both")
    args = parser.parse_args()
    names = parse_servers(parser, args.servers, ("bridge", "real"))

    with tempfile.TemporaryDirectory(prefix="bench-mem-") as tmp, contextlib.ExitStack() as stack:
        script = Path(tmp) / "turns.jsonl"
        texts = write_delta_script(script, args.deltas, turns=args.turns)
        turns_mb = script.stat().st_size / 1e6
        clients: dict[str, tuple[StdioClient, str | None]] = {}
        if "bridge" in names:
            argv = bridge_argv("serve", "--script", str(script))
            clients["bridge"] = (StdioClient(argv, bridge_env()), None)
        if "real" in names:
            real = stack.enter_context(real_servers())
            clients["real"] = real.spawn_streaming(args.deltas)
        expected = {"bridge": texts, "real": real_texts(args.deltas)}
        threads: dict[str, str] = {}
        for name, (client, cwd) in clients.items():
            stack.enter_context(client)
            client.initialize()
            threads[name] = client.start_thread(cwd)
        idle = [f"{n} {mb(rss_kb(clients[n][0].pid))}" for n in names]
        if "bridge" in names:
            with StdioClient(bridge_argv("serve"), bridge_env()) as bare:
                bare.initialize()
                bare.start_thread()
                idle.insert(0, f"bridge without a script {mb(rss_kb(bare.pid))}")
            idle[1] = idle[1].replace("bridge", f"bridge with the {turns_mb:.0f} MB script", 1)
        print("RSS idle (after initialize and one thread/start): " + ", ".join(idle))

        print(f"RSS after each turn of {args.deltas:,} deltas on one thread:")
        print("  turn " + "".join(f"{n:>10}" for n in names))
        for turn in range(args.turns):
            row: list[str] = []
            for name in names:
                client = clients[name][0]
                input_text = [{"type": "text", "text": f"turn {turn}"}]
                client.request("turn/start", {"threadId": threads[name], "input": input_text})
                check_deltas(client.stream_until(), expected[name])
                row.append(mb(rss_kb(client.pid)))
            print(f"  {turn:>4} " + "".join(f"{cell:>10}" for cell in row))

        print(f"RSS with {args.threads:,} more loaded threads (thread/start, one at a time):")
        for name in names:
            client, cwd = clients[name]
            started = time.perf_counter()
            for _ in range(args.threads):
                client.start_thread(cwd)
            took = time.perf_counter() - started
            print(f"  {name:<8} {mb(rss_kb(client.pid))} ({took:.1f} s to start them)")

        if "bridge" not in names:
            return
        rollout = Path(tmp) / "rollout.jsonl"
        turns = write_rollout(rollout, args.rollout_lines)
        size = rollout.stat().st_size / 1e6
        lines = 1 + turns * TURN_LINES
        print(f"bridge CLI over a rollout of {lines:,} lines ({size:.0f} MB, {turns:,} turns):")
        for command in (["history", str(rollout)], ["map", "--no-timestamps", str(rollout)]):
            wall, cpu, peak = cli_peak(command)
            print(f"  {command[0]:<8} peak RSS {mb(peak)}, {wall:.1f} s wall, {cpu:.1f} s CPU")


if __name__ == "__main__":
    main()
