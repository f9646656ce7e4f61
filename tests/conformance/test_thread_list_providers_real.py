"""``thread/list`` and ``modelProviders`` against the real 0.163.0 binary: three stored threads (the
server's default provider, another one, none recorded) in a scratch home for each server.

0.163.0: ``[]`` lists every provider's threads, a list only those providers', a thread whose
``session_meta`` names no provider is the default provider's (listed and shown as it); absent or
``null`` lists only the configured provider's. The bridge has no provider configuration of its
own: absent or ``null`` lists every provider's (a documented difference, asserted here so that a
change on either side is seen)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from codex_app_bridge.protocol import core
from codex_app_bridge.storage import CodexHome, RolloutWriter, session_meta
from tests.conformance._realpeer import MockModel, Peer, real_peer
from tests.conftest import CAPTURES_DIR, bridge_command, bridge_env

pytestmark = pytest.mark.conformance

THREADS = ["01a2eeee-0000-7000-8000-000000000000", "01a2eeee-0000-7000-8000-000000000001", "01a2eeee-0000-7000-8000-000000000002"]  # fmt: skip
"""The default provider's, ``other``'s, and one without a provider."""


def _store(home: Path, cwd: Path, default: str) -> None:
    lines = core.iter_rollout_jsonl((CAPTURES_DIR / "plain" / "rollout.jsonl").read_bytes())
    events = [line.payload for line in lines if isinstance(line, core.EventMsgLine)]
    for index, (thread_id, provider) in enumerate(zip(THREADS, [default, "other", None], strict=True)):  # fmt: skip
        created = datetime.now(UTC) - timedelta(minutes=10 - index)
        path = CodexHome(home).new_rollout_path(thread_id, created.astimezone())
        meta = session_meta(
            thread_id=thread_id,
            created=created,
            cwd=str(cwd),
            originator="x",
            model_provider=provider,
        )
        writer = RolloutWriter.create(path, meta)
        for event in events:
            writer.append_event(event)
        writer.close()


def _lists(peer: Peer, default: str) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for label, params in [
        ("absent", {}),
        ("null", {"modelProviders": None}),
        ("[]", {"modelProviders": []}),
        ("[other]", {"modelProviders": ["other"]}),
        ("[default]", {"modelProviders": [default]}),
        ("[default, other]", {"modelProviders": [default, "other"]}),
    ]:
        data = peer.result("thread/list", params)["data"]
        shown[label] = sorted(
            (
                THREADS.index(t["id"]),
                "default" if t["modelProvider"] == default else t["modelProvider"],
            )
            for t in data
        )
    return shown


def test_model_provider_filters_of_thread_list_agree_with_the_real_binary(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    real_home, bridge_home = tmp_path / "real", tmp_path / "bridge"
    with MockModel() as model:
        model.write_config(real_home)  # its configured provider: mock
        _store(real_home, cwd, "mock")
        with real_peer(real_home, cwd) as real:
            theirs = _lists(real, "mock")
    bridge_env_ = bridge_env({"CODEX_HOME": str(bridge_home)})
    with Peer([*bridge_command(), "serve", "--pace", "0"], bridge_env_, cwd) as bridge:
        default = bridge.result("thread/start", {})["modelProvider"]
        _store(bridge_home, cwd, default)
        ours = _lists(bridge, default)
    everything = [(0, "default"), (1, "other"), (2, "default")]
    assert theirs == {
        "absent": [(0, "default"), (2, "default")],
        "null": [(0, "default"), (2, "default")],
        "[]": everything,
        "[other]": [(1, "other")],
        "[default]": [(0, "default"), (2, "default")],
        "[default, other]": everything,
    }
    assert ours == {**theirs, "absent": everything, "null": everything}
