"""Number semantics: the results a translation must reproduce where NumPy 2 and C differ.

Each case pins one rule of the backend contract (``docs/backend-contract.md``, section 5):
integer division and modulo by zero and by -1, wrapping integer overflow, ``fmod`` against
``%``, float division by zero, NaN through ``minimum``/``maximum``, and float-to-int and
narrowing casts. Cases of the DSL corpus (``backends.conformance.corpus``); no ``from
__future__ import annotations``, since the DSL reads the annotations.
"""

from typing import Any

import numpy as np

from pipeline.dsl import astype, field_operator, fmod, int32, int64, maximum, minimum, program

from .cases import OUT, F, Feature, arguments, away_from_zero
from .grid import IJK, SHAPE, IJKi32, IJKi64

NUMBER_SEMANTICS = Feature("number semantics")


def divisors_with_zeros(rng: np.random.Generator, dtype: Any = np.int32) -> np.ndarray:
    """Divisors in [-3, 3], zero included, and -1 under every other most-negative dividend
    of :func:`dividends_with_extremes`."""
    values = rng.integers(-3, 4, size=SHAPE).astype(dtype)
    values.flat[::14] = -1
    return values


def dividends_with_extremes(rng: np.random.Generator, dtype: Any = np.int32) -> np.ndarray:
    """Values in [-50, 50], with the dtype's minimum at every 7th and maximum at every 11th."""
    info = np.iinfo(dtype)
    values = rng.integers(-50, 51, size=SHAPE).astype(dtype)
    values.flat[::7] = info.min
    values.flat[3::11] = info.max
    return values


@field_operator
def int_division_by_zero(a: IJKi32, b: IJKi32) -> tuple[IJKi32, IJKi32, IJKi32]:
    return a // b, a % b, fmod(a, b)


@program
def int_division_by_zero_program(a: IJKi32, b: IJKi32, q: IJKi32, r: IJKi32, f: IJKi32):
    int_division_by_zero(a, b, out=(q, r, f))


def int_division_by_zero_reference(a, b, q, r, f):
    with np.errstate(divide="ignore", over="ignore"):
        q[...], r[...], f[...] = a // b, a % b, np.fmod(a, b)


NUMBER_SEMANTICS.add(
    "integer_division_and_modulo_by_zero_and_minus_one", int_division_by_zero_program,
    arguments(a=dividends_with_extremes, b=divisors_with_zeros,
              q=OUT(np.int32), r=OUT(np.int32), f=OUT(np.int32)),
    int_division_by_zero_reference, outputs=("q", "r", "f"))


@field_operator
def float_division_by_zero(a: IJK, b: IJK) -> tuple[IJK, IJK, IJK, IJK]:
    return a / b, a // b, a % b, fmod(a, b)


@program
def float_division_by_zero_program(a: IJK, b: IJK, t: IJK, q: IJK, r: IJK, f: IJK):
    float_division_by_zero(a, b, out=(t, q, r, f))


def float_division_by_zero_reference(a, b, t, q, r, f):
    with np.errstate(divide="ignore", invalid="ignore"):
        t[...], q[...], r[...], f[...] = a / b, a // b, a % b, np.fmod(a, b)


def floats_with_zeros(rng: np.random.Generator) -> np.ndarray:
    values = rng.uniform(-4.0, 4.0, size=SHAPE)
    values.flat[::5] = 0.0
    values.flat[2::9] = -0.0
    return values


NUMBER_SEMANTICS.add(
    "float_division_by_zero_gives_inf_and_nan", float_division_by_zero_program,
    arguments(a=floats_with_zeros, b=floats_with_zeros, t=OUT(), q=OUT(), r=OUT(), f=OUT()),
    float_division_by_zero_reference, outputs=("t", "q", "r", "f"))


@field_operator
def nan_min_max(a: IJK, b: IJK) -> tuple[IJK, IJK]:
    return minimum(a, b), maximum(a, b)


