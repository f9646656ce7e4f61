"""Real 0.163.0 traffic through the v2 wire models: every line the real server wrote parses,
is written back byte-for-byte equal as JSON (same null-versus-absent choices), and what we write
validates against the vendored upstream schema."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from jsonschema.protocols import Validator

from codex_app_bridge.protocol import v2
from tests.conftest import CAPTURE_NAMES, CAPTURES_DIR

ROOT = Path(__file__).resolve().parents[2]
VENDORED_DIR = ROOT / "protocol-schemas" / "codex-app-server" / "0.163.0"

# capture -> (notifications, responses, server-to-client requests) in its notifications.jsonl;
# a capture that silently stops being read fails here.
EXPECTED_SERVER_LINES: dict[str, tuple[int, int, int]] = {
    "apply_patch": (26, 4, 0),
    "error_fatal": (13, 4, 0),
    "interrupt": (32, 5, 0),
    "plain": (86, 4, 0),
    "reasoning": (50, 4, 0),
    "revert_fork": (77, 10, 0),
    "shell": (31, 4, 0),
    "stream_retry": (32, 4, 0),
}
# response_item lines over all rollout files: replayed as rawResponseItem/completed items
EXPECTED_RAW_RESPONSE_ITEMS = 41


def load_vendored(relative: str) -> dict[str, Any]:
    return json.loads((VENDORED_DIR / relative).read_text(encoding="utf-8"))


@cache
def validator(relative: str) -> Validator:
    """A validator of a vendored schema file, for the draft its ``$schema`` names."""
    schema = load_vendored(relative)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@cache
def definition_validator(name: str) -> Validator:
    """A validator of one definition of the v2 bundle (for types no top-level file holds)."""
    bundle = load_vendored("codex_app_server_protocol.v2.schemas.json")
    return jsonschema.validators.validator_for(bundle)({**bundle, "$ref": f"#/definitions/{name}"})


@cache
def client_request_params() -> dict[str, str | None]:
    """method -> name of its params definition, from the vendored ClientRequest.json."""
    out: dict[str, str | None] = {}
    for variant in load_vendored("ClientRequest.json")["oneOf"]:
        ref = variant["properties"].get("params", {}).get("$ref")
        out[variant["properties"]["method"]["enum"][0]] = ref.split("/")[-1] if ref else None
    return out


def response_name(method: str) -> str:
    """Upstream's naming: the answer to ``ThreadStartParams`` is ``ThreadStartResponse``."""
    params = client_request_params()[method]
    assert params is not None, method
    assert params.endswith("Params"), method
    return params.removesuffix("Params") + "Response"


def response_schema_file(method: str) -> str:
    name = response_name(method)
    for folder in ("", "v1/", "v2/"):
        if (VENDORED_DIR / folder / f"{name}.json").exists():
            return f"{folder}{name}.json"
    raise AssertionError(f"no vendored schema file for {name}")


@dataclass(frozen=True)
class ServerLine:
    """One line the real server wrote on stdout."""

    capture: str
    number: int
    text: str
    message: dict[str, Any]
    kind: str  # "notification" | "response" | "request"
    method: str  # of the notification or request; of the answered request for a response

    @property
    def where(self) -> str:
        return f"{self.capture}/notifications.jsonl:{self.number} ({self.kind} {self.method})"


