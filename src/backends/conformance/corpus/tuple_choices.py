"""``where``, ``concat_where``, ``astype``, ``float32(...)`` and ``a if c else b`` of tuple values,
item by item.

Cases of the DSL corpus (``backends.conformance.corpus``); no ``from __future__ import
annotations``, since the DSL reads the annotations (of the classes too).
"""

import dataclasses
from typing import NamedTuple

import numpy as np

from pipeline.dsl import (
    astype,
    bool_,
    concat_where,
    field_operator,
    float32,
    float64,
    int32,
    program,
    where,
)

from .cases import OUT, SCALAR, F, Feature, arguments, at, dom
from .grid import IJ, IJK, IJK32, SHAPE_2D, I, IJKi32, K

TUPLE_CHOICES = Feature("choices and conversions of tuples")


# =========================================================================== where


@field_operator
def nested_choice(a: IJK, b: IJK, c: IJK) -> tuple[IJK, tuple[IJK, IJK]]:
    return where(a > b, (a, (b, 1.0)), (c, (c(I + 1), b)))


@program
def nested_choice_program(a: IJK, b: IJK, c: IJK, x: IJK, y: IJK, z: IJK):
    nested_choice(a, b, c, out=(x[:-1, :, :], (y[:-1, :, :], z[:-1, :, :])))


def nested_choice_reference(a, b, c, x, y, z):
    d = dom(x.shape, np.s_[:-1, :, :])
    mask = at(a, d) > at(b, d)
    x[d] = np.where(mask, at(a, d), at(c, d))
    y[d] = np.where(mask, at(b, d), at(c, d, 1))
    z[d] = np.where(mask, 1.0, at(b, d))


TUPLE_CHOICES.add("where_of_nested_tuples_with_a_scalar_item", nested_choice_program,
    arguments(a=F(), b=F(), c=F(), x=OUT(), y=OUT(), z=OUT()), nested_choice_reference,
    outputs=("x", "y", "z"))


@field_operator
def pair_difference(pair: tuple[IJ, IJ]) -> IJ:
    return pair[0] - pair[1]


@field_operator
def chosen_pairs(m: IJ, a: IJ, b: IJ) -> tuple[IJ, IJ, IJ]:
    pair = (a, b)
    swapped = (b, a * 2.0)
    low, high = where(m > 0.0, pair, swapped)
    second = where(m > 0.5, pair, swapped)[1]
    return low + high, second, pair_difference(where(m < 0.0, swapped, pair))


@program
def chosen_pairs_program(m: IJ, a: IJ, b: IJ, x: IJ, y: IJ, z: IJ):
    chosen_pairs(m, a, b, out=(x, y, z))


def chosen_pairs_reference(m, a, b, x, y, z):
    x[...] = np.where(m > 0.0, a, b) + np.where(m > 0.0, b, a * 2.0)
    y[...] = np.where(m > 0.5, b, a * 2.0)
    z[...] = np.where(m < 0.0, b, a) - np.where(m < 0.0, a * 2.0, b)


TUPLE_CHOICES.add("where_of_tuples_unpacked_indexed_and_passed_on", chosen_pairs_program,
    arguments(m=F(shape=SHAPE_2D), a=F(shape=SHAPE_2D), b=F(shape=SHAPE_2D),
              x=OUT(shape=SHAPE_2D), y=OUT(shape=SHAPE_2D), z=OUT(shape=SHAPE_2D)),
    chosen_pairs_reference, outputs=("x", "y", "z"))


@dataclasses.dataclass(frozen=True)
class Wind:
    u: IJK
    v: IJK


class Weighted(NamedTuple):
    field: IJK
    weight: float64


@field_operator
def calmer(m: IJK, wind: Wind, other: Wind) -> Wind:
    chosen = where(m > 0.0, wind, other)
    return Wind(chosen.u * 2.0, where(m > 0.5, wind, Wind(other.v, other.u)).v)


@field_operator
def weighted_choice(m: IJK, p: Weighted, q: Weighted) -> IJK:
    field, weight = where(m > 0.0, p, q)
    return field * weight


@program
def collection_choice_program(m: IJK, wind: Wind, other: Wind, p: Weighted, q: Weighted,
                              out: Wind, weighted: IJK):
    calmer(m, wind, other, out=out)
    weighted_choice(m, p, q, out=weighted)


def collection_choice_reference(m, wind, other, p, q, out, weighted):
    out.u[...] = np.where(m > 0.0, wind.u, other.u) * 2.0
    out.v[...] = np.where(m > 0.5, wind.v, other.u)
    weighted[...] = np.where(m > 0.0, p.field, q.field) * np.where(m > 0.0, p.weight, q.weight)


