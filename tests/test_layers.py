"""House rule 1: algorithms are pure; imports only point left."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "market_hpc"
FORBIDDEN = {
    "algorithms": ("mesa", "market_hpc.model", "market_hpc.agents", "market_hpc.policies",
                   "market_hpc.experiment", "market_hpc.cli"),
    "domain": ("mesa", "market_hpc.algorithms", "market_hpc.policies", "market_hpc.model"),
    "policies": ("mesa", "market_hpc.model", "market_hpc.agents", "market_hpc.experiment"),
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
                assert not (name == banned or name.startswith(banned + ".")), f"{path} imports {name}"


def test_nothing_imports_visualization():
    for path in PACKAGE.rglob("*.py"):
        assert not any(n.startswith("visualization") for n in imported_modules(path)), path
