"""Every test that touches an optional package carries the marker that skips it when absent."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

# A test mentioning one of these names needs the marker on the right.
OPTIONAL_NAMES = {
    "cupy": "requires_cupy",
    "embedded_cupy": "requires_cupy",
    "jax": "requires_jax",
    "embedded_jax": "requires_jax",
    "jax_jit": "requires_jax",
    "dace": "requires_dace",
    "dace_cpu": "requires_dace",
    "dace_gpu": "requires_gpu",
    "cuda_gpu": "requires_gpu",
    "distributed": "requires_dask",
    "dask_cluster": "requires_dask",
}


def _marker_names(decorators: list[ast.expr]) -> set[str]:
    names = set()
    for node in decorators:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and sub.attr.startswith(("requires_", "slow", "simulates_")):
                names.add(sub.attr)
    return names


def _module_markers(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            names |= _marker_names([node.value])
    return names


def _mentioned(node: ast.AST) -> set[str]:
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in OPTIONAL_NAMES:
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute) and sub.attr in OPTIONAL_NAMES:
            found.add(sub.attr)
        elif isinstance(sub, ast.Import | ast.ImportFrom):
            modules = [a.name for a in sub.names] if isinstance(sub, ast.Import) else [sub.module or ""]
            found |= {m.split(".")[0] for m in modules if m.split(".")[0] in OPTIONAL_NAMES}
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value in {
            "cupy", "jax", "jax.numpy", "dace", "distributed"
        }:
            found.add(sub.value.split(".")[0])
    return found


def unmarked_optional_uses(source: str) -> list[str]:
    """Test functions that mention an optional package without the marker that skips them."""
    tree = ast.parse(source)
    module_marks = _module_markers(tree)
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            marks = module_marks | _marker_names(node.decorator_list)
            if "simulates_missing_package" in marks:
                continue
            for name in sorted(_mentioned(node)):
                needed = OPTIONAL_NAMES[name]
                if needed not in marks:
                    problems.append(f"{node.name} (line {node.lineno}) uses {name} without @pytest.mark.{needed}")
    return problems


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if p.name != "test_markers.py")


@pytest.mark.parametrize("path", _test_files(), ids=lambda p: str(p.relative_to(TESTS)))
def test_optional_packages_are_used_only_under_their_marker(path: Path):
    assert unmarked_optional_uses(path.read_text()) == []


def test_the_marker_check_catches_an_unmarked_use():
    source = "def test_x():\n    import cupy\n    cupy.zeros(3)\n"
    assert unmarked_optional_uses(source) == ["test_x (line 1) uses cupy without @pytest.mark.requires_cupy"]


def test_the_marker_check_accepts_a_marked_use():
    source = "import pytest\n@pytest.mark.requires_jax\ndef test_x():\n    import jax\n"
    assert unmarked_optional_uses(source) == []
