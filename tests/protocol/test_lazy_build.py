"""Start-up: importing the package builds no model validator and no union adapter.

Building them was most of ``import codex_app_bridge`` (about a thousand models); they are built on
first use instead (``protocol._base``). A module that validates, dumps or builds an adapter at
import time brings that cost back; this test names it. Every module is imported and every
generated model created (they are created on first access, ``protocol._lazy``), so that each
is checked.
"""

from __future__ import annotations

import pytest

from tests.conftest import probe_json

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
    report = probe_json(PROBE)
    assert report["models"] > 1000
    assert (report["built"], report["adapters"]) == ([], [])


@pytest.mark.parametrize(
    "module", ["codex_app_bridge.protocol.core", "codex_app_bridge.protocol.v2._generated"]
)
def test_the_models_annotations_are_made_with_their_classes(module: str) -> None:
    """The core models' modules and the generated wire models' module have no ``from
    __future__ import annotations``: pydantic takes each field's type as the class body made it
    instead of compiling and evaluating its string, about a fifth of making a class, which a
    ``thread/start`` right after ``initialize`` pays for ~450 of them (``import
    codex_app_bridge.protocol.core``: 68 -> 57 ms of CPU; every v2 model: 218-224 -> 156-169).
    A module that brings the strings back is named here."""
    from pydantic import BaseModel

    import codex_app_bridge.protocol.core  # noqa: F401  # pyright: ignore[reportUnusedImport]
    from codex_app_bridge.protocol import v2
    from codex_app_bridge.protocol.v2._generated_names import GENERATED_NAMES

    for name in GENERATED_NAMES:  # every generated model made
        getattr(v2, name)

    def subclasses(cls: type[BaseModel]) -> list[type[BaseModel]]:
        found: list[type[BaseModel]] = []
        for sub in cls.__subclasses__():
            found += [sub, *subclasses(sub)]
        return found

    models = [m for m in subclasses(BaseModel) if m.__module__.startswith(module)]
    assert len(models) > 200
    stringly = sorted(
        f"{model.__module__}.{model.__qualname__}.{field}"
        for model in models
        for field, annotation in vars(model).get("__annotations__", {}).items()
        if isinstance(annotation, str)
    )
    assert stringly == []
