"""c_cpu's temporaries kept in rows (``CTranslation(temporary_rows=True)``, ADR 0009): each
buffer holds only the positions the tile's sweep still reads, a ring along the outermost
outer dimension where a read lags its store.

The results must be those of whole-tile buffers and of NumPy, bit for bit, on every program
of the corpus and on shapes where the tiles' remainders, the edges and lags of more than one
position matter. No timing is asserted.
"""

import re
import textwrap

import attrs
import numpy as np
import pytest
from c_programs import stencils
from c_programs.support import CompilerWrapper, run_script
from test_c_cpu_variants import (
    choice_records,
    measure_now,  # noqa: F401  (autouse: backends made here measure before their build)
    measurements,
    notes,
    private_backend,
)

from backends import CompiledBackend
from backends.c import CTranslation
from backends.c.variants import (
    ROW_PREFETCH_DISTANCE,
    ROW_TILE_CANDIDATES,
    VariantOptions,
    candidates,
)
from backends.conformance import corpus
from pipeline.dsl import Dimension, Field, field_operator, float64, program

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
IJK = Field[[I, J, K], float64]


@field_operator
def lagging(f: IJK) -> IJK:
    # ``a`` is read 3 positions of I behind its store (a ring of 4 rows), ``b`` only along J
    # (a ring of 4 columns: no I stored), ``c`` only along K at the same sweep position.
    a = 2.0 * f + f(J + 1)
    b = f - 0.5 * f(I + 1)
    c = f * f
    return a(I - 2) + a(I + 1) - a(J - 3) + b(J - 3) + b + c(K - 1) - c(K + 1)


@program
def lagging_program(f: IJK, out: IJK):
    lagging(f, out=out[2:-2, 3:-4, 1:-1])


def lagging_reference(f: np.ndarray, out: np.ndarray) -> None:
    ni, nj, nk = f.shape

    def at(g: np.ndarray, di: int = 0, dj: int = 0, dk: int = 0) -> np.ndarray:
        return g[2 + di : ni - 2 + di, 3 + dj : nj - 4 + dj, 1 + dk : nk - 1 + dk]

    def a(di: int = 0, dj: int = 0) -> np.ndarray:
        return 2.0 * at(f, di, dj) + at(f, di, dj + 1)

    def b(dj: int = 0) -> np.ndarray:
        return at(f, 0, dj) - 0.5 * at(f, 1, dj)

    def c(dk: int) -> np.ndarray:
        return at(f, 0, 0, dk) * at(f, 0, 0, dk)

    out[2:-2, 3:-4, 1:-1] = a(-2) + a(1) - a(0, -3) + b(-3) + b() + c(-1) - c(1)


def rows_translation(tiles: tuple[int, int], streaming: bool) -> CTranslation:
    # The parallel path at every size and streaming stores on every domain: the corpus's
    # small grids take the paths a large one would.
    return CTranslation(
        temporaries=True,
        temporary_rows=True,
        tile_sizes=tiles,
        prefetch_distance=ROW_PREFETCH_DISTANCE,
        streaming_stores=streaming,
        streaming_min_bytes=0,
        parallel_min_points=0,
    )


ROWS_VARIANTS = {
    "rows-2x3": ((2, 3), False),
    "rows-256x32-streaming": ((256, 32), True),
    "rows-5x7-streaming": ((5, 7), True),
}


@pytest.fixture(scope="module")
def rows_backends(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CompiledBackend]:
    root = tmp_path_factory.mktemp("rows")
    compiler = CompilerWrapper(root / "cc")
    backends = {
        name: private_backend(root / "cache", compiler, rows_translation(tiles, streaming))
        for name, (tiles, streaming) in ROWS_VARIANTS.items()
    }
    backends["buffers"] = private_backend(
        root / "cache",
        compiler,
        CTranslation(
            temporaries=True, tile_sizes=(2, 3), prefetch_distance=4, streaming_stores=False
        ),
    )
    return backends


@pytest.mark.parametrize("variant", ["rows-2x3", "rows-5x7-streaming"])
@pytest.mark.parametrize("case", corpus.CASES, ids=lambda case: case.name)
def test_temporary_rows_match_the_numpy_reference_on_the_corpus(case, variant, rows_backends):
    case.check_on(rows_backends[variant], f"on {variant}")