def server_lines(capture: str) -> list[ServerLine]:
    """Every line of a capture's ``notifications.jsonl``; a response takes its method from the
    client request with the same id in ``transcript.jsonl``."""
    folder = CAPTURES_DIR / capture
    request_methods: dict[Any, str] = {}
    for line in (folder / "transcript.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        msg = entry["msg"]
        if entry["dir"] == "c2s" and "id" in msg and "method" in msg:
            request_methods[msg["id"]] = msg["method"]
    lines: list[ServerLine] = []
    text = (folder / "notifications.jsonl").read_text(encoding="utf-8")
    for number, raw in enumerate(text.splitlines(), start=1):
        message = json.loads(raw)
        if "method" in message:
            kind = "request" if "id" in message else "notification"
            method = message["method"]
        else:
            kind = "response"
            method = request_methods[message["id"]]
        lines.append(ServerLine(capture, number, raw, message, kind, method))
    return lines


def reencode(line: ServerLine) -> dict[str, Any]:
    """Parse one server line with our models and write it back as JSON data."""
    if line.kind == "notification":
        notification = v2.parse_server_notification(line.text)
        assert not isinstance(notification, v2.UnknownServerNotification), line.where
        return json.loads(v2.dump_json(notification))
    if line.kind == "request":
        request = v2.parse_server_request(line.text)
        assert not isinstance(request, v2.UnknownServerRequest), line.where
        return json.loads(v2.dump_json(request))
    model: type[v2.WireModel] = getattr(v2, response_name(line.method))
    result = model.model_validate_json(json.dumps(line.message["result"]))
    return {"id": line.message["id"], "result": json.loads(v2.dump_json(result))}


def test_every_capture_folder_is_counted() -> None:
    assert sorted(EXPECTED_SERVER_LINES) == CAPTURE_NAMES
    assert sum(sum(counts) for counts in EXPECTED_SERVER_LINES.values()) == 386


@pytest.mark.parametrize("capture", CAPTURE_NAMES)
def test_capture_holds_the_expected_server_lines(capture: str) -> None:
    lines = server_lines(capture)
    counts = tuple(
        sum(1 for line in lines if line.kind == kind)
        for kind in ("notification", "response", "request")
    )
    assert counts == EXPECTED_SERVER_LINES[capture]


@pytest.mark.parametrize("capture", CAPTURE_NAMES)
def test_every_server_line_round_trips_to_equal_json(capture: str) -> None:
    mismatches = [line.where for line in server_lines(capture) if reencode(line) != line.message]
    assert mismatches == []


@pytest.mark.parametrize("capture", CAPTURE_NAMES)
def test_rewritten_notifications_validate_against_the_vendored_schema(capture: str) -> None:
    schema = validator("ServerNotification.json")
    failures = [
        f"{line.where}: {error.message}"
        for line in server_lines(capture)
        if line.kind == "notification"
        for error in schema.iter_errors(reencode(line))
    ]
    assert failures == []


@pytest.mark.parametrize("capture", CAPTURE_NAMES)
def test_rewritten_responses_validate_against_their_response_schema(capture: str) -> None:
    failures = [
        f"{line.where}: {error.message}"
        for line in server_lines(capture)
        if line.kind == "response"
        for error in validator(response_schema_file(line.method)).iter_errors(
            reencode(line)["result"]
        )
    ]
    assert failures == []


def captured_response_items() -> list[tuple[str, dict[str, Any]]]:
    """(where, core ResponseItem JSON) of every ``response_item`` line of every rollout."""
    items: list[tuple[str, dict[str, Any]]] = []
    for rollout in sorted(CAPTURES_DIR.glob("*/rollout*.jsonl")):
        for number, raw in enumerate(rollout.read_text(encoding="utf-8").splitlines(), 1):
            line = json.loads(raw)
            if line.get("type") == "response_item":
                items.append((f"{rollout.parent.name}/{rollout.name}:{number}", line["payload"]))
    return items


def test_captured_response_items_replay_as_raw_response_item_notifications() -> None:
    # The raw event carries core's ResponseItem as is; the rollouts hold real ones.
    items = captured_response_items()
    assert len(items) == EXPECTED_RAW_RESPONSE_ITEMS
    params_schema = definition_validator("RawResponseItemCompletedNotification")
    failures: list[str] = []
    for where, item in items:
        message = {
            "method": "rawResponseItem/completed",
            "params": {"threadId": "thr", "turnId": "turn", "item": item},
            "emittedAtMs": 1796000091066,
        }
        parsed = v2.parse_server_notification(json.dumps(message))
        assert isinstance(parsed, v2.RawResponseItemCompletedServerNotification), where
        written = json.loads(v2.dump_json(parsed))
        if written != message:
            failures.append(f"{where}: round trip differs")
        failures += [f"{where}: {e.message}" for e in params_schema.iter_errors(written["params"])]
    assert failures == []


@pytest.mark.parametrize(
    "params",
    [
        {"threadId": "thr", "turnId": "turn", "responseId": "resp_1", "usage": None,
         "usageMetadata": None},
        {
            "threadId": "thr",
            "turnId": "turn",
            "responseId": "resp_1",
            "usage": {"totalTokens": 30, "inputTokens": 20, "cachedInputTokens": 5,
                      "cacheWriteInputTokens": 0, "outputTokens": 10, "reasoningOutputTokens": 2},
            "usageMetadata": {"amount": "0.01", "metadata": {"tier": "x"}},
        },
    ],
)  # fmt: skip
def test_raw_response_completed_notification_round_trips_and_validates(
    params: dict[str, Any],
) -> None:
    message = {"method": "rawResponse/completed", "params": params, "emittedAtMs": 5}
    parsed = v2.parse_server_notification(json.dumps(message))
    assert isinstance(parsed, v2.RawResponseCompletedServerNotification)
    written = json.loads(v2.dump_json(parsed))
    assert written == message
    errors = definition_validator("RawResponseCompletedNotification").iter_errors(written["params"])
    assert [e.message for e in errors] == []


@pytest.mark.parametrize("capture", CAPTURE_NAMES)
def test_every_captured_client_message_parses_into_its_typed_model(capture: str) -> None:
    # what real clients send is what the bridge has to read
    transcript = (CAPTURES_DIR / capture / "transcript.jsonl").read_text(encoding="utf-8")
    untyped: list[str] = []
    for number, line in enumerate(transcript.splitlines(), start=1):
        entry = json.loads(line)
        msg = entry["msg"]
        if entry["dir"] != "c2s":
            continue
        if "id" in msg:
            parsed = v2.parse_client_request(json.dumps(msg))
            if isinstance(parsed, v2.UnknownClientRequest):
                untyped.append(f"{capture}/transcript.jsonl:{number} {msg['method']}")
        else:
            v2.ClientNotification.model_validate(msg)
    assert untyped == []


# An approval request as the real 0.163.0 server sent it to a client that opted into the
# experimental API (docs: a probed item/commandExecution/requestApproval; ids and paths filled in):
# the fields it leaves out stay out, the experimental availableDecisions is kept as an extra.
PROBED_APPROVAL_REQUEST = {
    "method": "item/commandExecution/requestApproval",
    "id": 0,
    "params": {
        "kind": "command",
        "threadId": "01a229f2-8bc4-7672-b5c6-4900240ba28b",
        "turnId": "01a229f2-8bdb-7531-b5d1-d09e8deaf5cb",
        "itemId": "call_1",
        "startedAtMs": 1796000091066,
        "environmentId": "local",
        "reason": "probe wants to run echo",
        "command": "/bin/bash -lc 'echo hi'",
        "cwd": "/home/dev/project",
        "commandActions": [{"type": "unknown", "command": "echo hi"}],
        "proposedExecpolicyAmendment": ["echo", "hi"],
        "availableDecisions": [
            "accept",
            {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["echo", "hi"]}},
            "cancel",
        ],
    },
}


def test_probed_approval_request_round_trips_and_validates() -> None:
    parsed = v2.parse_server_request(json.dumps(PROBED_APPROVAL_REQUEST))
    assert isinstance(parsed, v2.ItemCommandExecutionRequestApprovalServerRequest)
    assert parsed.params.approval_id is None
    written = json.loads(v2.dump_json(parsed))
    assert written == PROBED_APPROVAL_REQUEST
    assert [e.message for e in validator("ServerRequest.json").iter_errors(written)] == []
