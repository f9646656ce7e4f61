"""The package's explicit public surface: ``__all__`` matches what the package exports."""

from __future__ import annotations

import codex_app_bridge


def test_all_names_are_exported_and_public() -> None:
    for name in codex_app_bridge.__all__:
        assert hasattr(codex_app_bridge, name), name
    public = {n for n in vars(codex_app_bridge) if not n.startswith("_")}
    # submodules imported as a side effect are not part of the surface
    public -= {
        "annotations",
        "cli",
        "protocol",
        "projection",
        "mapping",
        "listener",
        "rpc",
        "transport",
        "sources",
        "server",
    }
    assert public <= set(codex_app_bridge.__all__), public - set(codex_app_bridge.__all__)


def test_all_is_sorted_and_unique() -> None:
    names = list(codex_app_bridge.__all__)
    assert names == sorted(names)
    assert len(names) == len(set(names))


def test_protocol_version_is_the_pinned_codex_release() -> None:
    assert codex_app_bridge.CODEX_PROTOCOL_VERSION == "0.163.0"
