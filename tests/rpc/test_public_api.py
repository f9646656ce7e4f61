"""The explicit surfaces of the rpc and transport packages: ``__all__`` matches what they export.

Both re-export lazily (``codex_app_bridge._reexports``): a name is written three times in the
package's ``__init__``, in the imports pyright reads (``if TYPE_CHECKING``), in the table that
says which module to import on first use (``_SOURCES``) and in ``__all__``. These tests hold the
three equal, and equal to what the modules they name export: a name added to a module's
``__all__`` and forgotten in one of them fails here, not in a user's import."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
import types

import pytest

import codex_app_bridge.rpc
import codex_app_bridge.transport

PACKAGES = [codex_app_bridge.rpc, codex_app_bridge.transport]
TIMEOUT = 60


def _sources(package: types.ModuleType) -> dict[str, str]:
    table: dict[str, str] = vars(package)["_SOURCES"]
    return table


def _type_checking_imports(package: types.ModuleType) -> dict[str, str]:
    """Name -> module of the ``from ... import`` lines under ``if TYPE_CHECKING``."""
    tree = ast.parse(inspect.getsource(package))
    blocks = [n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n)]
    assert len(blocks) == 1
    return {
        alias.name: str(node.module)
        for node in blocks[0].body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


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
    sources = _sources(package)
    modules = {module: importlib.import_module(module) for module in set(sources.values())}
    everything = {name for module in modules.values() for name in module.__all__}
    assert set(sources) == everything
    for name, module in sources.items():
        # (``connection`` re-exports two names of ``_context``: the table names either)
        assert name in modules[module].__all__, (name, module)
        assert getattr(package, name) is getattr(modules[module], name), name
    assert set(package.__all__) == set(sources)
    assert _type_checking_imports(package) == sources


@pytest.mark.parametrize("package", PACKAGES)
def test_dir_of_a_fresh_import_lists_every_public_name(package: types.ModuleType) -> None:
    # in a process of its own: here the names read above are in the package's globals already
    code = f"import json, {package.__name__} as p; print(json.dumps(dir(p)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=TIMEOUT, check=True
    )
    listed = {name for name in json.loads(done.stdout) if not name.startswith("_")}
    listed -= {m.name for m in pkgutil.iter_modules(package.__path__)}
    assert listed == set(package.__all__)
