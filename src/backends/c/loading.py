"""The loading step: ``CompiledArtifact -> CompiledProgram`` (the launcher opens the program)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from backends.build_cache import verified_bytes
from backends.c.launcher import Launcher
from pipeline.errors import DamagedArtifactError
from pipeline.stages import CompiledArtifact

__all__ = ["CLoading", "CompiledProgram", "DamagedArtifactError"]


@attrs.frozen(repr=False)
class CompiledProgram:
    """A loaded program: a ``SelfCheckingExecutable`` around the launcher's native ``run``.

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


@attrs.frozen
class CLoading:
    """Open a built program with the launcher.

    Attributes:
        launcher: the launcher that checks and calls the program (built on the first load in
            a cache, imported once per process); its identity is part of this step's.
    """

    launcher: Launcher

    def __fingerprint__(self) -> object:
        return self.launcher

    def __call__(self, artifact: CompiledArtifact, /) -> CompiledProgram:
        """The program of ``artifact``, after checking its content hash.

        Raises:
            DamagedArtifactError: the file is missing, its bytes changed since publish, or it
                is not a program of this launcher's interface.
            CompilationError: the launcher had to be built and its build failed.
        """
        path = Path(artifact.path)
        verified_bytes(path, artifact.content_hash, "built object")
        launcher = self.launcher.module()
        try:
            program = launcher.load(str(path))
        except ImportError as error:
            raise DamagedArtifactError(f"built object {path}: {error}") from error
        return CompiledProgram(
            program.run, program.run_disjoint, artifact.source.metadata.name, str(path)
        )
