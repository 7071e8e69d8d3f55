"""The package's shape: no import cycle (deferred imports included), no shims, no prefixed modules.

The import graph is read from the source with :mod:`ast`, so imports inside functions and under
``if TYPE_CHECKING:`` count as much as those at the top: a cycle hidden behind a deferred import
is still a cycle. Importing ``a.b.c`` runs the ``__init__`` of ``a.b`` first, so an edge to a module
is an edge to each package above it too (except the packages the importer itself lies in).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import infsa_viz

PACKAGE = Path(infsa_viz.__file__).resolve().parent


def _modules(package: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name → (file, is a package) for every ``.py`` file under ``package``."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module → the modules of ``package`` it imports anywhere in its source (and their packages)."""
    modules = _modules(package)
    root = package.name

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        here = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                # ``from pkg import sub`` imports the submodule when there is one
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names]
            for target in targets:
                if target == root or target.startswith(root + "."):
                    found = known(target)
                    if found and found != name:
                        graph[name].add(found)
    for name, targets in graph.items():  # a module's packages run before it
        for target in list(targets):
            parts = target.split(".")
            for i in range(1, len(parts)):
                parent = ".".join(parts[:i])
                if not (name == parent or name.startswith(parent + ".")):
                    targets.add(parent)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` as a path ``[a, b, …, a]``, or ``[]`` when it has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def rooms(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between the top-level modules and subpackages ("rooms") of the package."""
    def room(name: str) -> str:
        return ".".join(name.split(".")[:2])

    out: dict[str, set[str]] = {}
    for name, targets in graph.items():
        if name.count(".") == 0:  # the package root re-exports every room; it stands above them all
            continue
        out.setdefault(room(name), set()).update(room(t) for t in targets if t.count(".") and room(t) != room(name))
    return out


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """Floor of each node of an acyclic graph: 0 imports nothing, else 1 + the highest floor below."""
    memo: dict[str, int] = {}

    def floor(node: str) -> int:
        if node not in memo:
            memo[node] = 1 + max((floor(t) for t in graph.get(node, ())), default=-1)
        return memo[node]

    return {node: floor(node) for node in graph}


def test_the_package_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    assert len(graph) > 100 and "infsa_viz.model.attention" in graph["infsa_viz.model.capture"]
    cycle = find_cycle(graph)
    assert not cycle, "import cycle: " + " → ".join(cycle)


def test_the_rooms_of_the_package_stand_on_floors():
    """Between subpackages and top-level modules too, every arrow runs down: no room imports a room above it."""
    graph = rooms(import_graph(PACKAGE))
    cycle = find_cycle(graph)
    assert not cycle, "rooms in a cycle: " + " → ".join(cycle)
    floor = floors(graph)
    assert floor["infsa_viz.model"] < floor["infsa_viz.spectral"] < floor["infsa_viz.maps"] < floor["infsa_viz.evaluation"]


def test_the_evaluation_engine_does_not_import_the_statistics():
    """``infsa_viz.stats`` reads the engine's records and rows; the engine (deferred imports included) never
    imports the statistics, so scoring maps needs none of the tests that judge them."""
    graph = import_graph(PACKAGE)
    assert "infsa_viz.stats.verdict" in graph and "infsa_viz.evaluation.engine" in graph

    def inside(name: str, package: str) -> bool:
        return name == package or name.startswith(package + ".")

    offenders = sorted(f"{name} → {target}" for name, targets in graph.items() if inside(name, "infsa_viz.evaluation")
                       for target in targets if inside(target, "infsa_viz.stats"))
    assert offenders == []
    floor = floors(rooms(graph))
    assert floor["infsa_viz.evaluation"] < floor["infsa_viz.stats"]


def test_the_import_direction_check_sees_a_deferred_import(tmp_path):
    package = tmp_path / "pkg"
    for sub in ("evaluation", "stats"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "evaluation" / "engine.py").write_text("def f():\n    from ..stats import verdict\n")
    (package / "stats" / "verdict.py").write_text("x = 1\n")
    assert "pkg.stats.verdict" in import_graph(package)["pkg.evaluation.engine"]


@pytest.mark.parametrize("deferred", ["def f():\n    from ..a import x\n", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import a\n"])
def test_a_deferred_import_cycle_is_found(tmp_path, deferred):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub.b import y\nx = 1\n")
    (package / "sub" / "__init__.py").write_text("from .b import y\n")
    (package / "sub" / "b.py").write_text(deferred + "y = 2\n")
    cycle = find_cycle(import_graph(package))
    assert cycle[0] == cycle[-1] and {"pkg.a", "pkg.sub.b"} <= set(cycle)


def test_a_package_init_closes_a_cycle():
    """``pkg.a`` imports ``pkg.sub.b``, so it runs ``pkg.sub``'s ``__init__``, which imports ``pkg.a``."""
    graph = {"pkg.a": {"pkg.sub.b", "pkg.sub"}, "pkg.sub": {"pkg.a"}, "pkg.sub.b": set()}
    assert find_cycle(graph) == ["pkg.a", "pkg.sub", "pkg.a"]


def test_no_compatibility_module_or_alias_below_the_root():
    """No module ``__getattr__`` below the package root, and no module kept only to re-export another."""
    offenders = []
    for name, (path, _) in _modules(PACKAGE).items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if name != "infsa_viz" and any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
            offenders.append(name)
    assert offenders == []
    assert not (PACKAGE / "timm_import.py").exists()


def test_no_prefixed_loose_modules_at_the_root():
    """``train_recipe.py`` beside ``train.py`` is a subpackage waiting to be made."""
    names = sorted(p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_"))
    names += sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    prefixed = [a for a in names for b in names if a != b and a.startswith(b + "_")]
    assert prefixed == []
