"""Programs with scalar parameters bound to values (``Program.with_bound_args``, issue 41).

The bound parameters are constants of their declared dtypes, folded into the code; the
program's calls no longer take them. The corpus runs bound programs on every backend
(``corpus/bound_arguments.py``); here: calls, what a bound program shows, and misuse.
No ``from __future__ import annotations``: the DSL reads the annotations.
"""

import re

import numpy as np
import pytest

from pipeline.dsl import (
    Dimension,
    DSLTypeError,
    Field,
    field_operator,
    float64,
    int32,
    int64,
    program,
)
from pipeline.errors import ArgumentError

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
F = Field[[I, J, K], float64]
Fi32 = Field[[I, J, K], int32]
SHAPE = (6, 5, 4)


@field_operator
def _shifted_scaled(a: F, s: float64) -> F:
    return a(I + 1) * s


@program
def shifted_scaled(a: F, s: float64, hi: int32, out: F):
    _shifted_scaled(a, s, out=out, domain={I: (0, hi)})


@field_operator
def _offset(a: Fi32, n: int64) -> Fi32:
    return a + n


@program
def mixed(a: Fi32, n: int64, out: Fi32):
    _offset(a, n, out=out)


def _expected(a, s, hi):
    out = np.zeros(SHAPE)
    out[:hi] = a[1 : hi + 1] * s
    return out


def test_a_bound_program_takes_the_other_arguments_by_position_or_keyword(
    dsl_backend, to_backend_array, to_numpy, bind_program
):
    a = np.random.default_rng(4).uniform(-1, 1, SHAPE)
    bound = bind_program(shifted_scaled.with_bound_args(s=2.5, hi=4), dsl_backend)
    for call in (
        lambda out: bound(to_backend_array(a, dsl_backend), out),
        lambda out: bound(out=out, a=to_backend_array(a, dsl_backend)),
    ):
        out = to_backend_array(np.zeros(SHAPE), dsl_backend)
        result = call(out)
        written = out if result is None else result[0]
        np.testing.assert_allclose(to_numpy(written), _expected(a, 2.5, 4), rtol=1e-15)


def test_the_bound_values_are_constants_of_the_code_not_parameters():
    lowered = shifted_scaled.with_bound_args(s=2.5, hi=4).lower(np.ones(SHAPE), np.ones(SHAPE))
    text = str(lowered.ir)
    assert "program shifted_scaled(a: " in text and "s:" not in text and "hi:" not in text
    assert "out[0:4, :, :]" in text and "2.5" in text


def test_binding_leaves_the_original_program_as_it_was():
    shifted_scaled.with_bound_args(s=2.0)
    a, out = np.ones(SHAPE), np.zeros(SHAPE)
    shifted_scaled(a, 3.0, 2, out)
    np.testing.assert_array_equal(out, _expected(a, 3.0, 2))


def test_a_bound_parameter_passed_again_is_refused_as_any_extra_argument():
    bound = shifted_scaled.with_bound_args(s=2.5)
    with pytest.raises(ArgumentError, match=r"takes 3 argument\(s\) \(a, hi, out\), got 4"):
        bound(np.ones(SHAPE), 2.5, 4, np.zeros(SHAPE))
    with pytest.raises(ArgumentError, match="no parameter 's'"):
        bound(np.ones(SHAPE), s=2.5, hi=4, out=np.zeros(SHAPE))


def test_an_unknown_name_or_one_bound_already_is_a_type_error():
    with pytest.raises(TypeError, match="no parameter 'scale' to bind; its parameters are a, s"):
        shifted_scaled.with_bound_args(scale=2.0)
    with pytest.raises(TypeError, match="'s' is bound already"):
        shifted_scaled.with_bound_args(s=2.0).with_bound_args(s=3.0)


_DEF_LINE = re.escape(__file__) + r'", line \d+'


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"a": 1.0}, "binds a parameter that is a field; only scalar parameters"),
        ({"hi": 2.5}, "a float does not fit parameter 'hi' of dtype int32; give an int"),
        ({"hi": 2**40}, "an int does not fit parameter 'hi' of dtype int32; give an int"),
        ({"s": True}, "a bool does not fit parameter 's' of dtype float64; give a number"),
        ({"s": "2"}, "a str does not fit parameter 's'"),
    ],
)
def test_a_value_the_parameter_cannot_hold_is_a_dsl_error_at_the_program(values, message):
    bound = shifted_scaled.with_bound_args(**values)
    with pytest.raises(DSLTypeError, match=_DEF_LINE) as raised:
        bound.lower()
    assert message in str(raised.value)


def test_a_bound_constant_is_typed_as_its_parameter_and_mixes_as_it_would():
    unbound = mixed.with_backend(mixed.backend)
    with pytest.raises(DSLTypeError, match="mixes int32 and int64") as as_parameter:
        unbound.lower()
    with pytest.raises(DSLTypeError, match="mixes int32 and int64") as as_constant:
        mixed.with_bound_args(n=3).lower()
    assert str(as_constant.value).splitlines()[0] == str(as_parameter.value).splitlines()[0]
