"""cuda_gpu's kernels run on the CPU, one thread after another: ``cuda_emulated``.

The translation is cuda_gpu's own (``CudaTranslation``, any parallelization and block); its
CUDA C is compiled as C++ by the host compiler, with a prelude that defines what CUDA C uses
of the language (``__global__``, ``threadIdx`` ...) and a driver per kernel that walks the
launch's grid and blocks in order, calling the kernel once per thread. Launches are planned by
the very code cuda_gpu's loader runs (``backends.cuda.loading.plan_launches``: the argument
struct, each kernel's grid and block, the scan buffers), on NumPy arrays. So the index
arithmetic, bounds, grid-stride loops, scan passes and launch planning of cuda_gpu are
checked on any machine, as Numba's CUDA simulator checks Numba's kernels::

    CudaTranslation (cuda_gpu's)          CUDA C, one kernel per stencil, struct sf_args
      -> CudaEmulationTranslation         + prelude + one driver per kernel (C++ for the CPU)
      -> CudaEmulationCompilation         c++ -> shared object (build cache, hash recorded)
      -> load_emulated                    ctypes; a call plans the launches like cuda_gpu

What it cannot check: anything between threads (they never run at once, so a race reads as
the sequential order gives it; kernels with ``__syncthreads`` or ``__shared__`` memory are
refused) and the device's own arithmetic (its math library, its rounding of what the host
compiler evaluates the same way only by ``-ffp-contract=off``).
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Unpack

import attrs
import numpy as np

from allocators import DeviceType
from backends.build_cache import BuildCache, verified_bytes
from backends.cache import CompiledPipeline, SharedCache, cached_pipeline
from backends.clike.compiler import (
    CompilationError,
    compiler_identity,
    made_again_where_unpickled,
    run_compiler,
    step_fingerprint,
)
from backends.cuda.errors import UnsupportedConstructError
from backends.cuda.interface import CudaInterface
from backends.cuda.loading import plan_launches
from backends.cuda.translation import CudaTranslation
from pipeline.caching import ensure_private_directory
from pipeline.dsl.frontend.step import shared_frontend
from pipeline.dsl.stages import CompilableProgram
from pipeline.errors import DamagedArtifactError
from pipeline.fingerprint import source_digest
from pipeline.stages import CompiledArtifact, ProgramSource, SourceFormat

__all__ = [
    "CUDA_EMULATION_SOURCE",
    "CudaEmulationCompilation",
    "CudaEmulationTranslation",
    "EmulatedCudaProgram",
    "cuda_emulated_pipeline",
    "default_cxx",
    "emulation_unit",
    "load_emulated",
]

#: C++ for the CPU: cuda_gpu's kernels with the emulation's prelude and drivers.
CUDA_EMULATION_SOURCE = SourceFormat("cuda-emulation", DeviceType.CPU)

# What the kernels use of CUDA C, for a host compiler. The builtin index variables are
# thread-local, so that two Python threads may run emulated programs at once.
_PRELUDE = r"""/* stencilforge: cuda_gpu's kernels emulated on the CPU (backends.cuda.emulation) */
#include <stdint.h>
#include <string.h>
#include <math.h>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
struct sf_uint3 { unsigned int x, y, z; };
static thread_local sf_uint3 threadIdx, blockIdx, blockDim, gridDim;
static inline double __longlong_as_double(long long bits) {
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}
/* launch: grid x, y, z, then block x, y, z. Threads run one after another, x fastest. */
template <typename Kernel>
static void sf_emulate(const unsigned int* launch, Kernel kernel) {
    gridDim = {launch[0], launch[1], launch[2]};
    blockDim = {launch[3], launch[4], launch[5]};
    for (blockIdx.z = 0; blockIdx.z < gridDim.z; ++blockIdx.z)
    for (blockIdx.y = 0; blockIdx.y < gridDim.y; ++blockIdx.y)
    for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)
    for (threadIdx.z = 0; threadIdx.z < blockDim.z; ++threadIdx.z)
    for (threadIdx.y = 0; threadIdx.y < blockDim.y; ++threadIdx.y)
    for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x)
        kernel();
}
"""

# Constructs whose meaning needs threads that run together (CUDA's names: a user's field
# called ``atomic_mass`` is none of them).
_CONCURRENT = re.compile(r"\b(__syncthreads|__shared__|atomic[A-Z]\w*|__shfl\w*)\b")


def emulation_unit(cuda: ProgramSource) -> str:
    """The C++ unit that runs ``cuda``'s kernels (cuda_gpu's translation) on the CPU: the
    prelude, the CUDA source, and ``sf_emulate_<kernel>(const sf_args*, const unsigned*
    launch)`` per kernel.

    Raises:
        UnsupportedConstructError: a kernel uses something that needs threads running
            together (``__syncthreads``, shared memory, atomics, warp shuffles).
    """
    interface = cuda.metadata
    assert isinstance(interface, CudaInterface)
    used = sorted(set(_CONCURRENT.findall(cuda.text)))
    if used:
        raise UnsupportedConstructError(
            f"the kernels of program {interface.ir.name!r} use {', '.join(used)}, which needs "
            "threads that run together; cuda_emulated runs them one after another, so it "
            "cannot run this program: run it on cuda_gpu"
        )
    drivers = [
        f'extern "C" void sf_emulate_{plan.name}(const sf_args* a, const unsigned int* launch)'
        f" {{ sf_emulate(launch, [a] {{ {plan.name}(*a); }}); }}"
        for plan in interface.kernels
    ]
    return "\n".join([_PRELUDE, cuda.text, *drivers, ""])


@attrs.frozen
class CudaEmulationTranslation:
    """cuda_gpu's translation, its kernels made into C++ for the CPU (``emulation_unit``).

    Attributes:
        kernels: the CUDA translation whose kernels are emulated (its parallelization and
            block decide the launches, as on the GPU).
    """

    kernels: CudaTranslation = attrs.field(factory=CudaTranslation)
    emits: SourceFormat = attrs.field(default=CUDA_EMULATION_SOURCE, init=False)

    def __fingerprint__(self) -> object:
        return (self.kernels, source_digest(sys.modules[__name__]))

    def __call__(self, program: CompilableProgram, /) -> ProgramSource:
        """The emulation unit of ``program``, its launch plans (``CudaInterface``) in the
        metadata.

        Raises:
            UnsupportedConstructError: the CUDA translation cannot express the program, or its
                kernels need threads that run together.
        """
        cuda = self.kernels(program)
        return ProgramSource(
            CUDA_EMULATION_SOURCE, emulation_unit(cuda), cuda.entry_point, metadata=cuda.metadata
        )


def default_cxx() -> str:
    """``$CXX`` if set, else ``c++``."""
    return os.environ.get("CXX") or "c++"


def _identity_of(compilation: CudaEmulationCompilation) -> str | None:
    try:
        return compiler_identity(compilation.compiler, compilation.build_directory)
    except CompilationError:
        return None  # reported by the first build


#: What every build needs: C++17 (hex float literals, lambdas), a loadable shared object, and
#: no fused multiply-add (cuda_gpu builds with ``--fmad=false``).
REQUIRED_FLAGS = ("-std=c++17", "-fPIC", "-shared", "-ffp-contract=off", "-Wno-unknown-pragmas")


@attrs.frozen
class CudaEmulationCompilation:
    """Build an emulation unit into a shared object with the host C++ compiler.

    Attributes:
        build_directory: the build cache (``builds/`` and ``tmp/`` inside).
        compiler: the C++ compiler executable.
        flags: optimization flags; ``-O1`` by default: emulated programs are small and
            checked, not timed, so the build's time matters more than the code's.
        compiler_identity: what ``compiler`` says it is, asked when the step is made.
    """

    build_directory: str
    compiler: str = attrs.field(factory=default_cxx)
    flags: tuple[str, ...] = attrs.field(default=("-O1",), converter=tuple)
    compiler_identity: str | None = attrs.field(
        default=attrs.Factory(_identity_of, takes_self=True), init=False, repr=False
    )
    accepts: SourceFormat = attrs.field(default=CUDA_EMULATION_SOURCE, init=False)

    def __reduce__(self) -> tuple[object, ...]:
        return made_again_where_unpickled(self)

    def __fingerprint__(self) -> object:
        return step_fingerprint(
            self.compiler,
            REQUIRED_FLAGS,
            self.flags,
            self.compiler_identity,
            code=(sys.modules[__name__],),
        )

    def __call__(self, source: ProgramSource, /) -> CompiledArtifact:
        """Build and publish ``source``; the artifact names the shared object and its hash.

        Raises:
            CompilationError: the compiler cannot run or failed (its output, and where the
                source was kept).
        """
        if self.compiler_identity is None:
            compiler_identity(self.compiler)  # raises, saying why

        def make(workdir: Path) -> Path:
            unit = workdir / f"{source.entry_point}.cpp"
            unit.write_text(source.text)
            built = workdir / f"{source.entry_point}.so"
            self._compile([str(unit), "-o", str(built)], unit)
            return built

        return BuildCache(Path(self.build_directory)).program(self, source, ".so", make)

    def _compile(self, arguments: Sequence[str], unit: Path) -> None:
        run_compiler(
            [self.compiler, *REQUIRED_FLAGS, *self.flags, *arguments],
            kind="C++",
            install="install g++ or clang++, or set $CXX",
            compiling=str(unit),
            kept="the source is kept there",
        )


class EmulatedCudaProgram:
    """A loaded emulation (an ``Executable``): called on arguments the dispatcher's checks
    accepted, it plans the launches as cuda_gpu's loader does and runs each kernel's threads
    on the calling thread, returning when all have run."""

    def __init__(self, interface: CudaInterface, library: ctypes.CDLL, path: str) -> None:
        self.interface = interface
        self.path = path
        self._library = library  # the kernels' code stays loaded while the program lives
        self._dtype = interface.struct.numpy_dtype()
        self._drivers: dict[str, Callable[..., None]] = {}
        for plan in interface.kernels:
            driver = getattr(library, f"sf_emulate_{plan.name}")
            driver.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
            driver.restype = None
            self._drivers[plan.name] = driver

    def __repr__(self) -> str:
        return f"EmulatedCudaProgram({self.interface.ir.name}, {self.path!r})"

    def __call__(self, *args: Any) -> None:
        record = np.zeros(1, self._dtype)
        launches, scratch = plan_launches(
            self.interface, args, record, pointer=_host_pointer, allocate=_host_buffer
        )
        for plan, grid, block in launches:
            launch = np.array((*grid, *block), dtype=np.uint32)
            self._drivers[plan.name](record.ctypes.data, launch.ctypes.data)
        del scratch  # the scan buffers live until every kernel has run


def _host_pointer(array: Any) -> int:
    return int(array.ctypes.data)


def _host_buffer(elements: int, dtype: str) -> Any:
    return np.empty(elements, dtype=dtype)


def load_emulated(artifact: CompiledArtifact, /) -> EmulatedCudaProgram:
    """Open the shared object of ``artifact`` after checking its content hash.

    Raises:
        DamagedArtifactError: the file is missing, its bytes changed since publish, or it
            does not load as an emulation of its program.
    """
    path = Path(artifact.path)
    verified_bytes(path, artifact.content_hash, "built emulation")
    interface = artifact.source.metadata
    if not isinstance(interface, CudaInterface):
        raise DamagedArtifactError(
            f"the artifact {path} carries no CUDA launch plan; delete the cache entry to rebuild it"
        )
    try:
        return EmulatedCudaProgram(interface, ctypes.CDLL(str(path)), str(path))
    except (OSError, AttributeError) as error:
        raise DamagedArtifactError(f"built emulation {path}: {error}") from error


CudaEmulatedPipeline = CompiledPipeline[EmulatedCudaProgram]


def cuda_emulated_pipeline(
    cache_directory: Path,
    *,
    translation: CudaEmulationTranslation | None = None,
    **shared: Unpack[SharedCache],
) -> CudaEmulatedPipeline:
    """The ``cuda_emulated`` pipeline: cuda_gpu's frontend and translation, the emulation's
    compilation (shared objects under ``cache_directory / "cuda-emulated"``) and loading,
    translation and compilation cached like every compiled backend's.

    Args:
        cache_directory: a private directory (see ``backends.cache``).
        translation: the emulated translation (default: cuda_gpu's default kernels).
        shared: ``cache_url`` and ``cache_secret``, the shared cache behind the local one
            (``backends.cache.SharedCache``).
    """
    cache_directory = ensure_private_directory(cache_directory)
    return cached_pipeline(
        cache_directory,
        shared_frontend,
        translation or CudaEmulationTranslation(),
        CudaEmulationCompilation(str(cache_directory / "cuda-emulated")),
        load_emulated,
        validate=lambda artifact: BuildCache.intact(Path(artifact.path), artifact.content_hash),
        **shared,
    )
