"""``not x`` on a bool scalar is logical negation on every backend (issue 41): ``if not
flag:``, ``a if not c else b``; ``~`` of a Python bool is -2 where the definition runs, so
``not`` is the spelling that holds everywhere. ``not`` on a field stays a DSL error saying to
use ``~``. No ``from __future__ import annotations``: the DSL reads the annotations.
"""

import numpy as np
import pytest

from pipeline.dsl import (
    Dimension,
    DSLSyntaxError,
    DSLTypeError,
    Field,
    field_operator,
    float64,
    int64,
    program,
    scan_operator,
    where,
)

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
F = Field[[I, J], float64]
SHAPE = (4, 3)


@field_operator
def negated(a: F, b: F, flag: bool, s: float64) -> F:
    if not flag:
        chosen = a
    else:
        chosen = b
    positive = s > 0.0
    return chosen + (1.0 if not positive else 2.0) + (a if not not flag else b) * 0.0


@program
def negated_program(a: F, b: F, flag: bool, s: float64, out: F):
    negated(a, b, flag, s, out=out)


@program
def negated_literal(a: F, b: F, out: F):
    negated(a, b, True, 0.0, out=out)


@pytest.mark.parametrize(("flag", "s", "expected"),
                         [(True, 1.0, 22.0), (False, 1.0, 12.0), (False, -1.0, 11.0)])
def test_not_of_a_bool_scalar_is_logical_on_every_backend(
    dsl_backend, to_backend_array, to_numpy, run_program, flag, s, expected
):
    a, b = (to_backend_array(np.full(SHAPE, v), dsl_backend) for v in (10.0, 20.0))
    out = to_backend_array(np.zeros(SHAPE), dsl_backend)
    after = run_program(negated_program, dsl_backend, a, b, flag, s, out, written=(4,))
    assert (to_numpy(after[4]) == expected).all()


def test_not_of_a_literal_bool_is_logical_where_the_definition_runs(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    a, b = (to_backend_array(np.full(SHAPE, v), dsl_backend) for v in (10.0, 20.0))
    out = to_backend_array(np.zeros(SHAPE), dsl_backend)
    after = run_program(negated_literal, dsl_backend, a, b, out, written=(2,))
    assert (to_numpy(after[2]) == 21.0).all()


def _frontend_error(operator, error, match):
    @program
    def calling(a: F, n: int64, out: F):
        operator(a, n, out=out)

    with pytest.raises(error, match=match) as caught:
        calling.frontend()
    assert __file__ in str(caught.value)
    return str(caught.value)


def test_not_of_a_field_is_a_dsl_error_saying_to_use_invert():
    @field_operator
    def on_field(a: F, n: int64) -> F:
        return a if not (a > 0.0) else -a

    message = _frontend_error(on_field, DSLTypeError,
                              r"`not` is not supported on fields .*; use ~")
    assert "not (a > 0.0)" in message


def test_not_of_an_integer_scalar_is_a_dsl_error_saying_to_compare():
    @field_operator
    def on_integer(a: F, n: int64) -> F:
        return a if not n else -a

    _frontend_error(on_integer, DSLTypeError,
                    r"`not` takes a bool scalar, got int64; compare it \(x == 0\)")


def test_not_in_a_scan_is_a_dsl_error_saying_to_use_invert():
    @scan_operator(axis=K, init=0.0)
    def counting(total: float64, flag: bool) -> float64:
        return total + where(not flag, 1.0, 0.0)

    with pytest.raises(DSLSyntaxError, match=r"`not` is not supported in it; use ~") as caught:
        counting(np.zeros(5, dtype=bool), out=np.zeros(5))
    assert __file__ in str(caught.value)
