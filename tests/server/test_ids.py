"""Thread ids: minted as UUIDv7, parsed with the Rust uuid crate's forms and diagnostics."""

from __future__ import annotations

import uuid

import pytest

from codex_app_bridge.rpc import RpcError
from codex_app_bridge.server import new_uuid7, parse_thread_id

PREFIX = "invalid thread id: "
CHAR = "invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], "

# Every expected message below was produced by the real 0.163.0 binary (thread/read).
REFUSED = [
    ("not-a-uuid", CHAR + "found `n` at 1"),
    ("abc", "invalid length: expected length 32 for simple format, found 3"),
    ("", "invalid length: expected length 32 for simple format, found 0"),
    (
        "00000000-0000-0000-0000-00000000000",
        "invalid group length in group 4: expected 12, found 11",
    ),
    ("0000000000000000000000000000000g", CHAR + "found `g` at 32"),
    (
        "00000000-0000-0000-0000-0000000000000",
        "invalid group length in group 4: expected 12, found 13",
    ),
    (
        "00000000-00000-000-0000-000000000000",
        "invalid group length in group 1: expected 4, found 5",
    ),
]

ZERO = "00000000-0000-0000-0000-000000000000"


@pytest.mark.parametrize(("text", "message"), REFUSED)
def test_bad_thread_ids_are_refused_with_the_uuid_crates_words(text: str, message: str) -> None:
    with pytest.raises(RpcError) as caught:
        parse_thread_id(text)
    assert (caught.value.code, caught.value.message) == (-32600, PREFIX + message)


@pytest.mark.parametrize(
    "text",
    [
        ZERO,
        "00000000000000000000000000000000",
        "{00000000-0000-0000-0000-000000000000}",
        "urn:uuid:00000000-0000-0000-0000-000000000000",
    ],
)
def test_every_uuid_form_normalizes_to_the_hyphenated_one(text: str) -> None:
    assert parse_thread_id(text) == ZERO


def test_uppercase_ids_are_lowercased() -> None:
    assert parse_thread_id("ABCDEF00-0000-0000-0000-00000000000A") == (
        "abcdef00-0000-0000-0000-00000000000a"
    )


def test_minted_ids_are_time_ordered_uuid7() -> None:
    earlier, later = new_uuid7(now_ms=1_000), new_uuid7(now_ms=2_000)
    parsed = uuid.UUID(earlier)
    assert parsed.version == 7
    assert parsed.variant == uuid.RFC_4122
    assert earlier < later
    assert int(parsed.hex[:12], 16) == 1_000
    assert parse_thread_id(earlier) == earlier
