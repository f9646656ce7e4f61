"""The client matrix: each installed client library runs the same flow against the real
``codex app-server`` (mock model) and against the bridge replaying that run; what the library
returns and the wire traffic are compared.

Role: ``python -m codex_app_bridge.conformance --clients`` adds these rows to the report. The
flow itself is :mod:`._client_flows` for the clients of the ``test`` extra and
:mod:`._venv_flows` for those in a venv of their own (:mod:`._client_venvs`: made on first use,
cached; a client whose interpreter is missing is reported unavailable, not run). It runs in a
subprocess per client and server, with a timeout; the wire is recorded by :mod:`.tee` between
the client and the server it spawns. The bridge plays the core events derived from the real
run's wire and rollout (the derivation of the scenario suite), paced so the interrupt lands
mid-turn. Boundary: processes and files; judging is ``_compare``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from codex_app_bridge.conformance import (
    MockResponses,
    bridge_command,
    codex_env,
    real_codex_command,
    write_codex_config,
)
from codex_app_bridge.conformance._client_venvs import ClientUnavailable, VenvClient, ensure_venv
from codex_app_bridge.conformance._compare import Comparison, compare, diff_paths, normalise_stream
from codex_app_bridge.conformance._script import script_from_run
from codex_app_bridge.conformance.real_codex import JsonObject

__all__ = [
    "CLIENTS",
    "LABELS",
    "PENDING",
    "VENV_CLIENTS",
    "ClientResult",
    "ClientUnavailable",
    "flow_command",
    "run_client",
    "run_matrix",
]

_SRC = str(Path(__file__).resolve().parents[2])
"""The ``src`` directory of this package, for the subprocesses' PYTHONPATH."""
VENV_CLIENTS = {
    "app_server_sdk": VenvClient("codex-app-server-sdk", "0.4.1", (3, 12)),
    "codexed": VenvClient("codexed", "1.2.2", (3, 13)),
    "python_sdk": VenvClient("codex-python-sdk", "0.2.1"),
}
"""Clients in a venv of their own: the interpreter they need, or ``None`` for this one."""
CLIENTS = ("official", "app_server_client", *VENV_CLIENTS)
LABELS = {
    "official": "openai-codex 0.163.0",
    "app_server_client": "codex-app-server-client 0.1.0",
    **{name: f"{c.package} {c.version}" for name, c in VENV_CLIENTS.items()},
}
PENDING = {
    "codex-python-sdk-unofficial 0.128.0": "fails at thread/start against the real binary too",
}
TIMEOUT_S = 240
_VENV_FLOWS = str(Path(__file__).with_name("_venv_flows.py"))


def flow_command(client: str) -> list[str]:
    """The argv prefix that runs ``client``'s flow (then CLIENT, SERVER_ARGV_JSON and SHIM_DIR
    follow). Makes the client's venv on first use; raises :class:`ClientUnavailable` when it
    cannot."""
    venv = VENV_CLIENTS.get(client)
    if venv is None:
        return [sys.executable, "-m", "codex_app_bridge.conformance._client_flows"]
    # -I: neither PYTHONPATH (the project's src, for the tee) nor the script's directory
    return [str(ensure_venv(venv)), "-I", _VENV_FLOWS]


@dataclass
class Side:
    outcome: dict[str, Any]
    wire: list[list[dict[str, Any]]]
    """Per server process: the logged lines ``{"dir", "line"}`` after its start marker."""
    home: Path
    base: Path


@dataclass
class ClientResult:
    client: str
    outcome: Comparison
    wire: Comparison
    outcome_diffs: list[str] = field(default_factory=list[str])
    unavailable: str | None = None
    """Why the client did not run (no interpreter for its venv); nothing was compared then."""

    @property
    def total(self) -> Comparison:
        both = Comparison()
        both.add(self.outcome)
        both.add(self.wire)
        return both


def _processes(log: Path) -> list[list[dict[str, Any]]]:
    out: list[list[dict[str, Any]]] = []
    if not log.exists():
        return out
    for raw in log.read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        if record["dir"] == "start":
            out.append([])
        elif out:
            out[-1].append(record)
    return out


