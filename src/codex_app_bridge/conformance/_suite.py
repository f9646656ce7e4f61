"""The conformance suite: each scenario against the real binary, then replayed by the bridge.

Role: for every :data:`~codex_app_bridge.conformance._drive.SCENARIO_SPECS` entry, run the real
``codex app-server`` against :class:`MockResponses` in a scratch CODEX_HOME, derive the core
events of the run (:func:`~codex_app_bridge.conformance._script.script_from_run`), run
``codex-app-bridge serve --script`` with the same client, and compare both streams and both
``thread/read`` answers (:mod:`~codex_app_bridge.conformance._compare`). Boundary: processes
and files; the judging is pure and lives in ``_compare``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio

import codex_app_bridge
from codex_app_bridge.conformance._compare import (
    Comparison,
    canonical_order,
    compare,
    delta_checks,
    normalise_stream,
    thread_read_units,
    turn_units,
)
from codex_app_bridge.conformance._drive import (
    SCENARIO_SPECS,
    ScenarioSpec,
    Session,
    each_on_a_mock,
    run_session,
    scratch_root,
)
from codex_app_bridge.conformance._script import script_from_run
from codex_app_bridge.conformance.mock_responses import MockResponses
from codex_app_bridge.conformance.real_codex import (
    JsonObject,
    bridge_command,
    codex_env,
    real_codex_command,
    write_codex_config,
)

__all__ = ["ScenarioResult", "run_scenario", "run_suite"]

_SRC = str(Path(codex_app_bridge.__file__).resolve().parent.parent)
"""The ``src`` directory of this package, for the bridge subprocess's PYTHONPATH."""


@dataclass
class ScenarioResult:
    name: str
    description: str
    stream: Comparison
    reads: Comparison
    history: Comparison = field(default_factory=Comparison)
    """The real ``thread/read`` turns against ``codex-app-bridge history`` of the real rollout."""
    notes: list[str] = field(default_factory=list[str])
    clients: dict[str, Comparison] = field(default_factory=dict[str, Comparison])
    """Scenarios with several clients: the stream part of each client after the first (also
    counted in ``stream``)."""

    @property
    def total(self) -> Comparison:
        both = Comparison()
        both.add(self.stream)
        both.add(self.reads)
        both.add(self.history)
        return both

    def to_json(self) -> JsonObject:
        return {
            "name": self.name,
            "description": self.description,
            "stream": self.stream.to_json(),
            "reads": self.reads.to_json(),
            "notes": self.notes,
            "clients": {name: c.to_json() for name, c in self.clients.items()},
        }


