"""c_cpu's scans copy their float64 columns in eight at a time (``backends.c.sweep_columns``).

Chunk by chunk of eight levels, interleaved with the first pass, eight columns go through an
8x8 transpose, the levels left over and the columns left over (fewer than eight) one at a
time. Whatever the block's columns, the levels, the reach along the axis and the inputs'
strides, the buffers must hold what the columns held: the scans agree with NumPy on views of
every shape, in either direction of the first pass.

No ``from __future__ import annotations``: the program below is read by the DSL.
"""

import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import backends
from backends.c.sweep_ahead import AHEAD_C, Ahead, Asking
from backends.c.sweep_columns import COLUMNS_IN_C, Column, copy_in_chunk
from backends.clike.compiler import default_compiler
from benchmarks.workloads import solve_tridiagonal, thomas_kernel, vadv_kernel, vertical_advection
from pipeline.dsl import (
    Dimension,
    Field,
    field_operator,
    float32,
    float64,
    int64,
    program,
    scan_operator,
)

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
IJK = Field[[I, J, K], float64]


@program
def tridiagonal(a: IJK, b: IJK, c: IJK, d: IJK, x: IJK):
    solve_tridiagonal(a, b, c, d, out=x)


def _view(rng: np.random.Generator, shape: tuple[int, ...], pad: tuple[int, int, bool],
          low: float, high: float) -> np.ndarray:
    """Values in [low, high) in a view of ``shape`` inside a larger array: ``pad`` more
    columns along J and levels along K, starting one level in (K stays contiguous), and J
    reversed (a negative column stride) when asked."""
    outer = (shape[0], shape[1] + pad[0], shape[2] + pad[1] + 1)
    view = rng.uniform(low, high, outer)[:, : shape[1], 1 : shape[2] + 1]
    return view[:, ::-1] if pad[2] else view


_shapes = st.tuples(st.integers(1, 3), st.integers(1, 21), st.integers(1, 19))
_pads = st.tuples(st.integers(0, 3), st.integers(0, 9), st.booleans())


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=_shapes, pad=_pads, seed=st.integers(0, 2**31))
def test_tridiagonal_solves_agree_with_numpy_on_views_of_any_shape(
    shape: tuple[int, int, int], pad: tuple[int, int, bool], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    a, c, d = (_view(rng, shape, pad, 0.0, 1.0) for _ in range(3))
    b = _view(rng, shape, pad, 3.0, 4.0)
    x = np.zeros(shape)
    tridiagonal.with_backend(backends.c_cpu)(a, b, c, d, x)
    np.testing.assert_allclose(x, thomas_kernel(np, a, b, c, d), rtol=1e-12, atol=1e-13)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=_shapes, pad=_pads, seed=st.integers(0, 2**31))
def test_a_scan_reading_levels_around_its_own_agrees_with_numpy(
    shape: tuple[int, int, int], pad: tuple[int, int, bool], seed: int
) -> None:
    # vertical_advection reads u_stage at K - 1 and K + 1 (two extra levels, from one below
    # the domain) and wcon at I + 1 (not buffered); its domain is the grid less a halo of 1.
    grid = (shape[0] + 2, shape[1] + 2, shape[2] + 2)
    rng = np.random.default_rng(seed)
    fields = [_view(rng, grid, pad, -1.0, 1.0) for _ in range(5)]
    out = np.zeros(grid)
    vertical_advection.with_backend(backends.c_cpu)(*fields, 3.0, out)
    expected = vadv_kernel(np, *fields, 3.0)
    np.testing.assert_allclose(out[1:-1, 1:-1, 1:-1], expected, rtol=1e-11, atol=1e-12)


@scan_operator(axis=K, forward=False, init=0.0)
def damped_from_the_top(carry: float64, value: float64) -> float64:
    return carry * 0.5 + value


@field_operator
def curvature_from_the_top(f: IJK) -> IJK:
    return damped_from_the_top(f(K - 1) - 2.0 * f + f(K + 1))


