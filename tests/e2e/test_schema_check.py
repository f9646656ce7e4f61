"""The harness's schema check judges a notification or server request by its method's variant
alone (``_schemas.variant_validator``): its verdict must be the whole ``oneOf``'s, on the real
binary's own messages and on broken ones."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import CAPTURE_NAMES, CAPTURES_DIR, DATA_DIR
from tests.e2e._schemas import _errors, file_validator, variant_validator

FILES = {"notification": "ServerNotification.json", "request": "ServerRequest.json"}


def _real_messages() -> dict[str, tuple[str, dict[str, Any]]]:
    """One message the real binary wrote per method: its notifications (the captures) and its
    requests to the client (the request captures)."""
    files = [CAPTURES_DIR / name / "transcript.jsonl" for name in CAPTURE_NAMES]
    files += sorted((DATA_DIR / "request_captures").glob("**/*.jsonl"))
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            message = record.get("msg") or {}
            if record.get("dir") == "s2c" and "method" in message:
                kind = "request" if "id" in message else "notification"
                out.setdefault(f"{kind} {message['method']}", (kind, message))
    return out


REAL = _real_messages()


def _broken(kind: str, message: dict[str, Any]) -> list[dict[str, Any]]:
    other = "turn/completed" if message["method"] != "turn/completed" else "thread/started"
    return [
        {k: v for k, v in message.items() if k != "params"},
        {**message, "params": {}},
        {**message, "params": {**message["params"], "threadId": 7}},
        {**message, "method": "no/such/method"},
        {**message, "method": 3},
        {**message, "method": other if kind == "notification" else "item/tool/call"},
    ]


def _verdicts(kind: str, message: dict[str, Any]) -> tuple[bool, bool]:
    narrowed = variant_validator(FILES[kind], str(message.get("method")))
    return not _errors(file_validator(FILES[kind]), message), not _errors(narrowed, message)


def test_the_captures_hold_notifications_and_server_requests() -> None:
    kinds = [kind for kind, _ in REAL.values()]
    assert kinds.count("notification") > 15
    assert kinds.count("request") >= 2


@pytest.mark.parametrize("label", sorted(REAL))
def test_a_real_message_and_its_broken_copies_get_the_whole_files_verdict(label: str) -> None:
    kind, message = REAL[label]
    assert _verdicts(kind, message) == (True, True)
    for broken in _broken(kind, message):
        whole, narrowed = _verdicts(kind, broken)
        assert narrowed == whole, broken
