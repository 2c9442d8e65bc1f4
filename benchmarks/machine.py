"""The machine under test: what it is, and how fast it can copy memory.

``machine_info()`` describes the CPU, core count and versions. ``copy_kernel()`` builds a
STREAM-style copy (``b[i] = a[i]``, with streaming stores where the target has them: ADR 0010
says why) on arrays larger than the last-level cache, and ``CopyKernel.bandwidth()`` (or
``copy_bandwidth()``, both in one) measures it. The kernel is C, built in this run with the
system compiler (``$CC`` or ``cc``; ``-O3 -march=native -fopenmp``, without OpenMP if that
fails) into a temporary shared library called through ctypes: this is the reference kernel,
not stencilforge's call path. Without a compiler it falls back to ``np.copyto`` and says so in
``CopyKernel.method``. The harness also times the kernel next to each bandwidth-bound row
(``benchmarks.timing``).
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np

__all__ = [
    "CopyBandwidth",
    "CopyKernel",
    "MachineInfo",
    "better_copy_bandwidth",
    "copy_bandwidth",
    "copy_kernel",
    "find_compiler",
    "last_level_cache_bytes",
    "machine_info",
]

_COPY_SOURCE = r"""
#include <stddef.h>
/* Streaming (non-temporal) stores where the target has them: a plain store first reads the
   line it writes (write-allocate), so a plain copy moves three bytes for the two it counts and
   leaves the last-level cache full of dirty lines that the next call writes back. */
#if defined(__AVX512F__)
#include <immintrin.h>
#define SF_LANES 8
#define SF_STREAM(to, from) _mm512_stream_pd((to), _mm512_load_pd(from))
#elif defined(__AVX__)
#include <immintrin.h>
#define SF_LANES 4
#define SF_STREAM(to, from) _mm256_stream_pd((to), _mm256_load_pd(from))
#elif defined(__SSE2__)
#include <emmintrin.h>
#define SF_LANES 2
#define SF_STREAM(to, from) _mm_stream_pd((to), _mm_load_pd(from))
#endif
int stream_lanes(void) {
#ifdef SF_LANES
    return SF_LANES;
#else
    return 0;
#endif
}
/* a and b 64-byte aligned, n a multiple of 8 (the caller's contract). */
void stream_copy(const double *restrict a, double *restrict b, size_t n) {
#ifdef SF_LANES
#ifdef _OPENMP
#pragma omp parallel
#endif
    {
#ifdef _OPENMP
#pragma omp for schedule(static) nowait
#endif
        for (size_t i = 0; i < n; i += SF_LANES) SF_STREAM(b + i, a + i);
        _mm_sfence();
    }
#else
#ifdef _OPENMP
#pragma omp parallel for simd schedule(static)
#endif
    for (size_t i = 0; i < n; ++i) b[i] = a[i];
#endif
}
void first_touch(double *restrict a, double *restrict b, size_t n) {
    /* Touch the pages with the threads that will copy them later (NUMA placement). */
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (size_t i = 0; i < n; ++i) { a[i] = (double)(i % 1024); b[i] = 0.0; }
}
"""

_FALLBACK_LLC_BYTES = 32 * 2**20


@attrs.frozen
class MachineInfo:
    """What the numbers were measured on."""

    cpu: str
    cores: int
    platform: str
    python: str
    numpy: str
    stencilforge: str
    compiler: str | None


@attrs.frozen
class CopyBandwidth:
    """The measured copy bandwidth.

    Attributes:
        bytes_per_second: (bytes read + bytes written) / seconds of the best repetition.
        array_bytes: the size of each of the two arrays.
        method: how it was measured (``"C (cc -O3 ... -fopenmp), 2 threads"`` or ``"np.copyto
            (no C compiler)"``).
    """

    bytes_per_second: float
    array_bytes: int
    method: str
    #: every measurement's bytes per second, in order (``bytes_per_second`` is the best)
    measurements: tuple[float, ...] = ()


def better_copy_bandwidth(first: CopyBandwidth, second: CopyBandwidth) -> CopyBandwidth:
    """The higher of two copy bandwidth measurements, recording both."""
    best = max(first, second, key=lambda copy: copy.bytes_per_second)
    before = first.measurements or (first.bytes_per_second,)
    after = second.measurements or (second.bytes_per_second,)
    return attrs.evolve(best, measurements=before + after)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Hardware", "cpu model")):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def find_compiler() -> str | None:
    """The system C compiler: ``$CC`` if set, else ``cc`` on the PATH, else ``None``."""
    candidate = os.environ.get("CC") or "cc"
    return shutil.which(candidate.split()[0]) and candidate


def _compiler_version(compiler: str | None) -> str | None:
    if compiler is None:
        return None
    try:
        done = subprocess.run(
            [*compiler.split(), "--version"],
            capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return compiler
    first = done.stdout.splitlines()[0] if done.stdout else compiler
    return first.strip()


def machine_info() -> MachineInfo:
    """Describe this machine and the software versions in use."""
    return MachineInfo(
        cpu=_cpu_model(),
        cores=os.cpu_count() or 1,
        platform=platform.platform(),
        python=sys.version.split()[0],
        numpy=np.__version__,
        stencilforge=_package_version("stencilforge"),
        compiler=_compiler_version(find_compiler()),
    )


def last_level_cache_bytes() -> int:
    """The largest CPU cache size reported by sysfs (32 MiB if it cannot be read)."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip().upper()
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=_FALLBACK_LLC_BYTES)


