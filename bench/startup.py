#!/usr/bin/env python3
"""Start-up: time from spawn to the ``initialize`` answer, bridge versus the real server, in one
run (variants interleaved, median of several spawns each).

Bridge variants: no script / a ``--script`` of N deltas (default 200,000), each warm (the normal
bytecode caches, populated by one discarded spawn) and cold (``PYTHONPYCACHEPREFIX`` set to a new
empty directory for every spawn, so that nothing at all, the standard library included, comes from
a bytecode cache: the worst case). The real binary has no script and no bytecode; its first spawn
is reported separately.

    .venv/bin/python bench/startup.py [--runs 5] [--deltas 200000] [--no-real]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import StdioClient, bridge_argv, bridge_env, median, ratio, write_delta_script
from _real import RealServers


def time_to_initialize(client: StdioClient) -> float:
    with client:
        client.initialize()
        took = time.perf_counter() - client.spawned_at
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--deltas", type=int, default=200_000)
    parser.add_argument("--no-real", action="store_true", help="skip the real binary")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp, contextlib.ExitStack() as st:
        script = Path(tmp) / "deltas.jsonl"
        write_delta_script(script, args.deltas)
        size_mb = script.stat().st_size / 1e6
        cold_dirs = iter(range(1 << 30))

        def bridge(with_script: bool, cold: bool) -> Callable[[], StdioClient]:
            def spawn() -> StdioClient:
                extra = {"PYTHONPYCACHEPREFIX": f"{tmp}/pyc-{next(cold_dirs)}"} if cold else None
                argv = bridge_argv("serve", *(["--script", str(script)] if with_script else []))
                return StdioClient(argv, bridge_env(extra))

            return spawn

        variants: dict[str, Callable[[], StdioClient]] = {
            "bridge, warm": bridge(False, False),
            "bridge, cold": bridge(False, True),
            f"bridge --script ({args.deltas:,} deltas, {size_mb:.0f} MB), warm": bridge(True, False),
            f"bridge --script ({args.deltas:,} deltas, {size_mb:.0f} MB), cold": bridge(True, True),
        }
        first_real: float | None = None
        if not args.no_real:
            real = st.enter_context(RealServers())
            variants["real 0.163.0"] = lambda: real.spawn()[0]
            first_real = time_to_initialize(real.spawn()[0])
        time_to_initialize(bridge(True, False)())  # populate the warm bytecode caches

        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.runs):
            for name, spawn in variants.items():
                times[name].append(time_to_initialize(spawn()))

    print(f"spawn -> initialize answer, median of {args.runs} (min-max), in ms:")
    width = max(len(name) for name in times)
    for name, values in times.items():
        print(f"  {name:<{width}} {median(values) * 1000:7.0f} "
              f"({min(values) * 1000:.0f}-{max(values) * 1000:.0f})")
    if first_real is not None:
        print(f"  {'real 0.163.0, first spawn of the run':<{width}} {first_real * 1000:7.0f}")
        real_median = median(times["real 0.163.0"])
        for name, values in times.items():
            if name.startswith("bridge"):
                print(f"  {name:<{width}} / real: {ratio(median(values), real_median)}")


if __name__ == "__main__":
    main()
