"""What this machine's memory lets a loop overlap: ``python -m benchmarks.memory_probe``.

A row bound by memory reaches its roofline only if the machine moves the row's bytes while
the loop computes. Three measurements, each a C kernel built in this run as the copy kernel
is (``benchmarks.machine``), say how far that holds here (ADR 0014 and the notes of
2026-12-05 use them for the scans):

- **traffic floor**: each large row's traffic (its input fields read in order, its output
  written with streaming stores) with no arithmetic, timed after a copy as the harness times
  the row, against the row's copy bound (the same bytes over the copy bandwidth). The copy
  kernel reads one stream and writes one; a row that reads four can be slower than its copy
  bound with nothing to compute.
- **prefetch landing**: a 128 KiB region not in the caches, read after its lines were asked
  for into L2 (``__builtin_prefetch``, as the scans' copy-in asks) back to back or paced by a
  few dependent operations each, and a while later: how much of the read's memory time each
  way saved, against a read of the region from the caches (all of it saved). A prefetch that
  finds no free miss buffer may be dropped.
- **overlap**: each thread streams four arrays block by block (32 KiB of each), reading a
  block then computing on registers for about as long as the reading took; the time hidden
  is how much shorter the two together are than one after the other, with the hardware's
  prefetchers alone and with the next block asked for during the arithmetic.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import numpy as np

from .machine import aligned_doubles, build_c_library, copy_kernel, find_compiler
from .workloads import SIZES, WORKLOADS

__all__ = [
    "Landing",
    "Overlap",
    "Probe",
    "TrafficFloor",
    "build_probe",
    "main",
    "prefetch_landing",
    "streaming_overlap",
    "traffic_floors",
]

_SOURCE = r"""
#include <stddef.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX512F__)
#include <immintrin.h>
#define SF_LANES 8
typedef __m512d sf_v;
#define SF_LOAD _mm512_load_pd
#define SF_ADD _mm512_add_pd
#define SF_ZERO _mm512_setzero_pd
#define SF_STREAM _mm512_stream_pd
#define SF_SUM(v) _mm512_reduce_add_pd(v)
#elif defined(__AVX__)
#include <immintrin.h>
#define SF_LANES 4
typedef __m256d sf_v;
#define SF_LOAD _mm256_load_pd
#define SF_ADD _mm256_add_pd
#define SF_ZERO _mm256_setzero_pd
#define SF_STREAM _mm256_stream_pd
static double SF_SUM(sf_v v) {
    double x[4];
    _mm256_storeu_pd(x, v);
    return x[0] + x[1] + x[2] + x[3];
}
#endif

static double sf_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int probe_lanes(void) {
#ifdef SF_LANES
    return SF_LANES;
#else
    return 0;
#endif
}

int probe_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* out[i] = the sum of the `reads` arrays at i for i < n: a row's traffic without its
   arithmetic (arrays 64-byte aligned, n a multiple of 8). */
void traffic(double* const* in, int reads, double* out, size_t n) {
#ifdef _OPENMP
#pragma omp parallel
#endif
    {
#ifdef SF_LANES
#ifdef _OPENMP
#pragma omp for schedule(static) nowait
#endif
        for (size_t i = 0; i < n; i += SF_LANES) {
            sf_v v = SF_LOAD(in[0] + i);
            for (int r = 1; r < reads; ++r) v = SF_ADD(v, SF_LOAD(in[r] + i));
            SF_STREAM(out + i, v);
        }
        _mm_sfence();
#else
#ifdef _OPENMP
#pragma omp for schedule(static) nowait
#endif
        for (size_t i = 0; i < n; ++i) {
            double v = in[0][i];
            for (int r = 1; r < reads; ++r) v += in[r][i];
            out[i] = v;
        }
#endif
    }
}

static double sf_read(const double* p, size_t n) {
#ifdef SF_LANES
    sf_v a = SF_ZERO(), b = SF_ZERO(), c = SF_ZERO(), d = SF_ZERO();
    for (size_t i = 0; i < n; i += 4 * SF_LANES) {
        a = SF_ADD(a, SF_LOAD(p + i));
        b = SF_ADD(b, SF_LOAD(p + i + SF_LANES));
        c = SF_ADD(c, SF_LOAD(p + i + 2 * SF_LANES));
        d = SF_ADD(d, SF_LOAD(p + i + 3 * SF_LANES));
    }
    return SF_SUM(SF_ADD(SF_ADD(a, b), SF_ADD(c, d)));
#else
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += p[i];
    return s;
#endif
}

