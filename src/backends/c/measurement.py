"""The C program that times a stencil's code variants on arrays it allocates itself.

``measurement_source`` emits one translation unit per candidate (the stencil generated as
``sf_stencil_<n>`` for candidate ``n``, with the runtime and scratch helpers) and a ``main``
unit: a plain C executable, no Python headers. ``main`` allocates every field the stencil
touches on a grid of its own (C-contiguous, 64-byte aligned, huge pages advised as NumPy
advises them for its arrays, filled in parallel with deterministic values), so no user
memory is ever given to the candidates and every read lies inside the arrays (the domain keeps the stencil's whole reach inside). It calls each
candidate once to warm up, then in rounds, the candidates in rotated order, and prints the
best wall-clock time and the median processor time per call of each:
``<candidate> <wall> <processor>`` (seconds) per line. A candidate far slower than the
fastest in the first round (``DROP_FACTOR``) sits out the rounds after it.

Before each timed call, untimed, ``main`` writes a buffer of ``dirty_bytes`` (the last-level
cache's size): every call starts with the cache full of modified lines of other data, as a
stencil in a model's time step finds it after the stencils before it, and as the harness
times it (a copy kernel before each sample, ADR 0010). Without it each call found the cache
as the candidate before had left it: on the Zen 3 VM hdiff's temporary rows with streaming
stores and with plain ones measured within 1 % of each other and were chosen by chance,
while in the harness the streaming variant ran 1.25x faster (ADR 0009).

The median, not the least, processor time: the process clock read around one short parallel
call can miss part of the other threads' work or count work of the call before (Linux brings
a running thread's time up to date at its scheduler events, a tick or a switch). On the Zen 4
VM, 20 of 400 calls of 3 ms on two busy threads read below 0.9 of their processor time, down
to a third, and some above it, up to 1.5 times (ADR 0009). The least of five readings is one
of those for about a fifth of the candidates, enough to decide between candidates 5-10 %
apart; the median of five is not moved by one or two of them.

The grid: the innermost iteration dimension 64 points (a K column), the others equal, so
that the fields together take about twice the last-level cache (64 to 256 MiB): the
candidates run out of memory, as on the grids whose speed matters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from backends.c.stencil_code import StencilCode
from backends.c.units import join_units
from backends.clike.expressions import C_TYPES
from backends.clike.runtime import BOOL_TYPEDEF
from pipeline.dsl.ir.nodes import ProgramIR, Stencil
from pipeline.dsl.types import FieldType, ScalarType, bool_

__all__ = ["SYSTEM_CLOCK", "MeasurementGrid", "measurement_grid", "measurement_source"]

#: Points of the innermost iteration dimension on the measurement grid.
INNER_POINTS = 64

#: A candidate whose first timed call took more than this many times the fastest one's, in
#: wall-clock and in processor time both, is timed no further (its one reading is printed).
#: Both, because either reading alone can be off by that much (a descheduled thread, an
#: undercounted process clock) but not both at once; recomputing hdiff's locals takes 4x
#: the temporaries' time on the Zen 3 VM, and its four further rounds cost every cold hdiff
#: build about 0.2 s.
DROP_FACTOR = 3.0


@attrs.frozen
class MeasurementGrid:
    """The arrays and domain of a measurement.

    Attributes:
        sizes: each iteration dimension's array size (every field of the grid has it).
        lower: per iteration dimension, the first domain index (the stencil's reach below).
        upper: per iteration dimension, the points past the domain (its reach above).
    """

    sizes: Mapping[str, int]
    lower: Mapping[str, int]
    upper: Mapping[str, int]

    def describe(self) -> str:
        """``256x256x64 points`` (the domain)."""
        domain = [self.sizes[d] - self.lower[d] - self.upper[d] for d in self.sizes]
        return "x".join(str(n) for n in domain) + " points"


def _used_fields(stencil: Stencil) -> list[str]:
    names = [extent.name for extent in stencil.extents]
    names += [read.name for read in stencil.guarded]
    names += [target.name for target in stencil.outputs]
    return list(dict.fromkeys(names))


def measurement_grid(
    program: ProgramIR, stencil: Stencil, dims: Sequence[str], budget_bytes: int
) -> MeasurementGrid:
    """The grid on which ``stencil`` (iterating over ``dims``) is measured: its fields
    together about ``budget_bytes``, its domain inside every field by the stencil's reach."""
    lower = dict.fromkeys(dims, 0)
    upper = dict.fromkeys(dims, 0)
    for extent in stencil.extents:
        for bound in extent.dims:
            if bound.dim in lower:
                lower[bound.dim] = max(lower[bound.dim], -bound.lower)
                upper[bound.dim] = max(upper[bound.dim], bound.upper)
    for read in stencil.guarded:
        for dim, offset in read.offsets:
            if dim in lower:
                lower[dim] = max(lower[dim], -offset)
                upper[dim] = max(upper[dim], offset)
    point_bytes = 0
    for name in _used_fields(stencil):
        field = program.param(name).type
        assert isinstance(field, FieldType)
        point_bytes += np.dtype(field.dtype).itemsize
    points = max(budget_bytes // max(point_bytes, 1), 1)
    interior: dict[str, int] = {}
    if dims:
        outer = dims[:-1]
        interior[dims[-1]] = min(INNER_POINTS, points) if outer else points
        if outer:
            side = max(round((points / interior[dims[-1]]) ** (1 / len(outer))), 1)
            interior |= dict.fromkeys(outer, side)
    sizes = {d: interior[d] + lower[d] + upper[d] for d in dims}
    return MeasurementGrid(sizes, lower, upper)


_VALUES = r"""
/* Advises huge pages for `bytes` at p when they take 4 MiB or more, as NumPy does for the
   arrays it allocates (Linux): the candidates then run on memory like the arrays they stand
   in for. Where transparent huge pages are given only on advice, they decide hdiff's choice:
   on the Zen 3 VM its streaming stores were 14 % faster than plain ones with them and level
   without (ADR 0009). */
static void sf_advise(void* p, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const long page = sysconf(_SC_PAGESIZE);
    if (bytes < ((size_t)1 << 22) || page <= 0) return;
    const uintptr_t start = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    const uintptr_t end = (uintptr_t)p + bytes;
    if (end > start) (void)madvise((void*)start, end - start, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}
static inline double sf_value(uint64_t i) {
    /* Deterministic values in [-1, 1): a 64-bit mix of the index. */
    i ^= i >> 33; i *= 0xff51afd7ed558ccdULL; i ^= i >> 33; i *= 0xc4ceb9fe1a85ec53ULL;
    i ^= i >> 33;
    return (double)(i >> 11) * 0x1.0p-52 - 1.0;
}
/* The median of x[0..n) (sorts it in place; n >= 1): the middle value, or the mean of the
   two middle ones. */
static double sf_median(double* x, int n) {
    for (int i = 1; i < n; ++i) {
        const double v = x[i];
        int j = i;
        while (j > 0 && x[j - 1] > v) { x[j] = x[j - 1]; --j; }
        x[j] = v;
    }
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}
"""


#: The clocks ``main`` reads (C source defining ``sf_clock``): ``CLOCK_MONOTONIC`` for
#: wall-clock time, ``CLOCK_PROCESS_CPUTIME_ID`` for processor time.
SYSTEM_CLOCK = r"""
static double sf_clock(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
"""


def _fill(name: str, ctype: str, dtype_kind: str, count: str) -> list[str]:
    if dtype_kind == "b":
        value = "(sf_bool)(sf_value((uint64_t)i) > 0.0)"
    elif dtype_kind in "iu":
        value = f"({ctype})(8.0 * sf_value((uint64_t)i))"
    else:
        value = f"({ctype})sf_value((uint64_t)i)"
    return [
        "    #pragma omp parallel for schedule(static)",
        f"    for (int64_t i = 0; i < {count}; ++i) (({ctype}*)a.p_{name})[i] = {value};",
    ]


def _main(
    program: ProgramIR,
    stencil: Stencil,
    codes: Sequence[StencilCode],
    grid: MeasurementGrid,
    struct: Sequence[str],
    budget_seconds: float,
    dirty_bytes: int,
    clock: str,
) -> str:
    used = _used_fields(stencil)
    lines = [
        *_preamble(codes, struct, clock),
        "int main(int argc, char** argv) {",
        "    const int rounds = argc > 1 ? atoi(argv[1]) : 5;",
        "    sf_args a;",
        "    memset(&a, 0, sizeof a);",
    ]
    lines += _fields(program, used, grid)
    lines += _scalars(program)
    lines += _candidates(codes, grid, dirty_bytes)
    lines += _rounds(budget_seconds)
    lines += _report()
    lines += [f"    free(a.p_{name});" for name in used]
    lines += ["    return 0;", "}"]
    return "\n".join(lines)


def _preamble(codes: Sequence[StencilCode], struct: Sequence[str], clock: str) -> list[str]:
    """The headers, the argument struct, the candidates' declarations and the helpers."""
    return [
        "#include <stdint.h>",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        "#include <time.h>",
        "#if defined(__linux__)",
        "#include <sys/mman.h>",
        "#include <unistd.h>",
        "#endif",
        BOOL_TYPEDEF,
        *struct,
        *(f"{code.signature};" for code in codes),
        _VALUES,
        clock,
    ]


def _fields(program: ProgramIR, used: Sequence[str], grid: MeasurementGrid) -> list[str]:
    """Each field of ``used`` allocated on the grid (C-contiguous, aligned, huge pages
    advised) and filled."""
    lines = []
    for name in used:
        field = program.param(name).type
        assert isinstance(field, FieldType)
        ctype = C_TYPES[field.dtype]
        shape = [grid.sizes.get(d, 1) for d in field.dim_names]
        count = 1
        for size in shape:
            count *= size
        stride = count
        for axis, size in enumerate(shape):
            stride //= size
            lines.append(f"    a.n_{name}[{axis}] = {size}; a.s_{name}[{axis}] = {stride};")
        lines += [
            f"    if (posix_memalign((void**)&a.p_{name}, 64, sizeof({ctype}) * {count}) != 0) "
            "return 2;",
            f"    sf_advise(a.p_{name}, sizeof({ctype}) * {count});",
            *_fill(name, ctype, np.dtype(field.dtype).kind, f"{count}LL"),
        ]
    return lines


def _scalars(program: ProgramIR) -> list[str]:
    """A value for each scalar parameter: false, 1 for integers, 0.025 otherwise."""
    lines = []
    for param in program.params:
        if isinstance(param.type, ScalarType):
            value = "0" if param.type.dtype == bool_ else (
                "1" if np.dtype(param.type.dtype).kind in "iu" else "0.025"
            )
            lines.append(f"    a.sc_{param.name} = ({C_TYPES[param.type.dtype]}){value};")
    return lines


def _candidates(
    codes: Sequence[StencilCode], grid: MeasurementGrid, dirty_bytes: int
) -> list[str]:
    """The domain, the candidates' table, the readings' arrays and the buffer of other
    data, then each candidate's warm-up call."""
    dims = list(grid.sizes)
    slots = max(1, len(dims))
    lows = ", ".join(str(grid.lower[d]) for d in dims) or "0"
    highs = ", ".join(str(grid.sizes[d] - grid.upper[d]) for d in dims) or "1"
    table = ", ".join(code.name for code in codes)
    return [
        f"    const int64_t lo[{slots}] = {{{lows}}}, hi[{slots}] = {{{highs}}};",
        f"    int (*const candidates[{len(codes)}])(const sf_args* restrict, const int64_t*, "
        f"const int64_t*) = {{{table}}};",
        f"    const int count = {len(codes)};",
        f"    double best[{len(codes)}], cpu[{len(codes)}];",
        f"    int kept[{len(codes)}], taken[{len(codes)}];",
        "    if (rounds < 1) return 2;",
        "    double* samples = malloc(sizeof(double) * (size_t)rounds * (size_t)count);",
        "    if (!samples) return 2;",
        f"    const int64_t dirty_words = {max(dirty_bytes // 8, 1)};",
        "    uint64_t* dirty = malloc(sizeof(uint64_t) * (size_t)dirty_words);",
        "    if (!dirty) return 2;",
        "    sf_advise(dirty, sizeof(uint64_t) * (size_t)dirty_words);",
        "    for (int c = 0; c < count; ++c) {",
        "        best[c] = cpu[c] = 1e300;",
        "        kept[c] = 1;",
        "        taken[c] = 0;",
        "        if (candidates[c](&a, lo, hi) != 0) return 3;  /* warm-up: threads, scratch */",
        "    }",
    ]


def _rounds(budget_seconds: float) -> list[str]:
    """The timed rounds: each kept candidate once a round, in rotated order, after the
    buffer of other data is written; after the first round, the slow ones are dropped."""
    return [
        "    const double start = sf_clock(CLOCK_MONOTONIC);",
        "    for (int r = 0; r < rounds; ++r) {",
        "        for (int j = 0; j < count; ++j) {",
        "            const int c = (r + j) % count;",
        "            if (!kept[c]) continue;",
        # Plain stores of values no compiler turns into a (non-temporal) memset.
        "            #pragma omp parallel for schedule(static)",
        "            for (int64_t i = 0; i < dirty_words; ++i)",
        "                dirty[i] = (uint64_t)i ^ (uint64_t)(r * count + j);",
        "            const double t0 = sf_clock(CLOCK_MONOTONIC);",
        "            const double u0 = sf_clock(CLOCK_PROCESS_CPUTIME_ID);",
        "            if (candidates[c](&a, lo, hi) != 0) return 3;",
        "            const double u = sf_clock(CLOCK_PROCESS_CPUTIME_ID) - u0;",
        "            const double t = sf_clock(CLOCK_MONOTONIC) - t0;",
        "            if (t < best[c]) best[c] = t;",
        "            samples[(size_t)c * (size_t)rounds + (size_t)taken[c]++] = u;",
        "        }",
        "        if (r == 0) {",
        "            double wall_least = 1e300, cpu_least = 1e300;",
        "            for (int c = 0; c < count; ++c) {",
        "                if (best[c] < wall_least) wall_least = best[c];",
        "                if (samples[(size_t)c * (size_t)rounds] < cpu_least)",
        "                    cpu_least = samples[(size_t)c * (size_t)rounds];",
        "            }",
        "            for (int c = 0; c < count; ++c)",
        f"                if (best[c] > {DROP_FACTOR!r} * wall_least",
        f"                    && samples[(size_t)c * (size_t)rounds] > {DROP_FACTOR!r} * cpu_least)",
        "                    kept[c] = 0;",
        "        }",
        # Bounded: on a slow machine, fewer rounds (at least two).
        f"        if (r >= 1 && sf_clock(CLOCK_MONOTONIC) - start > {budget_seconds!r}) break;",
        "    }",
    ]


def _report() -> list[str]:
    """Each candidate's best wall-clock time and median processor time, one line each."""
    return [
        "    for (int c = 0; c < count; ++c)",
        "        cpu[c] = sf_median(samples + (size_t)c * (size_t)rounds, taken[c]);",
        "    free(samples);",
        "    free(dirty);",
        "    for (int c = 0; c < count; ++c) printf(\"%d %.9e %.9e\\n\", c, best[c], cpu[c]);",
    ]


def measurement_source(
    program: ProgramIR,
    stencil: Stencil,
    codes: Sequence[StencilCode],
    grid: MeasurementGrid,
    struct: Sequence[str],
    runtime: str,
    dirty_bytes: int,
    budget_seconds: float = 1.0,
    clock: str = SYSTEM_CLOCK,
) -> str:
    """The measuring executable's source: one unit per candidate in ``codes`` (generated as
    ``sf_stencil_<n>``), each with ``runtime`` and the argument ``struct``, and ``main``, which
    writes ``dirty_bytes`` of other data before each timed call.

    ``clock`` is C source defining ``static double sf_clock(clockid_t clock)``, the seconds
    ``main`` reads for ``CLOCK_MONOTONIC`` (wall-clock) and ``CLOCK_PROCESS_CPUTIME_ID``
    (processor time): the system's clocks (``SYSTEM_CLOCK``) unless a test gives one that
    counts logical costs, so that the ranking and the dropping rule are checked on exact
    numbers that no other process on the machine can reorder."""
    # A candidate's edge function shares its unit: not inlined either way, so it runs the
    # program's code, and the candidates already compile at once.
    units = {
        f"candidate{n}": "\n".join([runtime, *struct, code.text, code.edges])
        for n, code in enumerate(codes)
    }
    units["main"] = _main(
        program, stencil, codes, grid, struct, budget_seconds, dirty_bytes, clock
    )
    return join_units(units)
