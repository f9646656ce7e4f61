#!/usr/bin/env python3
"""First turn of a fresh ``serve``: time from spawn to each step of the first turn a client
plays (``initialize`` answered, ``thread/start`` answered, first delta, ``turn/completed``),
median of several spawns (warm bytecode caches), the built-in agent with no pacing.

What is loaded on first use (models, handlers, the domain) is paid inside these steps, so this
shows where start-up work went, and that deferring it does not slow the first turn.

    .venv/bin/python bench/first_turn.py [--runs 5] [--src DIR ...]

``--src`` (repeatable) times another checkout's ``src`` too, in the same run (interleaved).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import SRC, StdioClient, bridge_argv, bridge_env, median

STEPS = ("initialize", "thread/start", "first delta", "turn/completed")


def first_turn(src: Path) -> list[float]:
    env = bridge_env({"PYTHONPATH": str(src)})
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # warm: the bytecode caches may be written
    with StdioClient(bridge_argv("serve", "--pace", "0"), env) as client:
        marks: list[float] = []
        client.initialize()
        marks.append(time.perf_counter())
        thread_id = client.start_thread()
        marks.append(time.perf_counter())
        client.request(
            "turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": "hi"}]}
        )
        stream = client.stream_until()
        marks += [stream.first_at, stream.end_at]
        return [mark - client.spawned_at for mark in marks]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--src", type=Path, action="append", default=[], metavar="DIR")
    args = parser.parse_args()
    sources = [SRC, *(path.resolve() for path in args.src)]
    for src in sources:
        first_turn(src)  # populate the bytecode caches
    times: dict[Path, list[list[float]]] = {src: [] for src in sources}
    for _ in range(args.runs):
        for src in sources:
            times[src].append(first_turn(src))
    print(f"spawn -> first turn steps, median of {args.runs}, in ms:")
    print(f"  {'src':<40} " + " ".join(f"{step:>15}" for step in STEPS))
    for src, runs in times.items():
        cells = " ".join(f"{median([run[i] for run in runs]) * 1000:15.0f}" for i in range(4))
        print(f"  {str(src)[-40:]:<40} {cells}")


if __name__ == "__main__":
    main()