def _run_flow(client: str, server_argv: list[str], base: Path, home: Path) -> Side:
    work = base / "work"
    work.mkdir(parents=True, exist_ok=True)
    log = base / "wire.jsonl"
    argv = [sys.executable, "-m", "codex_app_bridge.conformance.tee", str(log), "--", *server_argv]
    env = codex_env(home, extra={"PYTHONPATH": _SRC})
    proc = subprocess.run(
        [*flow_command(client), client, json.dumps(argv), str(base / "shim")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{client} flow failed ({proc.returncode}): {proc.stderr[-3000:]}")
    outcome: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return Side(outcome, _processes(log), home, base)


def _leaves(value: object, path: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for key, item in cast(dict[str, object], value).items():
            out.update(_leaves(item, f"{path}.{key}" if path else key))
        return out
    return {path: value}


def _lines(records: list[JsonObject], direction: str) -> list[JsonObject]:
    """The JSON-object lines of one direction of a tee log."""
    out: list[JsonObject] = []
    for record in records:
        line = record["line"]
        if record["dir"] == direction and isinstance(line, dict):
            out.append(cast(JsonObject, line))
    return out


def _rollouts(home: Path) -> list[list[dict[str, Any]]]:
    files = sorted((home / "sessions").glob("**/*.jsonl"))
    return [[json.loads(x) for x in f.read_text().splitlines() if x.strip()] for f in files]


def _paths(base: Path) -> dict[str, str]:
    return {str(base / "work"): "<cwd>", str(base / "home"): "<home>", str(base): "<scratch>"}


PACE_S = 0.02
"""The replay's gap between two events."""
HOLD_S = 5.0
"""The gap after the first delta of a turn the real run ended interrupted (the longest gap a
recorded pacing plays)."""


def _event_type(envelope: JsonObject) -> object:
    return cast(JsonObject, envelope.get("msg") or {}).get("type")


def _timed(envelopes: list[JsonObject]) -> list[JsonObject]:
    """The derived events with recorded times for ``--pace recorded``: ``PACE_S`` apart, but
    ``HOLD_S`` after the first delta of a turn the real run ended interrupted, so the client's
    interrupt comes while the replay holds, as it came while the mock streamed slowly to the
    real binary (paced at 20 ms, the replay played the turn's end 40 ms after that delta: a
    client on a busy machine interrupted too late, "no active turn to interrupt")."""
    aborted = {e.get("id") for e in envelopes if _event_type(e) == "turn_aborted"}
    streamed: set[object] = set()
    held: set[object] = set()
    out: list[JsonObject] = []
    at = 0.0
    for envelope in envelopes:
        turn = envelope.get("id")
        at += PACE_S
        if turn in aborted and turn in streamed and turn not in held:
            held.add(turn)
            at += HOLD_S
        out.append({**envelope, "t": round(at, 3)})
        if _event_type(envelope) == "agent_message_content_delta":
            streamed.add(turn)
    return out


def run_client(client: str, mock: MockResponses, scratch: Path) -> ClientResult:
    root = scratch / client
    real_base, bridge_base = root / "real", root / "bridge"
    real_home = real_base / "home"
    write_codex_config(real_home, mock.base_url)
    mock.set_scenario("client_flow")
    real = _run_flow(client, real_codex_command(), real_base, real_home)
    first = real.wire[0] if real.wire else []
    received = _lines(first, "s2c")
    derived = script_from_run(received, _rollouts(real_home))
    script = root / "script.jsonl"
    text = "".join(json.dumps(e) + "\n" for e in _timed(derived.envelopes))
    script.write_text(text.replace(str(real_base), str(bridge_base)), encoding="utf-8")
    bridge_home = bridge_base / "home"
    # the same config.toml as the real run (--script still chooses the source): the provider a
    # flow names must exist for the bridge too, as for the binary
    write_codex_config(bridge_home, mock.base_url)
    bridge = _run_flow(
        client,
        bridge_command("--script", str(script), "--pace", "recorded"),
        bridge_base,
        bridge_home,
    )

    ra, rb = _leaves(real.outcome), _leaves(bridge.outcome)
    outcome = Comparison(compared=len(ra.keys() | rb.keys()))
    outcome.equal = sum(1 for k in ra if k in rb and ra[k] == rb[k])
    diffs = diff_paths(real.outcome, bridge.outcome)
    wire = Comparison()
    for index in range(max(len(real.wire), len(bridge.wire))):
        sides: list[list[JsonObject]] = []
        for side in (real, bridge):
            lines = side.wire[index] if index < len(side.wire) else []
            got, sent = _lines(lines, "s2c"), _lines(lines, "c2s")
            sides.append(normalise_stream(got, sent, _paths(side.base)))
        wire.add(compare(sides[0], sides[1]))
    return ClientResult(client, outcome, wire, diffs)


def run_matrix(scratch: Path | None = None) -> list[ClientResult]:
    """Every client of :data:`CLIENTS`, in order, against one mock; artefacts are kept under
    ``scratch/clients`` when ``scratch`` is given, else removed. One client at a time: the
    bridge replays the interrupted turn paced, and a second flow beside it on a busy machine
    let the replay end the turn before the client's interrupt came ("no active turn")."""
    temporary = (
        nullcontext(str(scratch))
        if scratch is not None
        else tempfile.TemporaryDirectory(prefix="codex-client-matrix-")
    )
    with temporary as root, MockResponses() as mock:
        return [_run_or_unavailable(client, mock, Path(root) / "clients") for client in CLIENTS]


def _run_or_unavailable(client: str, mock: MockResponses, scratch: Path) -> ClientResult:
    try:
        return run_client(client, mock, scratch)
    except ClientUnavailable as exc:
        return ClientResult(client, Comparison(), Comparison(), unavailable=str(exc))
