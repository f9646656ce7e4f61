"""The client matrix (issue 14 item 3): each client library runs the same flow (turn, second
turn, interrupt, list, read, resume after a restart) against the real binary and against the
bridge replaying that run; what the library's user sees must be the same, except the
differences listed in KNOWN_DIFFERENCES.md, and the wire must match at least as well as today.

``codex-app-server-sdk`` (Python >= 3.12), ``codexed`` (>= 3.13) and ``codex-python-sdk`` run
in venvs of their own, made on first use and cached (``_client_venvs``); a client whose
interpreter is not on this machine is skipped, with the reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_app_bridge.conformance._matrix import (
    CLIENTS,
    VENV_CLIENTS,
    ClientResult,
    run_matrix,
)

pytestmark = pytest.mark.conformance

# Every outcome is the same, resume after a restart included: the bridge stores threads under
# CODEX_HOME as the binary does (issue 12), so a restarted bridge resumes them.
RESUME_FAILS: dict[str, set[str]] = {client: set() for client in CLIENTS}
WIRE_FLOOR = {
    "official": 65.0,
    "app_server_client": 68.0,
    "app_server_sdk": 72.0,
    "codexed": 72.0,
    "python_sdk": 68.0,
}
"""Wire match in percent (75.4, 75.9, 76.7, 76.3 and 72.7 measured when this was written)."""
SHIM_CLIENTS = ("app_server_client", "codexed", "python_sdk")
"""The clients whose library runs a "codex binary" by its path (the flow writes a shim)."""


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("matrix")


@pytest.fixture(scope="module")
def results(scratch: Path) -> dict[str, ClientResult | str]:
    """Each client's result, or why it could not run."""
    # each client flow runs in a subprocess with a timeout (_matrix.TIMEOUT_S); a venv client's
    # venv is made once (timeouts in _client_venvs) and reused by later runs
    found = run_matrix(scratch)
    return {r.client: r if r.unavailable is None else r.unavailable for r in found}


def _result(results: dict[str, ClientResult | str], client: str) -> ClientResult:
    result = results[client]
    if isinstance(result, str):
        pytest.skip(f"{client}: {result}")
    return result


@pytest.mark.parametrize("client", CLIENTS)
def test_client_sees_the_same_outcome_resume_after_restart_included(
    results: dict[str, ClientResult | str], client: str
) -> None:
    result = _result(results, client)
    differing = {line.split(":")[0] for line in result.outcome_diffs}
    assert differing == RESUME_FAILS[client], result.outcome_diffs
    assert result.outcome.compared >= 10


@pytest.mark.parametrize("client", CLIENTS)
def test_client_wire_matches_at_least_as_well_as_today(
    results: dict[str, ClientResult | str], client: str
) -> None:
    result = _result(results, client)
    assert result.wire.compared > 40
    assert result.wire.percent >= WIRE_FLOOR[client]


def test_only_a_missing_interpreter_keeps_a_client_out(
    results: dict[str, ClientResult | str],
) -> None:
    # the project's own interpreter always fits codex-python-sdk, so it always runs
    assert VENV_CLIENTS["python_sdk"].min_python is None
    assert isinstance(results["python_sdk"], ClientResult)
    for client, result in results.items():
        if isinstance(result, str):
            assert client in VENV_CLIENTS
            assert result.startswith("no Python 3.1"), result


def test_report_lists_an_unavailable_client_with_its_reason_and_counts_nothing() -> None:
    from codex_app_bridge.conformance.__main__ import format_table
    from codex_app_bridge.conformance._compare import Comparison

    ran = ClientResult("official", Comparison(5, 5), Comparison(8, 4))
    missing = ClientResult("codexed", Comparison(), Comparison(), unavailable="no Python 3.13")
    rows = format_table([], [ran, missing]).splitlines()
    assert next(r for r in rows if r.startswith("codexed")).split() == [
        "codexed",
        "unavailable:",
        "no",
        "Python",
        "3.13",
    ]
    assert rows[-1].split() == ["TOTAL", "13", "9", "69.2%"]


def test_the_flows_write_their_shims_under_the_scratch_directory(
    results: dict[str, ClientResult | str], scratch: Path
) -> None:
    # the libraries that take a "codex binary" path, not an argv, get a shim per flow and
    # server side, in the side's scratch (a temporary directory of their own stayed in /tmp
    # when a run was killed)
    ran = [c for c in SHIM_CLIENTS if isinstance(results[c], ClientResult)]
    assert "app_server_client" in ran
    shims = {p.relative_to(scratch) for p in scratch.glob("**/codex") if p.parent.name == "shim"}
    assert shims == {
        Path("clients", client, side, "shim", "codex")
        for client in ran
        for side in ("real", "bridge")
    }
