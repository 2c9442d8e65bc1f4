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
from backends.cuda.loading import MAX_GRID_YZ
from pipeline.dsl import Dimension, Field, field_operator, float64, program
from pipeline.dsl.frontend.step import shared_frontend
from pipeline.errors import DamagedArtifactError
from pipeline.stages import ConcreteDefinition

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")
IJK = Field[[I, J, K], float64]


def _emulated(cache: Path, **kernels: object) -> backends.CompiledBackend:
    translation = CudaEmulationTranslation(CudaTranslation(**kernels))  # type: ignore[arg-type]
    return backends.CompiledBackend(
        "cuda_emulated_variant",
        backends.cuda_emulated.allocator,
        cuda_emulated_pipeline(cache, translation=translation),
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "kernels",
    [
        {"parallelization": "columns"},
        {"parallelization": "points", "block": (4, 2, 3)},
    ],
    ids=["columns", "points-4x2x3"],
)
def test_the_corpus_runs_on_each_kernel_shape(cache, kernels):
    backend = _emulated(cache, **kernels)
    for case in corpus.CASES:
        check_case(case, backend)


@field_operator
def _lap(f: IJK) -> IJK:
    return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)


def _lap_program(inp: IJK, out: IJK):
    _lap(inp, out=out[1:-1, 1:-1, :])


def test_a_grid_capped_at_the_device_limit_covers_the_domain_with_grid_stride_loops(cache):
    # One thread per block along y, so J's blocks exceed the 65535 a grid may have.
    backend = _emulated(cache, block=(2, 1, 1))
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
