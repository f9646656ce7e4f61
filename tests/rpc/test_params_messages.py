"""Params errors carry the real server's serde wording.

Every expected message below was produced by the real ``codex app-server`` 0.163.0 for the same
params (the conformance test at the end re-checks them against the binary); the test models in
``_support`` mirror the real params structs for the fields used.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from codex_app_bridge.protocol.jsonrpc import ABSENT
from codex_app_bridge.rpc import INVALID_REQUEST, ModelParams, RpcError
from codex_app_bridge.rpc._serde import format_float, one_of, rust_debug_str, unknown_variant
from tests.rpc._support import InitializeParams, ThreadListParams, TurnStartParams

DECODERS: dict[str, ModelParams[Any]] = {
    "thread/list": ModelParams(ThreadListParams, field_count=16),
    "turn/start": ModelParams(TurnStartParams),
    "initialize": ModelParams(InitializeParams),
}

# (method, params as JSON text or None for absent, the real server's message)
REAL_SERVER_MESSAGES: list[tuple[str, str | None, str]] = [
    ("thread/list", None, "missing field `params`"),
    ("thread/list", "null", "missing field `params`"),
    ("thread/list", "[]", "invalid length 0, expected struct ThreadListParams with 16 elements"),
    (
        "thread/list",
        "[null]",
        "invalid length 1, expected struct ThreadListParams with 16 elements",
    ),
    ("thread/list", "[true]", "invalid type: boolean `true`, expected a string"),
    ("thread/list", '"str"', 'invalid type: string "str", expected struct ThreadListParams'),
    ("thread/list", "5", "invalid type: integer `5`, expected struct ThreadListParams"),
    ("thread/list", '{"limit":"x","archived":5}', 'invalid type: string "x", expected u32'),
    ("thread/list", '{"archived":5,"limit":"x"}', "invalid type: integer `5`, expected a boolean"),
    ("thread/list", '{"archived":"yes"}', 'invalid type: string "yes", expected a boolean'),
    ("thread/list", '{"limit":-1}', "invalid value: integer `-1`, expected u32"),
    ("thread/list", '{"limit":1.5}', "invalid type: floating point `1.5`, expected u32"),
    ("thread/list", '{"limit":1.0}', "invalid type: floating point `1.0`, expected u32"),
    ("thread/list", '{"limit":-0.0}', "invalid type: floating point `-0.0`, expected u32"),
    ("thread/list", '{"limit":1e20}', "invalid type: floating point `1e+20`, expected u32"),
    ("thread/list", '{"limit":1e16}', "invalid type: floating point `1e+16`, expected u32"),
    ("thread/list", '{"limit":1e-7}', "invalid type: floating point `1e-7`, expected u32"),
    ("thread/list", '{"limit":2.5e-10}', "invalid type: floating point `2.5e-10`, expected u32"),
    ("thread/list", '{"limit":1.5e300}', "invalid type: floating point `1.5e+300`, expected u32"),
    ("thread/list", '{"limit":0.0001}', "invalid type: floating point `0.0001`, expected u32"),
    ("thread/list", '{"cursor":{"a":1}}', "invalid type: map, expected a string"),
    ("thread/list", '{"cursor":[1]}', "invalid type: sequence, expected a string"),
    ("thread/list", '{"cursor":true}', "invalid type: boolean `true`, expected a string"),
    (
        "thread/list",
        '{"limit":"a\\"b\\n\\t\\\\c\'\u00e9\\u0001\\u007f\\u00a0\\u200b\U0001f600"}',
        'invalid type: string "a\\"b\\n\\t\\\\c\'\u00e9\\u{1}\\u{7f}\\u{a0}\\u{200b}\U0001f600",'
        " expected u32",
    ),
    ("thread/list", '{"sortDirection":"x"}', "unknown variant `x`, expected `asc` or `desc`"),
    ("thread/list", '{"sortDirection":5}', "invalid type: integer `5`, expected string or map"),
    (
        "thread/list",
        '{"sortDirection":["asc"]}',
        "invalid type: sequence, expected string or map",
    ),
    (
        "thread/list",
        '{"cwd":5}',
        "data did not match any variant of untagged enum ThreadListCwdFilter",
    ),
    ("thread/list", '{"sourceKinds":"x"}', 'invalid type: string "x", expected a sequence'),
    ("thread/list", '{"sourceKinds":[1]}', "invalid type: integer `1`, expected string or map"),
    ("thread/list", '{"useStateDbOnly":null}', "invalid type: null, expected a boolean"),
    ("turn/start", '{"threadId":"x","input":[{"text":"x"}]}', "missing field `type`"),
    (
        "turn/start",
        '{"threadId":"x","input":[5]}',
        "invalid type: integer `5`, expected internally tagged enum UserInput",
    ),
    ("turn/start", '{"threadId":"x","input":[{"type":"text"}]}', "missing field `text`"),
    (
        "turn/start",
        '{"threadId":"x","input":[{"type":"text","text":5}]}',
        "invalid type: integer `5`, expected a string",
    ),
    ("turn/start", '{"threadId":"x","input":{}}', "invalid type: map, expected a sequence"),
    ("turn/start", '{"threadId":123,"input":[]}', "invalid type: integer `123`, expected a string"),
    ("initialize", None, "missing field `params`"),
    ("initialize", "{}", "missing field `clientInfo`"),
    ("initialize", '{"clientInfo":{"name":5}}', "invalid type: integer `5`, expected a string"),
    (
        "initialize",
        '{"capabilities":{"experimentalApi":1}}',
        "invalid type: integer `1`, expected a boolean",
    ),
    ("initialize", '{"clientInfo":{},"capabilities":5}', "missing field `name`"),
    ("initialize", "[]", "invalid length 0, expected struct InitializeParams with 2 elements"),
]

# Our test models know fewer enum variants than the real structs, so these are ours only.
OWN_MODEL_MESSAGES: list[tuple[str, str | None, str]] = [
    (
        "thread/list",
        '{"sourceKinds":["bad"]}',
        "unknown variant `bad`, expected one of `cli`, `vscode`, `exec`",
    ),
    (
        "turn/start",
        '{"threadId":"x","input":[{"type":"bogus"}]}',
        "unknown variant `bogus`, expected `text` or `image`",
    ),
    ("thread/list", '{"config":5}', "invalid type: integer `5`, expected a map"),
    ("turn/start", '{"threadId":"x"}', "missing field `input`"),
    (
        "turn/start",
        '{"input":[{"type":"text","text":1}],"threadId":2}',
        "invalid type: integer `1`, expected a string",
    ),
]


def _decode(method: str, params: str | None) -> str:
    raw = ABSENT if params is None else orjson.loads(params)
    with pytest.raises(RpcError) as caught:
        DECODERS[method].decode(raw)
    assert caught.value.code == INVALID_REQUEST
    return caught.value.message


@pytest.mark.parametrize(("method", "params", "message"), REAL_SERVER_MESSAGES + OWN_MODEL_MESSAGES)
def test_params_error_message_is_the_real_servers(
    method: str, params: str | None, message: str
) -> None:
    assert _decode(method, params) == f"Invalid request: {message}"


def test_valid_params_decode_into_the_model_keeping_unknown_members() -> None:
    decoded = DECODERS["thread/list"].decode({"limit": 5, "cwd": ["/a"], "extra": {"kept": True}})
    assert isinstance(decoded, ThreadListParams)
    assert decoded.limit == 5
    assert decoded.cwd == ["/a"]
    assert decoded.model_extra == {"extra": {"kept": True}}


def test_validation_is_strict_like_serde() -> None:
    assert _decode("thread/list", '{"limit":"5"}') == (
        'Invalid request: invalid type: string "5", expected u32'
    )
    assert _decode("thread/list", '{"archived":1}') == (
        "Invalid request: invalid type: integer `1`, expected a boolean"
    )


@pytest.mark.parametrize(
    ("names", "text"),
    [
        (["a"], "`a`"),
        (["a", "b"], "`a` or `b`"),
        (["a", "b", "c"], "one of `a`, `b`, `c`"),
    ],
)
def test_alternatives_are_listed_as_serde_does(names: list[str], text: str) -> None:
    assert one_of(names) == text


def test_unknown_variant_without_variants_says_so() -> None:
    assert unknown_variant("x", []) == "unknown variant `x`, there are no variants"


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.5, "1.5"), (1.0, "1.0"), (1e16, "1e+16"), (1e-7, "1e-7"), (1e-5, "1e-5"), (-0.0, "-0.0")],
)
def test_floats_are_printed_as_the_real_server_does(value: float, text: str) -> None:
    assert format_float(value) == text


def test_strings_are_quoted_like_rust_debug() -> None:
    assert rust_debug_str('a"b\\\n\t\r\0 \u00e9\u0085') == '"a\\"b\\\\\\n\\t\\r\\0 \u00e9\\u{85}"'


def _real_codex() -> Path | None:
    try:
        import codex_cli_bin  # pyright: ignore[reportMissingImports, reportUnknownVariableType]
    except ImportError:
        return None
    binary = Path(codex_cli_bin.__file__).parent / "bin" / "codex"  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    return binary if binary.exists() else None


@pytest.mark.conformance
def test_real_binary_still_answers_these_messages() -> None:
    codex = _real_codex()
    if codex is None:
        pytest.skip("the real codex binary (openai-codex-cli-bin) is not installed")
    lines: list[bytes] = []
    for index, (method, params, _message) in enumerate(REAL_SERVER_MESSAGES):
        text = f'{{"id":{index},"method":"{method}"'
        text += "}" if params is None else f',"params":{params}}}'
        lines.append(text.encode())
    with tempfile.TemporaryDirectory() as home:
        proc = subprocess.Popen(
            [str(codex), "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "CODEX_HOME": home},
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        replies: dict[int, dict[str, Any]] = {}
        all_answered = threading.Event()

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                message = orjson.loads(line)
                if "id" in message:
                    replies[message["id"]] = message
                if len(replies) == len(lines):
                    all_answered.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            proc.stdin.write(b"\n".join(lines) + b"\n")
            proc.stdin.flush()
            # Keep stdin open until every answer is in: at EOF the real server skips requests
            # it has not started yet.
            all_answered.wait(timeout=60)
            proc.stdin.close()
            proc.wait(timeout=60)
            reader.join(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
            proc.stdout.close()
    got = {index: replies.get(index, {}).get("error", {}).get("message") for index in replies}
    expected = {
        index: f"Invalid request: {message}"
        for index, (_m, _p, message) in enumerate(REAL_SERVER_MESSAGES)
    }
    assert got == expected
