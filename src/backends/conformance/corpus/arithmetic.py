"""Arithmetic, comparisons, boolean logic and ``where``.

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""

from typing import Any

import numpy as np

from pipeline.dsl import field_operator, program, where

from .cases import OUT, F, Feature, arguments, at, away_from_zero, bools, dom, ints, sentinel, ties
from .grid import IJK, SHAPE, I, IJKb, IJKi32

FLOAT_ARITHMETIC = Feature("float arithmetic")
COMPARISONS = Feature("comparisons")
BOOLEAN_LOGIC = Feature("boolean logic")
WHERE = Feature("where")

# =========================================================================== float arithmetic


@field_operator
def arith_fields(a: IJK, b: IJK) -> IJK:
    return a + b - a * b


@program
def arith_fields_program(a: IJK, b: IJK, out: IJK):
    arith_fields(a, b, out=out)


def arith_fields_reference(a, b, out):
    out[...] = a + b - a * b


FLOAT_ARITHMETIC.add(
    "full_domain_add_sub_mul", arith_fields_program, arguments(a=F(), b=F(), out=OUT()),
    arith_fields_reference)


@field_operator
def true_divide(a: IJK, b: IJK) -> IJK:
    return a / b


@program
def true_divide_program(a: IJK, b: IJK, out: IJK):
    true_divide(a, b, out=out[:, 1:, :-1])


def true_divide_reference(a, b, out):
    d = dom(out.shape, np.s_[:, 1:, :-1])
    out[d] = at(a, d) / at(b, d)


FLOAT_ARITHMETIC.add("true_divide", true_divide_program,
    arguments(a=F(-5, 5), b=away_from_zero, out=OUT()), true_divide_reference)


@field_operator
def floor_divide_float(a: IJK, b: IJK) -> IJK:
    return a // b


@program
def floor_divide_float_program(a: IJK, b: IJK, out: IJK):
    floor_divide_float(a, b, out=out)


def floor_divide_float_reference(a, b, out):
    out[...] = a // b


FLOAT_ARITHMETIC.add("floor_divide_float64", floor_divide_float_program,
    arguments(a=F(-5, 5), b=away_from_zero, out=OUT()),
    floor_divide_float_reference)


@field_operator
def remainder_float(a: IJK, b: IJK) -> IJK:
    return a % b


@program
def remainder_float_program(a: IJK, b: IJK, out: IJK):
    remainder_float(a, b, out=out)


def remainder_float_reference(a, b, out):
    out[...] = a % b


FLOAT_ARITHMETIC.add("remainder_float64_mixed_signs", remainder_float_program,
    arguments(a=F(-5, 5), b=away_from_zero, out=OUT()),
    remainder_float_reference)


@field_operator
def power_fields(a: IJK, b: IJK) -> IJK:
    return a ** b


@program
def power_fields_program(a: IJK, b: IJK, out: IJK):
    power_fields(a, b, out=out)


def power_fields_reference(a, b, out):
    out[...] = a ** b


FLOAT_ARITHMETIC.add(
    "power_operator_fields", power_fields_program, arguments(a=F(0.1, 3), b=F(-2, 2), out=OUT()),
    power_fields_reference)


@field_operator
def power_int_literal(a: IJK) -> IJK:
    return a ** 2 - a ** 3


@program
def power_int_literal_program(a: IJK, out: IJK):
    power_int_literal(a, out=out)


def power_int_literal_reference(a, out):
    out[...] = a ** 2 - a ** 3


FLOAT_ARITHMETIC.add(
    "power_operator_int_literal", power_int_literal_program, arguments(a=F(-2, 2), out=OUT()),
    power_int_literal_reference)


@field_operator
def negate(a: IJK, b: IJK) -> IJK:
    return -(a * b) - a


@program
def negate_program(a: IJK, b: IJK, out: IJK):
    negate(a, b, out=out)


def negate_reference(a, b, out):
    out[...] = -(a * b) - a


FLOAT_ARITHMETIC.add(
    "unary_minus", negate_program, arguments(a=F(), b=F(), out=OUT()), negate_reference)


# =========================================================================== comparisons


def _comparison_args(rng: np.random.Generator) -> dict[str, Any]:
    return {"a": ties(rng), "b": ties(rng), "out": sentinel(SHAPE, np.bool_)}


@field_operator
def less(a: IJK, b: IJK) -> IJKb:
    return a < b


@program
def less_program(a: IJK, b: IJK, out: IJKb):
    less(a, b, out=out)


def less_reference(a, b, out):
    out[...] = a < b


COMPARISONS.add("compare_less", less_program, _comparison_args, less_reference)


@field_operator
def less_equal(a: IJK, b: IJK) -> IJKb:
    return a <= b


@program
def less_equal_program(a: IJK, b: IJK, out: IJKb):
    less_equal(a, b, out=out)


def less_equal_reference(a, b, out):
    out[...] = a <= b


COMPARISONS.add("compare_less_equal", less_equal_program, _comparison_args, less_equal_reference)


@field_operator
def greater(a: IJK, b: IJK) -> IJKb:
    return a(I + 1) > b


@program
def greater_program(a: IJK, b: IJK, out: IJKb):
    greater(a, b, out=out[:-1, :, :])


def greater_reference(a, b, out):
    d = dom(out.shape, np.s_[:-1, :, :])
    out[d] = at(a, d, 1) > at(b, d)


COMPARISONS.add("compare_greater_shifted", greater_program, _comparison_args, greater_reference)


@field_operator
def greater_equal(a: IJK, b: IJK) -> IJKb:
    return a >= b


@program
def greater_equal_program(a: IJK, b: IJK, out: IJKb):
    greater_equal(a, b, out=out[1:, 1:, 1:])


def greater_equal_reference(a, b, out):
    d = dom(out.shape, np.s_[1:, 1:, 1:])
    out[d] = at(a, d) >= at(b, d)


COMPARISONS.add(
    "compare_greater_equal", greater_equal_program, _comparison_args, greater_equal_reference)


@field_operator
def equal_ints(a: IJKi32, b: IJKi32) -> IJKb:
    return a == b


@program
def equal_ints_program(a: IJKi32, b: IJKi32, out: IJKb):
    equal_ints(a, b, out=out)


def equal_ints_reference(a, b, out):
    out[...] = a == b


COMPARISONS.add("compare_equal_int32", equal_ints_program,
    arguments(a=lambda rng: ints(rng, lo=0, hi=2), b=lambda rng: ints(rng, lo=0, hi=2),
              out=OUT(np.bool_)),
    equal_ints_reference)


@field_operator
def not_equal_literal(a: IJK) -> IJKb:
    return a != 0.5


@program
def not_equal_literal_program(a: IJK, out: IJKb):
    not_equal_literal(a, out=out)


def not_equal_literal_reference(a, out):
    out[...] = a != 0.5


COMPARISONS.add("compare_not_equal_float_literal", not_equal_literal_program,
    arguments(a=ties, out=OUT(np.bool_)), not_equal_literal_reference)


# =========================================================================== boolean logic


@field_operator
def bool_logic(a: IJKb, b: IJKb, c: IJKb) -> IJKb:
    return (a & b) | ~c


@program
def bool_logic_program(a: IJKb, b: IJKb, c: IJKb, out: IJKb):
    bool_logic(a, b, c, out=out)


def bool_logic_reference(a, b, c, out):
    out[...] = (a & b) | ~c


BOOLEAN_LOGIC.add("bool_and_or_invert", bool_logic_program,
    arguments(a=bools, b=bools, c=bools, out=OUT(np.bool_)), bool_logic_reference)


@field_operator
def combined_comparisons(a: IJK, b: IJK) -> IJKb:
    return (a > 0.0) & ~(b < 0.5) | (a == b)


@program
def combined_comparisons_program(a: IJK, b: IJK, out: IJKb):
    combined_comparisons(a, b, out=out)


def combined_comparisons_reference(a, b, out):
    out[...] = (a > 0.0) & ~(b < 0.5) | (a == b)


BOOLEAN_LOGIC.add("bool_logic_of_comparisons", combined_comparisons_program, _comparison_args,
    combined_comparisons_reference)


# =========================================================================== where


@field_operator
def where_select(a: IJK, b: IJK) -> IJK:
    return where(a(I + 1) > a, a(I + 1), b)


@program
def where_select_program(a: IJK, b: IJK, out: IJK):
    where_select(a, b, out=out[:-1, :, :])


def where_select_reference(a, b, out):
    d = dom(out.shape, np.s_[:-1, :, :])
    out[d] = np.where(at(a, d, 1) > at(a, d), at(a, d, 1), at(b, d))


WHERE.add("where_select_shifted", where_select_program, arguments(a=F(), b=F(), out=OUT()),
    where_select_reference)


@field_operator
def where_nested(a: IJK) -> IJK:
    return where(a > 0.5, a, where(a < -0.5, -a, 0.0))


@program
def where_nested_program(a: IJK, out: IJK):
    where_nested(a, out=out)


def where_nested_reference(a, out):
    out[...] = np.where(a > 0.5, a, np.where(a < -0.5, -a, 0.0))


WHERE.add("where_nested", where_nested_program, arguments(a=F(), out=OUT()), where_nested_reference)


@field_operator
def where_mask(mask: IJKb, a: IJK, b: IJK) -> IJK:
    return where(mask, a, -b)


@program
def where_mask_program(mask: IJKb, a: IJK, b: IJK, out: IJK):
    where_mask(mask, a, b, out=out[1:-1, :, :])


def where_mask_reference(mask, a, b, out):
    d = dom(out.shape, np.s_[1:-1, :, :])
    out[d] = np.where(at(mask, d), at(a, d), -at(b, d))


WHERE.add("where_bool_field", where_mask_program, arguments(mask=bools, a=F(), b=F(), out=OUT()),
    where_mask_reference)


@field_operator
def where_literals(a: IJK, b: IJK) -> IJK:
    return where(a > b, 1.0, -1.0)


@program
def where_literals_program(a: IJK, b: IJK, out: IJK):
    where_literals(a, b, out=out)


def where_literals_reference(a, b, out):
    out[...] = np.where(a > b, 1.0, -1.0)


WHERE.add(
    "where_both_branches_literals", where_literals_program, arguments(a=F(), b=F(), out=OUT()),
    where_literals_reference)


