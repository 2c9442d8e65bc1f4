"""cuda_emulated: cuda_gpu's kernels and launch planning, run thread by thread on the CPU.

The DSL corpus and the DSL tests run on ``cuda_emulated`` through ``tests/dsl`` with
cuda_gpu's default kernels (it is an available backend there). Here: the other kernel shapes
cuda_gpu can choose, launches whose grid is capped (grid-stride loops), and what the emulation
refuses or rebuilds.
"""

from pathlib import Path

import attrs
import numpy as np
import pytest

import backends
from backends.conformance import corpus
from backends.conformance.checks import check_case
from backends.cuda import CudaTranslation, UnsupportedConstructError
from backends.cuda.emulation import (
    CudaEmulationTranslation,
    cuda_emulated_pipeline,
    emulation_unit,
    load_emulated,
)
from backends.base import unit_strides
from backends.cuda.specialization import MAX_GRID_YZ, compile_time_args
from pipeline.dsl import Dimension, Field, field_operator, float64, program
from pipeline.dsl.frontend.step import shared_frontend
from pipeline.errors import DamagedArtifactError
from pipeline.stages import ConcreteDefinition

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")
IJK = Field[[I, J, K], float64]


def _emulated(cache: Path, specialize=compile_time_args, **kernels) -> backends.CompiledBackend:
    return backends.CompiledBackend(
        "cuda_emulated_variant",
        backends.cuda_emulated.allocator,
        cuda_emulated_pipeline(
            cache, translation=CudaEmulationTranslation(CudaTranslation(**kernels))
        ),
        compile_time_args=specialize,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("specialize", "kernels"),
    [
        (compile_time_args, {"parallelization": "columns"}),
        (compile_time_args, {"block": (4, 2, 3)}),
        # What lower() without arguments shows: 64-bit indices and grid-stride loops.
        (unit_strides, {}),
        (unit_strides, {"parallelization": "columns", "block": (32, 1, 2)}),
    ],
    ids=["columns", "points-4x2x3", "points-wide-strided", "columns-wide-strided"],
)
def test_the_corpus_runs_on_each_kernel_shape(cache, specialize, kernels):
    backend = _emulated(cache, specialize, **kernels)
    for case in corpus.CASES:
        check_case(case, backend)


def test_small_arrays_get_32_bit_indices_and_one_point_per_thread_shown_in_the_source():
    inp, out = np.ones((8, 7, 3)), np.zeros((8, 7, 3))
    lowered = corpus.lap.with_backend(backends.cuda_emulated).lower(inp, out)
    assert "CUDA kernels (points, 32-bit indices, one point per thread) */" in lowered.as_text()
    kernel = lowered.as_text().split("sf_kernel_0(")[1]
    assert "for (" not in kernel and "const int32_t o_inp = " in kernel
    assert "const int64_t" not in kernel
    # Without arguments nothing is known of the arrays: 64-bit, grid-stride loops.
    unknown = corpus.lap.with_backend(backends.cuda_emulated).lower().as_text()
    assert "CUDA kernels (points) */" in unknown and "const int64_t o_inp = " in unknown


def test_arrays_past_32_bit_offsets_or_the_grid_limit_are_keyed_apart():
    small = np.zeros((8, 7, 3))
    spread = np.lib.stride_tricks.as_strided(small, (2, 2, 2), (2**31 * 8, 8, 8))  # no memory
    tall = np.lib.stride_tricks.as_strided(small, (2, MAX_GRID_YZ + 1, 2), (0, 0, 8))
    deep = np.lib.stride_tricks.as_strided(small, (300, 300, 2, 2), (0, 0, 0, 8))
    assert compile_time_args((small, 1.0)).get("index_bits") == 32
    assert compile_time_args((small, spread)).get("index_bits") == 64
    # Within a block of 2**31 a thread's index past the domain could wrap to negative.
    edge = np.lib.stride_tricks.as_strided(small, (2**31 - 1024,), (8,))
    assert compile_time_args((edge,)).get("index_bits") == 64
    assert compile_time_args((edge[:-1],)).get("index_bits") == 32
    assert compile_time_args((small,)).get("grid_covers") is True
    assert compile_time_args((small, tall)).get("grid_covers") is False
    assert compile_time_args((deep,)).get("grid_covers") is False  # 300 * 300 blocks along z
    assert compile_time_args((small, 2.0)).get("unit_stride") == (True, None)


@field_operator
def _lap(f: IJK) -> IJK:
    return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)


def _lap_program(inp: IJK, out: IJK):
    _lap(inp, out=out[1:-1, 1:-1, :])


def test_a_grid_capped_at_the_device_limit_covers_the_domain_with_grid_stride_loops(cache):
    # One thread per block along y, so J's blocks exceed the 65535 a grid may have.
    backend = _emulated(cache, block=(2, 1, 1))
    assert compile_time_args((np.zeros((3, MAX_GRID_YZ + 40, 2)),)).get("grid_covers") is False
    rng = np.random.default_rng(0)
    inp = rng.uniform(-1, 1, (3, MAX_GRID_YZ + 40, 2))
    out = np.full_like(inp, 7.0)
    program(backend=backend)(_lap_program)(inp, out)
    expected = np.full_like(inp, 7.0)
    expected[1:-1, 1:-1] = (
        -4.0 * inp[1:-1, 1:-1] + inp[2:, 1:-1] + inp[:-2, 1:-1] + inp[1:-1, 2:] + inp[1:-1, :-2]
    )
    np.testing.assert_array_equal(out, expected)


def test_kernels_that_need_threads_running_together_are_refused_naming_the_program():
    source = CudaTranslation()(shared_frontend(ConcreteDefinition(corpus.lap.definition)))
    shared = attrs.evolve(source, text=source.text.replace("{", "{ __syncthreads();", 1))
    with pytest.raises(UnsupportedConstructError, match=r"lap.*__syncthreads.*cuda_gpu"):
        emulation_unit(shared)
    atomic = attrs.evolve(source, text=source.text + "\n// atomicAdd(p, 1.0);")
    with pytest.raises(UnsupportedConstructError, match="atomicAdd"):
        emulation_unit(atomic)
    # A field whose name merely contains such a word is no such construct.
    named = attrs.evolve(source, text=source.text.replace("p_inp", "p_atomic_inp"))
    assert "p_atomic_inp" in emulation_unit(named)


def test_an_emulation_whose_bytes_changed_is_not_loaded(cache):
    pipeline = cuda_emulated_pipeline(cache)
    artifact = pipeline.compile(pipeline.translate(pipeline.program(
        ConcreteDefinition(corpus.lap.definition))))
    path = Path(artifact.path)
    damaged = bytearray(path.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    path.unlink()
    path.write_bytes(damaged)
    with pytest.raises(DamagedArtifactError, match="does not match its recorded hash"):
        load_emulated(artifact)
