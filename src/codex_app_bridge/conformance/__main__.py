"""``python -m codex_app_bridge.conformance``: run the suite and print the match table.

Columns: units compared and equal in total, then per part: the notification stream (with the
responses and server requests), the final ``thread/read`` answers, and ``history`` (the turns
``codex-app-bridge history`` rebuilds from the real rollout against the real ``thread/read``).

``--clients`` adds the client matrix (:mod:`._matrix`): per client library, the outcome fields
and wire messages compared and equal; they count in the total. A client whose venv cannot be
made here (no interpreter of the version it needs) is listed as unavailable, with the reason.

Exit status: 0 when the total match percentage is at least ``--threshold`` (default 0), 1 below
it, 2 on bad arguments. ``--details`` lists every difference under the table; ``--json FILE``
writes the whole result; ``--scratch DIR`` keeps each scenario's artefacts (both sessions, the
derived script, the stderr logs) there.

``--model-mode`` runs the model-mode scenarios instead (:mod:`._model_mode`): the real binary and
the bridge each run real model turns against one mock Responses server, found through
``CODEX_HOME/config.toml`` (no bridge flags). The table shows, per scenario, the notifications
compared and equal (the percentage the threshold applies to), the number of requests each server
sent the mock (real/bridge), and how many requests' masked ``input`` and other fields are equal.
``--reference DIR`` compares the bridge with the real binary's recorded outcomes in DIR
(``tests/data/model_mode``) instead of running the binary; ``--record DIR`` writes the real
binary's outcomes there; ``--servers real`` runs the real binary alone (with ``--record``).
``--recheck N --reference DIR`` runs the real binary alone N times, each run against the
outcomes recorded in DIR, and says run by run which scenarios differed and where their streams
did (``ModelResult.where``): how the binary's races were hunted (beside load, e.g. the binary
pinned to one CPU with busy loops: ``taskset -c 0``); exit 1 when any run differed.
With ``--clients``, model mode also runs the client libraries' flows
(:mod:`._model_client_flows`: the official SDK and ``codex-app-server-client`` against a mocked
model) and compares what each client saw, step by step, and the requests the mock got.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import anyio

from codex_app_bridge.conformance._client_flows import CLIENTS as CLIENT_FLOWS
from codex_app_bridge.conformance._compare import Comparison
from codex_app_bridge.conformance._drive import PENDING_SCENARIOS, scratch_root
from codex_app_bridge.conformance._matrix import PENDING as PENDING_CLIENTS
from codex_app_bridge.conformance._matrix import ClientResult, run_matrix
from codex_app_bridge.conformance._model_mode import (
    MODEL_SCENARIOS,
    SLOW_SCENARIOS,
    ClientComparison,
    format_client_table,
    format_model_details,
    format_model_table,
    real_against_reference,
    run_client_flows,
    run_model_suite_sync,
    scenario_named,
    total_notifications,
    unexplained,
)
from codex_app_bridge.conformance._suite import ScenarioResult, run_suite_sync

__all__ = ["format_table", "main"]


def format_table(
    results: Sequence[ScenarioResult], clients: Sequence[ClientResult] | None = None
) -> str:
    header = (
        f"{'scenario':<16} {'compared':>8} {'equal':>6} {'match':>7}"
        "   stream    thread/read  history"
    )
    lines = [header, "-" * len(header)]
    total = Comparison()
    for r in results:
        t = r.total
        total.add(t)
        s, d, h = r.stream, r.reads, r.history
        lines.append(
            f"{r.name:<16} {t.compared:>8} {t.equal:>6} {t.percent:>6.1f}%"
            f"   {s.equal:>3}/{s.compared:<4}  {d.equal:>3}/{d.compared:<4}"
            f"   {h.equal:>3}/{h.compared:<4}"
        )
    for name, why in PENDING_SCENARIOS.items():
        lines.append(f"{name:<16} {'-':>8} {'-':>6} {'-':>7}   pending: {why}")
    if clients is not None:
        sub = f"{'client':<16} {'compared':>8} {'equal':>6} {'match':>7}   outcome   wire"
        lines += ["-" * len(header), sub, "-" * len(header)]
        for c in clients:
            if c.unavailable is not None:
                lines.append(f"{c.client:<16} unavailable: {c.unavailable}")
                continue
            t = c.total
            total.add(t)
            o, w = c.outcome, c.wire
            lines.append(
                f"{c.client:<16} {t.compared:>8} {t.equal:>6} {t.percent:>6.1f}%"
                f"   {o.equal:>3}/{o.compared:<4} {w.equal:>3}/{w.compared:<4}"
            )
        for name, why in PENDING_CLIENTS.items():
            lines.append(f"{name:<16} pending: {why}")
    lines.append("-" * len(header))
    lines.append(f"{'TOTAL':<16} {total.compared:>8} {total.equal:>6} {total.percent:>6.1f}%")
    return "\n".join(lines)


def format_details(results: Sequence[ScenarioResult], clients: Sequence[ClientResult] = ()) -> str:
    out: list[str] = []
    for r in results:
        diffs = [*r.stream.differences, *r.reads.differences]
        diffs += [replace(d, label="history: " + d.label) for d in r.history.differences]
        if not diffs and not r.notes:
            continue
        out.append(f"\n## {r.name}: {r.description}")
        out.extend(f"  note: {n}" for n in r.notes)
        for d in diffs:
            out.append(f"  {d.kind}: {d.label}")
            out.extend(f"      {line}" for line in d.details[:12])
    for c in clients:
        out.append(f"\n## client {c.client}")
        out.extend(f"  outcome: {line}" for line in c.outcome_diffs)
        for d in c.wire.differences:
            out.append(f"  {d.kind}: {d.label}")
            out.extend(f"      {line}" for line in d.details[:12])
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m codex_app_bridge.conformance",
        description="Compare the bridge with the real codex app-server, scenario by scenario.",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=0.0,
        metavar="PCT",
        help="exit 1 when the total match percentage is below PCT",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        dest="scenarios",
        metavar="NAME",
        help="run only this scenario (repeatable)",
    )
    parser.add_argument("--details", action="store_true", help="list every difference")
    parser.add_argument(
        "--clients",
        action="store_true",
        help="also run the client matrix (openai-codex, codex-app-server-client, "
        "codex-app-server-sdk, codexed, codex-python-sdk)",
    )
    parser.add_argument(
        "--model-mode",
        action="store_true",
        help="run the model-mode scenarios: both servers against one mock model",
    )
    parser.add_argument(
        "--reference",
        type=Path,
        metavar="DIR",
        help="model mode: compare the bridge with the real outcomes recorded in DIR",
    )
    parser.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help="model mode: write the real binary's outcomes to DIR",
    )
    parser.add_argument(
        "--servers",
        default="real,bridge",
        help="model mode: which servers run (real,bridge | real | bridge)",
    )
    parser.add_argument(
        "--recheck",
        type=int,
        metavar="N",
        help="model mode: run the real binary N times against the outcomes in --reference and "
        "say, run by run, which scenarios differed and where (a race hunt: run it beside load)",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the results as JSON")
    parser.add_argument("--scratch", type=Path, metavar="DIR", help="keep artefacts here")
    args = parser.parse_args(argv)
    if args.model_mode:
        return _model_mode(parser, args)
    try:
        results = run_suite_sync(args.scenarios, args.scratch, keep=args.scratch is not None)
        clients = run_matrix(args.scratch) if args.clients else None
    except ValueError as exc:
        parser.error(str(exc))
    except ImportError as exc:  # codex_cli_bin: the real binary comes with the `test` extra
        parser.exit(
            2,
            f"{parser.prog}: needs the real codex binary ({exc}); "
            "install the package with its `test` extra\n",
        )
    print(format_table(results, clients))
    if args.details:
        print(format_details(results, clients or ()))
    if args.json is not None:
        args.json.write_text(json.dumps([r.to_json() for r in results], indent=1) + "\n")
    total = Comparison()
    for item in [*results, *(clients or ())]:
        total.add(item.total)
    if total.percent < args.threshold:
        print(
            f"total match {total.percent:.1f}% is below the threshold {args.threshold}%",
            file=sys.stderr,
        )
        return 1
    return 0


def _recheck(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``--recheck N``: the real binary's runs against their recorded outcomes, N times; exit 1
    when any run differed."""
    if args.reference is None:
        parser.error("--recheck needs --reference DIR (the recorded real outcomes)")
    if args.recheck < 1:
        parser.error("--recheck: at least 1 run")
    names = args.scenarios or [s.name for s in MODEL_SCENARIOS if s.name not in SLOW_SCENARIOS]
    differed: Counter[str] = Counter()
    with scratch_root(args.scratch, "codex-model-recheck-") as root:
        for run in range(1, args.recheck + 1):
            try:
                results = real_against_reference(names, args.reference, root / f"run{run}")
            except ValueError as exc:
                parser.error(str(exc))
            except ImportError as exc:
                parser.exit(2, f"{parser.prog}: needs the real codex binary ({exc})\n")
            for name, result in results.items():
                found = unexplained(scenario_named(name), result)
                if not found:
                    continue
                differed[name] += 1
                print(f"run {run}: {name}: {[(d.kind, d.label) for d in found]}")
                print("\n".join(f"    {line}" for line in result.where))
            said = dict(differed) or "no differences"
            print(f"after {run} of {args.recheck}: {said}", flush=True)
            if args.scratch is None:  # a run's artefacts are kept only where asked
                shutil.rmtree(root / f"run{run}", ignore_errors=True)
    return 1 if differed else 0


