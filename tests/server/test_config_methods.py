"""The config, model and account methods replayed against the real binary's answers.

``tests/data/config`` holds what ``codex app-server`` 0.163.0 answered to the cases of
``tests.config.cases`` (``tests.config.record_fixtures``): each case runs here on an in-memory
bridge over a scratch ``CODEX_HOME`` with the same ``config.toml``, and every answer, every
``configWarning`` and the file after every write must be the same (paths written as ``<home>``).
The source reports Codex's own defaults (``gpt-6.1-sol`` on ``openai``), as the model source
does, so that ``thread/start`` echoes compare whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codex_app_bridge.config import DEFAULT_MODEL, load_layers
from codex_app_bridge.sources import DefaultAgent
from tests.conftest import DATA_DIR
from tests.e2e._harness import Session, open_bridge

pytestmark = pytest.mark.anyio

FIXTURES = DATA_DIR / "config"
SYSTEM = "/etc/codex/config.toml"


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text("utf-8"))
    return data


def _clean(value: Any, home: Path, cwd: Path, system: Path) -> Any:
    text = json.dumps(value)
    for path, name in ((system, SYSTEM), (home, "<home>"), (cwd, "<cwd>")):
        text = text.replace(str(path), name)
    return json.loads(text)


def _warnings(messages: list[dict[str, Any]]) -> list[Any]:
    return [m["params"] for m in messages if m.get("method") == "configWarning"]


async def _replay(
    tmp_path: Path, config: str | None, steps: list[dict[str, Any]], cat: str | None = None
) -> tuple[list[Any], list[dict[str, Any]]]:
    home, cwd, system = tmp_path / "home", tmp_path / "work", tmp_path / "etc" / "config.toml"
    home.mkdir()
    cwd.mkdir()
    if config is not None:
        (home / "config.toml").write_text(config, encoding="utf-8")
    layers = load_layers(home, system_config=system)
    source = DefaultAgent(model=DEFAULT_MODEL, model_provider="openai")
    async with open_bridge("memory", source=source, config=layers) as bridge:
        assert bridge.server is not None
        bridge.server.default_cwd = str(cwd)
        client: Session = await bridge.connect()
        if True:
            await client.initialize()
            startup = _warnings(client.received)
            replayed: list[dict[str, Any]] = []
            for step in steps:
                mark = len(client.received)
                reply = await client.call(step["method"], step["params"])
                before = client.received[mark:-1]
                answer: dict[str, Any]
                if "error" in reply:
                    answer = {"error": reply["error"]}
                else:
                    result = reply["result"]
                    if isinstance(result, dict) and "thread" in result:
                        result = {k: v for k, v in result.items() if k != "thread"}
                    answer = {"result": result}
                got: dict[str, Any] = {**step, "answer": answer}
                got.pop("configWarnings", None)
                got.pop("file", None)
                warnings = _warnings(before)
                if warnings:
                    got["configWarnings"] = warnings
                if cat is not None:
                    path = home / cat
                    got["file"] = path.read_text("utf-8") if path.exists() else None
                replayed.append(got)
    return _clean(startup, home, cwd, system), _clean(replayed, home, cwd, system)


@pytest.mark.parametrize("case", sorted(_load("syntax_errors.json")))
async def test_a_config_file_with_a_syntax_error_gets_the_binarys_answers(
    case: str, tmp_path: Path
) -> None:
    from tests.config.cases import SYNTAX_CASES

    expected = _load("syntax_errors.json")[case]
    startup, steps = await _replay(tmp_path, SYNTAX_CASES[case], expected["steps"])
    assert startup == expected["startup"]
    assert steps == expected["steps"]


@pytest.mark.parametrize("case", sorted(_load("semantic_errors.json")))
async def test_a_config_file_codex_refuses_or_warns_about_gets_the_binarys_answers(
    case: str, tmp_path: Path
) -> None:
    from tests.config.cases import SEMANTIC_CASES

    expected = _load("semantic_errors.json")[case]
    startup, steps = await _replay(tmp_path, SEMANTIC_CASES[case], expected["steps"])
    assert startup == expected["startup"]
    assert steps == expected["steps"]


@pytest.mark.parametrize("case", sorted(_load("writes.json")))
async def test_config_writes_answer_and_edit_the_file_as_the_binary(
    case: str, tmp_path: Path
) -> None:
    expected = _load("writes.json")[case]
    startup, steps = await _replay(tmp_path, expected["config"], expected["steps"], "config.toml")
    assert startup == expected["startup"]
    for got, want in zip(steps, expected["steps"], strict=True):
        assert got == want, (want["method"], want["params"])


async def test_model_list_pages_as_the_binary(tmp_path: Path) -> None:
    expected = _load("model_list.json")
    startup, steps = await _replay(tmp_path, None, expected["steps"])
    assert startup == expected["startup"]
    assert steps == expected["steps"]


async def test_account_methods_answer_and_store_the_login_as_the_binary(tmp_path: Path) -> None:
    expected = _load("account.json")
    startup, steps = await _replay(tmp_path, None, expected["steps"], "auth.json")
    assert startup == expected["startup"]
    for got, want in zip(steps, expected["steps"], strict=True):
        assert got == want, (want["method"], want["params"])
