"""Helpers of the mapping tests: the real 0.163.0 captures paired up, and schema validation of
what the mapper writes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.protocols import Validator

from codex_app_bridge.protocol import core
from tests.conftest import CAPTURE_NAMES, CAPTURES_DIR

ROOT = Path(__file__).resolve().parents[2]
VENDORED_DIR = ROOT / "protocol-schemas" / "codex-app-server" / "0.163.0"


@cache
def notification_validator() -> Validator:
    """Validator of the vendored ``ServerNotification.json`` (method + params envelope)."""
    schema = json.loads((VENDORED_DIR / "ServerNotification.json").read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def schema_errors(notification: dict[str, Any]) -> list[str]:
    """Why the written notification does not validate against the vendored schema (none: [])."""
    return [
        f"{list(e.absolute_path)}: {e.message}"
        for e in notification_validator().iter_errors(notification)
    ]


@dataclass(frozen=True)
class CapturedItem:
    """A core ``item_completed`` event of a rollout, with the notifications the server sent for
    that item: ``sent["started"]`` and ``sent["completed"]``, whole lines (``emittedAtMs``
    included)."""

    capture: str
    event: core.ItemCompletedEvent
    sent: dict[str, dict[str, Any]]

    @property
    def label(self) -> str:
        item = self.sent["completed"]["params"]["item"]
        return f"{self.capture}:{item['type']}:{item['id']}"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@cache
def captured_items() -> tuple[CapturedItem, ...]:
    """Every ``item_completed`` persisted in the captures' rollouts, each paired with the
    ``item/started`` and ``item/completed`` the real server sent for it (same thread and item)."""
    pairs: list[CapturedItem] = []
    for capture in CAPTURE_NAMES:
        folder = CAPTURES_DIR / capture
        sent: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        for line in _jsonl(folder / "notifications.jsonl"):
            if line.get("method") in ("item/started", "item/completed"):
                key = (line["params"]["threadId"], line["params"]["item"]["id"])
                sent.setdefault(key, {})[line["method"].removeprefix("item/")] = line
        for rollout in sorted(folder.glob("rollout*.jsonl")):
            for line in _jsonl(rollout):
                payload = line.get("payload", {})
                if line["type"] != "event_msg" or payload.get("type") != "item_completed":
                    continue
                event = core.EVENT_MSG_ADAPTER.validate_python(payload)
                assert isinstance(event, core.ItemCompletedEvent)
                key = (event.thread_id, payload["item"]["id"])
                assert sent.get(key, {}).keys() == {"started", "completed"}, (capture, key)
                pairs.append(CapturedItem(capture, event, sent[key]))
    return tuple(pairs)
