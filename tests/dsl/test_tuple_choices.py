"""``where``, ``concat_where``, ``astype`` and ``a if c else b`` of tuples, item by item (issue
41): on every backend, in a scan, when a definition runs on arrays, and refused at the user's
line where the branches are nested differently or the mask is a tuple. The corpus module
``tuple_choices`` runs the programs of each feature against NumPy. No ``from __future__ import
annotations``: the DSL reads the annotations.
"""

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

from pipeline.dsl import (
    Dimension,
    DSLTypeError,
    Field,
    astype,
    concat_where,
    field_operator,
    float32,
    float64,
    int32,
    program,
    scan_operator,
    where,
)

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
F = Field[[I, J], float64]
FK = Field[[I, J, K], float64]
SHAPE = (6, 5)


@dataclasses.dataclass(frozen=True)
class State:
    u: F
    v: F


@dataclasses.dataclass(frozen=True)
class Other:
    u: F
    v: F


class Pair(NamedTuple):
    first: F
    second: F


def _frontend_error(program_, match):
    with pytest.raises(DSLTypeError, match=match) as caught:
        program_.frontend()
    assert __file__ in str(caught.value)
    return str(caught.value)


# --------------------------------------------------------------------------- on every backend


@scan_operator(axis=K, forward=True, init=(0.0, 0.0))
def kept_positive(carry: tuple[float64, float64], x: float64) -> tuple[float64, float64]:
    return where(x > 0.0, (carry[0] + x, carry[1]), (carry[0], carry[1] + x))


@field_operator
def positive_and_negative_sums(x: FK) -> tuple[FK, FK]:
    return kept_positive(x)


@program
def sums_program(x: FK, positive: FK, negative: FK):
    positive_and_negative_sums(x, out=(positive, negative))


def test_where_of_tuple_carries_in_a_scan(dsl_backend, to_backend_array, to_numpy, run_program):
    x = np.random.default_rng(3).uniform(-1, 1, (*SHAPE, 4))
    written = run_program(
        sums_program, dsl_backend, to_backend_array(x, dsl_backend),
        positive=to_backend_array(np.zeros(x.shape), dsl_backend),
        negative=to_backend_array(np.zeros(x.shape), dsl_backend),
        written=("positive", "negative"),
    )
    np.testing.assert_allclose(to_numpy(written["positive"]),
                               np.cumsum(np.where(x > 0.0, x, 0.0), axis=2), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(written["negative"]),
                               np.cumsum(np.where(x > 0.0, 0.0, x), axis=2), rtol=1e-12)


@field_operator
def literal_pairs(m: F) -> tuple[F, F]:
    return where(m > 0.0, (m, 1.0), (2.0, -m))


@program
def literal_pairs_program(m: F, x: F, y: F):
    literal_pairs(m, out=(x, y))


