"""Casts with ``astype``, each dtype, literals typed like NumPy 2 weak scalars, 0-D fields.

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""


import numpy as np

from pipeline.dsl import (
    Field,
    astype,
    field_operator,
    float32,
    float64,
    int32,
    int64,
    maximum,
    minimum,
    program,
)

from .cases import OUT, F, Feature, arguments, at, bools, dom, ints, nonzero_ints
from .grid import IJK, IJK32, I, IJKb, IJKi32, IJKi64, J, K

ASTYPE = Feature("astype")
DTYPES_AND_LITERALS = Feature("dtypes and literals")
ZERO_DIM_FIELDS = Feature("0-D fields")

# =========================================================================== astype


@field_operator
def to_float32(a: IJK) -> IJK32:
    return astype(a, float32)


@program
def to_float32_program(a: IJK, out: IJK32):
    to_float32(a, out=out[1:-1, :, :])


def to_float32_reference(a, out):
    d = dom(out.shape, np.s_[1:-1, :, :])
    out[d] = at(a, d).astype(np.float32)


ASTYPE.add("astype_float64_to_float32", to_float32_program,
    arguments(a=F(-10, 10), out=OUT(np.float32)), to_float32_reference)


@field_operator
def to_float64(a: IJK32, b: IJK) -> IJK:
    return astype(a, float64) + b


@program
def to_float64_program(a: IJK32, b: IJK, out: IJK):
    to_float64(a, b, out=out)


def to_float64_reference(a, b, out):
    out[...] = a.astype(np.float64) + b


ASTYPE.add("astype_float32_to_float64", to_float64_program,
    arguments(a=F(-10, 10, np.float32), b=F(), out=OUT()), to_float64_reference)


@field_operator
def int_to_float(n: IJKi32, a: IJK) -> IJK:
    return astype(n, float64) * a


@program
def int_to_float_program(n: IJKi32, a: IJK, out: IJK):
    int_to_float(n, a, out=out)


def int_to_float_reference(n, a, out):
    out[...] = n.astype(np.float64) * a


ASTYPE.add("astype_int32_to_float64", int_to_float_program,
    arguments(n=ints, a=F(), out=OUT()), int_to_float_reference)


@field_operator
def float_to_int(a: IJK) -> IJKi32:
    return astype(a * 10.0, int32)


@program
def float_to_int_program(a: IJK, out: IJKi32):
    float_to_int(a, out=out[:, :, 1:])


def float_to_int_reference(a, out):
    d = dom(out.shape, np.s_[:, :, 1:])
    out[d] = (at(a, d) * 10.0).astype(np.int32)


ASTYPE.add("astype_float64_to_int32_truncates", float_to_int_program,
    arguments(a=F(-3, 3), out=OUT(np.int32)), float_to_int_reference)


@field_operator
def bool_to_int(a: IJK, b: IJK, n: IJKi64) -> IJKi64:
    return astype(a > b, int64) + n


@program
def bool_to_int_program(a: IJK, b: IJK, n: IJKi64, out: IJKi64):
    bool_to_int(a, b, n, out=out)


def bool_to_int_reference(a, b, n, out):
    out[...] = (a > b).astype(np.int64) + n


ASTYPE.add("astype_bool_to_int64", bool_to_int_program,
    arguments(a=F(), b=F(), n=lambda rng: ints(rng, dtype=np.int64), out=OUT(np.int64)),
    bool_to_int_reference)


@field_operator
def narrow_int(n: IJKi64, m: IJKi32) -> IJKi32:
    return astype(n, int32) - m


@program
def narrow_int_program(n: IJKi64, m: IJKi32, out: IJKi32):
    narrow_int(n, m, out=out)


def narrow_int_reference(n, m, out):
    out[...] = n.astype(np.int32) - m


ASTYPE.add("astype_int64_to_int32", narrow_int_program,
    arguments(n=lambda rng: ints(rng, lo=-10**6, hi=10**6, dtype=np.int64),
              m=ints, out=OUT(np.int32)),
    narrow_int_reference)


# =========================================================================== dtypes and literals


@field_operator
def stencil_float32(a: IJK32) -> IJK32:
    return 2 * a + 0.5 * a(I + 1) - a(J - 1)


@program
def stencil_float32_program(a: IJK32, out: IJK32):
    stencil_float32(a, out=out[:-1, 1:, :])


def stencil_float32_reference(a, out):
    d = dom(out.shape, np.s_[:-1, 1:, :])
    out[d] = 2 * at(a, d) + 0.5 * at(a, d, 1) - at(a, d, 0, -1)


DTYPES_AND_LITERALS.add("float32_stencil_with_int_and_float_literals", stencil_float32_program,
    arguments(a=F(dtype=np.float32), out=OUT(np.float32)), stencil_float32_reference)


@field_operator
def float_literals_float32(a: IJK32) -> IJK32:
    return a * 0.5 + 1.25


@program
def float_literals_float32_program(a: IJK32, out: IJK32):
    float_literals_float32(a, out=out)


def float_literals_float32_reference(a, out):
    out[...] = a * 0.5 + 1.25


DTYPES_AND_LITERALS.add("float_literals_keep_float32", float_literals_float32_program,
    arguments(a=F(dtype=np.float32), out=OUT(np.float32)), float_literals_float32_reference)


@field_operator
def int_literal_float64(a: IJK) -> IJK:
    return 3 * a - 1


@program
def int_literal_float64_program(a: IJK, out: IJK):
    int_literal_float64(a, out=out)


def int_literal_float64_reference(a, out):
    out[...] = 3 * a - 1


DTYPES_AND_LITERALS.add(
    "int_literals_with_float64", int_literal_float64_program, arguments(a=F(), out=OUT()),
    int_literal_float64_reference)


@field_operator
def int32_arithmetic(a: IJKi32, b: IJKi32) -> IJKi32:
    return a * 3 + b - 7


@program
def int32_arithmetic_program(a: IJKi32, b: IJKi32, out: IJKi32):
    int32_arithmetic(a, b, out=out)


def int32_arithmetic_reference(a, b, out):
    out[...] = a * 3 + b - 7


DTYPES_AND_LITERALS.add("int32_arithmetic_with_literals", int32_arithmetic_program,
    arguments(a=ints, b=ints, out=OUT(np.int32)),
    int32_arithmetic_reference)


@field_operator
def int_floor_divide(a: IJKi32, b: IJKi32) -> IJKi32:
    return a // b


@program
def int_floor_divide_program(a: IJKi32, b: IJKi32, out: IJKi32):
    int_floor_divide(a, b, out=out)


def int_floor_divide_reference(a, b, out):
    out[...] = a // b


DTYPES_AND_LITERALS.add("int32_floor_divide_negative_operands", int_floor_divide_program,
    arguments(a=lambda rng: ints(rng, lo=-50, hi=50), b=nonzero_ints,
              out=OUT(np.int32)),
    int_floor_divide_reference)


@field_operator
def int_remainder(a: IJKi64, b: IJKi64) -> IJKi64:
    return a % b


@program
def int_remainder_program(a: IJKi64, b: IJKi64, out: IJKi64):
    int_remainder(a, b, out=out)


def int_remainder_reference(a, b, out):
    out[...] = a % b


DTYPES_AND_LITERALS.add("int64_remainder_negative_operands", int_remainder_program,
    arguments(a=lambda rng: ints(rng, lo=-50, hi=50, dtype=np.int64),
              b=lambda rng: nonzero_ints(rng, dtype=np.int64), out=OUT(np.int64)),
    int_remainder_reference)


@field_operator
def int64_stencil(a: IJKi64) -> IJKi64:
    return a(I + 1) * a(I - 1) - a


@program
def int64_stencil_program(a: IJKi64, out: IJKi64):
    int64_stencil(a, out=out[1:-1, :, :])


def int64_stencil_reference(a, out):
    d = dom(out.shape, np.s_[1:-1, :, :])
    out[d] = at(a, d, 1) * at(a, d, -1) - at(a, d)


DTYPES_AND_LITERALS.add("int64_shifted_product", int64_stencil_program,
    arguments(a=lambda rng: ints(rng, lo=-1000, hi=1000, dtype=np.int64), out=OUT(np.int64)),
    int64_stencil_reference)


@field_operator
def int_literal_int64(a: IJKi64) -> IJKi64:
    return 2 * a + 1 - a(K + 1)


@program
def int_literal_int64_program(a: IJKi64, out: IJKi64):
    int_literal_int64(a, out=out[:, :, :-1])


def int_literal_int64_reference(a, out):
    d = dom(out.shape, np.s_[:, :, :-1])
    out[d] = 2 * at(a, d) + 1 - at(a, d, 0, 0, 1)


DTYPES_AND_LITERALS.add("int_literals_with_int64", int_literal_int64_program,
    arguments(a=lambda rng: ints(rng, dtype=np.int64), out=OUT(np.int64)),
    int_literal_int64_reference)


@field_operator
def int_abs_negate(a: IJKi32) -> IJKi32:
    return abs(-a + 3)


@program
def int_abs_negate_program(a: IJKi32, out: IJKi32):
    int_abs_negate(a, out=out)


def int_abs_negate_reference(a, out):
    out[...] = np.abs(-a + 3)


DTYPES_AND_LITERALS.add("int32_unary_minus_and_abs", int_abs_negate_program,
    arguments(a=ints, out=OUT(np.int32)), int_abs_negate_reference)


@field_operator
def int_power(a: IJKi32) -> IJKi32:
    return a ** 2


@program
def int_power_program(a: IJKi32, out: IJKi32):
    int_power(a, out=out)


def int_power_reference(a, out):
    out[...] = a ** 2


DTYPES_AND_LITERALS.add("int32_power_operator", int_power_program,
    arguments(a=lambda rng: ints(rng, lo=-10, hi=10), out=OUT(np.int32)), int_power_reference)


@field_operator
def int_clamp(a: IJKi32, b: IJKi32) -> IJKi32:
    return maximum(minimum(a, b), 0)


@program
def int_clamp_program(a: IJKi32, b: IJKi32, out: IJKi32):
    int_clamp(a, b, out=out)


def int_clamp_reference(a, b, out):
    out[...] = np.maximum(np.minimum(a, b), 0)


DTYPES_AND_LITERALS.add("int32_minimum_maximum", int_clamp_program,
    arguments(a=ints, b=ints, out=OUT(np.int32)),
    int_clamp_reference)


@field_operator
def int_compare_literal(a: IJKi64) -> IJKb:
    return a >= 3


@program
def int_compare_literal_program(a: IJKi64, out: IJKb):
    int_compare_literal(a, out=out)


def int_compare_literal_reference(a, out):
    out[...] = a >= 3


DTYPES_AND_LITERALS.add("int64_compare_with_literal", int_compare_literal_program,
    arguments(a=lambda rng: ints(rng, lo=0, hi=6, dtype=np.int64), out=OUT(np.bool_)),
    int_compare_literal_reference)


@field_operator
def bool_literals(a: IJKb, b: IJKb) -> IJKb:
    return (a | False) & (b != True)  # noqa: E712


@program
def bool_literals_program(a: IJKb, b: IJKb, out: IJKb):
    bool_literals(a, b, out=out)


def bool_literals_reference(a, b, out):
    out[...] = (a | False) & (b != True)  # noqa: E712


DTYPES_AND_LITERALS.add("bool_literals_with_bool_fields", bool_literals_program,
    arguments(a=bools, b=bools, out=OUT(np.bool_)), bool_literals_reference)


# =========================================================================== 0-D fields

Z32 = Field[[], int32]
Ii32 = Field[[I], int32]


@field_operator
def increment_0d(a: Z32) -> Z32:
    return a + 1


@field_operator
def broadcast_0d(a: Z32, b: Ii32) -> Ii32:
    return a * b


@program
def zero_dim_program(a: Z32, b: Ii32, o0: Z32, o1: Ii32):
    increment_0d(a, out=o0)
    broadcast_0d(a, b, out=o1[1:])


def zero_dim_reference(a, b, o0, o1):
    o0[...] = a + 1
    o1[1:] = a * b[1:]


ZERO_DIM_FIELDS.add("zero_dim_fields", zero_dim_program,
    arguments(a=lambda rng: np.array(7, dtype=np.int32), b=lambda rng: ints(rng, (6,)),
              o0=OUT(np.int32, ()), o1=OUT(np.int32, (6,))),
    zero_dim_reference, outputs=("o0", "o1"))


