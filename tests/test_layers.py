"""The import structure: no import circles, packages that depend one way, a reducer split by
concern whose parts depend one way (``_state`` <- concerns <- ``_reducer``).

The graph is read from the source with ``ast`` (nothing is imported): an edge for every
module-level import of a ``codex_app_bridge`` module (``from pkg import name`` is an edge to
``pkg.name`` when that is a module, else to ``pkg``). Imports inside functions are not edges.
Imports under ``if TYPE_CHECKING:`` are left out of the import-time graph and kept in the typed
graph: a circle made only of annotations does not break an import, but it is still two modules
that each need the other.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

import pytest

PACKAGE = "codex_app_bridge"
SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE

Graph = dict[str, set[str]]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _imports(module: str, path: Path, *, with_types: bool) -> set[str]:
    """The ``codex_app_bridge`` modules ``module`` imports at module level."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def visit(body: Sequence[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                if not _is_type_checking(node.test) or with_types:
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = module.split(".") if is_package else module.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    child = f"{base}.{alias.name}"
                    found.add(child if child in MODULES else base)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return {name for name in found if name in MODULES and name != module}


def _graph(*, with_types: bool) -> Graph:
    return {m: _imports(m, p, with_types=with_types) for m, p in MODULES.items()}


def _cycles(graph: Graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def _within(graph: Graph, prefix: str) -> Graph:
    inside = {m for m in graph if m == prefix or m.startswith(prefix + ".")}
    return {m: graph[m] & inside for m in inside}


def _subpackage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _package_graph(graph: Graph) -> Graph:
    packages: Graph = {}
    for module, targets in graph.items():
        source = _subpackage(module)
        edges = packages.setdefault(source, set())
        edges.update(_subpackage(t) for t in targets if _subpackage(t) != source)
    return packages


def _listener_imports(module: str, graph: Graph) -> set[str]:
    prefix = f"{PACKAGE}.listener."
    return {t.removeprefix(prefix) for t in graph[prefix + module] if t.startswith(prefix)}


def test_the_graph_sees_every_module_and_the_known_imports() -> None:
    graph = _graph(with_types=False)
    assert f"{PACKAGE}.server._server" in graph
    assert f"{PACKAGE}.rpc.connection" in graph[f"{PACKAGE}.server._server"] or (
        f"{PACKAGE}.rpc" in graph[f"{PACKAGE}.server._server"]
    )
    # ``from codex_app_bridge.listener import _convert`` is an edge to the submodule
    assert f"{PACKAGE}.listener._convert" in graph[f"{PACKAGE}.listener._rows"]
    assert f"{PACKAGE}.listener" not in graph[f"{PACKAGE}.listener._rows"]
    # type-only imports are edges of the typed graph only
    typed = _graph(with_types=True)
    assert f"{PACKAGE}.rpc._context" not in graph[f"{PACKAGE}.rpc.methods"]
    assert f"{PACKAGE}.rpc._context" in typed[f"{PACKAGE}.rpc.methods"]


def test_the_circle_finder_reports_each_circle_once_and_ignores_chains() -> None:
    graph: Graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_module_imports_itself_back_at_import_time() -> None:
    assert _cycles(_graph(with_types=False)) == []


@pytest.mark.parametrize(
    "subpackage",
    [
        name
        for name in sorted({m.split(".")[1] for m in MODULES if m.count(".") >= 1})
        if (SRC / name).is_dir()
    ],
)
def test_no_import_circles_even_through_type_only_imports(subpackage: str) -> None:
    graph = _within(_graph(with_types=True), f"{PACKAGE}.{subpackage}")
    assert _cycles(graph) == []


def test_subpackages_depend_one_way() -> None:
    assert _cycles(_package_graph(_graph(with_types=True))) == []


def test_rpc_and_transport_know_no_domain_package() -> None:
    packages = _package_graph(_graph(with_types=True))
    domain = {"config", "listener", "mapping", "projection", "server", "sources", "storage"}
    assert packages["transport"] & domain == set()
    assert packages["rpc"] & domain == set()
    assert "transport" not in packages["listener"]


def test_the_model_client_sits_above_the_protocol_and_below_the_domain() -> None:
    packages = _package_graph(_graph(with_types=True))
    # it knows the protocol's core values and nothing of threads, connections or JSON-RPC
    assert packages["model"] <= {"protocol"}
    for below in ("protocol", "rpc", "transport"):
        assert "model" not in packages[below], below


def test_config_knows_nothing_of_threads_json_rpc_or_the_server() -> None:
    # config/ reads CODEX_HOME: the package root's own modules (its version) and nothing else
    packages = _package_graph(_graph(with_types=True))
    assert packages["config"] <= {"_version"}, packages["config"]
    assert "config" not in packages["protocol"] | packages["listener"] | packages["sources"]


def test_reducer_concerns_depend_one_way_state_then_concerns_then_reducer() -> None:
    graph = _graph(with_types=True)
    helpers = {"_convert", "_realtime"}
    values = {"_read_state"}  # a leaf value the state holds (imports nothing of the listener)
    assert _listener_imports("_read_state", graph) == set()
    assert _listener_imports("_state", graph) <= values
    for concern in ("_turns", "_items", "_rows"):
        assert _listener_imports(concern, graph) <= {"_state", *helpers, *values}, concern
    assert _listener_imports("_reducer", graph) == {"_state", "_turns", "_items", "_rows"}
    assert "_reducer" not in _listener_imports("_requests", graph)


def test_the_model_source_sits_beside_the_sources_and_the_server_knows_it_not() -> None:
    packages = _package_graph(_graph(with_types=True))
    # agent/ runs turns over model/ and config/ behind the sources' contract
    assert packages["agent"] <= {
        "model",
        "config",
        "sources",
        "machine",
        "protocol",
        "projection",
        "_version",
    }
    for below in (
        "protocol",
        "rpc",
        "transport",
        "model",
        "config",
        "sources",
        "server",
        "listener",
    ):
        assert "agent" not in packages[below], below


def test_the_cluster_sits_above_the_server_and_only_the_cli_knows_it() -> None:
    packages = _package_graph(_graph(with_types=True))
    # cluster/ adapts NATS JetStream to the server's SharedThreads hook and source contract
    # (and lists its threads as storage's thread/list rows: ThreadRow, RowFilter)
    allowed = {"server", "sources", "protocol", "storage", "_version"}
    assert packages["cluster"] <= allowed, packages["cluster"]
    for name, imports in packages.items():
        if name not in ("cluster", "cli"):
            assert "cluster" not in imports, name
