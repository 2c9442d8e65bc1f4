"""Every module a translation's generated text can depend on is in that translation's key.

A translation step's disk-cache key holds a digest of its generator's code
(``_GENERATOR_VERSION``: ``backends.loops`` and every module of ``_GENERATOR_PACKAGES``). A
module the generators import from outside those packages would be edited without the key
noticing, and the disk cache would serve the old translation (as it did for
``backends.c.vectors`` while the modules were listed by hand). This reads the generators'
imports and asks that each be digested, or be named below as machinery that decides where and
whether a result is kept, never its text.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

#: Modules the generators import that do not shape the generated text: the pipeline's stages,
#: caches, errors and configuration, the allocators (the device a format names), the
#: backends' records and build caches.
MACHINERY = {
    "allocators",
    "backends",
    "backends.base",
    "backends.build_cache",
    "backends.cache",
    "backends.extensions",
    "backends.prepared_calls",
    "pipeline",
    "pipeline.caching",
    "pipeline.config",
    "pipeline.errors",
    "pipeline.fingerprint",
    "pipeline.stages",
    "pipeline.workflow",
}

OURS = ("allocators", "backends", "pipeline")


def _imports(package: str) -> set[str]:
    """The modules of ours that the package's modules import (``from x import y``: ``x.y``
    when that is a module, else ``x``)."""
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations
    found: set[str] = set()
    for folder in map(Path, spec.submodule_search_locations):
        for path in folder.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    found.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.update(_module_of(node.module, alias.name) for alias in node.names)
    return {name for name in found if name.split(".", 1)[0] in OURS}


def _module_of(module: str, name: str) -> str:
    if module.split(".", 1)[0] not in OURS:
        return module
    try:
        return f"{module}.{name}" if importlib.util.find_spec(f"{module}.{name}") else module
    except ModuleNotFoundError:  # module is a module, not a package
        return module


def _digested(name: str, packages: tuple[str, ...]) -> bool:
    return name == "backends.loops" or any(
        name == package or name.startswith(f"{package}.") for package in packages
    )


def _undigested(translation_module: str) -> set[str]:
    """The modules the translation's generators import that its key neither digests nor
    counts as machinery."""
    translation = importlib.import_module(translation_module)
    packages: tuple[str, ...] = translation._GENERATOR_PACKAGES
    return {
        name
        for package in packages
        if package.startswith("backends.")
        for name in _imports(package)
        if not _digested(name, packages) and name not in MACHINERY
    }


@pytest.mark.parametrize("translation", ["backends.c.translation", "backends.cuda.translation"])
def test_every_module_a_generator_imports_is_digested_into_its_key(translation: str) -> None:
    assert not _undigested(translation), (
        "add them to the translation's _GENERATOR_PACKAGES (or, if they never shape the "
        "generated text, to MACHINERY here)"
    )


@pytest.mark.requires_dace
def test_every_module_the_sdfg_generator_imports_is_digested_into_its_key() -> None:
    assert not _undigested("backends.dace.translation")