/* The seconds one read of the n doubles at p takes (p 64-byte aligned, n a multiple of 32),
   after its lines were asked for (`how`: 0 not, 1 back to back, 2 each after eight dependent
   operations, 3 read twice: the second read's time) and `wait` seconds passed. */
double landing(const double* p, size_t n, int how, double wait, double* checksum) {
    double pace = 1.0;
    if (how == 1 || how == 2)
        for (size_t i = 0; i < n; i += 8) {
            __builtin_prefetch(p + i, 0, 2);
            if (how == 2)
                for (int k = 0; k < 8; ++k) pace = pace * 0.999999 + 1e-12;
        }
    if (how == 3) pace += sf_read(p, n);
    const double until = sf_now() + wait;
    while (sf_now() < until) {
    }
    const double start = sf_now();
    const double sum = sf_read(p, n);
    const double seconds = sf_now() - start;
    *checksum = sum + 0.0 * pace;
    return seconds;
}

/* Each thread streams its share of whole blocks of the `streams` arrays of n doubles, `block`
   doubles of each at a time (n a multiple of block, block of 32): `parts` 1 reads each block,
   2 computes `work` rounds of four register chains per block, 3 both, one after the other;
   with `ahead`, the next block's lines are asked for one at a time during the arithmetic,
   eight lines of a stream in a row. Returns the sum of what was read. */