@program
def nan_min_max_program(a: IJK, b: IJK, lo: IJK, hi: IJK):
    nan_min_max(a, b, out=(lo, hi))


def nan_min_max_reference(a, b, lo, hi):
    lo[...], hi[...] = np.minimum(a, b), np.maximum(a, b)


def floats_with_nan_and_inf(rng: np.random.Generator) -> np.ndarray:
    values = rng.uniform(-1.0, 1.0, size=SHAPE)
    values.flat[::6] = np.nan
    values.flat[1::8] = np.inf
    values.flat[4::10] = -np.inf
    return values


NUMBER_SEMANTICS.add(
    "minimum_maximum_propagate_nan", nan_min_max_program,
    arguments(a=floats_with_nan_and_inf, b=floats_with_nan_and_inf, lo=OUT(), hi=OUT()),
    nan_min_max_reference, outputs=("lo", "hi"))


@field_operator
def int_wraparound(a: IJKi32) -> tuple[IJKi32, IJKi32, IJKi32]:
    return a + 1, a * 3, -a


@program
def int_wraparound_program(a: IJKi32, s: IJKi32, p: IJKi32, n: IJKi32):
    int_wraparound(a, out=(s, p, n))


def int_wraparound_reference(a, s, p, n):
    with np.errstate(over="ignore"):
        s[...], p[...], n[...] = a + np.int32(1), a * np.int32(3), -a


NUMBER_SEMANTICS.add(
    "integer_overflow_wraps", int_wraparound_program,
    arguments(a=dividends_with_extremes, s=OUT(np.int32), p=OUT(np.int32), n=OUT(np.int32)),
    int_wraparound_reference, outputs=("s", "p", "n"))


@field_operator
def float_fmod(a: IJK, b: IJK) -> tuple[IJK, IJK]:
    return fmod(a, b), a % b


@program
def float_fmod_program(a: IJK, b: IJK, f: IJK, r: IJK):
    float_fmod(a, b, out=(f, r))


def float_fmod_reference(a, b, f, r):
    f[...], r[...] = np.fmod(a, b), a % b


NUMBER_SEMANTICS.add(
    "fmod_takes_the_dividends_sign_remainder_the_divisors", float_fmod_program,
    arguments(a=F(-10, 10), b=lambda rng: away_from_zero(rng, lo=0.5, hi=3.0), f=OUT(), r=OUT()),
    float_fmod_reference, outputs=("f", "r"))


@field_operator
def float_to_int(a: IJK) -> tuple[IJKi32, IJKi64]:
    return astype(a, int32), astype(a * 1000.0, int64)


@program
def float_to_int_program(a: IJK, o1: IJKi32, o2: IJKi64):
    float_to_int(a, out=(o1, o2))


def float_to_int_reference(a, o1, o2):
    o1[...], o2[...] = a.astype(np.int32), (a * 1000.0).astype(np.int64)


NUMBER_SEMANTICS.add(
    "astype_float_to_int_rounds_toward_zero", float_to_int_program,
    arguments(a=lambda rng: np.round(rng.uniform(-5, 5, size=SHAPE) * 4) / 4,
              o1=OUT(np.int32), o2=OUT(np.int64)),
    float_to_int_reference, outputs=("o1", "o2"))


@field_operator
def narrow_wide_int(n: IJKi64) -> IJKi32:
    return astype(n, int32)


@program
def narrow_wide_int_program(n: IJKi64, out: IJKi32):
    narrow_wide_int(n, out=out)


def narrow_wide_int_reference(n, out):
    out[...] = n.astype(np.int32)


NUMBER_SEMANTICS.add(
    "astype_int64_to_int32_wraps", narrow_wide_int_program,
    arguments(n=lambda rng: rng.integers(-2**40, 2**40, size=SHAPE, dtype=np.int64),
              out=OUT(np.int32)),
    narrow_wide_int_reference)
