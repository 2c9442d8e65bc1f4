"""The import graph of ``src/backends``: which subpackage imports which, and any import circle.

Usage: python tools/import_graph.py [SRC]   (default ``src``; exits 1 on a circle or on a backend
importing another backend's modules)

A backend is a subpackage of ``backends`` that makes a pipeline (``c``, ``cuda``, ``dace``, ``jax``,
``embedded``); the other subpackages (``clike``, ``arrayapi``) are shared machinery that any
backend may import. Every import counts, also those inside functions (they run too, later).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

BACKENDS = {"c", "cuda", "dace", "jax", "embedded"}


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, name: str, modules: set[str]) -> set[str]:
    """The modules of ``backends`` that the module at ``path`` imports (``from p import m`` of
    a module ``m`` imports ``p.m``, not ``p``'s own names)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            named = {f"{base}.{alias.name}" for alias in node.names}
            found.update(named & modules or {base})
    return {m for m in found if m.split(".")[0] == "backends"}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def main(src: Path) -> int:
    paths = {module_name(p, src): p for p in sorted((src / "backends").rglob("*.py"))}
    graph = {name: {m for m in imports(path, name, set(paths)) if m in paths and m != name}
             for name, path in paths.items()}
    # a package imports its __init__ before any of its modules; that is not an edge to count
    edges: dict[tuple[str, str], int] = defaultdict(int)
    crossing: list[str] = []
    for name, targets in graph.items():
        own = name.split(".")[1] if name.count(".") >= 1 else ""
        for target in targets:
            theirs = target.split(".")[1] if target.count(".") >= 1 else ""
            if own != theirs and own and theirs:
                edges[(own, theirs)] += 1
                if own in BACKENDS and theirs in BACKENDS:
                    crossing.append(f"{name} -> {target}")
    print("imports between backends' subpackages (importer -> imported: modules):")
    for (own, theirs), count in sorted(edges.items()):
        print(f"  {own} -> {theirs}: {count}")
    found = circles(graph)
    print(f"import circles: {len(found)}")
    for component in found:
        print("  " + " <-> ".join(component))
    print(f"a backend importing another backend's modules: {len(crossing)}")
    for line in sorted(crossing):
        print("  " + line)
    return 1 if found or crossing else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "src")))
