"""Per-client virtual environments for client libraries the project venv cannot hold.

Role: ``codex-app-server-sdk`` needs Python >= 3.12 and ``codexed`` >= 3.13 while the project
supports 3.11; ``codex-python-sdk`` is optional and kept out of the ``test`` extra. Each gets its
own venv, made on first use from a matching interpreter with ``pip install NAME==VERSION`` and
cached, so the README's test command covers them on a fresh clone with no extra step. The flow
that runs in it (:mod:`._venv_flows`) depends on the client library and the standard library
only. Boundary: interpreters, directories and ``pip``; what runs in the venv is not known here.

Where things are looked for:

- the interpreter: ``$CODEX_BRIDGE_PYTHON3_12`` (``_13``...) if set, else the newest
  ``~/.pyenv/versions/3.12.*``, else ``python3.12`` on PATH; a client with no minimum uses the
  interpreter running this code. None found: :class:`ClientUnavailable` (the matrix skips it).
- the venvs: ``$CODEX_CLIENT_VENVS`` if set, else ``.cache/client-venvs`` of the checkout
  (gitignored), else ``~/.cache/codex-app-bridge/client-venvs`` for an installed package. One
  directory per ``<package>-<version>-py<X.Y>``; a ``.installed`` marker written after pip
  succeeded makes it reusable, and a lock file serialises concurrent creation.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ClientUnavailable",
    "VenvClient",
    "ensure_venv",
    "find_interpreter",
    "venv_root",
]

CREATE_TIMEOUT_S = 120
INSTALL_TIMEOUT_S = 600
PROBE_TIMEOUT_S = 30


class ClientUnavailable(Exception):
    """The client cannot run on this machine (no suitable interpreter); the reason says why."""


@dataclass(frozen=True)
class VenvClient:
    package: str
    version: str
    min_python: tuple[int, int] | None = None
    """``None``: any interpreter; the one running this code is used."""

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    return int(out[0]), int(out[1])


def _pyenv_candidates(minor: tuple[int, int]) -> list[Path]:
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    prefix = f"{minor[0]}.{minor[1]}."
    found: list[tuple[tuple[int, ...], Path]] = []
    if root.is_dir():
        for entry in root.iterdir():
            rest = entry.name.removeprefix(prefix)
            if rest != entry.name and rest.isdigit():
                found.append(((int(rest),), entry / "bin" / f"python{minor[0]}.{minor[1]}"))
    return [path for _, path in sorted(found, reverse=True)]


def find_interpreter(minor: tuple[int, int] | None) -> str:
    """A Python of exactly version ``minor`` (or this one for ``None``); raises
    :class:`ClientUnavailable` with what was tried when there is none."""
    if minor is None:
        return sys.executable
    name = f"python{minor[0]}.{minor[1]}"
    variable = f"CODEX_BRIDGE_PYTHON{minor[0]}_{minor[1]}"
    tried: list[str] = []
    candidates: list[str] = []
    if os.environ.get(variable):
        candidates.append(os.environ[variable])
    candidates += [str(p) for p in _pyenv_candidates(minor)]
    on_path = shutil.which(name)
    if on_path:
        candidates.append(on_path)
    for candidate in candidates:
        tried.append(candidate)
        if Path(candidate).exists() and _version_of(candidate) == minor:
            return candidate
    raise ClientUnavailable(
        f"no Python {minor[0]}.{minor[1]} interpreter (set ${variable}, or install it with pyenv"
        f" or as {name} on PATH; tried: {', '.join(tried) or 'nothing found'})"
    )


def venv_root() -> Path:
    explicit = os.environ.get("CODEX_CLIENT_VENVS")
    if explicit:
        return Path(explicit)
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "pyproject.toml").is_file() and (checkout / "src").is_dir():
        return checkout / ".cache" / "client-venvs"
    return Path.home() / ".cache" / "codex-app-bridge" / "client-venvs"


def _run(argv: list[str], timeout: int, what: str) -> None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"{what} timed out after {timeout}s: {argv}") from exc
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed ({proc.returncode}): {proc.stderr[-2000:]}")


def _venv_and_pip(interpreter: str, python: Path) -> tuple[list[str], list[str]]:
    """How to make the venv and run pip in it. This interpreter's pip fills it when there is
    one (``pip --python``): the venv then needs no pip of its own, whose installation took
    about 4 s of CPU per venv on every fresh clone."""
    if importlib.util.find_spec("pip") is not None:
        pip = [sys.executable, "-m", "pip", "--python", str(python)]
        return [interpreter, "-m", "venv", "--without-pip"], pip
    return [interpreter, "-m", "venv"], [str(python), "-m", "pip"]


def ensure_venv(client: VenvClient, root: Path | None = None) -> Path:
    """The Python of the client's venv, made and filled on first use. Raises
    :class:`ClientUnavailable` when no interpreter fits, ``RuntimeError`` when pip fails."""
    interpreter = find_interpreter(client.min_python)
    minor = client.min_python or sys.version_info[:2]
    base = root or venv_root()
    directory = base / f"{client.package}-{client.version}-py{minor[0]}.{minor[1]}"
    python = directory / "bin" / "python"
    marker = directory / ".installed"
    if marker.is_file() and python.exists():
        return python
    base.mkdir(parents=True, exist_ok=True)
    with open(base / f"{directory.name}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file() and python.exists():  # made by another process meanwhile
            return python
        shutil.rmtree(directory, ignore_errors=True)
        venv, pip = _venv_and_pip(interpreter, python)
        _run([*venv, str(directory)], CREATE_TIMEOUT_S, "venv creation")
        pip += ["install", "--disable-pip-version-check", "-q"]
        _run([*pip, client.requirement], INSTALL_TIMEOUT_S, f"pip install {client.requirement}")
        marker.write_text(client.requirement + "\n", encoding="utf-8")
    return python