def build_c_library(
    compiler: str, source: str, directory: Path, name: str
) -> tuple[ctypes.CDLL, tuple[str, ...]] | None:
    """Build ``source`` into ``directory/lib<name>.so`` with ``-O3 -march=native``, with
    OpenMP or, if that fails, without it; the loaded library and the flags it was built with,
    or ``None`` when neither builds. The library stays mapped after ``directory`` is removed."""
    path = directory / f"{name}.c"
    path.write_text(source)
    library = directory / f"lib{name}.so"
    base = [*compiler.split(), "-O3", "-march=native", "-shared", "-fPIC"]
    for extra in (["-fopenmp"], []):
        command = [*base, *extra, str(path), "-o", str(library)]
        try:
            done = subprocess.run(command, capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode == 0:
            return ctypes.CDLL(str(library)), ("-O3", "-march=native", *extra)
    return None


def _build_copy_library(compiler: str, directory: Path) -> tuple[ctypes.CDLL, str] | None:
    built = build_c_library(compiler, _COPY_SOURCE, directory, "stream_copy")
    if built is None:
        return None
    loaded, flags = built
    for name in ("stream_copy", "first_touch"):
        function = getattr(loaded, name)
        function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        function.restype = None
    loaded.stream_lanes.argtypes = []
    loaded.stream_lanes.restype = ctypes.c_int
    threads = _omp_threads() if "-fopenmp" in flags else 1
    stores = "streaming stores" if loaded.stream_lanes() else "plain stores"
    return loaded, f"C ({compiler} {' '.join(flags)}), {threads} thread(s), {stores}"


def _omp_threads() -> int:
    """The threads an OpenMP kernel runs on: ``$OMP_NUM_THREADS``, else the core count."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() else (os.cpu_count() or 1)


@attrs.frozen
class CopyKernel:
    """A built copy kernel with its arrays, ready to run.

    Attributes:
        run: one copy of ``array_bytes`` from one array into the other.
        array_bytes: the size of each of the two arrays.
        method: how it copies (see ``CopyBandwidth.method``).
    """

    run: Callable[[], None]
    array_bytes: int
    method: str
    _source: np.ndarray = attrs.field(repr=False)
    _target: np.ndarray = attrs.field(repr=False)

    @property
    def bytes_moved(self) -> int:
        """Bytes read plus bytes written by one ``run()``."""
        return 2 * self.array_bytes

    def bandwidth(self, repeat: int = 10) -> CopyBandwidth:
        """The best of ``repeat`` timed copies after one warm-up, as STREAM reports it.

        Raises:
            RuntimeError: the kernel did not copy (its result is checked).
        """
        self.run()
        seconds = []
        for _ in range(max(repeat, 1)):
            start = time.perf_counter()
            self.run()
            seconds.append(time.perf_counter() - start)
        if not np.array_equal(self._source[: 1 << 16], self._target[: 1 << 16]):
            raise RuntimeError(f"the copy kernel ({self.method}) did not copy")
        return CopyBandwidth(self.bytes_moved / min(seconds), self.array_bytes, self.method)


def aligned_doubles(n: int) -> np.ndarray:
    """``n`` doubles starting on a 64-byte boundary (a cache line; what streaming stores of
    the widest vectors need)."""
    raw = np.empty(n + 8)
    skip = (-raw.ctypes.data % 64) // 8
    return raw[skip : skip + n]


def copy_kernel(array_bytes: int | None = None) -> CopyKernel:
    """Build the copy kernel and first-touch its arrays.

    Args:
        array_bytes: size of each array; default 4x the last-level cache, at least 64 MiB.
    """
    nbytes = array_bytes or max(4 * last_level_cache_bytes(), 64 * 2**20)
    n = nbytes // 64 * 8  # whole cache lines: the streaming copy's contract
    source, target = aligned_doubles(n), aligned_doubles(n)
    compiler = find_compiler()
    with tempfile.TemporaryDirectory(prefix="stencilforge-stream-") as directory:
        # The loaded library stays mapped after its file is removed.
        built = _build_copy_library(compiler, Path(directory)) if compiler else None
    if built is None:
        source[...] = 1.0
        target[...] = 0.0

        def copy() -> None:
            np.copyto(target, source)

        return CopyKernel(copy, n * 8, "np.copyto (no working C compiler found)", source, target)
    library, method = built
    library.first_touch(source.ctypes.data, target.ctypes.data, n)

    def stream_copy() -> None:
        # The arrays are read here, not their addresses kept: a `run` kept without its
        # kernel keeps them alive.
        library.stream_copy(source.ctypes.data, target.ctypes.data, n)

    return CopyKernel(stream_copy, n * 8, method, source, target)


def copy_bandwidth(repeat: int = 10, array_bytes: int | None = None) -> CopyBandwidth:
    """Measure STREAM copy bandwidth: ``copy_kernel(array_bytes).bandwidth(repeat)``."""
    return copy_kernel(array_bytes).bandwidth(repeat)
