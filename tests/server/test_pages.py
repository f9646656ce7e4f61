"""History pages over a real 0.163.0 rollout: the cursors are the ones the binary wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codex_app_bridge.rpc import RpcError
from codex_app_bridge.server._pages import HistoryPages, positioned_events
from codex_app_bridge.storage import CodexHome, ThreadCatalog
from tests.conftest import CAPTURES_DIR
from tests.storage._homes import home_from_capture

MAIN = "01a229f2-bbfe-7a20-9d7f-35a05b666f52"


def _revert_response() -> dict[str, object]:
    for raw in (CAPTURES_DIR / "revert_fork" / "notifications.jsonl").read_text().splitlines():
        message = json.loads(raw)
        if message.get("id") == 4:
            result: dict[str, object] = message["result"]
            return result
    raise AssertionError("no thread/revert response in the capture")


@pytest.fixture
def pages(tmp_path: Path) -> HistoryPages:
    home_from_capture("revert_fork", tmp_path)
    catalog = ThreadCatalog(CodexHome(tmp_path))
    thread = catalog.find(MAIN)
    assert thread is not None
    return HistoryPages(MAIN, positioned_events(catalog.history(thread)))


def test_backwards_cursors_are_the_ones_the_binary_answered_after_the_revert(
    pages: HistoryPages,
) -> None:
    expected = _revert_response()
    turns = pages.turns(items_view=None, direction=None, cursor=None, limit=1)
    items = pages.items(turn_id=None, direction="desc", cursor=None, limit=1)
    assert turns.backwards_cursor == expected["turnsBackwardsCursor"]
    assert items.backwards_cursor == expected["itemsBackwardsCursor"]


def test_a_cursor_of_another_scope_or_shape_is_invalid(pages: HistoryPages) -> None:
    items = pages.items(turn_id=None, direction=None, cursor=None, limit=1)
    assert items.next_cursor is not None
    for bad in (items.next_cursor, "zzz", "[]", '{"rolloutOrdinal": 1}'):
        with pytest.raises(RpcError) as raised:
            pages.turns(items_view=None, direction=None, cursor=bad, limit=None)
        assert (raised.value.code, raised.value.message) == (-32600, f"invalid cursor: {bad}")


def test_an_item_anchor_needs_a_turn_id(pages: HistoryPages) -> None:
    class Anchor:
        item_id = "msg_plain_0"

    with pytest.raises(RpcError) as raised:
        pages.items(turn_id=None, direction=None, cursor=Anchor(), limit=None)
    assert raised.value.code == -32602
    assert raised.value.message == "turnId is required when cursor is an item anchor"