@program
def top_down(f: IJK, out: IJK):
    curvature_from_the_top(f, out=out[:, :, 1:-1])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=_shapes, pad=_pads, seed=st.integers(0, 2**31))
def test_a_scan_from_the_top_agrees_with_numpy_on_views_of_any_shape(
    shape: tuple[int, int, int], pad: tuple[int, int, bool], seed: int
) -> None:
    # One pass, from the top down, reading f a level below and above its own: its chunks
    # come in from the top, the first of them (the highest) the shorter where the levels are
    # not a multiple of eight.
    grid = (shape[0], shape[1], shape[2] + 2)
    f = _view(np.random.default_rng(seed), grid, pad, -1.0, 1.0)
    out = np.zeros(grid)
    top_down.with_backend(backends.c_cpu)(f, out)
    curvature = f[:, :, :-2] - 2.0 * f[:, :, 1:-1] + f[:, :, 2:]
    expected = np.zeros_like(curvature)
    carry = np.zeros(grid[:2])
    for k in reversed(range(curvature.shape[2])):
        carry = carry * 0.5 + curvature[:, :, k]
        expected[:, :, k] = carry
    np.testing.assert_array_equal(out[:, :, 1:-1], expected)


@scan_operator(axis=K, forward=False, init=0.0)
def halving_down(carry: float64, value: float64) -> float64:
    return carry * 0.5 + value


@scan_operator(axis=K, forward=True, init=0.0)
def halving_up(carry: float64, value: float64) -> float64:
    return carry * 0.5 + value


@scan_operator(axis=K, forward=True, init=0.0)
def quartering_up(carry: float64, first: float64, g: float64, h: float64) -> float64:
    return carry * 0.25 + first + g + h


@scan_operator(axis=K, forward=False, init=0.0)
def quartering_down(carry: float64, first: float64, g: float64, h: float64) -> float64:
    return carry * 0.25 + first + g + h


@field_operator
def down_then_up(g: IJK, h: IJK, f: IJK) -> IJK:
    first = halving_down(g(K - 1) - 2.0 * g + g(K + 1) + f(K + 1))
    return quartering_up(first, g(K + 1) - g(K - 1), h)


@field_operator
def up_then_down(g: IJK, h: IJK, f: IJK) -> IJK:
    first = halving_up(g(K - 1) - 2.0 * g + g(K + 1) + f(K - 1))
    return quartering_down(first, g(K + 1) - g(K - 1), h)


@program
def two_passes_down_up(g: IJK, h: IJK, f: IJK, out: IJK):
    down_then_up(g, h, f, out=out[:, :, 1:-1])


@program
def two_passes_up_down(g: IJK, h: IJK, f: IJK, out: IJK):
    up_then_down(g, h, f, out=out[:, :, 1:-1])


def _two_passes(g: np.ndarray, h: np.ndarray, f: np.ndarray, first_down: bool) -> np.ndarray:
    """NumPy's two_passes_down_up (``first_down``) or two_passes_up_down on [:, :, 1:-1]."""
    levels = g.shape[2] - 2
    shifted = f[:, :, 2:] if first_down else f[:, :, :-2]
    values = g[:, :, :-2] - 2.0 * g[:, :, 1:-1] + g[:, :, 2:] + shifted
    first, carry = np.zeros_like(values), np.zeros(g.shape[:2])
    for k in reversed(range(levels)) if first_down else range(levels):
        carry = carry * 0.5 + values[:, :, k]
        first[:, :, k] = carry
    slope = g[:, :, 2:] - g[:, :, :-2]
    out, carry = np.zeros_like(values), np.zeros(g.shape[:2])
    for k in range(levels) if first_down else reversed(range(levels)):
        carry = carry * 0.25 + first[:, :, k] + slope[:, :, k] + h[:, :, 1:-1][:, :, k]
        out[:, :, k] = carry
    return out


