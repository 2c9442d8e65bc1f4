"""The CUDA compilation step: ``ProgramSource -> CompiledArtifact`` (a fatbin, with nvcc).

The fatbin holds the machine code for one GPU architecture and its PTX, which the driver can
compile for a newer GPU. It is built in a fresh directory inside the build cache and published
with one atomic ``os.replace`` under a name derived from everything that determines it, its
SHA-256 recorded in the artifact (``backends.build_cache``); loading checks those bytes
before it hands them to the driver. Needs no GPU: only the CUDA toolkit's ``nvcc``.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from backends.build_cache import BuildCache
from backends.clike.compiler import run_compiler, step_fingerprint
from backends.cuda.errors import CudaCompilationError
from backends.cuda.translation import CUDA_SOURCE
from pipeline.stages import CompiledArtifact, ProgramSource, SourceFormat

__all__ = [
    "DEFAULT_ARCH",
    "DEFAULT_FLAGS",
    "NvccCompilation",
    "cuda_artifact_is_intact",
    "default_nvcc",
    "nvcc_version",
]

#: The architecture built for when none is given: the H100/H200's (compute capability 9.0).
#: ``backends.cuda_gpu`` builds for the current device's instead.
DEFAULT_ARCH = "sm_90"

#: ``--fmad=false``: no fused multiply-add, so results round as NumPy's do (the C backend's
#: ``-ffp-contract=off``).
DEFAULT_FLAGS = ("-O3", "--fmad=false")

_ARCH = re.compile(r"sm_(\d+)([af]?)")


def default_nvcc() -> str:
    """``$NVCC`` if set, else ``nvcc`` on the PATH, else the toolkit's usual place
    (``$CUDA_HOME/bin/nvcc``, ``/usr/local/cuda/bin/nvcc``)."""
    configured = os.environ.get("NVCC")
    if configured:
        return configured
    found = shutil.which("nvcc")
    if found:
        return found
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    return str(Path(home) / "bin" / "nvcc")


@functools.cache
def nvcc_version(nvcc: str) -> str:
    """The last line of ``nvcc --version`` (the release and build).

    Raises:
        CudaCompilationError: ``nvcc`` cannot be run.
    """
    try:
        result = subprocess.run(
            [nvcc, "--version"], capture_output=True, text=True, check=False, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise CudaCompilationError(
            f"cannot run the CUDA compiler {nvcc!r} ({error}); install the CUDA toolkit "
            "(or `pip install nvidia-cuda-nvcc`) and put nvcc on the PATH, or set $NVCC"
        ) from error
    if result.returncode != 0:
        raise CudaCompilationError(
            f"cannot run the CUDA compiler {nvcc!r} (`{nvcc} --version` exited with "
            f"{result.returncode}: {result.stderr.strip()[-400:]}); set $NVCC to a working nvcc"
        )
    lines = result.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def _check_arch(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or _ARCH.fullmatch(value) is None:
        raise ValueError(
            f"arch must name a GPU architecture like 'sm_90' (compute capability 9.0), "
            f"got {value!r}"
        )


def _version_of(compilation: NvccCompilation) -> str | None:
    try:
        return nvcc_version(compilation.nvcc)
    except CudaCompilationError:
        return None


@attrs.frozen
class NvccCompilation:
    """Build a CUDA ``ProgramSource`` into a fatbin with ``nvcc``.

    Attributes:
        build_directory: the build cache (``builds/`` and ``tmp/`` live inside).
        nvcc: the compiler executable (default ``default_nvcc()``).
        arch: the GPU architecture of the machine code (``sm_90``); the fatbin also holds the
            PTX of its compute capability, which newer GPUs' drivers compile.
        flags: the optimization flags (default ``DEFAULT_FLAGS``); the cache key records them.
        nvcc_version: ``nvcc_version(nvcc)``, asked when the step is made (so that
            fingerprinting it runs nothing); None when nvcc cannot run, which the first build
            reports.
    """

    build_directory: str
    nvcc: str = attrs.field(factory=default_nvcc)
    arch: str = attrs.field(default=DEFAULT_ARCH, validator=_check_arch)
    flags: tuple[str, ...] = attrs.field(default=DEFAULT_FLAGS, converter=tuple)
    accepts: SourceFormat = attrs.field(default=CUDA_SOURCE, init=False)
    nvcc_version: str | None = attrs.field(
        default=attrs.Factory(_version_of, takes_self=True), init=False, repr=False
    )

    @property
    def command_flags(self) -> tuple[str, ...]:
        """Every flag a build passes: the output kind and architectures, then ``flags``."""
        match = _ARCH.fullmatch(self.arch)
        assert match is not None  # validated
        number, suffix = match.groups()
        code = f"[sm_{number}{suffix},compute_{number}{suffix}]"
        return ("--fatbin", f"-gencode=arch=compute_{number}{suffix},code={code}", *self.flags)

    def __fingerprint__(self) -> object:
        return step_fingerprint(
            self.nvcc, self.command_flags, self.nvcc_version, code=(sys.modules[__name__],)
        )

    def __call__(self, source: ProgramSource, /) -> CompiledArtifact:
        """Build and publish ``source``; the artifact names the fatbin and its hash.

        Raises:
            CudaCompilationError: nvcc failed (its output, and where the source was kept).
        """
        if self.nvcc_version is None:
            nvcc_version(self.nvcc)  # raises, saying why

        def make(workdir: Path) -> Path:
            file = workdir / f"{source.entry_point}.cu"
            file.write_text(source.text)
            (built,) = self.build([file], workdir)
            return built

        return BuildCache(Path(self.build_directory)).program(self, source, ".fatbin", make)

    def build(self, files: Sequence[Path], directory: Path) -> list[Path]:
        """Compile the CUDA ``files`` in one nvcc run into fatbins in ``directory`` (one per
        file, named after it); their paths, in order.

        Raises:
            CudaCompilationError: nvcc cannot be run or failed (its error output, and the
                files it was given).
        """
        command = [self.nvcc, *self.command_flags, "-odir", str(directory), *map(str, files)]
        run_compiler(
            command,
            kind="CUDA",
            install="install the CUDA toolkit and put nvcc on the PATH, or set $NVCC",
            compiling=", ".join(str(f) for f in files[:4]) + (" ..." if len(files) > 4 else ""),
            kept=f"sources kept in {Path(files[0]).parent}",
            error=CudaCompilationError,
        )
        return [directory / f"{Path(f).stem}.fatbin" for f in files]


def cuda_artifact_is_intact(artifact: CompiledArtifact) -> bool:
    """Whether the published fatbin still exists with the bytes recorded at publish time."""
    return BuildCache.intact(Path(artifact.path), artifact.content_hash)
