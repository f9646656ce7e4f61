"""Differential: the same requests to the real ``codex app-server`` 0.163.0 and to
``codex-app-bridge serve``; every error must be the same object, every result the same where
both define it. Covers the handshake, the unknown-method list, params errors, thread ids, the
experimental gate (including the order in which the binary names experimental fields) and the
errors of unknown threads; nothing here needs a model.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from codex_app_bridge.conformance.real_codex import codex_env
from codex_app_bridge.server import EXPERIMENTAL_FIELDS
from tests.conftest import bridge_command, bridge_env

pytestmark = pytest.mark.conformance

TIMEOUT = 60
ZERO = "00000000-0000-0000-0000-000000000000"
INIT = {"clientInfo": {"name": "diff", "version": "1"}}


def _real_binary() -> str:
    import codex_cli_bin  # installed by the test extra (openai-codex-cli-bin==0.163.0)

    return str(codex_cli_bin.bundled_codex_path())


def exchange(
    argv: list[str], env: dict[str, str], requests: list[dict[str, Any]]
) -> dict[Any, Any]:
    """Send every request, collect the answer to each id, then close stdin."""
    with subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=env.get("CODEX_HOME"),
    ) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        # readline() has no timeout: a server still running after TIMEOUT seconds is killed,
        # which closes its stdout and ends the read.
        watchdog = threading.Timer(TIMEOUT, proc.kill)
        watchdog.start()
        try:
            wanted = {request["id"] for request in requests}
            answers: dict[Any, Any] = {}
            for request in requests:
                request = _with_thread_ids(request, answers)
                proc.stdin.write(json.dumps(request).encode() + b"\n")
                proc.stdin.flush()
                # One at a time: the real server handles requests concurrently after initialize.
                while request["id"] not in answers:
                    line = proc.stdout.readline()
                    assert line, (
                        f"server closed stdout (or was killed after {TIMEOUT}s); "
                        f"answered so far: {sorted(answers)}"
                    )
                    message = json.loads(line)
                    if "method" not in message and message.get("id") in wanted:
                        answers[message["id"]] = message
            proc.stdin.close()
            proc.wait(timeout=TIMEOUT)
        finally:
            watchdog.cancel()
    return answers


THREAD_OF = "$thread-of:"
"""A params value ``"$thread-of:N"`` is replaced by the id of the thread request ``N`` answered
(so a sequence can name a thread it started)."""


def _with_thread_ids(request: dict[str, Any], answers: dict[Any, Any]) -> dict[str, Any]:
    params = request.get("params")
    if not isinstance(params, dict):
        return request
    resolved = {
        key: answers[int(value[len(THREAD_OF) :])]["result"]["thread"]["id"]
        if isinstance(value, str) and value.startswith(THREAD_OF)
        else value
        for key, value in params.items()
    }
    return {**request, "params": resolved}


def both(requests: list[dict[str, Any]], home: Path) -> Iterator[tuple[dict[str, Any], Any, Any]]:
    env = {**os.environ, "CODEX_HOME": str(home)}
    real = exchange([_real_binary(), "app-server"], env, requests)
    ours = exchange([*bridge_command(), "serve"], bridge_env({"CODEX_HOME": str(home)}), requests)
    for request in requests:
        yield request, real[request["id"]], ours[request["id"]]


def numbered(requests: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for index, (method, params) in enumerate(requests, start=1):
        message: dict[str, Any] = {"id": index, "method": method}
        if params is not ...:
            message["params"] = params
        out.append(message)
    return out


HANDSHAKE_AND_ERRORS: list[tuple[str, Any]] = [
    ("thread/list", {}),
    ("foo/bar", {}),
    ("initialize", ...),
    ("initialize", None),
    ("initialize", {}),
    ("initialize", {"clientInfo": {"name": 5, "version": "1"}}),
    ("initialize", []),
    ("initialize", {"clientInfo": {"name": "bad\nname", "version": "1"}}),
    ("initialize", INIT),
    ("initialize", INIT),
    ("thread/read", {"threadId": "not-a-uuid"}),
    ("thread/read", {"threadId": "abc"}),
    ("thread/read", {"threadId": ""}),
    ("thread/read", {"threadId": "0000000000000000000000000000000g"}),
    ("thread/read", {"threadId": "{abc}"}),
    ("thread/read", {"threadId": "urn:uuid:00000000-0000-0000-0000-00000000000A"}),
    ("thread/read", {"threadId": ZERO + "0"}),
    ("thread/read", {"threadId": 123}),
    ("thread/read", {}),
    ("thread/list", []),
    ("thread/unsubscribe", []),
    ("thread/unsubscribe", {"threadId": ZERO}),
    ("thread/start", []),
    ("turn/start", {"threadId": ZERO, "input": {}}),
    ("turn/start", {"threadId": ZERO, "input": []}),
    ("turn/interrupt", {"threadId": ZERO, "turnId": "t"}),
    ("turn/steer", {"threadId": ZERO, "expectedTurnId": "t", "input": []}),
    ("thread/resume", {"threadId": ZERO}),
    ("thread/resume", {"threadId": ZERO, "excludeTurns": True}),
    ("thread/fork", {"threadId": ZERO}),
    ("thread/list", {"cursor": "garbage"}),
    ("thread/loaded/list", {}),
    ("mock/experimentalMethod", {}),
    ("thread/start", {"mockExperimentalField": "x", "experimentalRawEvents": True}),
    (
        "thread/start",
        {
            "approvalPolicy": {
                "granular": {"mcp_elicitations": True, "rules": True, "sandbox_approval": True}
            }
        },
    ),
    ("turn/steer", {"threadId": ZERO, "expectedTurnId": "t", "input": [], "additionalContext": {}}),
    ("thread/list", {"parentThreadId": "x"}),
    ("thread/start", {"ephemeral": True}),  # request 38
    ("thread/read", {"threadId": THREAD_OF + "38", "includeTurns": True}),
    ("thread/read", {"threadId": THREAD_OF + "38"}),
    ("thread/start", {}),  # request 41
    ("thread/read", {"threadId": THREAD_OF + "41", "includeTurns": True}),
]


def _compare(request: dict[str, Any], real: Any, ours: Any) -> str | None:
    if "error" in real or "error" in ours:
        if real.get("error") != ours.get("error"):
            return f"{request}: real {real.get('error') or 'result'} != ours {ours.get('error') or 'result'}"
        return None
    shared = set(real["result"]) & set(ours["result"])
    if not set(ours["result"]) <= set(real["result"]):
        return (
            f"{request}: our result has extra members {set(ours['result']) - set(real['result'])}"
        )
    if request["method"] in ("thread/loaded/list", "thread/unsubscribe", "thread/list"):
        differing = {key for key in shared if real["result"][key] != ours["result"][key]}
        if differing:
            return f"{request}: results differ in {differing}"
    return None


def test_errors_and_simple_results_match_the_real_server(tmp_path: Path) -> None:
    mismatches = [
        problem
        for request, real, ours in both(numbered(HANDSHAKE_AND_ERRORS), tmp_path)
        if (problem := _compare(request, real, ours)) is not None
    ]
    assert mismatches == []


@cache
def _experimental_schema(tmp: str) -> dict[str, Any]:
    """The binary's experimental schema bundle, written by the binary on a CODEX_HOME (and HOME)
    under ``tmp``: with the developer's environment it set up its helpers in the real
    ``~/.codex/tmp/arg0-linux``, shared by every pytest-xdist worker and checkout."""
    out = Path(tmp) / "schema"
    subprocess.run(
        [_real_binary(), "app-server", "generate-json-schema", "--experimental", "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=TIMEOUT,
        env=codex_env(Path(tmp) / "schema-home" / ".codex"),
    )
    bundle: dict[str, Any] = json.loads(
        (out / "codex_app_server_protocol.v2.schemas.json").read_text(encoding="utf-8")
    )
    return bundle["definitions"]


def _value(schema: dict[str, Any], definitions: dict[str, Any]) -> Any:
    """A value of the field's type that counts as *set*."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    if kind == "string":
        return "x"
    ref = (schema.get("anyOf") or [schema])[0].get("$ref", "")
    target = definitions.get(ref.split("/")[-1], {})
    if "enum" in target:
        return target["enum"][0]
    variants = target.get("oneOf") or target.get("anyOf") or []
    if variants and "enum" in variants[0]:
        return variants[0]["enum"][0]
    if "mode" in target.get("properties", {}):  # CollaborationMode
        return {"mode": "default", "settings": {"model": "m"}}
    return {}


