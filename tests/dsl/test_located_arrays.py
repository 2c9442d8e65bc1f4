"""Located arrays: arrays that carry their dimensions and the grid index of element 0 (ADR 0026).

A program call takes ``located(a, dims=(I, J, K), origin={I: -1})`` wherever it takes an
array: its dimensions must be the parameter's, and its origin places it in the grid's
absolute indices (of shifts, ``domain=`` and ``concat_where``), on every backend.
No ``from __future__ import annotations``: the DSL reads the annotations.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import backends
from backends import EmbeddedBackend
from backends.embedded import embedded_pipeline
from pipeline.dsl import (
    Dimension,
    DomainError,
    Field,
    LocatedArray,
    concat_where,
    field_operator,
    float64,
    int64,
    located,
    program,
    staggered,
)
from pipeline.errors import ArgumentError

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
IJK = Field[[I, J, K], float64]
JIK = Field[[J, I, K], float64]
N = (6, 4, 5)  # the output's shape: no two extents equal


@field_operator
def _below(f: IJK) -> IJK:
    return f(I - 1)


@program
def below(f: IJK, out: IJK):
    _below(f, out=out)


@field_operator
def _difference(f: IJK, g: IJK) -> IJK:
    return f(I + 1) - g(K - 1)


@program
def difference(f: IJK, g: IJK, lo: int64, out: IJK):
    _difference(f, g, out=out, domain={I: (lo, 4)})


@field_operator
def _capped(f: IJK) -> IJK:
    return concat_where(K == 0, -1.0, f(K - 1))


@program
def capped(f: IJK, out: IJK):
    _capped(f, out=out)


@field_operator
def _apart(f: IJK) -> IJK:
    return concat_where(K != 0, f, -1.0)


@program
def apart(f: IJK, out: IJK):
    _apart(f, out=out)


@field_operator
def _both(f: IJK) -> tuple[IJK, IJK]:
    return f, -f


@program
def both(f: IJK, a: IJK, b: IJK):
    _both(f, out=(a, b))


def _data(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def _result(after, key):
    value = after[key]
    return value.array if isinstance(value, LocatedArray) else value


def test_an_input_at_origin_minus_one_is_read_below_index_zero(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    f = _data((N[0] + 1, N[1], N[2]))  # covers I = -1 .. N[0] - 1
    out = np.zeros(N)
    after = run_program(
        below,
        dsl_backend,
        located(to_backend_array(f, dsl_backend), (I, J, K), origin={I: -1}),
        to_backend_array(out, dsl_backend),
        written=(1,),
    )
    np.testing.assert_array_equal(to_numpy(_result(after, 1)), f[:-1])


def test_without_its_origin_the_same_input_is_refused_for_its_missing_halo(
    dsl_backend, to_backend_array, bind_program
):
    f = to_backend_array(_data((N[0] + 1, N[1], N[2]))[1:], dsl_backend)
    out = to_backend_array(np.zeros(N), dsl_backend)
    with pytest.raises(DomainError, match="'f' is too small along I"):
        bind_program(below, dsl_backend)(f, out)


def test_an_output_at_another_origin_and_domain_in_grid_indices(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    # out covers I = 2..7, f covers I = 0..8 (plain), g covers K = -1..4; domain I in [lo, 4).
    f, g = _data((9, N[1], N[2]), 1), _data((N[0], N[1], N[2] + 1), 2)
    out = np.full(N, 7.0)
    after = run_program(
        difference,
        dsl_backend,
        to_backend_array(f, dsl_backend),
        located(to_backend_array(g, dsl_backend), (I, J, K), origin={I: 2, K: -1}),
        3,
        located(to_backend_array(out, dsl_backend), (I, J, K), origin={I: 2}),
        written=(3,),
    )
    expected = np.full(N, 7.0)
    # grid i in 3..3 (lo=3, stop 4): out element i - 2; f element i + 1; g element i - 2.
    expected[1:2] = f[4:5] - g[1:2, :, :-1]
    np.testing.assert_array_equal(to_numpy(_result(after, 3)), expected)


def test_concat_where_on_k_equal_zero_speaks_of_the_grid_index(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    # out covers K = -2 .. 2 and f K = -3 .. 2: K == 0 is out's element 2.
    f = _data((N[0], N[1], N[2] + 1), 3)
    out = np.zeros(N)
    after = run_program(
        capped,
        dsl_backend,
        located(to_backend_array(f, dsl_backend), (I, J, K), origin={K: -3}),
        located(to_backend_array(out, dsl_backend), (I, J, K), origin={K: -2}),
        written=(1,),
    )
    expected = f[:, :, :-1].copy()  # out's element k is grid k - 2, f's element k + 1 - 1
    expected[:, :, 2] = -1.0
    np.testing.assert_array_equal(to_numpy(_result(after, 1)), expected)


def test_a_condition_holds_at_grid_indices_below_zero(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    # K != 0 is (K < 0) | (K > 0): out and f cover K = -2 .. 2, so elements 0 and 1 are in it.
    f = _data(N, 6)
    out = np.zeros(N)
    after = run_program(
        apart,
        dsl_backend,
        located(to_backend_array(f, dsl_backend), (I, J, K), origin={K: -2}),
        located(to_backend_array(out, dsl_backend), (I, J, K), origin={K: -2}),
        written=(1,),
    )
    expected = f.copy()
    expected[:, :, 2] = -1.0
    np.testing.assert_array_equal(to_numpy(_result(after, 1)), expected)


def test_plain_and_located_arguments_mix_and_plain_calls_stay_as_they_were(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    f, g = _data((N[0] + 1, N[1], N[2]), 4), _data((N[0], N[1], N[2] + 1), 5)
    out = np.zeros(N)
    args = (
        to_backend_array(f, dsl_backend),
        located(to_backend_array(g, dsl_backend), (I, J, K), origin={K: -1}),
        0,
        to_backend_array(out, dsl_backend),
    )
    after = run_program(difference, dsl_backend, *args, written=(3,))
    expected = np.zeros(N)
    expected[:4] = f[1:5] - g[:4, :, :-1]
    np.testing.assert_array_equal(to_numpy(_result(after, 3)), expected)
    plain = (args[0], to_backend_array(g[:, :, :-1], dsl_backend), 0, args[3])
    with pytest.raises(DomainError, match="'g' is too small along K"):
        run_program(difference, dsl_backend, *plain, written=(3,))


def test_an_array_over_other_dimensions_is_refused_naming_both(
    dsl_backend, to_backend_array, bind_program
):
    f = located(to_backend_array(_data((N[1], N[0] + 1, N[2])), dsl_backend), (J, I, K))
    out = to_backend_array(np.zeros(N), dsl_backend)
    message = r"argument 'f' of below\(\) is located over \[J, I, K\].*over \[I, J, K\]"
    with pytest.raises(ArgumentError, match=message):
        bind_program(below, dsl_backend)(f, out)


def test_a_located_array_for_a_scalar_or_outputs_at_different_origins_are_refused():
    f, out = np.zeros((7, 4, 5)), np.zeros(N)
    with pytest.raises(ArgumentError, match="'lo' of difference\\(\\) is a scalar parameter"):
        difference(f, f, located(np.zeros(3), (I,)), out)
    moved = located(np.zeros(N), (I, J, K), origin={I: 1})
    with pytest.raises(ArgumentError, match="'a' at origin 0; 'b' at origin I=1"):
        both(np.zeros(N), np.zeros(N), b=moved)
    f = np.arange(7.0 * 4 * 5).reshape(7, 4, 5)
    both(f, np.zeros(N), np.zeros(N))  # a plain call first: its fast entry passes the next on
    a = np.zeros(N)
    both(f, a=located(a, (I, J, K), origin={I: 1}), b=moved)  # the same origin: accepted
    np.testing.assert_array_equal(a, f[1:])
    with pytest.raises(ValueError, match="one dimension per axis"):
        located(out, (I, J))
    with pytest.raises(ValueError, match="names K, which is not in dims"):
        located(np.zeros(3), (I,), origin={K: 1})


def test_a_refusal_for_missing_halo_says_where_the_located_arrays_lie():
    f = located(np.ones((N[0], N[1], N[2])), (I, J, K), origin={I: 1})  # covers I = 1 ..
    with pytest.raises(DomainError, match=r"'f' is too small along I.*located: 'f' at origin I=1"):
        below(f, np.zeros(N))


def test_a_located_array_shows_where_it_lies():
    where = located(np.zeros((3, 4)), (I, J), origin={J: -1})
    assert where.domain == {I: (0, 3), J: (-1, 3)}
    assert repr(where) == "located(ndarray over I[0:3], J[-1:3])"


def test_lower_with_located_arrays_shows_the_variant_their_calls_run():
    f, out = np.zeros((N[0] + 1, N[1], N[2])), np.zeros(N)
    assert "out <- f[I-1]" in str(below.lower(f[1:], out).ir)
    variant = below.lower(located(f, (I, J, K), origin={I: -1}), out)
    assert "out <- f\n" in str(variant.ir)  # element i of out reads element i of f


@field_operator
def _two_below(f: IJK) -> IJK:
    return f(I - 2)


@field_operator
def _one_above(f: IJK) -> IJK:
    return f(I + 1)


@program
def two_below(f: IJK, out: IJK):
    _two_below(f, out=out)


@program
def one_above(f: IJK, out: IJK):
    _one_above(f, out=out)


_DEFINITION_RUN = EmbeddedBackend(
    "embedded_numpy_definition_located", np, pipeline=embedded_pipeline(np, planned=False)
)


# Every pair of origins is a variant: compiled backends would build hundreds, so the property
# runs where the IR runs (the NumPy plan) and where the definition runs (fields at origins).
@pytest.mark.parametrize(
    "backend", [backends.embedded_numpy, _DEFINITION_RUN], ids=lambda b: b.name
)
@settings(max_examples=60, deadline=None)
@given(
    shift=st.sampled_from([-2, 1]),
    f_origin=st.integers(-4, 4),
    f_size=st.integers(1, 9),
    out_origin=st.integers(-4, 4),
    out_size=st.integers(1, 6),
)
def test_a_shifted_read_lands_on_the_grid_index_or_is_refused_for_the_missing_part(
    backend, shift, f_origin, f_size, out_origin, out_size
):
    # f covers grid [f_origin, f_origin + f_size); out [out_origin, out_origin + out_size).
    f = np.arange(f_size * 2 * 2, dtype=np.float64).reshape(f_size, 2, 2)
    out = np.zeros((out_size, 2, 2))
    run = (two_below if shift == -2 else one_above).with_backend(backend)
    wanted = (out_origin + shift, out_origin + out_size + shift)  # the grid indices read
    args = (
        located(f, (I, J, K), origin={I: f_origin}),
        located(out, (I, J, K), origin={I: out_origin}),
    )
    if wanted[0] < f_origin or wanted[1] > f_origin + f_size:
        with pytest.raises(DomainError, match="'f' is too small along I"):
            run(*args)
        return
    run(*args)
    np.testing.assert_array_equal(out, f[wanted[0] - f_origin : wanted[1] - f_origin])


def test_an_array_located_over_cells_is_refused_for_a_parameter_over_edges():
    """A staggered dimension shares its counterpart's axis name, but not its points (ADR 0027):
    the dims check compares dimensions, not axis names. A check made before any backend runs,
    so the default backend shows it for all."""
    IHalf = staggered(I)
    IHalfF = Field[[IHalf], float64]

    @field_operator
    def copied(e: IHalfF) -> IHalfF:
        return e

    @program
    def copy_edges(e: IHalfF, out: IHalfF):
        copied(e, out=out)

    edges, out = np.arange(5.0), np.zeros(5)
    with pytest.raises(ArgumentError, match=r"located over \[I\].*over \[IHalf\]"):
        copy_edges(located(edges, (I,)), out)
    copy_edges(located(edges, (IHalf,)), out)
    np.testing.assert_array_equal(out, edges)
