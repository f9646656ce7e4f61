"""The per-client venvs of the client matrix: which interpreter is taken, when a client is
unavailable, and that a made venv is reused without running pip again."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codex_app_bridge.conformance._client_venvs import (
    ClientUnavailable,
    VenvClient,
    ensure_venv,
    find_interpreter,
    venv_root,
)


def test_no_interpreter_of_the_version_makes_the_client_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CODEX_BRIDGE_PYTHON3_99", raising=False)
    with pytest.raises(ClientUnavailable, match=r"no Python 3\.99 interpreter"):
        find_interpreter((3, 99))
    with pytest.raises(ClientUnavailable):
        ensure_venv(VenvClient("some-client", "1.0", (3, 99)), tmp_path / "venvs")


def test_the_variable_then_pyenv_name_the_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    minor = (sys.version_info.major, sys.version_info.minor)
    name = f"{minor[0]}.{minor[1]}"
    pyenv = tmp_path / "pyenv" / "versions"
    for patch in ("1", "10", "9"):  # 10 is the newest, not 9
        (pyenv / f"{name}.{patch}" / "bin").mkdir(parents=True)
        (pyenv / f"{name}.{patch}" / "bin" / f"python{name}").symlink_to(sys.executable)
    (pyenv / f"{name}.0rc1").mkdir()  # not a release: ignored
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    monkeypatch.delenv(f"CODEX_BRIDGE_PYTHON{minor[0]}_{minor[1]}", raising=False)
    assert find_interpreter(minor) == str(pyenv / f"{name}.10" / "bin" / f"python{name}")
    monkeypatch.setenv(f"CODEX_BRIDGE_PYTHON{minor[0]}_{minor[1]}", sys.executable)
    assert find_interpreter(minor) == sys.executable
    assert find_interpreter(None) == sys.executable


def test_a_made_venv_is_reused_without_running_pip(tmp_path: Path) -> None:
    client = VenvClient("some-client", "1.0")
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    directory = tmp_path / f"some-client-1.0-py{minor}"
    (directory / "bin").mkdir(parents=True)
    (directory / "bin" / "python").symlink_to(sys.executable)
    (directory / ".installed").write_text("some-client==1.0\n")
    assert ensure_venv(client, tmp_path) == directory / "bin" / "python"


def test_venvs_live_in_the_checkout_cache_unless_a_variable_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CODEX_CLIENT_VENVS", raising=False)
    checkout = Path(__file__).resolve().parents[2]
    assert venv_root() == checkout / ".cache" / "client-venvs"
    monkeypatch.setenv("CODEX_CLIENT_VENVS", str(tmp_path))
    assert venv_root() == tmp_path
