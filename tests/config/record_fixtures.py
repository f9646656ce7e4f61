"""Record what the real ``codex app-server`` 0.163.0 answers about config, as test fixtures.

    .venv/bin/python -m tests.config.record_fixtures      # rewrites tests/data/config/*.json

Each case runs the binary (the ``test`` extra's ``openai-codex-cli-bin``) with a scratch
``CODEX_HOME`` holding the case's ``config.toml``, sends the case's requests and keeps every
answer, the ``configWarning`` notifications and the file after each write. Paths are written as
``<home>`` and ``<cwd>``; the bubblewrap warning (about the machine, not the config) is dropped.
The unit tests hold the bridge's pure functions to these answers without running the binary; the
conformance tests run both servers live.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from tests.config.cases import (
    ACCOUNT_REQUESTS,
    MODEL_LIST_REQUESTS,
    SEMANTIC_CASES,
    SYNTAX_CASES,
    WRITE_SEQUENCES,
)
from tests.conformance._realpeer import Peer, real_peer

OUT = Path(__file__).resolve().parents[1] / "data" / "config"
_PROBES = ("thread/start", "config/read", "modelProvider/capabilities/read")


def _clean(value: Any, home: Path, cwd: Path) -> Any:
    text = json.dumps(value)
    text = text.replace(str(home), "<home>").replace(str(cwd), "<cwd>")
    return json.loads(text)


def _warnings(peer: Peer) -> list[dict[str, Any]]:
    found = [
        n["params"]
        for n in peer.notifications
        if n.get("method") == "configWarning" and "bubblewrap" not in n["params"]["summary"]
    ]
    peer.notifications.clear()
    return found


def _answer(peer: Peer, method: str, params: Any) -> Any:
    reply = peer.call(method, params)
    if "error" in reply:
        return {"error": reply["error"]}
    result = reply["result"]
    if isinstance(result, dict) and "thread" in result:
        result = {k: v for k, v in result.items() if k != "thread"}
    return {"result": result}


def _run(config: str | None, requests: list[tuple[str, Any]], *, cat: str | None = None) -> Any:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        home, cwd = root / "home", root / "work"
        home.mkdir()
        cwd.mkdir()
        if config is not None:
            (home / "config.toml").write_text(config, encoding="utf-8")
        with real_peer(home, cwd) as peer:
            steps: list[dict[str, Any]] = []
            peer.call("model/list", {"limit": 1})  # collects what follows initialize
            startup = _warnings(peer)
            for method, params in requests:
                step: dict[str, Any] = {"method": method, "params": params}
                step["answer"] = _answer(peer, method, params)
                warnings = _warnings(peer)
                if warnings:
                    step["configWarnings"] = warnings
                if cat is not None:
                    path = home / cat
                    step["file"] = path.read_text("utf-8") if path.exists() else None
                steps.append(step)
            return _clean({"startup": startup, "steps": steps}, home, cwd)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    probes = [(method, {}) for method in _PROBES]
    syntax = {name: _run(text, probes) for name, text in SYNTAX_CASES.items()}
    (OUT / "syntax_errors.json").write_text(json.dumps(syntax, indent=1) + "\n")
    semantic = {name: _run(text, probes) for name, text in SEMANTIC_CASES.items()}
    (OUT / "semantic_errors.json").write_text(json.dumps(semantic, indent=1) + "\n")
    writes = {
        name: {"config": text, **_run(text, requests, cat="config.toml")}
        for name, (text, requests) in WRITE_SEQUENCES.items()
    }
    (OUT / "writes.json").write_text(json.dumps(writes, indent=1, ensure_ascii=False) + "\n")
    pages = _run(None, MODEL_LIST_REQUESTS)
    (OUT / "model_list.json").write_text(json.dumps(pages, indent=1) + "\n")
    account = _run(None, ACCOUNT_REQUESTS, cat="auth.json")
    (OUT / "account.json").write_text(json.dumps(account, indent=1) + "\n")


if __name__ == "__main__":
    main()
