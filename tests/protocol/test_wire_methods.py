"""The method name lists agree with the vendored schema, the generated unions and, in the
conformance tests, with what the real 0.163.0 binary reports."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from codex_app_bridge.protocol import v2
from codex_app_bridge.protocol.v2 import methods

VENDORED_DIR = Path(__file__).resolve().parents[2] / "protocol-schemas/codex-app-server/0.163.0"


def schema_methods(path: Path) -> list[str]:
    union = json.loads(path.read_text(encoding="utf-8"))
    return [variant["properties"]["method"]["enum"][0] for variant in union["oneOf"]]


@pytest.mark.parametrize(
    ("listed", "schema_file"),
    [
        (methods.CLIENT_REQUEST_METHODS, "ClientRequest.json"),
        (methods.SERVER_NOTIFICATION_METHODS, "ServerNotification.json"),
        (methods.SERVER_REQUEST_METHODS, "ServerRequest.json"),
        (methods.CLIENT_NOTIFICATION_METHODS, "ClientNotification.json"),
    ],
)
def test_method_lists_follow_the_vendored_schema_unions_in_order(
    listed: tuple[str, ...], schema_file: str
) -> None:
    assert list(listed) == schema_methods(VENDORED_DIR / schema_file)


def test_client_request_methods_split_into_stable_experimental_and_legacy() -> None:
    every = methods.ALL_CLIENT_REQUEST_METHODS
    stable = set(methods.CLIENT_REQUEST_METHODS)
    experimental = set(methods.EXPERIMENTAL_CLIENT_REQUEST_METHODS)
    legacy = set(methods.LEGACY_CLIENT_REQUEST_METHODS)
    assert len(every) == len(set(every)) == 175
    assert (len(stable), len(experimental), len(legacy)) == (105, 67, 3)
    assert stable | experimental | legacy == set(every)
    assert not (stable & experimental)
    assert not (stable & legacy)
    assert not (experimental & legacy)


def test_every_stable_method_has_a_typed_request_and_no_other_does() -> None:
    for method in methods.ALL_CLIENT_REQUEST_METHODS:
        request = json.dumps({"id": 1, "method": method, "params": {}})
        try:
            parsed = v2.parse_client_request(request)
            located_at = "<unknown>" if isinstance(parsed, v2.UnknownClientRequest) else method
        except ValidationError as error:
            # empty params are invalid for many typed methods: the errors sit under the method
            (located_at,) = {str(e["loc"][0]) for e in error.errors()}
        assert (located_at == method) == (method in methods.CLIENT_REQUEST_METHODS), method


def test_raw_notification_methods_are_not_in_the_schema_union() -> None:
    assert set(methods.RAW_SERVER_NOTIFICATION_METHODS).isdisjoint(
        methods.SERVER_NOTIFICATION_METHODS
    )


# --- conformance: ask the real binary -------------------------------------------------------


def codex_binary() -> Path:
    import codex_cli_bin  # installed by the test extra (openai-codex-cli-bin==0.163.0)

    return codex_cli_bin.bundled_codex_path()


@pytest.mark.conformance
@pytest.mark.anyio
async def test_binary_lists_all_client_request_methods_in_its_unknown_variant_error(
    tmp_path: Path,
) -> None:
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    env = {"CODEX_HOME": str(codex_home), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    reply: dict[str, Any] = {}
    with anyio.fail_after(60):
        async with await anyio.open_process(
            [str(codex_binary()), "app-server"], env=env, stderr=subprocess.DEVNULL
        ) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            await process.stdin.send(b'{"id":1,"method":"foo/bar"}\n')
            buffer = b""
            while not reply:
                buffer += await process.stdout.receive()
                for line in buffer.split(b"\n")[:-1]:
                    message = json.loads(line)
                    if message.get("id") == 1:
                        reply = message
            process.terminate()
    text = reply["error"]["message"]
    assert text.startswith("Invalid request: unknown variant `foo/bar`, expected one of ")
    listed = re.findall(r"`([^`]+)`", text.split("expected one of", 1)[1])
    assert tuple(listed) == methods.ALL_CLIENT_REQUEST_METHODS


@pytest.mark.conformance
def test_binary_experimental_schema_adds_exactly_the_experimental_methods(
    tmp_path: Path,
) -> None:
    out = tmp_path / "schema"
    env = {"CODEX_HOME": str(tmp_path), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    subprocess.run(
        [str(codex_binary()), "app-server", "generate-json-schema", "--experimental", "--out",
         str(out)],
        env=env, check=True, timeout=120, capture_output=True,
    )  # fmt: skip
    client = schema_methods(out / "ClientRequest.json")
    assert [m for m in client if m not in methods.CLIENT_REQUEST_METHODS] == list(
        methods.EXPERIMENTAL_CLIENT_REQUEST_METHODS
    )
    assert [m for m in methods.ALL_CLIENT_REQUEST_METHODS if m not in client] == list(
        methods.LEGACY_CLIENT_REQUEST_METHODS
    )
    server = schema_methods(out / "ServerRequest.json")
    assert [m for m in server if m not in methods.SERVER_REQUEST_METHODS] == list(
        methods.EXPERIMENTAL_SERVER_REQUEST_METHODS
    )
    notifications = schema_methods(out / "ServerNotification.json")
    assert notifications == list(methods.SERVER_NOTIFICATION_METHODS)
