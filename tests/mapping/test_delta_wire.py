"""The delta rows write, byte for byte, what the model path writes for the same event: keys,
key order, escaping and ``emittedAtMs`` included."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codex_app_bridge.mapping import DELTA_ROWS, item_event_to_server_notification
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol._base import dump_json
from codex_app_bridge.rpc.outbox import OutboundNotification

THREAD = "01a2aaaa-0000-7000-8000-000000000001"
TURN = "01a2aaaa-0000-7000-8000-0000000000a1"
AT = 1_796_000_000_123

# text with what JSON escapes: quotes, backslashes, control characters, non-ASCII, U+2028
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=40
) | st.sampled_from(['"\\/', "\x00\x1f\x7f", "\u2028\u2029", "é😀", "\b\f\n\r\t"])


def _model_path(msg: core.EventMsg) -> bytes | None:
    notification = item_event_to_server_notification(msg, THREAD, TURN)
    if notification is None:
        return None
    params = dump_json(notification.params)
    return OutboundNotification.encode(str(notification.method), params, emitted_at_ms=AT).data


def _row_path(msg: core.EventMsg) -> bytes | None:
    row = DELTA_ROWS[type(msg)]
    return row.encode(msg, THREAD, TURN, AT)


def _events(text: str, index: int) -> list[Any]:
    return [
        core.AgentMessageContentDeltaEvent(item_id=f"msg_{text}", delta=text),
        core.PlanDeltaEvent(item_id="plan", delta=text),
        core.ReasoningContentDeltaEvent(item_id="rs", delta=text, summary_index=index),
        core.ReasoningRawContentDeltaEvent(item_id="rs", delta=text, content_index=index),
        core.AgentReasoningSectionBreakEvent(item_id=text, summary_index=index),
        core.ExecCommandOutputDeltaEvent.from_bytes("call", "stdout", text.encode()),
    ]


def test_every_delta_row_has_a_model_path_and_the_same_method() -> None:
    for event in _events("x", 0):
        notification = item_event_to_server_notification(event, THREAD, TURN)
        assert notification is not None
        assert DELTA_ROWS[type(event)].method == str(notification.method)
    assert {type(event) for event in _events("x", 0)} == set(DELTA_ROWS)


@given(text=TEXT, index=st.integers(min_value=0, max_value=2**31))
def test_delta_rows_are_byte_equal_to_the_model_path(text: str, index: int) -> None:
    for event in _events(text, index):
        assert _row_path(event) == _model_path(event), type(event).__name__


@pytest.mark.parametrize("chunk", ["not base64!", "@@@"])
def test_a_command_output_chunk_that_is_not_base64_shows_nothing_on_both_paths(chunk: str) -> None:
    event = core.ExecCommandOutputDeltaEvent(call_id="c", stream="stdout", chunk=chunk)
    assert _model_path(event) is None
    assert _row_path(event) is None


def test_the_idle_release_forgets_the_last_delta_the_rows_encoded() -> None:
    # issue 23's soak: the rows' single-entry memos kept the last delta's ids, tuples and bytes,
    # made under load, among the few live blocks of arenas the load had filled (each 1 MiB kept
    # resident by them); the release lets go of them
    from codex_app_bridge._gc import release_memory
    from codex_app_bridge.mapping import _delta_wire

    memo = _delta_wire._memo  # pyright: ignore[reportPrivateUsage]
    item = "msg_memo"
    DELTA_ROWS[core.AgentMessageContentDeltaEvent].encode(
        core.AgentMessageContentDeltaEvent(item_id=item, delta="x"), THREAD, TURN, AT
    )
    assert memo.ids[0] == (item, THREAD, TURN)
    assert memo.tail[0] == AT
    release_memory()
    assert memo.ids == (None, b"")
    assert memo.tail == (None, b"")
