"""Values parsed from JSON are not kept by pydantic's string cache (``cache_strings="keys"`` in
``protocol._base``): with the default (``"all"``) every short string a validation parsed (ids,
timestamps) stayed in a process-wide cache of 16,384 entries, each one allocated while the
server was busy and kept after it, spread over the allocator's arenas: after a soak of 30
clients, that cache alone held about 14,000 blocks, each keeping an arena resident that was
otherwise free (issue 23). Keys (field names, a fixed set) are still cached."""

from __future__ import annotations

from codex_app_bridge.protocol import core, v2

_LINE = (
    b'{"timestamp":"2026-11-30T00:54:51.103Z","ordinal":1,"type":"event_msg","payload":'
    b'{"type":"task_started","turn_id":"01a229f2-8bdb-7531-b5d1-d09e8deaf5cb"}}'
)


def test_a_rollout_line_parsed_twice_shares_no_value_string() -> None:
    first, second = core.parse_rollout_line(_LINE), core.parse_rollout_line(_LINE)
    assert first.timestamp == second.timestamp
    assert first.timestamp is not second.timestamp


def test_params_parsed_twice_share_no_value_string() -> None:
    params = b'{"threadId":"01a229f2-8bc4-7672-b5c6-4900240ba28b"}'
    first = v2.ThreadResumeParams.model_validate_json(params)
    second = v2.ThreadResumeParams.model_validate_json(params)
    assert first.thread_id == second.thread_id
    assert first.thread_id is not second.thread_id