BASE_PARAMS = {
    "thread/fork": {"threadId": ZERO},
    "thread/resume": {"threadId": ZERO},
    "thread/metadata/update": {"threadId": ZERO},
    "turn/start": {"threadId": ZERO, "input": []},
    "turn/steer": {"threadId": ZERO, "expectedTurnId": "t", "input": []},
    "command/exec": {"command": ["true"]},
}
PARAMS_TYPES = {
    "thread/start": "ThreadStartParams",
    "thread/fork": "ThreadForkParams",
    "thread/resume": "ThreadResumeParams",
    "thread/list": "ThreadListParams",
    "thread/metadata/update": "ThreadMetadataUpdateParams",
    "turn/start": "TurnStartParams",
    "turn/steer": "TurnSteerParams",
    "command/exec": "CommandExecParams",
}


def test_the_experimental_field_table_is_the_binarys_in_its_checking_order(tmp_path: Path) -> None:
    definitions = _experimental_schema(str(tmp_path))
    stable = json.loads(
        (
            Path(__file__).resolve().parents[2]
            / "protocol-schemas/codex-app-server/0.163.0/codex_app_server_protocol.v2.schemas.json"
        ).read_text(encoding="utf-8")
    )["definitions"]
    requests: list[dict[str, Any]] = [{"id": 0, "method": "initialize", "params": INIT}]
    expected: list[str] = []
    for method, params_type in PARAMS_TYPES.items():
        experimental = set(definitions[params_type]["properties"]) - set(
            stable[params_type]["properties"]
        )
        fields = [name for name, _ in EXPERIMENTAL_FIELDS[method]]
        assert set(fields) == experimental, method
        # Set them all, then drop the first each time: the binary must name them in our order.
        for start in range(len(fields)):
            params = dict(BASE_PARAMS.get(method, {}))
            for name in fields[start:]:
                params[name] = _value(definitions[params_type]["properties"][name], definitions)
            requests.append({"id": len(requests), "method": method, "params": params})
            expected.append(f"{method}.{fields[start]} requires experimentalApi capability")
    home = tmp_path / "home"
    home.mkdir()
    answers = exchange(
        [_real_binary(), "app-server"], {**os.environ, "CODEX_HOME": str(home)}, requests
    )
    named = [answers[index].get("error", {}).get("message") for index in range(1, len(requests))]
    assert named == expected
