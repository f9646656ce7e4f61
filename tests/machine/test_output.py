"""How output is cut into ``exec_command_output_delta`` chunks, as core's
``split_valid_utf8_prefix`` cuts them (``unified_exec/async_watcher.rs``): at most 8 KiB, on a
UTF-8 boundary when one lies within 5 bytes of the cut, else one byte at a time."""

from __future__ import annotations

from codex_app_bridge.machine._output import DELTA_MAX_BYTES, delta_size


def _cuts(data: bytes) -> list[int]:
    sizes: list[int] = []
    view = memoryview(data)
    while view:
        size = delta_size(view)
        sizes.append(size)
        view = view[size:]
    return sizes


def test_text_is_cut_every_8_kib() -> None:
    assert DELTA_MAX_BYTES == 8192
    assert _cuts(b"y\n" * 10_000) == [8192, 8192, 20_000 - 16_384]
    assert _cuts(b"short") == [5]


def test_a_character_across_the_cut_goes_whole_into_the_next_delta() -> None:
    data = b"a" * 8191 + "é".encode() + b"b"
    assert _cuts(data) == [8191, 3]
    euro = "€".encode()  # three bytes
    assert _cuts(b"a" * 8190 + euro) == [8190, 3]


def test_a_cut_sequence_at_the_end_goes_a_byte_at_a_time() -> None:
    # core keeps nothing for the next read: the incomplete character's bytes go alone
    assert _cuts(b"abc" + "€".encode()[:2]) == [3, 1, 1]


def test_invalid_utf8_far_from_the_cut_goes_a_byte_at_a_time() -> None:
    assert _cuts(b"\xff" + b"a" * 10) == [1, 10]
    data = b"a" * 3 + b"\xff" + b"a" * 9000
    assert _cuts(data) == [1, 1, 1, 1, 8192, 9000 - 8192]
    # within 5 bytes of the cut, the valid prefix goes whole
    assert _cuts(b"a" * 8188 + b"\xff" + b"a" * 10) == [8188, 1, 10]
    # 6 bytes short of a full delta: every byte before the invalid one goes alone
    assert _cuts(b"a" * 8186 + b"\xff" + b"a" * 100) == [1] * 8187 + [100]
