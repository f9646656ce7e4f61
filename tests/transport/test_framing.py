"""JSON Lines framing: splitting without a length limit, decoding any JSON value, bad lines as items."""

from __future__ import annotations

import orjson
import pytest

from codex_app_bridge.transport import DecodeError, LineSplitter, decode_line, encode_item


@pytest.mark.parametrize(
    ("chunks", "lines", "tail"),
    [
        ([b'{"a":1}\n'], [b'{"a":1}'], None),
        ([b'{"a":', b"1}\n"], [b'{"a":1}'], None),
        ([b"one\ntwo\nthr", b"ee\n"], [b"one", b"two", b"three"], None),
        ([b"\n\n"], [b"", b""], None),
        ([b"last without newline"], [], b"last without newline"),
        ([b"a\r\n"], [b"a\r"], None),
    ],
)
def test_line_splitter_yields_complete_lines_and_keeps_the_tail(
    chunks: list[bytes], lines: list[bytes], tail: bytes | None
) -> None:
    splitter = LineSplitter()
    got: list[bytes] = []
    for chunk in chunks:
        got += splitter.feed(chunk)
    assert got == lines
    assert splitter.finish() == tail
    assert splitter.finish() is None


def test_line_splitter_joins_a_20_mib_line_delivered_in_small_chunks() -> None:
    line = b'{"junk":"' + b"x" * (20 * 1024 * 1024) + b'"}'
    data = line + b"\n"
    splitter = LineSplitter()
    got: list[bytes] = []
    for start in range(0, len(data), 65536):
        got += splitter.feed(data[start : start + 65536])
    assert got == [line]


@pytest.mark.parametrize(
    ("line", "decoded"),
    [
        (b'{"id":1,"method":"x"}', {"id": 1, "method": "x"}),
        (b"[1,2,3]", [1, 2, 3]),
        (b'"just a string"', "just a string"),
        (b"5", 5),
        (b"null", None),
        (b'  {"a":true}\r', {"a": True}),
    ],
)
def test_any_json_value_decodes(line: bytes, decoded: object) -> None:
    assert decode_line(line) == decoded


@pytest.mark.parametrize("line", [b"", b"   ", b"\t\r"])
def test_blank_lines_are_ignored(line: bytes) -> None:
    assert decode_line(line) is None


@pytest.mark.parametrize(
    "line", [b'{"id":2,"method":', b"not json", b'{"a":1} trailing', b"\xff\xfe"]
)
def test_a_line_that_is_not_json_becomes_a_decode_error_with_the_raw_line(line: bytes) -> None:
    item = decode_line(line)
    assert isinstance(item, DecodeError)
    assert item.raw == line
    assert item.reason


def test_key_order_of_a_decoded_object_is_the_wire_order() -> None:
    item = decode_line(b'{"z":1,"a":2,"m":3}')
    assert isinstance(item, dict)
    assert list(item) == ["z", "a", "m"]


@pytest.mark.parametrize(
    ("item", "encoded"),
    [
        (b'{"pre":"encoded"}', b'{"pre":"encoded"}'),
        ({"id": 1, "result": None}, b'{"id":1,"result":null}'),
        ({"params": orjson.Fragment(b'{"x":[1]}')}, b'{"params":{"x":[1]}}'),
        ([1, "a"], b'[1,"a"]'),
    ],
)
def test_outbound_items_are_encoded_with_orjson_or_passed_through(
    item: object, encoded: bytes
) -> None:
    assert encode_item(item) == encoded  # pyright: ignore[reportArgumentType]


def test_json_nested_128_levels_deep_is_refused_like_serde_json_with_the_column() -> None:
    prefix = b'{"id":1126,"method":"thread/list","params":{"x":'
    ok = decode_line(prefix + b"[" * 125 + b"]" * 125 + b"}}")
    assert isinstance(ok, dict)
    for depth in (126, 127, 300, 5000):
        refused = decode_line(prefix + b"[" * depth + b"]" * depth + b"}}")
        assert isinstance(refused, DecodeError)
        # The real server: "recursion limit exceeded at line 1 column 174" (the bracket that
        # opens level 128).
        assert refused.reason.startswith("recursion limit exceeded at line 1 column 174")
    assert isinstance(decode_line(b"[" * 127 + b"]" * 127), list)
    top = decode_line(b"[" * 128 + b"]" * 128)
    assert isinstance(top, DecodeError)
    assert top.reason.startswith("recursion limit exceeded at line 1 column 128")
    # Brackets inside strings do not count; objects count like arrays.
    assert decode_line(b'{"a":"' + b"[" * 500 + b'"}') == {"a": "[" * 500}
    objects = decode_line(b'{"a":' * 128 + b"1" + b"}" * 128)
    assert isinstance(objects, DecodeError)


def test_a_line_that_is_not_utf8_names_the_byte_and_its_position() -> None:
    refused = decode_line(b'{"id":1,\n"name":"caf\xe9"}')
    assert isinstance(refused, DecodeError)
    assert refused.reason.startswith("invalid UTF-8 (byte 0xe9) at line 2 column 12")
