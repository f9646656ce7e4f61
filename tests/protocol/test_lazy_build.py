"""Start-up: importing the package builds no model validator and no union adapter.

Building them was most of ``import codex_app_bridge`` (about a thousand models); they are built on
first use instead (``protocol._base``). A module that validates, dumps or builds an adapter at
import time brings that cost back; this test names it. Every module is imported and every
generated model created (they are created on first access, ``protocol._lazy``), so that each
is checked.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import bridge_env

PROBE = """
import importlib, json, pkgutil, sys
import codex_app_bridge
for info in pkgutil.walk_packages(codex_app_bridge.__path__, "codex_app_bridge."):
    if not info.name.endswith("__main__"):
        importlib.import_module(info.name)
from codex_app_bridge.protocol.v2 import *
from pydantic import TypeAdapter
from codex_app_bridge.protocol._base import CoreModel, WireModel

def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)

models = [m for base in (WireModel, CoreModel) for m in subclasses(base)]
built_models = sorted(m.__qualname__ for m in models if m.__pydantic_complete__)
built_adapters = sorted(
    f"{name}.{attr}"
    for name, module in list(sys.modules.items())
    if name.startswith("codex_app_bridge")
    for attr, value in vars(module).items()
    if isinstance(value, TypeAdapter) and value.pydantic_complete
)
print(json.dumps({"models": len(models), "built": built_models, "adapters": built_adapters}))
"""


def test_importing_the_package_builds_no_model_and_no_union_adapter() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=bridge_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    report = json.loads(result.stdout)
    assert report["models"] > 1000
    assert (report["built"], report["adapters"]) == ([], [])


def test_the_core_models_annotations_are_made_with_their_classes() -> None:
    """The hand-written core models' modules have no ``from __future__ import annotations``:
    pydantic takes each field's type as the class body made it instead of compiling and
    evaluating its string, about a fifth of making the ~240 classes (``import
    codex_app_bridge.protocol.core``: 68 -> 57 ms of CPU), which a ``thread/start`` right
    after ``initialize`` pays. A module that brings the strings back is named here."""
    import codex_app_bridge.protocol.core  # noqa: F401  # pyright: ignore[reportUnusedImport]
    from codex_app_bridge.protocol._base import CoreModel

    def subclasses(cls: type[CoreModel]) -> list[type[CoreModel]]:
        found: list[type[CoreModel]] = []
        for sub in cls.__subclasses__():
            found += [sub, *subclasses(sub)]
        return found

    core = [
        m
        for m in subclasses(CoreModel)
        if m.__module__.startswith("codex_app_bridge.protocol.core")
    ]
    assert len(core) > 200
    stringly = sorted(
        f"{model.__module__}.{model.__qualname__}.{field}"
        for model in core
        for field, annotation in vars(model).get("__annotations__", {}).items()
        if isinstance(annotation, str)
    )
    assert stringly == []
