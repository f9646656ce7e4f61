"""The explicit surfaces of the rpc and transport packages: ``__all__`` matches what they export,
which is everything the modules their lazy table names export (``tests/test_reexports.py``
holds the table, the imports pyright reads and ``__all__`` in agreement)."""

from __future__ import annotations

import importlib
import types

import pytest

import codex_app_bridge.rpc
import codex_app_bridge.transport

PACKAGES = [codex_app_bridge.rpc, codex_app_bridge.transport]


@pytest.mark.parametrize("package", PACKAGES)
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


@pytest.mark.parametrize("package", PACKAGES)
def test_the_table_is_everything_its_modules_export_and_nothing_else(
    package: types.ModuleType,
) -> None:
    sources: dict[str, str] = vars(package)["_SOURCES"]
    modules = {module: importlib.import_module(module) for module in set(sources.values())}
    everything = {name for module in modules.values() for name in module.__all__}
    assert set(sources) == everything
    for name, module in sources.items():
        # (``connection`` re-exports two names of ``_context``: the table names either)
        assert name in modules[module].__all__, (name, module)
        assert getattr(package, name) is getattr(modules[module], name), name
    assert set(package.__all__) == set(sources)