TUPLE_CHOICES.add("where_of_dataclasses_and_named_tuples", collection_choice_program,
    arguments(m=F(), wind=lambda rng: Wind(F()(rng), F()(rng)),
              other=lambda rng: Wind(F()(rng), F()(rng)),
              p=lambda rng: Weighted(F()(rng), 3.0), q=lambda rng: Weighted(F()(rng), -0.5),
              out=lambda rng: Wind(OUT()(rng), OUT()(rng)), weighted=OUT()),
    collection_choice_reference, outputs=("out", "weighted"))


# =========================================================================== concat_where


@field_operator
def bottom_and_rest(a: IJK, b: IJK) -> tuple[IJK, IJK]:
    # The second branch reads K - 1: evaluated only above the bottom level, for each item.
    return concat_where(K == 0, (a, 0.0), (a(K - 1), b(K - 1) + b))


@program
def bottom_and_rest_program(a: IJK, b: IJK, x: IJK, y: IJK):
    bottom_and_rest(a, b, out=(x, y))


def bottom_and_rest_reference(a, b, x, y):
    x[:, :, 0] = a[:, :, 0]
    x[:, :, 1:] = a[:, :, :-1]
    y[:, :, 0] = 0.0
    y[:, :, 1:] = b[:, :, :-1] + b[:, :, 1:]


TUPLE_CHOICES.add("concat_where_of_tuples_reads_no_halo", bottom_and_rest_program,
    arguments(a=F(), b=F(), x=OUT(), y=OUT()), bottom_and_rest_reference, outputs=("x", "y"))


# =========================================================================== astype


@field_operator
def converted(a: IJK, b: IJK) -> tuple[tuple[IJK32, IJK32], IJKi32]:
    pair = (a * 10.0, b * 10.0)
    whole = astype(pair, int32)
    return astype((a, b), float32), whole[0] + whole[1]


@program
def converted_program(a: IJK, b: IJK, x: IJK32, y: IJK32, n: IJKi32):
    converted(a, b, out=((x, y), n))


def converted_reference(a, b, x, y, n):
    x[...] = a.astype(np.float32)
    y[...] = b.astype(np.float32)
    n[...] = (a * 10.0).astype(np.int32) + (b * 10.0).astype(np.int32)


TUPLE_CHOICES.add("astype_of_a_tuple_and_of_a_tuple_name", converted_program,
    arguments(a=F(), b=F(), x=OUT(np.float32), y=OUT(np.float32), n=OUT(np.int32)),
    converted_reference, outputs=("x", "y", "n"))


# =========================================================================== a if c else b


@field_operator
def flipped(flag: bool_, s: float64, a: IJK, b: IJK) -> tuple[IJK, IJK]:
    pair = (a, b) if flag else (b, a * s)
    first, second = pair
    return first + second, ((a, b) if s > 1.0 else (b, a))[0]


@program
def flipped_program(flag: bool_, noflag: bool_, a: IJK, b: IJK, x: IJK, y: IJK, u: IJK, v: IJK):
    flipped(flag, 2.0, a, b, out=(x, y))
    flipped(noflag, 0.5, a, b, out=(u[1:, :, :], v[1:, :, :]))


def flipped_reference(flag, noflag, a, b, x, y, u, v):
    x[...] = a + b
    y[...] = a
    u[1:] = b[1:] + a[1:] * 0.5
    v[1:] = b[1:]


TUPLE_CHOICES.add("conditional_expression_of_tuples", flipped_program,
    arguments(flag=SCALAR(True), noflag=SCALAR(False), a=F(), b=F(), x=OUT(), y=OUT(),
              u=OUT(), v=OUT()),
    flipped_reference, outputs=("x", "y", "u", "v"))


# =========================================================================== dtype(tuple)


@field_operator
def called_dtypes(a: IJK, b: IJK, s: float64) -> tuple[tuple[IJK32, IJKi32], IJK32]:
    narrow = float32((a, (b * 10.0, s)))
    return (narrow[0], int32(narrow[1])[0]), narrow[1][1] * narrow[0](I + 1)


@program
def called_dtypes_program(a: IJK, b: IJK, s: float64, x: IJK32, n: IJKi32, y: IJK32):
    called_dtypes(a, b, s, out=((x[:-1, :, :], n[:-1, :, :]), y[:-1, :, :]))


def called_dtypes_reference(a, b, s, x, n, y):
    d = dom(x.shape, np.s_[:-1, :, :])
    x[d] = a[d].astype(np.float32)
    n[d] = (b[d] * 10.0).astype(np.float32).astype(np.int32)
    y[d] = np.float32(s) * at(a, d, 1, 0, 0).astype(np.float32)


TUPLE_CHOICES.add("dtype_called_on_a_nested_tuple", called_dtypes_program,
    arguments(a=F(), b=F(), s=SCALAR(1.5), x=OUT(np.float32), n=OUT(np.int32),
              y=OUT(np.float32)),
    called_dtypes_reference, outputs=("x", "n", "y"))