@pytest.mark.parametrize("variant", list(ROWS_VARIANTS))
@pytest.mark.parametrize("shape", [(5, 5, 1), (14, 13, 5), (41, 37, 7), (67, 9, 3)])
def test_hdiff_in_rows_is_bit_identical_to_whole_tile_buffers_and_numpy(
    shape, variant, rows_backends
):
    inp = np.random.default_rng(sum(shape)).uniform(-1.0, 1.0, shape)
    expected = np.full(shape, 7.0)
    stencils.hdiff_reference(inp, 0.025, expected)
    buffered = np.full(shape, 7.0)
    stencils.hdiff_program.with_backend(rows_backends["buffers"])(inp, 0.025, buffered)
    out = np.full(shape, 7.0)

    stencils.hdiff_program.with_backend(rows_backends[variant])(inp, 0.025, out)

    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(out, buffered)


@pytest.mark.parametrize("variant", list(ROWS_VARIANTS))
@pytest.mark.parametrize("shape", [(9, 12, 3), (23, 19, 6), (70, 45, 4)])
def test_reads_lagging_several_positions_and_along_the_inner_dimension_are_right(
    shape, variant, rows_backends
):
    f = np.random.default_rng(sum(shape)).uniform(-1.0, 1.0, shape)
    expected = np.full(shape, -3.0)
    lagging_reference(f, expected)
    out = np.full(shape, -3.0)

    lagging_program.with_backend(rows_backends[variant])(f, out)

    np.testing.assert_array_equal(out, expected)


def test_each_buffer_keeps_only_the_rows_its_readers_reach(rows_backends):
    f = np.zeros((23, 19, 6))
    text = lagging_program.with_backend(rows_backends["rows-2x3"]).lower(f, f.copy()).as_text()

    # a: read 3 rows of I behind its store -> 4 rows of I; b: read only along J -> 4
    # columns of J, no I; c: read only along K -> one K row.
    assert re.search(r"t_a\[\(+\(x_I \+ -?\d+\) & 3\)+ \* w_a_J", text)
    assert re.search(r"t_b\[\(+\(x_J \+ -?\d+\) & 3\)+ \* w_b_K", text)
    assert re.search(r"t_c\[\(x_K \+ -?\d+ - b_c_K\)\]", text)
    assert "w_a_I" not in text and "w_b_I" not in text and "w_c_J" not in text


def test_hdiff_in_rows_carries_fly_and_prefetches_rows_ahead_along_i(rows_backends):
    inp = np.zeros((40, 37, 5))
    text = stencils.hdiff_program.with_backend(rows_backends["rows-2x3"]).lower(
        inp, 0.1, inp.copy()
    ).as_text()

    assert "temporary rows, tiles 2x3, prefetch 2 (given)" in text
    assert re.search(r"t_lap_field\[\(+\(x_I \+ 1\) & 1\)+ \* w_lap_field_J", text)
    assert re.search(r"t_fly\[\(+\(x_J \+ -1\) & 1\)+ \* w_fly_K", text)
    # The input's leading row (I + 2), ROW_PREFETCH_DISTANCE rows further, into L2 (on the
    # parallel path: pf is 1 there, 0 on the serial one).
    assert re.search(r"\(x_I \+ 2 \+ 2 \* pf\) \* s_inp_0 \+ \(x_J \+ 1\) \* s_inp_1", text)
    assert "__builtin_prefetch((const void*)(r0 + (uintptr_t)q), 0, 2);" in text


def test_rows_are_a_candidate_with_tile_shapes_of_their_own():
    found = candidates(True)
    rows = [v for v in found if v.temporary_rows]
    assert {v.tile_sizes for v in rows} == set(ROW_TILE_CANDIDATES)
    assert {v.prefetch_distance for v in rows} == {ROW_PREFETCH_DISTANCE}
    assert {v.streaming_stores for v in rows} == {False, True}
    assert all(v.temporaries for v in rows)
    assert not found[0].temporary_rows  # what an unmeasured choice uses stays the same
    # A given tile shape means whole-tile buffers unless rows are asked for.
    assert not any(v.temporary_rows for v in candidates(True, VariantOptions(tile_sizes=(8, 32))))
    assert all(
        v.temporary_rows
        for v in candidates(True, VariantOptions(True, (8, 32), temporary_rows=True))
    )
    asked = candidates(True, VariantOptions(temporary_rows=True))
    assert all(v.temporary_rows for v in asked if v.temporaries)
    assert not any(v.temporary_rows for v in candidates(True, VariantOptions(temporary_rows=False)))


