"""A package's re-exports from its private modules, imported when first read (PEP 562).

Role: the one body of the ``__getattr__`` of ``codex_app_bridge`` and of its packages
``server``, ``listener``, ``storage``, ``rpc`` and ``transport``, whose ``__init__`` lists which
module defines each public name (so importing the package loads none of them). Boundary:
``importlib`` only.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

__all__ = ["import_reexport"]


def import_reexport(
    package: str, namespace: dict[str, Any], sources: Mapping[str, str], name: str
) -> object:
    """``name`` from the module ``sources`` gives for it, kept in ``namespace`` (the package's
    globals) so that it is imported once; ``AttributeError`` for a name ``package`` lacks."""
    module = sources.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}", name=name)
    value: object = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value