def test_where_of_tuples_with_literal_items_on_each_side(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    m = np.random.default_rng(4).uniform(-1, 1, SHAPE)
    written = run_program(
        literal_pairs_program, dsl_backend, to_backend_array(m, dsl_backend),
        x=to_backend_array(np.zeros(SHAPE), dsl_backend),
        y=to_backend_array(np.zeros(SHAPE), dsl_backend),
        written=("x", "y"),
    )
    np.testing.assert_array_equal(to_numpy(written["x"]), np.where(m > 0.0, m, 2.0))
    np.testing.assert_array_equal(to_numpy(written["y"]), np.where(m > 0.0, 1.0, -m))


# --------------------------------------------------------------------------- definitions on arrays


def test_the_builtins_choose_and_convert_tuples_item_by_item_on_arrays():
    rng = np.random.default_rng(5)
    m, a, b, c, d = (rng.uniform(-1, 1, SHAPE) for _ in range(5))
    chosen = where(m > 0.0, (a, (b, 1.0)), (c, (d, 2.0)))
    np.testing.assert_array_equal(chosen[0], np.where(m > 0.0, a, c))
    np.testing.assert_array_equal(chosen[1][0], np.where(m > 0.0, b, d))
    np.testing.assert_array_equal(chosen[1][1], np.where(m > 0.0, 1.0, 2.0))
    converted = astype(Pair(a, b), float32)
    assert isinstance(converted, Pair)
    assert converted.second.dtype == np.float32
    state = where(m > 0.0, State(a, b), State(c, d))
    assert isinstance(state, State)
    np.testing.assert_array_equal(state.v, np.where(m > 0.0, b, d))


def test_the_builtins_refuse_branches_nested_differently_on_arrays():
    a = np.zeros(SHAPE)
    with pytest.raises(TypeError, match=r"branches of where\(\) are \(value, value\) and "
                                        r"\(value, \(value, value\)\)"):
        where(a > 0.0, (a, a), (a, (a, a)))
    with pytest.raises(TypeError, match=r"branches of where\(\) are State\(u=value, v=value\) "
                                        r"and Other\(u=value, v=value\)"):
        where(a > 0.0, State(a, a), Other(a, a))
    with pytest.raises(TypeError, match=r"the mask of where\(\) is one field or scalar"):
        where((a > 0.0, a > 1.0), (a, a), (a, a))


# --------------------------------------------------------------------------- errors at the line


def _one_operator_program(operator):
    @program
    def calling(m: F, a: F, b: F, x: F, y: F):
        operator(m, a, b, out=(x, y))

    return calling


def test_where_of_branches_nested_differently_names_both_nestings():
    @field_operator
    def mismatched(m: F, a: F, b: F) -> tuple[F, F]:
        return where(m > 0.0, (a, b), (a, (b, b)))[0], b

    message = _frontend_error(_one_operator_program(mismatched),
                              r"branches of where\(\) are \(value, value\) and "
                              r"\(value, \(value, value\)\); .* nest both branches alike")
    assert "return where(m > 0.0, (a, b), (a, (b, b)))[0], b" in message


def test_a_tuple_and_a_single_value_as_branches_are_refused():
    @field_operator
    def mixed(m: F, a: F, b: F) -> tuple[F, F]:
        return where(m > 0.0, (a, b), a)

    _frontend_error(_one_operator_program(mixed),
                    r"branches of where\(\) are \(value, value\) and value")


def test_a_collection_and_a_plain_tuple_as_branches_are_refused():
    @field_operator
    def collection_and_tuple(m: F, a: F, b: F) -> tuple[F, F]:
        chosen = where(m > 0.0, State(a, b), (a, b))
        return chosen.u, chosen.v

    _frontend_error(_one_operator_program(collection_and_tuple),
                    r"branches of where\(\) are State\(u=value, v=value\) and \(value, value\)")


def test_a_tuple_mask_is_refused():
    @field_operator
    def tuple_mask(m: F, a: F, b: F) -> tuple[F, F]:
        return where((m > 0.0, m > 1.0), (a, b), (b, a))

    message = _frontend_error(_one_operator_program(tuple_mask),
                              r"the mask of where\(\) is one field or scalar, but "
                              r"'\(m > 0.0, m > 1.0\)' is a tuple \(value, value\)")
    assert "return where((m > 0.0, m > 1.0), (a, b), (b, a))" in message


def test_concat_where_of_branches_nested_differently_is_refused():
    @field_operator
    def mismatched(m: F, a: F, b: F) -> tuple[F, F]:
        return concat_where(I == 0, (a, b), ((a, b),))[0]

    _frontend_error(_one_operator_program(mismatched),
                    r"branches of concat_where\(\) are \(value, value\) and "
                    r"\(\(value, value\)\)")


def test_a_conditional_expression_of_branches_nested_differently_is_refused():
    @field_operator
    def mismatched(flag: bool, a: F, b: F) -> tuple[F, F]:
        return (a, b) if flag else (a, b, b)

    @program
    def calling(flag: bool, a: F, b: F, x: F, y: F):
        mismatched(flag, a, b, out=(x, y))

    message = _frontend_error(calling, r"branches of this conditional expression are "
                                       r"\(value, value\) and \(value, value, value\)")
    assert "return (a, b) if flag else (a, b, b)" in message


def test_a_tuple_choice_where_one_value_goes_is_refused():
    @field_operator
    def summed(m: F, a: F, b: F) -> tuple[F, F]:
        return where(m > 0.0, (a, b), (b, a)) + a, b

    _frontend_error(_one_operator_program(summed),
                    r"'where\(m > 0.0, \(a, b\), \(b, a\)\)' is a tuple of 2 value\(s\), not a "
                    r"single value")


def test_astype_of_a_tuple_to_a_dtype_the_annotation_lacks_is_refused():
    @field_operator
    def wrong_dtype(m: F, a: F, b: F) -> tuple[F, F]:
        return astype((a, b), int32)

    message = _frontend_error(_one_operator_program(wrong_dtype),
                              r"result 0 of 'wrong_dtype' has dtype int32 but the annotation "
                              r"says float64")
    assert "return astype((a, b), int32)" in message