def test_rows_asked_for_are_measured_in_place_of_whole_tile_buffers(tmp_path):
    compiler = CompilerWrapper(tmp_path / "cc")
    backend = private_backend(tmp_path / "cache", compiler, None)
    pipeline = backend.pipeline.evolve_step("translation", temporary_rows=True)
    automatic = attrs.evolve(backend, pipeline=pipeline)
    args = (np.zeros((14, 13, 5)), 0.025, np.zeros((14, 13, 5)))

    note = notes(stencils.hdiff_program.with_backend(automatic).lower(*args).as_text())["hdiff"]

    assert note.startswith(("temporary rows, tiles 256x32, prefetch 2", "recompute, tiles "))
    assert measurements(compiler) == 1
    [(_, record)] = choice_records(tmp_path / "cache")
    measured = [variant for variant, _, _ in record.timings]
    assert len(measured) == 4
    assert all(v.temporary_rows for v in measured if v.temporaries)


def test_rows_of_recomputed_temporaries_are_refused_at_construction():
    with pytest.raises(ValueError, match=r"temporary_rows=True.*temporaries=False"):
        CTranslation(temporaries=False, temporary_rows=True)
    # Either option alone, or rows with temporaries left open, is a valid request.
    CTranslation(temporaries=False, temporary_rows=False)
    CTranslation(temporary_rows=True)


def test_threads_take_tiles_with_temporaries_as_they_come_and_stream_tiles_statically(
    rows_backends,
):
    # A thread slowed by other work must not hold back a compute-heavy call (ADR 0009).
    inp = np.zeros((40, 37, 5))
    hdiff_text = stencils.hdiff_program.with_backend(rows_backends["rows-2x3"]).lower(
        inp, 0.1, inp.copy()
    ).as_text()
    lap_text = stencils.lap.with_backend(rows_backends["rows-2x3"]).lower(
        inp, inp.copy()
    ).as_text()

    assert "#pragma omp for schedule(dynamic)" in hdiff_text
    assert "schedule(static)" not in hdiff_text
    assert "#pragma omp parallel for schedule(static)" in lap_text
    assert "schedule(dynamic)" not in lap_text


_MANY_THREADS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import numpy as np
    from c_programs import stencils
    from backends import CompiledBackend
    from backends.c import CTranslation, c_cpu_pipeline
    from backends.c.variants import ROW_PREFETCH_DISTANCE
    import allocators

    translation = CTranslation(
        temporaries=True, temporary_rows=True, tile_sizes=(3, 4),
        prefetch_distance=ROW_PREFETCH_DISTANCE, streaming_stores=True,
        streaming_min_bytes=0, parallel_min_points=0,
    )
    backend = CompiledBackend(
        "rows_many_threads", allocators.NumPyBufferAllocator(),
        c_cpu_pipeline(Path(sys.argv[1]), translation=translation),
    )
    hdiff = stencils.hdiff_program.with_backend(backend)
    worst = 0.0
    for seed, shape in enumerate([(29, 31, 8), (64, 17, 3), (11, 70, 16)]):
        inp = np.random.default_rng(seed).uniform(-1.0, 1.0, shape)
        expected = np.full(shape, 7.0)
        stencils.hdiff_reference(inp, 0.025, expected)
        for _ in range(20):
            out = np.full(shape, 7.0)
            hdiff(inp, 0.025, out)
            worst = max(worst, float(np.abs(out - expected).max()))
    print(worst)
    """
)


def test_tiles_taken_in_any_order_by_more_threads_than_cores_give_numpys_result(tmp_path):
    # Each tile's sweep must depend on nothing another tile (or an earlier tile of the same
    # thread) left in the per-thread buffers: under the dynamic schedule either may happen.
    compiler = CompilerWrapper(tmp_path / "cc")

    cache = tmp_path / "cache"
    printed = run_script(_MANY_THREADS, cache, compiler, str(cache), OMP_NUM_THREADS="5")

    assert float(printed.split()[-1]) == 0.0