def _rollouts(home: Path, thread_ids: Sequence[str]) -> list[list[JsonObject]]:
    files = sorted((home / "sessions").glob("**/*.jsonl"))
    ordered = [f for tid in thread_ids for f in files if f.name.endswith(f"{tid}.jsonl")]
    ordered += [f for f in files if f not in ordered]
    return [
        [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        for f in ordered
    ]


def _paths(base: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for root in dict.fromkeys([base, base.resolve()]):
        out[str(root / "work")] = "<cwd>"
        out[str(root / "home")] = "<home>"
        out[str(root)] = "<scratch>"
    return out


async def _history_units(session: Session, home: Path, base: Path) -> list[JsonObject]:
    """Each thread's turns as ``codex-app-bridge history`` rebuilds them from the real rollout."""
    units: list[JsonObject] = []
    for thread_id in session.thread_ids:
        argv = [
            *bridge_command()[:-1],
            "history",
            "--thread-id",
            thread_id,
            "--codex-home",
            str(home),
        ]
        with anyio.fail_after(60):
            done = await anyio.run_process(
                argv, check=False, env=codex_env(home, extra={"PYTHONPATH": _SRC})
            )
        if done.returncode != 0:
            units.append({"read": "history error", "stderr": done.stderr.decode()[-500:]})
            continue
        units.extend(turn_units(json.loads(done.stdout)["turns"], _paths(base)))
    return units


def _real_turn_units(session: Session, base: Path) -> list[JsonObject]:
    units: list[JsonObject] = []
    for thread_id in session.thread_ids:
        answer = session.reads.get(thread_id, {})
        result: JsonObject = answer.get("result") or {}
        thread: JsonObject = result.get("thread") or {}
        turns: list[JsonObject] = thread.get("turns") or []
        units.extend(turn_units(turns, _paths(base)))
    return units


def _layout(base: Path) -> tuple[Path, Path]:
    home, work = base / "home", base / "work"
    work.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    return home, work


def _read_units(session: Session, base: Path) -> list[JsonObject]:
    units: list[JsonObject] = []
    for thread_id in session.thread_ids:
        units.extend(thread_read_units(session.reads.get(thread_id, {}), _paths(base)))
    return units


def _other_clients(
    real: Session, real_base: Path, bridge: Session, bridge_base: Path
) -> dict[str, Comparison]:
    """Each client after the first, real against bridge, its differences labelled
    ``client NAME: ...``."""
    out: dict[str, Comparison] = {}
    for name, real_client in real.clients.items():
        real_units = normalise_stream(
            real_client.received, real_client.sent, _paths(real_base), upto=real_client.reads_from
        )
        bridge_client = bridge.clients.get(name)
        bridge_units = (
            []
            if bridge_client is None
            else normalise_stream(
                bridge_client.received,
                bridge_client.sent,
                _paths(bridge_base),
                upto=bridge_client.reads_from,
            )
        )
        real_units, bridge_units = canonical_order(real_units), canonical_order(bridge_units)
        part = compare(
            [*real_units, *delta_checks(real_units)],
            [*bridge_units, *delta_checks(bridge_units)],
        )
        part.differences = [replace(d, label=f"client {name}: {d.label}") for d in part.differences]
        out[name] = part
    return out


async def run_scenario(
    spec: ScenarioSpec, mock: MockResponses, scratch: Path, *, keep: bool = True
) -> ScenarioResult:
    """One scenario, both servers; artefacts under ``scratch/<name>/`` (kept if ``keep``)."""
    root = scratch / spec.name
    shutil.rmtree(root, ignore_errors=True)
    real_base, bridge_base = root / "real", root / "bridge"
    real_home, real_work = _layout(real_base)
    write_codex_config(real_home, mock.base_url)
    mock.set_scenario(spec.mock, **dict(spec.mock_params))
    real = await run_session(
        spec,
        real_codex_command(),
        env=codex_env(real_home),
        cwd=real_work,
        stderr_path=root / "real.stderr",
    )
    derived = script_from_run(real.received, _rollouts(real_home, real.thread_ids))
    script = root / "script.jsonl"
    # the recorded paths are the real run's scratch paths: the bridge runs in its own
    text = "".join(json.dumps(e) + "\n" for e in derived.envelopes)
    script.write_text(text.replace(str(real_base), str(bridge_base)), encoding="utf-8")

    bridge_home, bridge_work = _layout(bridge_base)
    # the same config.toml as the real run (--script still chooses the source): the provider
    # the driver names must exist for the bridge too, as for the binary
    write_codex_config(bridge_home, mock.base_url)
    src = _SRC
    args = ["--script", str(script)]
    if spec.bridge_pace is not None:
        args += ["--pace", spec.bridge_pace]
    bridge = await run_session(
        spec,
        bridge_command(*args),
        env=codex_env(bridge_home, extra={"PYTHONPATH": src}),
        cwd=bridge_work,
        stderr_path=root / "bridge.stderr",
    )
    notes = [f"script: {n}" for n in derived.notes]
    for who, session in (("real", real), ("bridge", bridge)):
        if session.error:
            notes.append(f"{who} driver error: {session.error}")
    real_units = canonical_order(
        normalise_stream(
            real.received, real.sent, _paths(real_base), upto=real.notes.get("reads_from")
        )
    )
    bridge_units = canonical_order(
        normalise_stream(
            bridge.received, bridge.sent, _paths(bridge_base), upto=bridge.notes.get("reads_from")
        )
    )
    stream = compare(
        [*real_units, *delta_checks(real_units)], [*bridge_units, *delta_checks(bridge_units)]
    )
    clients = _other_clients(real, real_base, bridge, bridge_base)
    for part in clients.values():
        stream.add(part)
    reads = compare(_read_units(real, real_base), _read_units(bridge, bridge_base))
    history = compare(
        _real_turn_units(real, real_base), await _history_units(real, real_home, real_base)
    )
    for who, session in (("real", real), ("bridge", bridge)):
        dump: dict[str, Any] = {
            "received": session.received,
            "sent": session.sent,
            "thread_ids": session.thread_ids,
            "reads": session.reads,
            "notes": session.notes,
            "error": session.error,
            "clients": {name: asdict(c) for name, c in session.clients.items()},
        }
        (root / f"{who}.session.json").write_text(json.dumps(dump, indent=1), encoding="utf-8")
    result = ScenarioResult(spec.name, spec.description, stream, reads, history, notes, clients)
    (root / "result.json").write_text(json.dumps(result.to_json(), indent=1), encoding="utf-8")
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return result


async def run_suite(
    names: Iterable[str] | None = None,
    scratch: Path | None = None,
    *,
    keep: bool = True,
    concurrency: int = 1,
) -> list[ScenarioResult]:
    """Every scenario (or the ``names`` given), in order; up to ``concurrency`` at once, each
    worker with a mock of its own (a mock answers one scenario at a time). Without
    ``scratch`` the artefacts go to a temporary directory, removed at the end."""
    wanted = set(names) if names else None
    specs = [s for s in SCENARIO_SPECS if wanted is None or s.name in wanted]
    if wanted is not None and len(specs) != len(wanted):
        known = ", ".join(s.name for s in SCENARIO_SPECS)
        raise ValueError(f"unknown scenario in {sorted(wanted)}; known: {known}")
    results: dict[str, ScenarioResult] = {}
    with scratch_root(scratch, "codex-conformance-") as root:

        async def one(spec: ScenarioSpec, mock: MockResponses) -> None:
            results[spec.name] = await run_scenario(spec, mock, root, keep=keep)

        await each_on_a_mock(specs, concurrency, one)
    return [results[spec.name] for spec in specs]


def run_suite_sync(
    names: Iterable[str] | None = None,
    scratch: Path | None = None,
    *,
    keep: bool = True,
    concurrency: int = 1,
) -> list[ScenarioResult]:
    return anyio.run(lambda: run_suite(names, scratch, keep=keep, concurrency=concurrency))
