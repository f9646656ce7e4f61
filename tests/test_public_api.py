"""The package's explicit public surface: ``__all__`` matches what the package exports."""

from __future__ import annotations

import pkgutil

import orjson

import codex_app_bridge


def test_all_names_are_exported_and_public() -> None:
    for name in codex_app_bridge.__all__:
        assert hasattr(codex_app_bridge, name), name
    # (``@py_*``: pytest's assertion rewriting, applied to the package of the pytest11 plugin)
    public = {n for n in vars(codex_app_bridge) if not n.startswith(("_", "@"))}
    # submodules imported as a side effect (by the test session, or by each other) are not part
    # of the surface: every subpackage and module of the package, found on disk
    public -= {m.name for m in pkgutil.iter_modules(codex_app_bridge.__path__)}
    public -= {"annotations"}
    assert public <= set(codex_app_bridge.__all__), public - set(codex_app_bridge.__all__)


def test_all_has_no_duplicates() -> None:
    # the order is ruff's RUF022 (isort-style), enforced by `ruff check` in CI
    names = list(codex_app_bridge.__all__)
    assert len(names) == len(set(names))


def test_protocol_version_is_the_pinned_codex_release() -> None:
    assert codex_app_bridge.CODEX_PROTOCOL_VERSION == "0.163.0"


def test_union_adapters_parse_json_bytes_and_dump_json_bytes() -> None:
    cases = [
        (
            codex_app_bridge.EVENT_ENVELOPE_ADAPTER,
            b'{"id":"t1","msg":{"type":"warning","message":"w"}}',
        ),
        (codex_app_bridge.EVENT_MSG_ADAPTER, b'{"type":"zz_future_event","x":[1,{"y":null}]}'),
        (
            codex_app_bridge.RESPONSE_ITEM_ADAPTER,
            b'{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}',
        ),
        (codex_app_bridge.CONTENT_ITEM_ADAPTER, b'{"type":"output_text","text":"x"}'),
        (
            codex_app_bridge.TURN_ITEM_ADAPTER,
            b'{"type":"AgentMessage","id":"m1","content":[{"type":"Text","text":"hi"}]}',
        ),
        (
            codex_app_bridge.ROLLOUT_LINE_ADAPTER,
            b'{"timestamp":"2025-01-01T00:00:00.000Z","type":"event_msg",'
            b'"payload":{"type":"thread_rolled_back","num_turns":1}}',
        ),
        (
            codex_app_bridge.SERVER_NOTIFICATION_ADAPTER,
            b'{"method":"warning","params":{"threadId":null,"message":"m"}}',
        ),
        (
            codex_app_bridge.THREAD_ITEM_ADAPTER,
            b'{"type":"plan","id":"p1","text":"- step"}',
        ),
    ]
    for adapter, raw in cases:
        value = adapter.validate_json(raw)
        dumped = adapter.dump_json(value, by_alias=True)
        assert isinstance(dumped, bytes)
        assert orjson.loads(dumped) == orjson.loads(raw), raw