#: c_cpu, and c_cpu with threads (so also the prefetches of the next block) at any size.
_THREADED = backends.CompiledBackend(
    "c_cpu_columns_in_threaded",
    backends.c_cpu.allocator,
    backends.c_cpu.pipeline.evolve_step("translation", parallel_min_points=0),
)


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize("first_down", [True, False])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=_shapes, pad=_pads, seed=st.integers(0, 2**31))
def test_two_passes_agree_with_numpy_whichever_pass_reads_which_field(
    first_down: bool, threaded: bool, shape: tuple[int, int, int], pad: tuple[int, int, bool],
    seed: int,
) -> None:
    # g is read at K - 1, K and K + 1 by both passes (a whole buffer, filled chunk by chunk
    # with overlapping reaches), f only by the first (a chunk's buffer, with a reach), h only
    # by the second; the first pass runs down or up.
    grid = (shape[0], shape[1] + 60 * threaded, shape[2] + 2)
    rng = np.random.default_rng(seed)
    g, h, f = (_view(rng, grid, pad, -1.0, 1.0) for _ in range(3))
    out = np.zeros(grid)
    definition = two_passes_down_up if first_down else two_passes_up_down
    definition.with_backend(_THREADED if threaded else backends.c_cpu)(g, h, f, out)
    np.testing.assert_array_equal(out[:, :, 1:-1], _two_passes(g, h, f, first_down))


