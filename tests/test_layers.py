"""House rule 1: algorithms are pure; imports only point left."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "market_hpc"
FORBIDDEN = {
    "algorithms": (
        "mesa",
        "market_hpc.core",
        "market_hpc.policies",
        "market_hpc.workload",
        "market_hpc.experiment",
        "market_hpc.cli",
    ),
    "domain": (
        "mesa",
        "market_hpc.algorithms",
        "market_hpc.policies",
        "market_hpc.core",
        "market_hpc.experiment",
        "market_hpc.cli",
    ),
    "policies": ("mesa", "market_hpc.core", "market_hpc.experiment", "market_hpc.cli"),
    "core": ("market_hpc.experiment", "market_hpc.cli", "market_hpc.viz"),
    "workload": ("mesa", "market_hpc.core", "market_hpc.experiment", "market_hpc.cli"),
    # the conformance suite sits beside experiment: it runs policies in the core's model
    "testing": ("market_hpc.cli", "market_hpc.viz"),
    # the per-paper studies use experiment; experiment never uses them
    "experiment": ("market_hpc.studies", "market_hpc.cli"),
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.smoke
@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_point_left(layer):
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for name in imported_modules(path):
            for banned in FORBIDDEN[layer]:
                assert not (name == banned or name.startswith(banned + ".")), (
                    f"{path} imports {name}"
                )


def test_nothing_imports_visualization():
    for path in PACKAGE.rglob("*.py"):
        assert not any(n.startswith("visualization") for n in imported_modules(path)), path


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> nx.DiGraph:
    """Modules of the package and the package modules each imports (any import statement,
    including those under ``TYPE_CHECKING`` or inside functions; ``from pkg import mod``
    counts as importing ``pkg.mod``)."""
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [
                    f"{node.module}.{alias.name}"
                    if f"{node.module}.{alias.name}" in modules
                    else node.module
                    for alias in node.names
                ]
            else:
                continue
            graph.add_edges_from(
                (name, target) for target in targets if target in modules and target != name
            )
    return graph


@pytest.mark.smoke
def test_the_package_has_no_import_cycles():
    graph = import_graph()
    assert {
        "market_hpc.core.model",
        "market_hpc.core.agents",
        "market_hpc.core.view",
        "market_hpc.core.recorder",
    } <= set(graph)
    assert graph.has_edge(
        "market_hpc.core.model", "market_hpc.core.agents"
    )  # the scan sees imports at all
    cycles = sorted(sorted(cycle) for cycle in nx.simple_cycles(graph))
    assert not cycles, f"import cycles: {cycles}"


def package_of(module: str) -> str:
    """The node ``module`` counts as in the package graph: a module inside a family package of a
    layer (``market_hpc.algorithms.cp.pcp20``) counts as its package
    (``market_hpc.algorithms.cp``); a module at the top of a layer or of the package is its own
    node (the shared algorithms, ``policies.base``, ``errors``).

    >>> package_of("market_hpc.algorithms.cp.pcp20"), package_of("market_hpc.algorithms.easy")
    ('market_hpc.algorithms.cp', 'market_hpc.algorithms.easy')
    """
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) > 3 else module


def package_graph(graph: nx.DiGraph) -> nx.DiGraph:
    """``graph`` with each module replaced by :func:`package_of` (edges inside one package
    dropped)."""
    packages = nx.DiGraph()
    packages.add_edges_from(
        (package_of(a), package_of(b)) for a, b in graph.edges if package_of(a) != package_of(b)
    )
    return packages


@pytest.mark.smoke
def test_the_family_packages_have_no_import_cycles_between_them():
    packages = package_graph(import_graph())
    assert {
        "market_hpc.algorithms.market",
        "market_hpc.policies.market",
        "market_hpc.algorithms.cp",
    } <= set(packages)
    cycles = sorted(sorted(cycle) for cycle in nx.simple_cycles(packages))
    assert not cycles, f"import cycles between packages: {cycles}"


def test_the_package_cycle_check_sees_a_cycle_through_two_modules_each():
    # cp.pcp20 -> market.auction and market.holding -> cp.budget: no module cycle, a package one
    modules = nx.DiGraph(
        [
            ("market_hpc.algorithms.cp.pcp20", "market_hpc.algorithms.market.auction"),
            ("market_hpc.algorithms.market.holding", "market_hpc.algorithms.cp.budget"),
        ]
    )
    assert not list(nx.simple_cycles(modules))
    assert sorted(map(sorted, nx.simple_cycles(package_graph(modules)))) == [
        ["market_hpc.algorithms.cp", "market_hpc.algorithms.market"]
    ]


def test_the_cycle_check_sees_type_checking_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from market_hpc.core.model "
        "import X\n"
    )
    assert "market_hpc.core.model" in imported_modules(module)


def private_imports(text: str, module: str, is_package: bool = False) -> list[str]:
    """``module.name`` for each private name (one leading ``_``, not a dunder) that the
    source ``text`` of ``module`` imports from another ``market_hpc`` module, by absolute
    or relative import (``import market_hpc.x._y`` counts too)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            source = ".".join([*base, node.module] if node.module else base)
            targets = [f"{source}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        for target in targets:
            if not target.startswith("market_hpc.") or target.rsplit(".", 1)[0] == module:
                continue
            if any(
                part.startswith("_") and not part.startswith("__") for part in target.split(".")
            ):
                found.append(target)
    return found


@pytest.mark.smoke
def test_no_module_imports_another_modules_private_name():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        names = private_imports(path.read_text(), module_name(path), path.name == "__init__.py")
        if names:
            offenders[str(path.relative_to(PACKAGE.parent))] = names
    assert not offenders, (
        f"private names imported across modules (make them public where they belong): {offenders}"
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from market_hpc.workload.swf import _number", ["market_hpc.workload.swf._number"]),
        ("from .swf import N_FIELDS, _JOB_ID", ["market_hpc.workload.swf._JOB_ID"]),
        ("from ..core.model import _Private", ["market_hpc.core.model._Private"]),
        ("from . import _helpers", ["market_hpc.workload._helpers"]),
        ("import market_hpc._hidden.x", ["market_hpc._hidden.x"]),
        ("def f():\n    from market_hpc.core import _late\n", ["market_hpc.core._late"]),
        ("from market_hpc.workload.swf import __all__, read_swf", []),
        ("from market_hpc.workload.probe import _own", []),
        ("from numpy import _private", []),
    ],
)
def test_the_private_import_check_sees_absolute_and_relative_imports(source, expected):
    assert private_imports(source, "market_hpc.workload.probe") == expected
