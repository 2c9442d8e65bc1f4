"""The loading step: ``CompiledArtifact -> CompiledProgram`` (import the extension module)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from backends.build_cache import verified_bytes
from pipeline.errors import DamagedArtifactError
from pipeline.stages import CompiledArtifact

__all__ = ["CompiledProgram", "DamagedArtifactError", "load_extension"]


@attrs.frozen(repr=False)
class CompiledProgram:
    """A loaded program: a ``SelfCheckingExecutable`` around the extension's native ``run``.

    ``fast_entry(*args)`` is the native function: it checks every argument and runs, or
    returns ``NotImplemented`` without touching memory. Calling the object runs arguments the
    dispatcher's checks accepted, through the native ``run_disjoint``: the same checks but for
    the byte-range overlap test, which the Python checks settled exactly (interleaved arrays
    that share no element run). NumPy scalars, which the native checks refuse, are passed as
    Python numbers.
    """

    fast_entry: Callable[..., Any]
    checked_entry: Callable[..., Any]
    name: str
    path: str

    def __call__(self, *args: Any) -> None:
        normalized = tuple(a.item() if isinstance(a, np.generic) else a for a in args)
        if self.checked_entry(*normalized) is NotImplemented:
            raise RuntimeError(
                f"internal error: the native code of {self.name}() refused arguments "
                "that the Python checks accept; please report this with the argument shapes, "
                "dtypes and strides"
            )

    def __repr__(self) -> str:
        return f"CompiledProgram({self.name}, {self.path})"


def load_extension(artifact: CompiledArtifact, /) -> CompiledProgram:
    """Import the extension module of ``artifact`` after checking its content hash.

    Raises:
        DamagedArtifactError: the file is missing or its bytes changed since publish.
    """
    path = Path(artifact.path)
    verified_bytes(path, artifact.content_hash, "built object")
    loader = importlib.machinery.ExtensionFileLoader(artifact.entry_point, str(path))
    spec = importlib.util.spec_from_file_location(artifact.entry_point, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return CompiledProgram(
        module.run, module.run_disjoint, artifact.source.metadata.name, str(path)
    )
