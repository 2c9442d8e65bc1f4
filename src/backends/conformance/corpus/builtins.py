"""The math builtins, each alone and in groups of tuple results.

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""

import math
from collections.abc import Callable

import numpy as np

from pipeline.dsl import (
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctanh,
    bool_,
    cbrt,
    ceil,
    cos,
    cosh,
    exp,
    field_operator,
    float32,
    float64,
    floor,
    fmod,
    gamma,
    int32,
    int64,
    isfinite,
    isinf,
    isnan,
    log,
    maximum,
    minimum,
    power,
    program,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    trunc,
)

from .cases import OUT, SCALAR, F, Feature, arguments, at, dom, floats, ints, nonzero_ints
from .grid import IJK, IJK32, SHAPE, IJKb, IJKi32

MATH_BUILTINS = Feature("math builtins")

# =========================================================================== math builtins
# Each unary builtin writes out[1:, :-1, :] so the sentinel border is checked too.

BUILTIN_SLICE = np.s_[1:, :-1, :]


def unary_reference(function: Callable[[np.ndarray], np.ndarray]) -> Callable[..., None]:
    def reference(a, out):
        d = dom(out.shape, BUILTIN_SLICE)
        out[d] = function(at(a, d))
    reference.__name__ = f"{function.__name__}_reference"
    return reference


@field_operator
def sqrt_op(a: IJK) -> IJK:
    return sqrt(a)


@program
def sqrt_program(a: IJK, out: IJK):
    sqrt_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add(
    "builtin_sqrt", sqrt_program, arguments(a=F(0.1, 4), out=OUT()), unary_reference(np.sqrt))


@field_operator
def exp_op(a: IJK) -> IJK:
    return exp(a)


@program
def exp_program(a: IJK, out: IJK):
    exp_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add(
    "builtin_exp", exp_program, arguments(a=F(-3, 3), out=OUT()), unary_reference(np.exp))


@field_operator
def log_op(a: IJK) -> IJK:
    return log(a)


@program
def log_program(a: IJK, out: IJK):
    log_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add(
    "builtin_log", log_program, arguments(a=F(0.1, 4), out=OUT()), unary_reference(np.log))


@field_operator
def sin_op(a: IJK) -> IJK:
    return sin(a)


@program
def sin_program(a: IJK, out: IJK):
    sin_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add(
    "builtin_sin", sin_program, arguments(a=F(-4, 4), out=OUT()), unary_reference(np.sin))


@field_operator
def cos_op(a: IJK) -> IJK:
    return cos(a)


@program
def cos_program(a: IJK, out: IJK):
    cos_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add(
    "builtin_cos", cos_program, arguments(a=F(-4, 4), out=OUT()), unary_reference(np.cos))


@field_operator
def tan_op(a: IJK) -> IJK:
    return tan(a)


@program
def tan_program(a: IJK, out: IJK):
    tan_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add(
    "builtin_tan", tan_program, arguments(a=F(-1.2, 1.2), out=OUT()), unary_reference(np.tan))


@field_operator
def arcsin_op(a: IJK) -> IJK:
    return arcsin(a)


@program
def arcsin_program(a: IJK, out: IJK):
    arcsin_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add("builtin_arcsin", arcsin_program, arguments(a=F(-0.9, 0.9), out=OUT()),
    unary_reference(np.arcsin))


@field_operator
def arccos_op(a: IJK) -> IJK:
    return arccos(a)


@program
def arccos_program(a: IJK, out: IJK):
    arccos_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add("builtin_arccos", arccos_program, arguments(a=F(-0.9, 0.9), out=OUT()),
    unary_reference(np.arccos))


@field_operator
def arctan_op(a: IJK) -> IJK:
    return arctan(a)


@program
def arctan_program(a: IJK, out: IJK):
    arctan_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add("builtin_arctan", arctan_program, arguments(a=F(-4, 4), out=OUT()),
    unary_reference(np.arctan))


@field_operator
def sinh_op(a: IJK) -> IJK:
    return sinh(a)


@program
def sinh_program(a: IJK, out: IJK):
    sinh_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add(
    "builtin_sinh", sinh_program, arguments(a=F(-3, 3), out=OUT()), unary_reference(np.sinh))


@field_operator
def cosh_op(a: IJK) -> IJK:
    return cosh(a)


@program
def cosh_program(a: IJK, out: IJK):
    cosh_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add(
    "builtin_cosh", cosh_program, arguments(a=F(-3, 3), out=OUT()), unary_reference(np.cosh))


@field_operator
def tanh_op(a: IJK) -> IJK:
    return tanh(a)


@program
def tanh_program(a: IJK, out: IJK):
    tanh_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add(
    "builtin_tanh", tanh_program, arguments(a=F(-3, 3), out=OUT()), unary_reference(np.tanh))


@field_operator
def floor_op(a: IJK) -> IJK:
    return floor(a)


@program
def floor_program(a: IJK, out: IJK):
    floor_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add(
    "builtin_floor", floor_program, arguments(a=F(-4, 4), out=OUT()), unary_reference(np.floor))


@field_operator
def ceil_op(a: IJK) -> IJK:
    return ceil(a)


@program
def ceil_program(a: IJK, out: IJK):
    ceil_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add(
    "builtin_ceil", ceil_program, arguments(a=F(-4, 4), out=OUT()), unary_reference(np.ceil))


@field_operator
def abs_op(a: IJK) -> IJK:
    return abs(a)


@program
def abs_program(a: IJK, out: IJK):
    abs_op(a, out=out[1:, :-1, :])


MATH_BUILTINS.add(
    "builtin_abs", abs_program, arguments(a=F(-4, 4), out=OUT()), unary_reference(np.abs))


@field_operator
def minimum_op(a: IJK, b: IJK) -> IJK:
    return minimum(a, b)


@program
def minimum_program(a: IJK, b: IJK, out: IJK):
    minimum_op(a, b, out=out)


def minimum_reference(a, b, out):
    out[...] = np.minimum(a, b)


MATH_BUILTINS.add(
    "builtin_minimum", minimum_program, arguments(a=F(), b=F(), out=OUT()), minimum_reference)


@field_operator
def maximum_op(a: IJK) -> IJK:
    return maximum(a, 0.0)


@program
def maximum_program(a: IJK, out: IJK):
    maximum_op(a, out=out)


def maximum_reference(a, out):
    out[...] = np.maximum(a, 0.0)


MATH_BUILTINS.add("builtin_maximum_with_literal", maximum_program, arguments(a=F(), out=OUT()),
    maximum_reference)


@field_operator
def power_op(a: IJK, b: IJK) -> IJK:
    return power(a, b)


@program
def power_program(a: IJK, b: IJK, out: IJK):
    power_op(a, b, out=out)


def power_reference(a, b, out):
    out[...] = np.power(a, b)


MATH_BUILTINS.add("builtin_power", power_program, arguments(a=F(0.1, 3), b=F(-2, 2), out=OUT()),
    power_reference)


@field_operator
def builtins_float32(a: IJK32, b: IJK32) -> IJK32:
    return sqrt(a) + exp(b) * sin(a) - abs(b) + arctan(a * b)


@program
def builtins_float32_program(a: IJK32, b: IJK32, out: IJK32):
    builtins_float32(a, b, out=out)


def builtins_float32_reference(a, b, out):
    out[...] = np.sqrt(a) + np.exp(b) * np.sin(a) - np.abs(b) + np.arctan(a * b)


MATH_BUILTINS.add("builtins_float32", builtins_float32_program,
    arguments(a=F(0.1, 2, np.float32), b=F(-1, 1, np.float32), out=OUT(np.float32)),
    builtins_float32_reference)


# =========================================================================== more builtins
# Grouped into tuple results: one build per backend for each group.



@field_operator
def float_builtins(a: IJK, b: IJK, c: IJK) -> tuple[IJK, IJK, IJK, IJK, IJK, IJK, IJK]:
    return arcsinh(a), arccosh(b), arctanh(a * 0.9), cbrt(a), trunc(a * 3.0), gamma(c), fmod(
        a * 5.0, b)


@program
def float_builtins_program(a: IJK, b: IJK, c: IJK, o1: IJK, o2: IJK, o3: IJK, o4: IJK,
                           o5: IJK, o6: IJK, o7: IJK):
    float_builtins(a, b, c, out=(o1[1:, :-1, :], o2[1:, :-1, :], o3[1:, :-1, :],
                                 o4[1:, :-1, :], o5[1:, :-1, :], o6[1:, :-1, :],
                                 o7[1:, :-1, :]))


def float_builtins_reference(a, b, c, o1, o2, o3, o4, o5, o6, o7):
    d = dom(o1.shape, BUILTIN_SLICE)
    av, bv, cv = at(a, d), at(b, d), at(c, d)
    o1[d], o2[d], o3[d] = np.arcsinh(av), np.arccosh(bv), np.arctanh(av * 0.9)
    o4[d], o5[d] = np.cbrt(av), np.trunc(av * 3.0)
    o6[d] = np.vectorize(math.gamma)(cv)
    o7[d] = np.fmod(av * 5.0, bv)


MATH_BUILTINS.add("builtins_float_group", float_builtins_program,
    arguments(a=F(-1, 1), b=F(1.0, 3.0), c=F(-3.7, 4.5), **{f"o{n}": OUT() for n in range(1, 8)}),
    float_builtins_reference, outputs=tuple(f"o{n}" for n in range(1, 8)), rtol=1e-10)


def with_specials(rng: np.random.Generator) -> np.ndarray:
    """Floats where about a third of the points are inf, -inf or NaN."""
    values = floats(rng)
    choice = rng.integers(0, 9, SHAPE)
    values[choice == 0] = np.inf
    values[choice == 1] = -np.inf
    values[choice == 2] = np.nan
    return values


@field_operator
def predicates(a: IJK, n: IJKi32) -> tuple[IJKb, IJKb, IJKb, IJKb, IJKb]:
    return isfinite(a), isinf(a), isnan(a), isfinite(n) & ~isinf(n), isnan(n)


@program
def predicates_program(a: IJK, n: IJKi32, o1: IJKb, o2: IJKb, o3: IJKb, o4: IJKb, o5: IJKb):
    predicates(a, n, out=(o1[1:, :-1, :], o2[1:, :-1, :], o3[1:, :-1, :], o4[1:, :-1, :],
                          o5[1:, :-1, :]))


def predicates_reference(a, n, o1, o2, o3, o4, o5):
    d = dom(o1.shape, BUILTIN_SLICE)
    o1[d], o2[d], o3[d] = np.isfinite(at(a, d)), np.isinf(at(a, d)), np.isnan(at(a, d))
    o4[d], o5[d] = True, False


MATH_BUILTINS.add("builtins_predicates", predicates_program,
    arguments(a=with_specials, n=ints,
              **{f"o{n}": OUT(np.bool_) for n in range(1, 6)}),
    predicates_reference, outputs=tuple(f"o{n}" for n in range(1, 6)))


@field_operator
def int_builtins(a: IJKi32, b: IJKi32) -> tuple[IJKi32, IJKi32, IJK]:
    return fmod(a, b), trunc(a), cbrt(a)


@program
def int_builtins_program(a: IJKi32, b: IJKi32, o1: IJKi32, o2: IJKi32, o3: IJK):
    int_builtins(a, b, out=(o1[1:, :-1, :], o2[1:, :-1, :], o3[1:, :-1, :]))


def int_builtins_reference(a, b, o1, o2, o3):
    d = dom(o1.shape, BUILTIN_SLICE)
    o1[d], o2[d], o3[d] = np.fmod(at(a, d), at(b, d)), at(a, d), np.cbrt(at(a, d))


MATH_BUILTINS.add("builtins_int_fmod_trunc", int_builtins_program,
    arguments(a=lambda rng: ints(rng, lo=-50, hi=50), b=nonzero_ints,
              o1=OUT(np.int32), o2=OUT(np.int32), o3=OUT()),
    int_builtins_reference, outputs=("o1", "o2", "o3"), rtol=1e-10)


@field_operator
def constructors(a: IJK, s: float64, n: int64) -> tuple[IJKi32, IJK32, IJKb, IJK]:
    return int32(a * 10.0), float32(a), bool_(a > 0.0), a * float(n) + float64(int(s))


@program
def constructors_program(a: IJK, s: float64, n: int64, o1: IJKi32, o2: IJK32, o3: IJKb,
                         o4: IJK):
    constructors(a, s, n, out=(o1[1:, :-1, :], o2[1:, :-1, :], o3[1:, :-1, :],
                               o4[1:, :-1, :]))


def constructors_reference(a, s, n, o1, o2, o3, o4):
    d = dom(o1.shape, BUILTIN_SLICE)
    av = at(a, d)
    o1[d], o2[d], o3[d] = (av * 10.0).astype(np.int32), av.astype(np.float32), av > 0.0
    o4[d] = av * float(n) + float(int(s))


MATH_BUILTINS.add("type_constructors", constructors_program,
    arguments(a=F(-3, 3), s=SCALAR(2.75), n=SCALAR(3), o1=OUT(np.int32), o2=OUT(np.float32),
              o3=OUT(np.bool_), o4=OUT()),
    constructors_reference, outputs=("o1", "o2", "o3", "o4"))