@program
def tridiagonal_below(a: IJK, b: IJK, c: IJK, d: IJK, x: IJK, levels: int64):
    solve_tridiagonal(a, b, c, d, out=x, domain={K: (0, levels)})


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=_shapes, pad=_pads, seed=st.integers(0, 2**31), data=st.data())
def test_levels_known_only_at_the_call_are_solved_in_chunks_of_any_length(
    shape: tuple[int, int, int], pad: tuple[int, int, bool], seed: int, data: st.DataObject
) -> None:
    # The domain's levels are a scalar, so the build cannot know there are fewer than eight:
    # its copy-in goes in chunks, of whatever length the call gives.
    levels = data.draw(st.integers(0, shape[2]))
    rng = np.random.default_rng(seed)
    a, c, d = (_view(rng, shape, pad, 0.0, 1.0) for _ in range(3))
    b = _view(rng, shape, pad, 3.0, 4.0)
    x = np.full(shape, -7.0)
    solve = tridiagonal_below.with_backend(backends.c_cpu)
    solve(a, b, c, d, x, levels)
    assert "sf_chunks" in str(solve.lower(a, b, c, d, x, levels).source.text)
    if levels:
        expected = thomas_kernel(np, *(v[:, :, :levels] for v in (a, b, c, d)))
        np.testing.assert_allclose(x[:, :, :levels], expected, rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(x[:, :, levels:], -7.0)


@scan_operator(axis=K, forward=True, init=0.0)
def damped_total(carry: float32, value: float32) -> float32:
    return carry * float32(0.5) + value


@program
def damped(f: Field[[I, J, K], float32], out: Field[[I, J, K], float32]):
    damped_total(f, out=out)


def _source(definition: Any, *arrays: np.ndarray) -> str:
    return str(definition.with_backend(backends.c_cpu).lower(*arrays).source.text)


def test_only_float64_columns_go_through_the_transposes() -> None:
    shape = (2, 16, 8)
    wide = _source(tridiagonal, *(np.ones(shape) for _ in range(5)))
    assert wide.count("sf_columns_in_f64(g_") == 4  # one call per input, eight columns each
    assert wide.count("g_a[k * ") == 1  # and the scalar loop for the columns left over
    assert re.search(r"sf_columns_in_f64\(g_a \+ v, \d+, p_a \+ ", wide)  # into a chunk's buffer
    assert re.search(r"g_a\[\(x_K \+ \(0\) - lo_K - \(0\) - sf_t\) \* \d+", wide)  # from its start
    narrow = _source(damped, *(np.ones(shape, np.float32) for _ in range(2)))
    assert "g_f[k * " in narrow
    assert "sf_columns_in_f64" not in narrow  # neither called nor defined


def test_a_domain_of_fewer_than_eight_levels_gets_no_transposes() -> None:
    # c_cpu builds per inner extent, so it knows six levels have no tile of eight.
    few = _source(tridiagonal, *(np.ones((2, 16, 6)) for _ in range(5)))
    assert "g_a[k * " in few
    assert "sf_columns_in_f64" not in few
    for levels, transposed in ((8, False), (10, True)):  # a domain of levels - 2
        grid = (4, 18, levels)
        fields = [np.ones(grid) for _ in range(6)]
        advection = _source(vertical_advection, *fields[:5], 3.0, fields[5])
        assert ("sf_columns_in_f64(g_" in advection) == transposed


def test_float32_columns_keep_the_scalar_copy_and_agree_with_numpy() -> None:
    rng = np.random.default_rng(3)
    f = rng.uniform(-1, 1, (2, 19, 13)).astype(np.float32)
    out = np.zeros_like(f)
    damped.with_backend(backends.c_cpu)(f, out)
    expected = np.zeros_like(f)
    carry = np.zeros(f.shape[:2], np.float32)
    for k in range(f.shape[2]):
        carry = carry * np.float32(0.5) + f[:, :, k]
        expected[:, :, k] = carry
    np.testing.assert_array_equal(out, expected)


#: Calls sf_columns_in_f64 on 0-27 levels of eight columns a positive, a negative and a zero
#: stride apart, into a buffer filled with -1, owing -2 to 30 lines of a cursor over columns
#: that do not start or end on a line, and counts the points that differ from the columns or
#: that it wrote outside them, and the calls after which the cursor is not where sf_ask of
#: the lines owed leaves a twin of it (every line owed asked for, across columns, none more).
#: Exits 77 where SF_COLUMNS_8 is 0.
_COLUMNS_CHECK = r"""
#include <stdint.h>
#include <stdio.h>
AHEAD_C
COLUMNS_IN_C
int main(void) {
#if !SF_COLUMNS_8
    return 77;
#else
    enum { ROW = 72, MOST = 27 };
    static double src[16 * (MOST + 3) + 16], g[ROW * (MOST + 1)];
    for (int i = 0; i < (int)(sizeof src / sizeof *src); ++i) src[i] = i + 0.5;
    long wrong = 0;
    for (int64_t levels = 0; levels <= MOST; ++levels) {
        const int64_t strides[3] = {levels + 3, -(levels + 3), 0};
        for (int s = 0; s < 3; ++s) {
            const int64_t stride = strides[s];
            const double* col = src + 1 + (stride < 0 ? 8 * (MOST + 3) : 0);
            for (int i = 0; i < ROW * (MOST + 1); ++i) g[i] = -1.0;
            const int64_t owed = (levels * 7 + s) % 33 - 2;
            sf_cursor next = sf_cursor_at((uintptr_t)(src + 3), 200, 150, 5), twin = next;
            sf_columns_in_f64(g, ROW, col, stride, levels, &next, owed);
            sf_ask(&twin, owed);
            wrong += next.line != twin.line || next.left != twin.left || next.rest != twin.rest;
            for (int64_t k = 0; k <= MOST; ++k)
                for (int c = 0; c < ROW; ++c) {
                    const double want = k < levels && c < 8 ? col[c * stride + k] : -1.0;
                    wrong += g[k * ROW + c] != want;
                }
        }
    }
    printf("%ld\n", wrong);
    return 0;
#endif
}
""".replace("AHEAD_C", AHEAD_C).replace("COLUMNS_IN_C", COLUMNS_IN_C)


def test_the_transpose_copies_eight_columns_of_any_levels_and_stride(tmp_path: Path) -> None:
    source, executable = tmp_path / "columns.c", tmp_path / "columns"
    source.write_text(_COLUMNS_CHECK)
    flags = ["-O2", "-march=native", "-Wall", "-Werror"]
    subprocess.run([default_compiler(), *flags, str(source), "-o", str(executable)], check=True)
    run = subprocess.run([str(executable)], capture_output=True, text=True, check=False)
    if run.returncode == 77:
        pytest.skip("the compiler does not target AVX-512 here (or is gcc < 12): no transposes")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "0"


def _asking_check(columns8: bool) -> str:
    """A C program running the generated asking of a block's copy-in
    (``Asking.declarations``, then ``copy_in_chunk`` chunk after chunk) for two buffered
    fields, x (reach 0) and z (reach 2), and w read in place (reach 1), their next columns
    where the command line says (offsets and strides in elements from the block's data), each
    line asked for recorded instead of prefetched. Prints the data's address, the lines asked
    for by each chunk, then each line's address."""
    at = {"x": "x_first", "z": "z_first", "w": "w_first"}
    ahead = [
        Ahead(name, "double", f"{at[name]} + 0 * (e_J - b_J)", f"{name}_stride", extra)
        for name, extra in (("x", 0), ("z", 2), ("w", 1))
    ]
    columns = [
        Column(name, "double", "v * (int64_t)(sf_levels + 2) + sf_t", "(int64_t)(sf_levels + 2)",
               extra, f"g_{name}")
        for name, extra in (("x", 0), ("z", 2))
    ]
    buffered = ["x", "z"]
    asking = Asking(tuple(ahead), tuple(buffered))
    cursors = "\n".join(asking.declarations("e_J - b_J", "    "))
    chunk = "\n".join(copy_in_chunk(columns, "e_J - b_J", 80, "        ", asking=asking))
    return rf"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
static uintptr_t asked[1 << 20];
static int64_t recorded;
#define __builtin_prefetch(address, write, locality) (asked[recorded++] = (uintptr_t)(address))
#define SF_COLUMNS_8 {int(columns8)}
{AHEAD_C}
#define sf_columns_in_f64(g, row, col, stride, levels, next, owed) sf_ask(next, owed)
int main(int argc, char** argv) {{
    (void)argc;
    const int64_t b_J = 0, e_J = atoll(argv[1]);
    const size_t sf_levels = (size_t)atoll(argv[2]);
    const int64_t x_first = atoll(argv[3]), x_stride = atoll(argv[4]);
    const int64_t z_first = atoll(argv[5]), z_stride = atoll(argv[6]);
    const int64_t w_first = atoll(argv[7]), w_stride = atoll(argv[8]);
    double* data = calloc((size_t)(e_J * (int64_t)(sf_levels + 2) + 8), sizeof(double));
    double* g_x = calloc(80 * 16, sizeof(double));
    double* g_z = calloc(80 * 16, sizeof(double));
    const double *p_x = data, *p_z = data, *p_w = data;
    const int sf_ahead = 1;
    const int64_t sf_chunks = ((int64_t)sf_levels + 7) / 8;
    printf("%llu\n", (unsigned long long)(uintptr_t)data);
{cursors}
    for (int64_t sf_c = 0; sf_c < sf_chunks; ++sf_c) {{
        const int64_t sf_t = 8 * sf_c;
        const int64_t sf_n = (int64_t)sf_levels - sf_t < 8 ? (int64_t)sf_levels - sf_t : 8;
        const int64_t before = recorded;
{chunk}
        printf("%lld ", (long long)(recorded - before));
    }}
    printf("\n");
    for (int64_t line = 0; line < recorded; ++line)
        printf("%llu ", (unsigned long long)asked[line]);
    printf("\n");
    free(data); free(g_x); free(g_z);
    return 0;
}}
"""


@pytest.fixture(scope="module")
def asking_checks(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    directory = tmp_path_factory.mktemp("asking")
    built = {}
    for columns8 in (False, True):
        source, executable = directory / f"ask{int(columns8)}.c", directory / f"ask{int(columns8)}"
        source.write_text(_asking_check(columns8))
        flags = ["-O1", "-Wall", "-Werror", "-Wno-unused-variable", "-Wno-unused-but-set-variable"]
        subprocess.run(
            [default_compiler(), *flags, str(source), "-o", str(executable)], check=True
        )
        built[columns8] = executable
    return built


def _lines(base: int, first: int, stride: int, count: int, nbytes: int) -> list[int]:
    """Each line that columns of ``nbytes`` from element ``first`` of ``base``, ``stride``
    elements apart, lie on, column by column (addresses modulo 2**64, as C's)."""
    lines = []
    for column in range(count):
        start = (base + 8 * (first + column * stride)) % 2**64
        lines += range(start - start % 64, start + nbytes, 64)
    return lines


_offsets = st.tuples(st.integers(-(2**20), 2**20), st.integers(-90, 90))


@settings(max_examples=120, deadline=None)
@given(
    columns8=st.booleans(),
    count=st.integers(1, 70),
    levels=st.integers(1, 40),
    x=_offsets,
    z=_offsets,
    w=_offsets,
)
def test_the_copy_in_asks_for_every_line_of_the_next_blocks_columns_once_chunk_by_chunk(
    asking_checks: dict[bool, Path],
    columns8: bool,
    count: int,
    levels: int,
    x: tuple[int, int],
    z: tuple[int, int],
    w: tuple[int, int],
) -> None:
    # Whatever the columns' strides (backwards, zero, not whole lines) and however the
    # block's columns go (eight through a transpose or one at a time), the pieces copied in
    # ask for each line the next block's columns lie on, once per field, all of them by the
    # last chunk; and each chunk asks for its part (the lines over the chunks, sized by the
    # most lines a column spans), give or take a line for each sf_ask.
    arguments = [count, levels, *x, *z, *w]
    run = subprocess.run(
        [str(asking_checks[columns8]), *map(str, arguments)],
        capture_output=True, text=True, check=True,
    )
    base_text, chunks_text, asked_text = run.stdout.split("\n")[:3]
    base = int(base_text)
    expected, part = [], 0.0
    chunks = -(-levels // 8)
    for (first, stride), extra in ((x, 0), (z, 2), (w, 1)):
        nbytes = 8 * (levels + extra)
        expected += _lines(base, first, stride, count, nbytes)
        spans = ((base + 8 * first) % 64 + nbytes + 63) // 64
        most = spans if (8 * stride) % 64 == 0 else (nbytes + 126) // 64
        part += count * most / chunks
    asked = [int(n) for n in asked_text.split()]
    assert sorted(asked) == sorted(expected)
    calls = 2 * 2 * ((count // 8 + count % 8) if columns8 else count)
    by_chunk = [int(n) for n in chunks_text.split()]
    assert len(by_chunk) == chunks and max(by_chunk) <= part + calls


def test_the_block_asks_ahead_for_every_column_the_next_block_reads_from_memory() -> None:
    # A cursor for each buffered field's columns, and for wcon's, read in place at I and
    # I + 1, whose lines the buffered fields' pieces ask for too; none for out, which the
    # scan only writes.
    fields = [np.ones((4, 18, 10)) for _ in range(6)]
    source = _source(vertical_advection, *fields[:5], 3.0, fields[5])
    cursors = re.findall(r"sf_cursor (sf_next_\d+) = sf_cursor_at\(\(uintptr_t\)p_(\w+) \+ "
                         r"\(uintptr_t\)\(\(?(x_I(?: \+ \(1\)\))?)", source)
    assert sorted((name, row) for _, name, row in cursors) == [
        ("u_pos", "x_I"), ("u_stage", "x_I"), ("utens", "x_I"), ("utens_stage", "x_I"),
        ("wcon", "x_I"), ("wcon", "x_I + (1))"),
    ]
    for cursor, _, _ in cursors:
        assert f"sf_ask(&{cursor}, " in source
