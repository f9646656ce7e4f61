"""Validation of server messages against the vendored codex app-server 0.163.0 JSON Schemas."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.protocols import Validator

from codex_app_bridge.protocol.v2.methods import RAW_SERVER_NOTIFICATION_METHODS

ROOT = Path(__file__).resolve().parents[2]
VENDORED = ROOT / "protocol-schemas" / "codex-app-server" / "0.163.0"

_RAW_DEFINITIONS = {
    "rawResponseItem/completed": "RawResponseItemCompletedNotification",
    "rawResponse/completed": "RawResponseCompletedNotification",
}


@cache
def _load(relative: str) -> dict[str, Any]:
    return json.loads((VENDORED / relative).read_text(encoding="utf-8"))


@cache
def file_validator(relative: str) -> Validator:
    schema = _load(relative)
    return jsonschema.validators.validator_for(schema)(schema)


@cache
def definition_validator(name: str) -> Validator:
    bundle = _load("codex_app_server_protocol.v2.schemas.json")
    return jsonschema.validators.validator_for(bundle)({**bundle, "$ref": f"#/definitions/{name}"})


@cache
def variant_validator(relative: str, method: str) -> Validator:
    """The validator of ``relative`` (a ``oneOf`` of one variant per method, each naming its
    method in a one-value ``enum``) with the ``oneOf`` cut down to ``method``'s variant: the
    same verdict as the whole file for a message with that method (every other variant fails
    on the method), without trying 85 variants per message; the whole file for a method it
    does not know (so the message fails as it would)."""
    schema = _load(relative)
    variants = [
        variant
        for variant in schema["oneOf"]
        if variant.get("properties", {}).get("method", {}).get("enum") == [method]
    ]
    if len(variants) != 1:
        return file_validator(relative)
    narrowed = {**schema, "oneOf": variants}
    return jsonschema.validators.validator_for(narrowed)(narrowed)


@cache
def _params_of() -> dict[str, str]:
    out: dict[str, str] = {}
    for variant in _load("ClientRequest.json")["oneOf"]:
        ref = variant["properties"].get("params", {}).get("$ref")
        if ref:
            out[variant["properties"]["method"]["enum"][0]] = ref.split("/")[-1]
    return out


_RESPONSES = {
    # results whose schema is not named after the params (none, shared, or nullable params)
    "account/logout": "v2/LogoutAccountResponse.json",
    "account/rateLimits/read": "v2/GetAccountRateLimitsResponse.json",
    "account/usage/read": "v2/GetAccountTokenUsageResponse.json",
    "config/value/write": "v2/ConfigWriteResponse.json",
    "config/batchWrite": "v2/ConfigWriteResponse.json",
}


def response_schema(method: str) -> str | None:
    """The vendored file of the result of ``method`` (``None`` if there is none)."""
    if method in _RESPONSES:
        return _RESPONSES[method]
    params = _params_of().get(method)
    if params is None:
        return None
    name = params.removesuffix("Params") + "Response"
    for folder in ("", "v1/", "v2/"):
        if (VENDORED / folder / f"{name}.json").exists():
            return f"{folder}{name}.json"
    return None


def _errors(validator: Validator, value: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(value)
    ]


def check_server_message(message: dict[str, Any], answered_method: str | None) -> list[str]:
    """Schema problems of one message the server wrote (empty when it is valid)."""
    if "jsonrpc" in message:
        return ["carries a jsonrpc member"]
    if "method" in message and "id" not in message:
        method = message["method"]
        if method in RAW_SERVER_NOTIFICATION_METHODS:
            problems = _errors(definition_validator(_RAW_DEFINITIONS[method]), message["params"])
        else:
            validator = variant_validator("ServerNotification.json", str(method))
            problems = _errors(validator, message)
        if not isinstance(message.get("emittedAtMs"), int):
            problems.append("notification without an integer emittedAtMs")
        return problems
    if "method" in message:
        return _errors(variant_validator("ServerRequest.json", str(message["method"])), message)
    if "error" in message:
        return _errors(file_validator("JSONRPCError.json"), message)
    problems = _errors(file_validator("JSONRPCResponse.json"), message)
    if answered_method is None:
        return [*problems, "a response to no request we sent"]
    if answered_method.startswith("bridge/"):
        return (
            problems  # the bridge's own extension methods (--allow-inject) have no 0.163.0 schema
        )
    schema = response_schema(answered_method)
    if schema is None:
        return [*problems, f"no vendored response schema for {answered_method}"]
    return problems + _errors(file_validator(schema), message["result"])
