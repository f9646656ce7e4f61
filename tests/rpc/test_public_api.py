"""The explicit surfaces of the rpc and transport packages: ``__all__`` matches what they export."""

from __future__ import annotations

import types

import pytest

import codex_app_bridge.rpc
import codex_app_bridge.transport


@pytest.mark.parametrize("package", [codex_app_bridge.rpc, codex_app_bridge.transport])
def test_all_lists_exactly_the_public_names(package: types.ModuleType) -> None:
    exported: list[str] = list(package.__all__)
    assert len(exported) == len(set(exported))
    for name in exported:
        assert hasattr(package, name), name
    public = {
        name
        for name, value in vars(package).items()
        if not name.startswith(("_", "@")) and not isinstance(value, types.ModuleType)
    }
    public.discard("annotations")
    assert public == set(exported)
