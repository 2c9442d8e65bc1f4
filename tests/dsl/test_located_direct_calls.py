"""Located arrays in a field operator's direct call: ``op(located(a, dims, origin), out=x)``
runs the variant of the origins as a program's call does (ADR 0026), on every backend.

Before, a direct call refused a located array as a non-array. A scan operator called directly
names its arrays' dimensions by their ranks, so it refuses located arrays, saying to call it
from a program.
No ``from __future__ import annotations``: the DSL reads the annotations.
"""

import numpy as np
import pytest

import backends
from pipeline import StageEvent, subscribe
from pipeline.dsl import (
    Dimension,
    DomainError,
    Field,
    LocatedArray,
    field_operator,
    float64,
    located,
    scan_operator,
)
from pipeline.errors import ArgumentError

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
IJK = Field[[I, J, K], float64]
N = (6, 4, 5)  # the output's shape: no two extents equal


@field_operator
def below(f: IJK) -> IJK:
    return f(I - 1)


@field_operator
def difference(f: IJK, g: IJK) -> IJK:
    return f(I + 1) - g(K - 1)


@field_operator
def both(f: IJK) -> tuple[IJK, IJK]:
    return f, -f


@scan_operator(axis=K, forward=True, init=0.0)
def running_sum(carry: float64, value: float64) -> float64:
    return carry + value


def _data(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def _result(after, key):
    value = after[key]
    return value.array if isinstance(value, LocatedArray) else value


def test_a_located_input_of_a_direct_call_is_read_at_its_origin(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    f = _data((N[0] + 1, N[1], N[2]))  # covers I = -1 .. N[0] - 1
    after = run_program(
        below,
        dsl_backend,
        located(to_backend_array(f, dsl_backend), (I, J, K), origin={I: -1}),
        out=to_backend_array(np.zeros(N), dsl_backend),
        written=("out",),
    )
    np.testing.assert_array_equal(to_numpy(_result(after, "out")), f[:-1])


def test_a_located_output_of_a_direct_call_takes_its_domain_in_grid_indices(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    # out covers I = 2..7, f covers I = 0..8 (plain), g covers K = -1..4; domain I in [3, 4).
    f, g = _data((9, N[1], N[2]), 1), _data((N[0], N[1], N[2] + 1), 2)
    after = run_program(
        difference,
        dsl_backend,
        to_backend_array(f, dsl_backend),
        located(to_backend_array(g, dsl_backend), (I, J, K), origin={I: 2, K: -1}),
        out=located(to_backend_array(np.full(N, 7.0), dsl_backend), (I, J, K), origin={I: 2}),
        domain={I: (3, 4)},
        written=("out",),
    )
    expected = np.full(N, 7.0)
    # grid i = 3: out element 1; f element 4; g element 1 (and K - 1 is g's element k).
    expected[1:2] = f[4:5] - g[1:2, :, :-1]
    np.testing.assert_array_equal(to_numpy(_result(after, "out")), expected)


def test_a_located_direct_call_compiles_once_and_lowers_its_variant():
    op = below.with_backend(backends.c_cpu)
    f = _data((N[0] + 1, N[1], N[2]))
    out = np.zeros(N)
    op(located(f, (I, J, K), origin={I: -1}), out=out)
    events: list[StageEvent] = []
    with subscribe(events.append):
        op(located(f, (I, J, K), origin={I: -1}), out=out)
    assert events == []
    np.testing.assert_array_equal(out, f[:-1])
    lowered = op.lower(located(f, (I, J, K), origin={I: -1}), out=out)
    assert dict(lowered.concrete.definition.located) == {"f": (("I", -1),)}


def test_a_located_array_over_other_dimensions_is_refused_naming_the_argument():
    f, out = np.zeros((N[1], N[0], N[2])), np.zeros(N)
    with pytest.raises(ArgumentError, match=r"argument 'f' of below\(\) is located over "
                       r"\[J, I, K\], but its parameter is over \[I, J, K\]"):
        below(located(f, (J, I, K)), out=out)
    with pytest.raises(ArgumentError, match=r"argument 'out=' of below\(\) is located over "
                       r"\[J, I, K\]"):
        below(np.zeros(N), out=located(np.zeros((N[1], N[0], N[2])), (J, I, K)))


def test_outputs_of_a_direct_call_at_different_origins_are_refused_naming_them():
    f, a, b = np.zeros(N), np.zeros(N), np.zeros(N)
    with pytest.raises(ArgumentError, match=r"the outputs of the call of 'both' have different "
                       r"origins \('out=\[0\]' at origin I=1; 'out=\[1\]' at origin 0\)"):
        both(f, out=(located(a, (I, J, K), origin={I: 1}), b))


def test_a_located_input_without_the_halo_is_refused_with_where_it_lies():
    f = np.zeros(N)  # covers I = 0 .. 5 only: I - 1 reaches below
    with pytest.raises(DomainError, match=r"'f' is too small along I.*located: 'f' at origin "
                       r"J=1; 'out=' at origin J=1\)"):
        below.with_backend(backends.c_cpu)(located(f, (I, J, K), origin={J: 1}),
                                           out=located(np.zeros(N), (I, J, K), origin={J: 1}))


def test_a_direct_scan_call_refuses_located_arrays_saying_to_call_it_from_a_program():
    values, out = np.ones(N), np.zeros(N)
    with pytest.raises(ArgumentError, match=r"scan operator 'running_sum' called directly "
                       r"takes plain arrays .* call it from a @program"):
        running_sum(located(values, (I, J, K)), out=out)
    with pytest.raises(ArgumentError, match=r"not located arrays"):
        running_sum(values, out=located(out, (I, J, K), origin={K: 1}))
