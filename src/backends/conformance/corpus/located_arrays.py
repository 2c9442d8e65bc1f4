"""Located arrays (ADR 0026): inputs and outputs whose element 0 is not index 0 of the grid,
passed as ``located(array, dims, origin)``; shifts, ``domain=`` and ``concat_where`` speak
of grid indices.

Cases of the DSL corpus (``backends.conformance.corpus``); no ``from __future__ import
annotations``, since the DSL reads the annotations. The arguments and references are plain
NumPy arrays; each case's ``located`` says which are passed located, and where.
"""

import numpy as np

from pipeline.dsl import concat_where, field_operator, float64, program, scan_operator

from .cases import OUT, F, Feature, arguments
from .grid import IJK, SHAPE, I, J, K

LOCATED_ARRAYS = Feature("located arrays")

#: An input one point wider below along I and K than the default grid.
WIDER = (SHAPE[0] + 1, SHAPE[1], SHAPE[2] + 1)


@field_operator
def _below_and_under(f: IJK) -> IJK:
    return f(I - 1) + 2.0 * f(K - 1)


@program
def below_and_under(f: IJK, out: IJK):
    _below_and_under(f, out=out)


def below_and_under_reference(f, out):
    # f covers I = -1 .. and K = -1 ..: grid (i, k) is f's element (i + 1, k + 1).
    out[...] = f[:-1, :, 1:] + 2.0 * f[1:, :, :-1]


LOCATED_ARRAYS.add("located_input_read_below_zero", below_and_under,
    arguments(f=F(shape=WIDER), out=OUT()), below_and_under_reference,
    located={"f": ((I, J, K), {I: -1, K: -1})})


@field_operator
def _forward_difference(f: IJK) -> IJK:
    return f(I + 1) - f


@program
def forward_difference_in(f: IJK, out: IJK):
    _forward_difference(f, out=out, domain={I: (4, 8), J: (1, 5)})


def forward_difference_in_reference(f, out):
    # out covers I = 3 .. 12: grid I 4..8 is out's elements 1..5 (and f's, at origin 0).
    out[1:5, 1:5] = f[5:9, 1:5] - f[4:8, 1:5]


LOCATED_ARRAYS.add("located_output_with_domain_in_grid_indices", forward_difference_in,
    arguments(f=F(), out=OUT()), forward_difference_in_reference,
    located={"out": ((I, J, K), {I: 3})})


@field_operator
def _lid(f: IJK) -> IJK:
    return concat_where(K == 0, 0.5 * f, f(K - 1))


@program
def lid(f: IJK, out: IJK):
    _lid(f, out=out[:, :, 2:])


def lid_reference(f, out):
    # out covers K = -2 .. 3, its slice [2:] K = 0 .. 3; f covers K = -1 .. 4.
    out[:, :, 2] = 0.5 * f[:, :, 1]
    out[:, :, 3:] = f[:, :, 1:4]


LOCATED_ARRAYS.add("located_concat_where_on_k_zero", lid,
    arguments(f=F(), out=OUT()), lid_reference,
    located={"f": ((I, J, K), {K: -1}), "out": ((I, J, K), {K: -2})})


@scan_operator(axis=K, forward=True, init=0.0)
def _running_sum(total: float64, x: float64) -> float64:
    return total + x


@field_operator
def _column_sum(f: IJK) -> IJK:
    return _running_sum(f)


@program
def column_sum(f: IJK, out: IJK):
    _column_sum(f, out=out)


def column_sum_reference(f, out):
    # f covers K = -1 ..: the sweep over out's K = 0 .. reads f from its element 1.
    out[...] = np.cumsum(f[:, :, 1:], axis=2)


LOCATED_ARRAYS.add("located_input_to_a_scan", column_sum,
    arguments(f=F(shape=(SHAPE[0], SHAPE[1], SHAPE[2] + 1)), out=OUT()), column_sum_reference,
    located={"f": ((I, J, K), {K: -1})})
