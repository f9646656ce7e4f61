#!/usr/bin/env python3
"""Start-up: time from spawn to the ``initialize`` answer, bridge versus the real server, in one
run (variants interleaved, median of several spawns each).

Bridge variants: no script / a ``--script`` of N deltas (default 200,000), each warm (the normal
bytecode caches, populated by one discarded spawn: what a ``pip install`` gives, which compiles
the package) and cold (``PYTHONPYCACHEPREFIX`` set to a new empty directory for every spawn, so
that nothing at all, the standard library included, comes from a bytecode cache: the worst
case); "no cache of its own" (a copy of ``src`` without ``__pycache__`` and
``PYTHONDONTWRITEBYTECODE=1``: the package is compiled at every spawn, the standard library and
the dependencies come from their caches: a checkout run with that variable set, as in this
project's environment); warm ``--producer`` (a program that is found, never started before a
turn) and warm ``--allow-inject``. The real binary has no script and no bytecode; its first spawn
is reported separately.

"Real 0.163.0" spawns the binary in a new ``CODEX_HOME`` every time (what its first start in a
home costs: it sets up its state there), while the bridge variants above get no home. The like
for like figure is the pair "on a home seen before": each server is given a home with the same
``config.toml`` (the mock provider's) that it has started in once already, as a user's
``~/.codex`` is; that ratio is issue 19's "``initialize`` within 1.5x of the real binary, warm".
The same spawns then send ``thread/start``: spawn -> its answer is shown too, so that what the
bridge leaves for after ``initialize`` is seen where a client pays it (``--seen-only`` times
that pair alone).

    .venv/bin/python bench/startup.py [--runs 5] [--deltas 200000] [--servers bridge,real]
                                       [--no-script] [--seen-only]
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import (
    SRC,
    StdioClient,
    bridge_argv,
    bridge_env,
    median,
    parse_servers,
    ratio,
    write_delta_script,
)
from _real import real_servers

from codex_app_bridge.conformance.real_codex import (
    codex_env,
    real_codex_command,
    write_codex_config,
)

SEEN = "on a home seen before"
"""Label of the like-for-like pair (see the module docstring)."""


def time_to_initialize(client: StdioClient) -> float:
    with client:
        client.initialize()
        return time.perf_counter() - client.spawned_at


def time_to_thread_start(client: StdioClient, cwd: str) -> tuple[float, float]:
    """Spawn -> ``initialize`` answered, spawn -> ``thread/start`` (sent right after) answered."""
    with client:
        client.initialize()
        initialized = time.perf_counter() - client.spawned_at
        client.start_thread(cwd)
        return initialized, time.perf_counter() - client.spawned_at


def show(name: str, values: list[float], width: int) -> None:
    print(
        f"  {name:<{width}} {median(values) * 1000:7.0f} "
        f"({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--deltas", type=int, default=200_000)
    parser.add_argument("--servers", default="bridge,real", help="bridge, real or both")
    parser.add_argument("--no-script", action="store_true", help="skip the --script variants")
    parser.add_argument(
        "--seen-only", action="store_true", help=f"time the pair {SEEN!r} only (and thread/start)"
    )
    args = parser.parse_args()
    servers = parse_servers(parser, args.servers, ("bridge", "real"))

    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp, contextlib.ExitStack() as st:
        script = Path(tmp) / "deltas.jsonl"
        cold_dirs = iter(range(1 << 30))
        uncached = Path(tmp) / "src"
        shutil.copytree(SRC, uncached, ignore=shutil.ignore_patterns("__pycache__"))

        real = st.enter_context(real_servers()) if "real" in servers else None
        # the mock is never reached by either server while it starts: any URL serves the bridge
        mock_url = real.mock.base_url if real is not None else "http://127.0.0.1:9/v1"
        bridge_home = Path(tmp) / "bridge-home" / ".codex"
        real_home = Path(tmp) / "real-home" / ".codex"
        write_codex_config(bridge_home, mock_url)
        write_codex_config(real_home, mock_url)
        # where both start their threads (the real binary refuses /tmp for its PATH helpers,
        # which does not matter here: it only warns)
        work = Path(tmp) / "work"
        work.mkdir()

        def bridge(
            with_script: bool, cold: bool, flags: tuple[str, ...] = (), *, own_cache: bool = True
        ) -> Callable[[], StdioClient]:
            def spawn() -> StdioClient:
                extra = {"PYTHONPYCACHEPREFIX": f"{tmp}/pyc-{next(cold_dirs)}"} if cold else None
                script_flags = ["--script", str(script)] if with_script else []
                argv = bridge_argv("serve", *script_flags, *flags)
                env = bridge_env(extra)
                if own_cache:
                    # warm means the bytecode caches exist: one inherited
                    # PYTHONDONTWRITEBYTECODE would keep a changed source from ever getting its
                    # cache (every spawn cold)
                    env.pop("PYTHONDONTWRITEBYTECODE", None)
                else:
                    env["PYTHONDONTWRITEBYTECODE"] = "1"
                    env["PYTHONPATH"] = env["PYTHONPATH"].replace(str(SRC), str(uncached), 1)
                return StdioClient(argv, env)

            return spawn

        variants: dict[str, Callable[[], StdioClient]] = {}
        seen: dict[str, Callable[[], StdioClient]] = {}
        if "bridge" in servers:
            if not args.seen_only:
                variants["bridge, warm"] = bridge(False, False)
                variants["bridge, no cache of its own"] = bridge(False, False, own_cache=False)
                variants["bridge, cold"] = bridge(False, True)
                if not args.no_script:
                    write_delta_script(script, args.deltas)
                    size_mb = script.stat().st_size / 1e6
                    large = f"bridge --script ({args.deltas:,} deltas, {size_mb:.0f} MB)"
                    variants[f"{large}, warm"] = bridge(True, False)
                    variants[f"{large}, cold"] = bridge(True, True)
                producer = f"{sys.executable} -c pass"
                variants["bridge --producer, warm"] = bridge(False, False, ("--producer", producer))
                variants["bridge --allow-inject, warm"] = bridge(False, False, ("--allow-inject",))
            seen[f"bridge --codex-home, warm, {SEEN}"] = bridge(
                False, False, ("--codex-home", str(bridge_home))
            )
            time_to_initialize(bridge(False, False)())  # populate the warm bytecode caches
            for spawn in seen.values():
                time_to_thread_start(spawn(), str(work))  # its home's first start (the index)
        first_real: float | None = None
        if real is not None:
            if not args.seen_only:
                variants["real 0.163.0"] = lambda: real.spawn()[0]
                first_real = time_to_initialize(real.spawn()[0])

            def real_seen() -> StdioClient:
                env = codex_env(real_home, "error")
                return StdioClient(real_codex_command(), env, real_home.parent)

            seen[f"real 0.163.0, {SEEN}"] = real_seen
            time_to_thread_start(real_seen(), str(work))  # its home's first start (its state)

        times: dict[str, list[float]] = {name: [] for name in variants}
        started: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in seen}
        for _ in range(args.runs):
            for name, spawn in variants.items():
                times[name].append(time_to_initialize(spawn()))
            for name, spawn in seen.items():
                initialized, thread_started = time_to_thread_start(spawn(), str(work))
                started[name][0].append(initialized)
                started[name][1].append(thread_started)

    width = max(len(name) for name in [*times, *started]) + len(" -> thread/start")
    print(f"spawn -> initialize answer, median of {args.runs} (min-max), in ms:")
    for name, values in times.items():
        show(name, values, width)
    for name, (initialized, _) in started.items():
        show(name, initialized, width)
    if first_real is not None:
        print(f"  {'real 0.163.0, first spawn of the run':<{width}} {first_real * 1000:7.0f}")
        real_median = median(times["real 0.163.0"])
        for name, values in times.items():
            if name.startswith("bridge"):
                print(f"  {name:<{width}} / real: {ratio(median(values), real_median)}")
    bridge_seen = started.get(f"bridge --codex-home, warm, {SEEN}")
    real_seen_times = started.get(f"real 0.163.0, {SEEN}")
    if bridge_seen and real_seen_times:
        print(
            f"  {'both ' + SEEN + ', bridge / real':<{width}} "
            f"{ratio(median(bridge_seen[0]), median(real_seen_times[0]))}"
        )
    print(f"spawn -> thread/start answer (sent after initialize), {SEEN}, median (min-max), ms:")
    for name, (_, thread_started) in started.items():
        show(name, thread_started, width)
    if bridge_seen and real_seen_times:
        print(
            f"  {'bridge / real':<{width}} "
            f"{ratio(median(bridge_seen[1]), median(real_seen_times[1]))}"
        )


if __name__ == "__main__":
    main()
