"""Two ``serve`` processes on one CODEX_HOME at the same time store their threads side by side,
and a third lists and reads both."""

from __future__ import annotations

from pathlib import Path

from tests.conformance._realpeer import Peer
from tests.conftest import bridge_command, bridge_env


def _bridge(home: Path) -> Peer:
    return Peer(
        [*bridge_command(), "serve", "--pace", "0", "--codex-home", str(home)],
        bridge_env(),
        home.parent,
    )


def test_two_servers_on_one_home_store_both_threads(tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    with _bridge(home) as one, _bridge(home) as two:
        a = one.result("thread/start", {})["thread"]["id"]
        b = two.result("thread/start", {})["thread"]["id"]
        one.run_turn(a, "from one")
        two.run_turn(b, "from two")
        one.run_turn(a, "one again")
        assert {t["id"] for t in one.result("thread/list", {})["data"]} == {a, b}
        assert {t["id"] for t in two.result("thread/list", {})["data"]} == {a, b}
    with _bridge(home) as third:
        for thread_id, turns in ((a, 2), (b, 1)):
            read = third.result("thread/read", {"threadId": thread_id, "includeTurns": True})
            assert len(read["thread"]["turns"]) == turns
