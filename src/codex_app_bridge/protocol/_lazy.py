"""Module attributes defined on first access: how the generated wire models are loaded.

``protocol/v2/_generated.py`` defines each of its ~1,100 names (models and type aliases) in a
function of its own, and :class:`LazyNamespace` runs those functions when the name is first read
from the module (its ``__getattr__``): the name and everything it refers to, transitively, in the
order of the original module, so that a base class or an alias's value exists before it is used
and every forward reference resolves when pydantic builds the model. Creating a pydantic class
costs about a third of a millisecond even with ``defer_build``; a process that answers
``initialize`` needs a handful of them, not a thousand.

The typed surface is the stub next to the generated module (``_generated.pyi``, the eager
definitions): type checkers never see the functions. Pure bookkeeping: no I/O.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["LazyNamespace"]

Definer = Callable[[], None]
"""Defines one statement's names as module globals (a class, or a ``TypeAliasType``)."""


class LazyNamespace:
    """The lazily defined names of one module.

    ``definitions`` maps each name, in the order of the original module, to the function that
    defines it and the module's names its definition refers to (its base, its field types, the
    members of its union).
    """

    def __init__(
        self,
        module: str,
        namespace: dict[str, Any],
        definitions: Mapping[str, tuple[Definer, tuple[str, ...]]],
    ) -> None:
        self._module = module
        self._namespace = namespace
        self._definitions = definitions
        self._order = {name: index for index, name in enumerate(definitions)}
        self._lock = threading.RLock()

    def __contains__(self, name: str) -> bool:
        return name in self._definitions

    def load(self, name: str) -> Any:
        """The value of ``name``, defined first (with what it refers to) if it is not yet."""
        try:
            return self._namespace[name]
        except KeyError:
            pass
        if name not in self._definitions:
            raise AttributeError(f"module {self._module!r} has no attribute {name!r}", name=name)
        self._define([name])
        return self._namespace[name]

    def load_all(self) -> None:
        """Define every name (``from module import *``, ``dir()``-driven tools)."""
        self._define(self._definitions)

    def _define(self, names: Iterable[str]) -> None:
        with self._lock:
            namespace = self._namespace
            needed: set[str] = set()
            stack = [name for name in names if name not in namespace]
            while stack:
                name = stack.pop()
                if name in needed or name in namespace:
                    continue
                needed.add(name)
                stack.extend(self._definitions[name][1])
            # the original module order: an alias's value and a base class come before their
            # use, and a name defined earlier refers to later ones only in annotations, which
            # pydantic resolves when it builds the model (by then all of ``needed`` exists)
            for name in sorted(needed, key=self._order.__getitem__):
                if name not in namespace:
                    self._definitions[name][0]()
