"""Config, model and account methods live, side by side: the real 0.163.0 binary and the bridge,
each over stdio with its own scratch ``CODEX_HOME`` holding the same ``config.toml``, get the same
requests; whole answers are compared (thread objects left out, the two homes and working
directories written as ``<home>`` and ``<cwd>``).

``tests/server/test_config_methods.py`` replays the binary's recorded answers in process; these
run both programs as clients start them (``-c`` flags, exit statuses, the ``configWarning``
after ``initialize``, the ``warning`` after ``thread/started``).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.config.cases import SEMANTIC_CASES
from tests.conformance._realpeer import TIMEOUT, Peer, real_binary
from tests.conftest import bridge_command, bridge_env

pytestmark = pytest.mark.conformance

MOCK = SEMANTIC_CASES["mock_provider"]
UNKNOWN = (
    "Codex is ignoring 1 unrecognized configuration setting. Check for typos or deprecated "
    "settings.\n  session-flags: `foo_unknown` is ignored."
)
TIER = (
    "Configured service tier `bogus` is not advertised as supported for model `mock-model` and "
    "will be omitted from requests."
)


def _argv(real: bool, args: tuple[str, ...]) -> list[str]:
    if real:
        return [real_binary(), "app-server", *args]
    return [*bridge_command(), "serve", "--pace", "0", *args]


def _env(real: bool, home: Path) -> dict[str, str]:
    if real:
        return {
            **os.environ,
            "CODEX_HOME": str(home),
            "HOME": str(home.parent),
            "RUST_LOG": "error",
        }
    return bridge_env({"CODEX_HOME": str(home)})


@contextmanager
def _peers(
    tmp_path: Path, config: str | None, args: tuple[str, ...] = ()
) -> Iterator[list[tuple[Peer, Path, Path]]]:
    started: list[tuple[Peer, Path, Path]] = []
    try:
        for real in (True, False):
            root = tmp_path / ("real" if real else "bridge")
            home, cwd = root / "home", root / "work"
            home.mkdir(parents=True)
            cwd.mkdir()
            if config is not None:
                (home / "config.toml").write_text(config, encoding="utf-8")
            started.append((Peer(_argv(real, args), _env(real, home), cwd), home, cwd))
        yield started
    finally:
        for peer, _, _ in started:
            peer.close()


def _clean(value: Any, home: Path, cwd: Path) -> Any:
    text = json.dumps(value).replace(str(home), "<home>").replace(str(cwd), "<cwd>")
    return json.loads(text)


def _answer(peer: Peer, method: str, params: Any) -> Any:
    reply = peer.call(method, params)
    if "error" in reply:
        return {"error": reply["error"]}
    result = reply["result"]
    if isinstance(result, dict) and "thread" in result:
        result = {k: v for k, v in result.items() if k != "thread"}
    return result


def _config_warning(peer: Peer) -> dict[str, Any]:
    while True:
        params: dict[str, Any] = peer.wait_for("configWarning")["params"]
        if "bubblewrap" not in params["summary"]:  # the machine's, not the config's
            return params


THREAD_STARTS: list[tuple[dict[str, Any], list[str]]] = [
    ({}, []),  # the fallback-metadata warning comes with each turn/start, not here
    ({"serviceTier": "bogus", "config": {"foo_unknown": 1}}, [UNKNOWN, TIER]),
    ({"config": {"model": "a"}, "model": "gpt-5.5"}, []),
    (
        {
            "config": {
                "model_providers.mock2.name": "m2",
                "model_providers.mock2.base_url": "http://127.0.0.1:9/v1",
                "model_provider": "mock2",
            },
            "model": "gpt-5.5",
        },
        [],
    ),
    ({"config": {"model_reasoning_summary": "zz"}}, []),
    ({"config": {"model": 5}}, []),
    ({"modelProvider": "nope2"}, []),
    ({"sandbox": "workspace-write", "approvalPolicy": "untrusted", "model": "gpt-5.5"}, []),
    (
        {
            "config": {
                "sandbox_mode": "workspace-write",
                "sandbox_workspace_write": {"network_access": True},
                "model_reasoning_effort": "high",
            },
            "model": "gpt-5.5",
            "serviceTier": "fast",
        },
        [],
    ),
    ({"model": "gpt-6-sol", "serviceTier": "flex", "cwd": "/tmp"}, []),
    ({"config": {"profile": "p"}}, []),
    ({"config": {"model_providers.mock.wire_api": "chat"}}, []),
]


def test_thread_start_resolves_and_echoes_the_config_as_the_binary(tmp_path: Path) -> None:
    with _peers(tmp_path, MOCK) as peers:
        answers: list[list[Any]] = []
        for peer, home, cwd in peers:
            got: list[Any] = []
            for params, warnings in THREAD_STARTS:
                answer = _answer(peer, "thread/start", params)
                seen = [peer.wait_for("warning")["params"]["message"] for _ in warnings]
                got.append(_clean([answer, seen], home, cwd))
            answers.append(got)
        real, bridge = answers
        for want, have, (params, _) in zip(real, bridge, THREAD_STARTS, strict=True):
            assert have == want, params


def test_a_broken_config_is_announced_and_refused_where_the_binary_refuses_it(
    tmp_path: Path,
) -> None:
    config = 'model = "a"\nmodel_reasoning_summary = "verbose"\n'
    with _peers(tmp_path, config) as peers:
        seen: list[Any] = []
        for peer, home, cwd in peers:
            warning = _config_warning(peer)
            answers = [
                _answer(peer, method, params)
                for method, params in (
                    ("thread/start", {}),
                    ("config/read", {"includeLayers": True}),
                    ("modelProvider/capabilities/read", {}),
                    ("model/list", {"limit": 1}),
                    ("account/read", {}),
                )
            ]
            seen.append(_clean([warning, answers], home, cwd))
        assert seen[1] == seen[0]


def test_cli_overrides_are_a_session_layer_as_in_the_binary(tmp_path: Path) -> None:
    args = (
        "-c",
        'model="cli-model"',
        "--enable",
        "undo",
        "-c",
        "model_providers.mock.stream_max_retries=3",
    )
    with _peers(tmp_path, MOCK, args) as peers:
        seen: list[Any] = []
        for peer, home, cwd in peers:
            answers = [
                _answer(peer, "thread/start", {}),
                _answer(peer, "thread/start", {"model": "gpt-5.5"}),
                _answer(peer, "config/read", {"includeLayers": True}),
                _answer(
                    peer,
                    "config/value/write",
                    {"keyPath": "model", "value": "user-model", "mergeStrategy": "replace"},
                ),
            ]
            seen.append(_clean(answers, home, cwd))
        assert seen[1] == seen[0]


def test_writes_and_logins_live_answer_and_store_as_the_binary(tmp_path: Path) -> None:
    config = '# mine\nmodel = "m1"  # keep me\n\n[tui]\nanimations = false\n'
    with _peers(tmp_path, config) as peers:
        seen: list[Any] = []
        for peer, home, cwd in peers:
            answers = [
                _answer(
                    peer,
                    "config/batchWrite",
                    {
                        "edits": [
                            {"keyPath": "model", "value": "m2", "mergeStrategy": "replace"},
                            {
                                "keyPath": "model_providers.p",
                                "value": {"name": "p", "base_url": "http://p"},
                                "mergeStrategy": "upsert",
                            },
                        ]
                    },
                ),
                (home / "config.toml").read_text("utf-8"),
                _answer(peer, "account/login/start", {"type": "apiKey", "apiKey": "sk-x"}),
                peer.wait_for("account/login/completed")["params"],
                peer.wait_for("account/updated")["params"],
                _answer(peer, "account/read", {}),
                (home / "auth.json").read_text("utf-8"),
                _answer(peer, "account/logout", None),
                peer.wait_for("account/updated")["params"],
                (home / "auth.json").exists(),
                _answer(peer, "model/list", {"includeHidden": True}),
            ]
            seen.append(_clean(answers, home, cwd))
        assert seen[1] == seen[0]


@pytest.mark.parametrize(
    ("config", "args"),
    [
        (None, ("-c", "model=5")),
        (None, ("-c", "model_provider=nope")),
        (None, ("-c", "novalue")),
        ('approval_policy = "untrusted"\n', ()),
        ("zz = 1\nfoo = 1\n", ("--strict-config",)),
        (None, ("--strict-config", "-c", "bar=1")),
    ],
)
def test_start_up_refusals_exit_1_with_the_binarys_message(
    tmp_path: Path, config: str | None, args: tuple[str, ...]
) -> None:
    errors: list[str] = []
    for real in (True, False):
        home = tmp_path / ("real" if real else "bridge") / "home"
        home.mkdir(parents=True)
        if config is not None:
            (home / "config.toml").write_text(config, encoding="utf-8")
        proc = subprocess.run(
            _argv(real, args),
            input=b"",
            capture_output=True,
            timeout=TIMEOUT,
            env=_env(real, home),
            check=False,
        )
        assert proc.returncode == 1, proc.stderr
        text = proc.stderr.decode().replace(str(home), "<home>")
        lines = [line for line in text.splitlines() if not line.startswith("WARNING: proceeding")]
        message = "\n".join(lines).split("\n\nStack backtrace:")[0].strip()
        errors.append(message)
    assert errors[1] == errors[0]
