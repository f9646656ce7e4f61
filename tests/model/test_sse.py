"""The SSE decoder: framing by the SSE rules, the JSON ``type`` deciding, bad data skipped, any
chunking of a stream giving the same events, events of any size."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_app_bridge.model._sse import SSEDecoder


def decode(*chunks: bytes) -> list[dict[str, Any]]:
    decoder = SSEDecoder()
    events: list[dict[str, Any]] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.close()


A = {"type": "a", "n": 1}
B = {"type": "b", "text": "x\ny"}


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        (b'event: a\ndata: {"type":"a","n":1}\n\n', [A]),
        (b'data: {"type":"a","n":1}\n\n', [A]),
        (b'data:{"type":"a","n":1}\n\n', [A]),
        # the event name does not matter: the JSON type decides
        (b'event: zzz\ndata: {"type":"a","n":1}\n\n', [A]),
        (b'event: a\r\ndata: {"type":"a","n":1}\r\n\r\n', [A]),
        (b'event: a\rdata: {"type":"a","n":1}\r\r', [A]),
        (b'\xef\xbb\xbfdata: {"type":"a","n":1}\n\n', [A]),
        # multi-line data is joined with a newline (whitespace inside the JSON here)
        (b'data: {"type":"a",\ndata: "n":1}\n\n', [A]),
        (b': a comment\nid: 7\nretry: 10\ndata: {"type":"a","n":1}\n\n', [A]),
        (b": only a comment\n\n", []),
        (b"event: a\n\n", []),
        (b'data: {"type":"a","n":1}\n\n\n\ndata: {"type":"b","text":"x\\ny"}\n\n', [A, B]),
        # unparseable data, a JSON value that is not an object, an object without a string
        # type: skipped, and the stream goes on
        (b"data: {not json\n\n" + b'data: {"type":"a","n":1}\n\n', [A]),
        (b'data: [1,2]\n\ndata: "a"\n\ndata: {"delta":"x"}\n\ndata: {"type":5}\n\n', []),
        (b"\x00\xff\xfe garbage\n\n" + b'data: {"type":"a","n":1}\n\n', [A]),
        # a field name that only starts with "data" is another field
        (b'dataX: {"type":"a","n":1}\n\n', []),
        # an event not closed by a blank line before the end is dropped (the SSE rule)
        (b'data: {"type":"a","n":1}\n\ndata: {"type":"b","text":"x\\ny"}\n', [A]),
        (b'data: {"type":"a","n":1}\r', []),
        (b'data: {"type":"a","n":1}\n\r', [A]),
    ],
)
def test_the_decoder_frames_events_by_the_sse_rules(
    stream: bytes, expected: list[dict[str, Any]]
) -> None:
    assert decode(stream) == expected


def test_a_crlf_split_between_two_chunks_is_one_line_end() -> None:
    assert decode(b'data: {"type":"a","n":1}\r\n\r', b"\n") == [A]
    assert decode(b'data: {"type":"a","n":1}\r', b"\n\r", b"\n") == [A]


def test_a_byte_order_mark_split_between_chunks_is_still_dropped() -> None:
    assert decode(b"\xef", b"\xbb", b'\xbfdata: {"type":"a","n":1}\n\n') == [A]
    assert decode(b"\xef\xbb") == []


def test_dispatched_counts_every_event_also_those_skipped() -> None:
    decoder = SSEDecoder()
    decoder.feed(b'data: nope\n\ndata: {"type":"a"}\n\n: comment\n\nevent: x\n\n')
    assert decoder.dispatched == 2


def test_an_event_of_twenty_megabytes_arrives_whole() -> None:
    text = "x" * (20 << 20)
    raw = b"data: " + orjson.dumps({"type": "big", "text": text}) + b"\n\n"
    decoder = SSEDecoder()
    events: list[dict[str, Any]] = []
    for start in range(0, len(raw), 65536):
        events += decoder.feed(raw[start : start + 65536])
    assert len(events) == 1
    assert events[0]["text"] == text


_json_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)
_events = st.lists(
    st.fixed_dictionaries({"type": st.sampled_from(["a", "b.c", "response.x"]), "t": _json_text}),
    max_size=8,
)


def _frame(event: dict[str, Any], style: int) -> bytes:
    data = orjson.dumps(event)
    if style == 0:
        return b"event: %s\ndata: %s\n\n" % (event["type"].encode(), data)
    if style == 1:
        return b"data: %s\r\n\r\n" % data
    if style == 2:
        return b": keep-alive\ndata:%s\r\r" % data
    return b"data: not json\n\n" + b"data: %s\n\n" % data


@settings(max_examples=300, deadline=None)
@given(
    events=_events,
    styles=st.lists(st.integers(0, 3), min_size=8, max_size=8),
    cuts=st.lists(st.integers(0, 4000), max_size=12),
)
def test_any_chunking_of_a_valid_stream_gives_the_same_events(
    events: list[dict[str, Any]], styles: list[int], cuts: list[int]
) -> None:
    raw = b"".join(_frame(event, style) for event, style in zip(events, styles, strict=False))
    points = sorted({min(cut, len(raw)) for cut in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert decode(*chunks) == events
    assert decode(raw) == events
    assert decode(*(raw[i : i + 1] for i in range(len(raw)))) == events


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(0, 400), max_size=6))
def test_any_bytes_in_any_chunks_never_raise_and_give_the_same_events(
    raw: bytes, cuts: list[int]
) -> None:
    points = sorted({min(cut, len(raw)) for cut in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert decode(*chunks) == decode(raw)