def _model_mode(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.recheck is not None:
        return _recheck(parser, args)
    servers = tuple(s for s in str(args.servers).split(",") if s)
    if not set(servers) <= {"real", "bridge"} or not servers:
        parser.error(f"--servers: real and/or bridge, not {args.servers!r}")
    if "real" not in servers and args.reference is None and "bridge" in servers:
        parser.error("--servers bridge needs --reference DIR (the recorded real outcomes)")
    try:
        results = run_model_suite_sync(
            args.scenarios,
            args.scratch,
            reference=args.reference,
            record=args.record,
            servers=servers,
        )
    except ValueError as exc:
        parser.error(str(exc))
    except ImportError as exc:
        parser.exit(2, f"{parser.prog}: needs the real codex binary ({exc})\n")
    clients: list[ClientComparison] = []
    if args.clients:
        with tempfile.TemporaryDirectory(prefix="codex-model-clients-") as temporary:
            scratch = args.scratch or Path(temporary)
            clients = anyio.run(
                lambda: run_client_flows(
                    CLIENT_FLOWS,
                    scratch,
                    reference=args.reference,
                    record=args.record,
                    servers=servers,
                )
            )
    if not results:
        print(f"model mode: ran {', '.join(servers)}; nothing to compare")
        return 0
    print(format_model_table(results))
    if clients:
        print()
        print(format_client_table(clients))
    if args.details:
        print(format_model_details(results))
    if args.json is not None:
        args.json.write_text(json.dumps([r.to_json() for r in results], indent=1) + "\n")
    total = total_notifications(results)
    if total.percent < args.threshold:
        print(
            f"total match {total.percent:.1f}% is below the threshold {args.threshold}%",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
