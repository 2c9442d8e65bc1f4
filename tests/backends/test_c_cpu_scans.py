"""c_cpu's scans write their outputs through a block buffer, then out a column at a time.

Outputs contiguous along the scan axis are stored per block into a buffer and copied out to
their columns afterwards, with non-temporal stores when the output is large (ADR 0014). The
copy out must land exactly on the domain, for outputs that are views with any strides, and an
output that is not contiguous along the axis keeps the stores in place. Each case runs with the
streaming threshold at its default and forced to zero bytes (a tiny last-level cache), so small
grids take both copy-out paths.

No ``from __future__ import annotations``: the program below is read by the DSL.
"""

from typing import Any

import numpy as np
import pytest

import backends
import backends.c.translation
from backends import CompiledBackend
from benchmarks.workloads import solve_tridiagonal, thomas_kernel
from pipeline.dsl import Dimension, Field, float32, float64, int64, program, scan_operator

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
IJK = Field[[I, J, K], float64]


@program
def inner_tridiagonal(a: IJK, b: IJK, c: IJK, d: IJK, x: IJK):
    solve_tridiagonal(a, b, c, d, out=x[:, 1:, 1:-1])


def _inputs(shape: tuple[int, int, int], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    a, c, d = (rng.uniform(0.0, 1.0, shape) for _ in range(3))
    b = rng.uniform(3.0, 4.0, shape)
    return [a, b, c, d]


@pytest.fixture(params=["default", "streaming", "prefetching"])
def backend(request: Any, monkeypatch: pytest.MonkeyPatch) -> CompiledBackend:
    """c_cpu as configured, or with every staged output written by non-temporal stores and
    OpenMP threads at any size, or with the next block prefetched and threads at any size
    (each a pipeline of its own: programs keep their builds per pipeline)."""
    pipeline = backends.c_cpu.pipeline
    if request.param == "streaming":
        monkeypatch.setattr(backends.c.translation, "last_level_cache_bytes", lambda: 2)
        pipeline = pipeline.evolve_step("translation", parallel_min_points=0)
    if request.param == "prefetching":
        pipeline = pipeline.evolve_step(
            "translation", parallel_min_points=0, sweep_prefetch=True
        )
    return CompiledBackend(f"c_cpu_scans_{request.param}", backends.c_cpu.allocator, pipeline)


#: Outputs as views: contiguous; every other column (a stride along J); reversed along I;
#: every other level (not contiguous along the axis: stored in place).
LAYOUTS = {
    "contiguous": lambda shape: np.full(shape, -7.0),
    "strided_columns": lambda shape: np.full((shape[0], 2 * shape[1], shape[2]), -7.0)[:, ::2],
    "reversed_rows": lambda shape: np.full(shape, -7.0)[::-1],
    "every_other_level": lambda shape: np.full((*shape[:2], 2 * shape[2]), -7.0)[..., ::2],
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_scan_writes_exactly_its_domain_of_an_output_view(
    backend: CompiledBackend, layout: str
) -> None:
    # 70 columns: one full block of 64 (or two of 32) and a partial one; 38 levels: columns
    # that start anywhere in a cache line and span whole lines.
    shape = (5, 70, 40)
    inputs = _inputs(shape, seed=len(layout))
    out = LAYOUTS[layout](shape)
    inner_tridiagonal.with_backend(backend)(*inputs, out)
    expected = np.full(shape, -7.0)
    domain = np.s_[:, 1:, 1:-1]
    expected[domain] = thomas_kernel(np, *(array[domain] for array in inputs))
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-13)


def test_an_output_contiguous_along_the_axis_goes_through_a_block_buffer(
    backend: CompiledBackend,
) -> None:
    shape = (3, 9, 6)
    inputs = _inputs(shape, seed=1)
    contiguous = inner_tridiagonal.with_backend(backend).lower(*inputs, np.zeros(shape))
    strided = inner_tridiagonal.with_backend(backend).lower(
        *inputs, np.zeros((*shape[:2], 2 * shape[2]))[..., ::2]
    )
    assert "o_x[" in contiguous.source.text
    assert "o_x[" not in strided.source.text
    streams_all = backend.name.endswith("streaming")
    assert ("(size_t)1LL;" in contiguous.source.text) == streams_all


def test_the_next_block_is_prefetched_only_when_asked(backend: CompiledBackend) -> None:
    # Where the copy-in is not chunked (float32 columns), sweep_prefetch asks for the next
    # block: one prefetch per input a step of the first pass, and the note says so.
    f = np.ones((3, 9, 6), np.float32)
    narrow = damped.with_backend(backend).lower(f, np.zeros_like(f)).source.text
    prefetches = backend.name.endswith("prefetching")
    assert narrow.count("sf_prefetch_column((uintptr_t)") == (1 if prefetches else 0)
    assert ("the next block prefetched" in narrow) == prefetches
    # A chunked copy-in (float64 columns) always asks for it, a cursor per field.
    shape = (3, 9, 6)
    wide = inner_tridiagonal.with_backend(backend).lower(*_inputs(shape, 1), np.zeros(shape))
    assert "sf_prefetch_column((uintptr_t)" not in wide.source.text
    assert wide.source.text.count("sf_cursor_at((uintptr_t)p_a + ") == 1


@scan_operator(axis=K, forward=True, init=0)
def running_total(total: int64, value: int64) -> int64:
    return total + value


@scan_operator(axis=K, forward=False, init=1.0)
def damped_from_the_top(carry: float32, value: float32) -> float32:
    return carry * float32(0.5) + value


@program
def totals(f: Field[[I, J, K], int64], out: Field[[I, J, K], int64]):
    running_total(f, out=out[1:, :, 2:])


@program
def damped(f: Field[[I, J, K], float32], out: Field[[I, J, K], float32]):
    damped_from_the_top(f, out=out[:, 3:, :-1])


def test_scans_of_other_dtypes_write_their_domain(backend: CompiledBackend) -> None:
    shape = (4, 67, 21)
    rng = np.random.default_rng(7)
    f = rng.integers(-50, 50, shape)
    out = np.full(shape, -1, np.int64)
    totals.with_backend(backend)(f, out)
    expected = np.full(shape, -1, np.int64)
    expected[1:, :, 2:] = np.cumsum(f[1:, :, 2:], axis=2)
    np.testing.assert_array_equal(out, expected)

    g = rng.uniform(-1, 1, shape).astype(np.float32)
    out32 = np.full(shape, -1, np.float32)
    damped.with_backend(backend)(g, out32)
    expected32 = np.full(shape, -1, np.float32)
    carry = np.ones(shape[:2], np.float32)[:, 3:]
    for k in reversed(range(shape[2] - 1)):
        carry = carry * np.float32(0.5) + g[:, 3:, k]
        expected32[:, 3:, k] = carry
    np.testing.assert_allclose(out32, expected32, rtol=1e-6)
