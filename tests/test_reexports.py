"""The packages that re-export lazily (``codex_app_bridge._reexports``: a name's module is
imported when the name is first read). Each writes a lazy name three times in its ``__init__``:
in the imports pyright reads (``if TYPE_CHECKING``), in the table that names the module to import
(``_SOURCES``) and in ``__all__``. These tests hold the three in agreement, each name to the
object its module defines, and ``dir()`` of a fresh import to every public name."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

import codex_app_bridge

TIMEOUT = 60
LAZY = {
    "codex_app_bridge",
    "codex_app_bridge.listener",
    "codex_app_bridge.rpc",
    "codex_app_bridge.server",
    "codex_app_bridge.storage",
    "codex_app_bridge.transport",
}
"""Each such package; its table is ``_SOURCES``."""


def test_every_package_that_re_exports_lazily_is_checked_here() -> None:
    root = Path(codex_app_bridge.__file__).parent
    found = {
        ".".join(("codex_app_bridge", *init.parent.relative_to(root).parts))
        for init in root.glob("**/__init__.py")
        if "import_reexport" in init.read_text(encoding="utf-8")
    }
    assert found == LAZY


def _type_checking_imports(source: str) -> dict[str, str]:
    """Name -> module of the ``from ... import`` lines under ``if TYPE_CHECKING``."""
    blocks = [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
    ]
    return {
        alias.name: str(node.module)
        for block in blocks
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


@pytest.mark.parametrize("name", sorted(LAZY))
def test_the_table_the_type_checking_imports_and_all_agree(name: str) -> None:
    package = importlib.import_module(name)
    table: dict[str, str] = vars(package)["_SOURCES"]
    assert _type_checking_imports(inspect.getsource(package)) == table
    assert set(table) <= set(package.__all__)
    for public in package.__all__:
        assert hasattr(package, public), public
    for public, module in table.items():
        assert getattr(package, public) is getattr(importlib.import_module(module), public)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = package.not_a_name


@pytest.mark.parametrize("name", sorted(LAZY))
def test_dir_of_a_fresh_import_lists_every_public_name(name: str) -> None:
    # in a process of its own: here the names read above are in the package's globals already
    code = f"import json, {name} as p; print(json.dumps(dir(p)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=TIMEOUT, check=True
    )
    assert set(importlib.import_module(name).__all__) <= set(json.loads(done.stdout))
