"""concat_where: a branch reads only where it is chosen, on every backend.

The reach of a branch is checked at each call from the output domain and the scalars its
condition names: a boundary condition needs no halo, and a condition that leaves a branch's
reads outside the arrays is a DomainError before anything runs (also on the native fast
path of c_cpu, which checks the same reach itself).
"""

import numpy as np
import pytest

from pipeline.dsl import (
    Dimension,
    DomainError,
    DSLTypeError,
    Field,
    concat_where,
    field_operator,
    float64,
    int64,
    program,
)

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
IJK = Field[[I, J, K], float64]
SHAPE = (4, 3, 7)


@field_operator
def centred_with_ends(f: IJK, top: int64) -> IJK:
    return concat_where(K == 0, f(K + 1), concat_where(K == top, f(K - 1), f(K - 1) + f(K + 1)))


@program
def centred_program(f: IJK, top: int64, out: IJK):
    centred_with_ends(f, top, out=out)


def _expected(f: np.ndarray) -> np.ndarray:
    out = np.empty_like(f)
    out[:, :, 0] = f[:, :, 1]
    out[:, :, -1] = f[:, :, -2]
    out[:, :, 1:-1] = f[:, :, :-2] + f[:, :, 2:]
    return out


def test_a_boundary_condition_needs_no_halo(dsl_backend, to_backend_array, to_numpy,
                                            run_program):
    f = np.random.default_rng(3).uniform(-1, 1, SHAPE)
    out = np.zeros(SHAPE)
    after = run_program(centred_program, dsl_backend, to_backend_array(f, dsl_backend),
                        SHAPE[2] - 1, to_backend_array(out, dsl_backend), written=(2,))
    np.testing.assert_allclose(to_numpy(after[2]), _expected(f), rtol=1e-12)


@pytest.mark.parametrize("top", [SHAPE[2] - 2, SHAPE[2]])
def test_a_branch_reaching_outside_is_a_domain_error_naming_field_and_dimension(
    dsl_backend, to_backend_array, bind_program, top
):
    # With the wrong top level, the interior formula runs at the last level and reads f(K+1)
    # past the end (top = nk - 2), or the top formula never runs (top = nk): the same read.
    f = to_backend_array(np.ones(SHAPE), dsl_backend)
    out = to_backend_array(np.zeros(SHAPE), dsl_backend)
    with pytest.raises(DomainError, match=r"field 'f' is too small along K") as info:
        bind_program(centred_program, dsl_backend)(f, top, out)
    assert "K < top" in info.value.args[0] or "K >= top + 1" in info.value.args[0]


@program
def interior_program(f: IJK, top: int64, out: IJK):
    centred_with_ends(f, top, out=out[:, :, 1:-1])


def test_the_reach_follows_the_output_slice(dsl_backend, to_backend_array, to_numpy,
                                            run_program):
    # On out[:, :, 1:-1] neither end is chosen (top lies beyond the array): the interior
    # formula's reads K - 1 >= 0 and K + 1 < nk fit, where on the whole output they would not.
    f = np.random.default_rng(4).uniform(-1, 1, SHAPE)
    out = np.zeros(SHAPE)
    after = run_program(interior_program, dsl_backend, to_backend_array(f, dsl_backend), 100,
                        to_backend_array(out, dsl_backend), written=(2,))
    np.testing.assert_allclose(to_numpy(after[2])[:, :, 1:-1], _expected(f)[:, :, 1:-1],
                               rtol=1e-12)
    np.testing.assert_array_equal(to_numpy(after[2])[:, :, [0, -1]], 0.0)


@field_operator
def on_a_missing_dimension(f: Field[[I, J], float64]) -> Field[[I, J], float64]:
    return concat_where(K == 0, f, -f)


@field_operator
def with_a_float_bound(f: IJK, level: float64) -> IJK:
    return concat_where(K < level, f, -f)


@field_operator
def with_a_field_condition(f: IJK) -> IJK:
    return concat_where(f > 0.0, f, -f)


@pytest.mark.parametrize(("operator", "error", "message"), [
    (on_a_missing_dimension, DSLTypeError, r"condition is on K, which its values lack"),
    (with_a_float_bound, DSLTypeError, r"an index bound must be an integer; 'level' is float64"),
    (with_a_field_condition, Exception, r"compares dimensions with integers, like K == 0"),
])
def test_misused_conditions_are_dsl_errors_at_the_users_line(operator, error, message):
    with pytest.raises(error, match=message) as info:
        operator.frontend()
    assert info.value.filename == __file__
    assert "concat_where" in info.value.source_line


def test_a_bad_bound_after_a_good_call_is_refused_too(dsl_backend, to_backend_array,
                                                      bind_program):
    # The second call takes the backend's fast path (native checks on c_cpu).
    bound = bind_program(centred_program, dsl_backend)
    f = to_backend_array(np.ones(SHAPE), dsl_backend)
    out = to_backend_array(np.zeros(SHAPE), dsl_backend)
    bound(f, SHAPE[2] - 1, out)
    with pytest.raises(DomainError, match=r"field 'f' is too small along K"):
        bound(f, SHAPE[2] - 3, out)