double overlap(double* const* in, int streams, size_t n, size_t block, long work, int parts,
               int ahead) {
    double total = 0.0;
#ifdef _OPENMP
#pragma omp parallel reduction(+ : total)
#endif
    {
        size_t lo = 0, hi = n;
#ifdef _OPENMP
        const size_t blocks = n / block, threads = (size_t)omp_get_num_threads();
        const size_t thread = (size_t)omp_get_thread_num();
        lo = block * (blocks * thread / threads);
        hi = block * (blocks * (thread + 1) / threads);
#endif
        double x0 = 1.0, x1 = 2.0, x2 = 3.0, x3 = 4.0, sum = 0.0;
        const size_t lines = (size_t)streams * block / 8;
        for (size_t b = lo; b < hi; b += block) {
            if (parts & 1)
                for (int s = 0; s < streams; ++s) sum += sf_read(in[s] + b, block);
            if (!(parts & 2)) continue;
            const size_t next = b + block;
            size_t owed = 0, run = 0;
            int stream = 0, line = 0;
            for (long w = 0; w < work; ++w) {
                if (ahead && next < hi) {
                    owed += lines;
                    for (; owed >= (size_t)work && run < block; owed -= (size_t)work) {
                        __builtin_prefetch(in[stream] + next + run + 8 * (size_t)line, 0, 2);
                        if (++line == 8) {
                            line = 0;
                            if (++stream == streams) { stream = 0; run += 64; }
                        }
                    }
                }
                x0 = x0 * 0.999999 + x1 * 1e-9;
                x1 = x1 * 0.999999 + x2 * 1e-9;
                x2 = x2 * 0.999999 + x3 * 1e-9;
                x3 = x3 * 0.999999 + x0 * 1e-9;
            }
        }
        /* The chains' values kept (not optimized away) without changing the sum. */
        total = sum + (x0 + x1 + x2 + x3 == 0.0 ? 1.0 : 0.0);
    }
    return total;
}
"""

_DOUBLE_P = ctypes.POINTER(ctypes.c_double)


@attrs.frozen
class Probe:
    """The built kernels (see the module's docstring for each)."""

    library: ctypes.CDLL
    flags: tuple[str, ...]

    @property
    def threads(self) -> int:
        """The threads ``traffic`` and ``overlap`` run on (OpenMP's count in the library)."""
        return int(self.library.probe_threads())


@attrs.frozen
class TrafficFloor:
    """A row's traffic without its arithmetic.

    Attributes:
        row: the workload and size.
        reads: input fields read; one output written with streaming stores.
        bytes_per_call: bytes read plus bytes written.
        seconds: the median over the samples, each timed after a copy.
        copy_bound: ``bytes_per_call`` over the copy bandwidth measured in the same run.
    """

    row: str
    reads: int
    bytes_per_call: int
    seconds: float
    copy_bound: float


@attrs.frozen
class Landing:
    """Reads of a region not in the caches, after asking for its lines.

    Attributes:
        nbytes: the region's size.
        seconds: by way of asking (``"not asked"``, ``"back to back"``, ``"paced"``,
            ``"from the caches"``), the least of the reads' times.
    """

    nbytes: int
    seconds: dict[str, float]

    def saved(self, how: str) -> float:
        """The share of the read's memory time that asking ``how`` saved (1: all of it)."""
        cold, warm = self.seconds["not asked"], self.seconds["from the caches"]
        return (cold - self.seconds[how]) / (cold - warm) if cold > warm else 0.0


@attrs.frozen
class Overlap:
    """Streaming and register arithmetic of about the same length, apart and together.

    Attributes:
        reads: seconds of the reads alone.
        arithmetic: seconds of the arithmetic alone.
        together: seconds of both, with the hardware's prefetchers alone.
        together_asked: seconds of both, the next block asked for during the arithmetic.
    """

    reads: float
    arithmetic: float
    together: float
    together_asked: float

    def hidden(self, together: float) -> float:
        """The share of the shorter part that ran during the other (1: all of it)."""
        return (self.reads + self.arithmetic - together) / min(self.reads, self.arithmetic)


def build_probe(directory: Path) -> Probe | None:
    """Build the kernels in ``directory``; ``None`` without a C compiler that builds them or
    without the x86 vector extensions they time (AVX or AVX-512)."""
    compiler = find_compiler()
    built = build_c_library(compiler, _SOURCE, directory, "memory_probe") if compiler else None
    if built is None:
        return None
    library, flags = built
    library.probe_lanes.restype = ctypes.c_int
    library.probe_threads.restype = ctypes.c_int
    if library.probe_lanes() == 0:
        return None
    library.traffic.argtypes = [
        ctypes.POINTER(_DOUBLE_P), ctypes.c_int, _DOUBLE_P, ctypes.c_size_t,
    ]
    library.traffic.restype = None
    library.landing.argtypes = [
        _DOUBLE_P, ctypes.c_size_t, ctypes.c_int, ctypes.c_double, _DOUBLE_P,
    ]
    library.landing.restype = ctypes.c_double
    library.overlap.argtypes = [
        ctypes.POINTER(_DOUBLE_P), ctypes.c_int, ctypes.c_size_t, ctypes.c_size_t,
        ctypes.c_long, ctypes.c_int, ctypes.c_int,
    ]
    library.overlap.restype = ctypes.c_double
    return Probe(library, flags)


def _aligned(n: int, value: float) -> np.ndarray:
    array = aligned_doubles(n)
    array[...] = value
    return array


def _pointer(array: np.ndarray) -> ctypes._Pointer[ctypes.c_double]:
    return array.ctypes.data_as(_DOUBLE_P)


def _pointers(arrays: Sequence[np.ndarray]) -> ctypes.Array[ctypes._Pointer[ctypes.c_double]]:
    return (_DOUBLE_P * len(arrays))(*(_pointer(array) for array in arrays))


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def traffic_floors(
    probe: Probe, size: str, samples: int, flush: Callable[[], None], copy_bytes_per_second: float
) -> list[TrafficFloor]:
    """Each workload's traffic on the grid ``size``, ``samples`` times, each after ``flush``.

    Raises:
        RuntimeError: the kernel's output is not the sum of its inputs.
    """
    shape = SIZES[size]
    points = int(np.prod(shape)) // 8 * 8
    floors = []
    for name, workload in WORKLOADS.items():
        reads = len(workload.inputs)
        inputs = [_aligned(points, float(r + 1)) for r in range(reads)]
        out = _aligned(points, 0.0)
        call = functools.partial(
            probe.library.traffic, _pointers(inputs), reads, _pointer(out), points
        )
        seconds = []
        for _ in range(samples):
            flush()
            seconds.append(_timed(call))
        if not np.all(out == reads * (reads + 1) / 2):
            raise RuntimeError(f"the traffic kernel's output for {name} is not its inputs' sum")
        nbytes = (reads + 1) * points * 8
        floors.append(
            TrafficFloor(
                f"{name} {size}", reads, nbytes, statistics.median(seconds),
                nbytes / copy_bytes_per_second,
            )
        )
    return floors


def prefetch_landing(
    probe: Probe, pool_doubles: int, samples: int, flush: Callable[[], None]
) -> Landing:
    """Reads of a 128 KiB region of a pool of ``pool_doubles`` (at a new place each sample,
    after ``flush``), by each way of asking for its lines, 100 microseconds before.

    Raises:
        RuntimeError: a read's sum is not the region's.
    """
    region = 128 * 1024 // 8
    pool = _aligned(pool_doubles, 0.0)
    pool[...] = np.arange(pool_doubles) % 7
    generator = np.random.default_rng(0)
    ways = {"not asked": 0, "back to back": 1, "paced": 2, "from the caches": 3}
    best = dict.fromkeys(ways, float("inf"))
    checksum = ctypes.c_double()
    for _ in range(samples):
        for way, how in ways.items():
            flush()
            start = int(generator.integers(0, (pool_doubles - region) // 8)) * 8
            seconds = probe.library.landing(
                _pointer(pool[start:]), region, how, 100e-6, ctypes.byref(checksum)
            )
            if checksum.value != float(pool[start : start + region].sum()):
                raise RuntimeError("a read of the landing probe did not sum its region")
            best[way] = min(best[way], seconds)
    return Landing(region * 8, best)


def streaming_overlap(probe: Probe, stream_doubles: int, samples: int) -> Overlap:
    """Four streams of ``stream_doubles`` each in blocks of 32 KiB, with arithmetic as long
    as the reads (calibrated first), apart and together; each the median of ``samples``.

    Raises:
        RuntimeError: a run did not read every block of every stream.
    """
    streams, block = 4, 4096
    n = max(stream_doubles // block, probe.threads) * block
    arrays = [_aligned(n, 1.0) for _ in range(streams)]
    pointers = _pointers(arrays)

    def run(work: int, parts: int, ahead: int) -> float:
        seconds = []
        for _ in range(samples):
            start = time.perf_counter()
            total = probe.library.overlap(pointers, streams, n, block, work, parts, ahead)
            seconds.append(time.perf_counter() - start)
            if total != (streams * n if parts & 1 else 0):
                raise RuntimeError("the overlap probe did not read every block of its streams")
        return statistics.median(seconds)

    reads = run(0, 1, 0)
    trial = 256
    work = max(1, round(trial * reads / run(trial, 2, 0)))
    return Overlap(reads, run(work, 2, 0), run(work, 3, 0), run(work, 3, 1))


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def main(argv: Sequence[str] | None = None) -> None:
    """Run the three measurements and print them."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory_probe")
    parser.add_argument("--quick", action="store_true", help="small grids, few samples")
    arguments = parser.parse_args(argv)
    size, samples, pool, stream = (
        ("small", 3, 2**22, 2**20) if arguments.quick else ("large", 11, 2**25, 2**22)
    )
    with tempfile.TemporaryDirectory(prefix="stencilforge-memory-probe-") as directory:
        probe = build_probe(Path(directory))
    if probe is None:
        print("memory probe: needs a C compiler and AVX or AVX-512; nothing measured")
        return
    copy = copy_kernel(2**24 if arguments.quick else None)
    bandwidth = copy.bandwidth(3 if arguments.quick else 10)
    print(
        f"memory probe: {probe.threads} thread(s), kernels built with {' '.join(probe.flags)};"
        f" copy bandwidth {bandwidth.bytes_per_second / 1e9:.1f} GB/s ({bandwidth.method})"
    )
    print("traffic floor (inputs read, the output streamed, no arithmetic; after a copy):")
    for floor in traffic_floors(probe, size, samples, copy.run, bandwidth.bytes_per_second):
        print(
            f"  {floor.row}: {floor.reads} read + 1 written, {floor.bytes_per_call / 1e6:.0f} MB:"
            f" {_ms(floor.seconds)} ({floor.bytes_per_call / floor.seconds / 1e9:.1f} GB/s);"
            f" copy bound {_ms(floor.copy_bound)} ({floor.copy_bound / floor.seconds:.0%} of it)"
        )
    landing = prefetch_landing(probe, pool, samples, copy.run)
    timings = ", ".join(f"{way} {seconds * 1e6:.2f} us" for way, seconds in landing.seconds.items())
    print(
        f"prefetch landing ({landing.nbytes // 1024} KiB read 100 us after): {timings}; memory time"
        f" saved: back to back {landing.saved('back to back'):.0%},"
        f" paced {landing.saved('paced'):.0%}"
    )
    both = streaming_overlap(probe, stream, samples)
    print(
        f"overlap (4 streams, 32 KiB blocks): reads {_ms(both.reads)}, arithmetic"
        f" {_ms(both.arithmetic)}; together {_ms(both.together)} (hidden"
        f" {both.hidden(both.together):.0%}), the next block asked for"
        f" {_ms(both.together_asked)} (hidden {both.hidden(both.together_asked):.0%})"
    )


if __name__ == "__main__":
    main()
