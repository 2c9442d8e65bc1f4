"""Programs with static parameters and static domains (``@program(static_params=...,
static_domains=True)``): each call runs the variant compiled for its static values (and its
fields' shapes), in which they are constants of the code.

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""

import numpy as np

from pipeline.dsl import concat_where, field_operator, float64, int64, program

from .cases import OUT, SCALAR, F, Feature, arguments
from .grid import IJK, SHAPE, I, K

STATIC_ARGUMENTS = Feature("static arguments")
_I_END = SHAPE[0]


@field_operator
def _capped(a: IJK, s: float64, top: int64) -> IJK:
    # The condition and the branch's reach read the static value: a constant of the code.
    return concat_where(K == top, a(K - 1), a * s)


@program(static_params=("lo", "top"))
def static_domain_start_and_top(a: IJK, s: float64, lo: int64, top: int64, out: IJK):
    _capped(a, s, top, out=out, domain={I: (lo, _I_END)})


def static_domain_start_and_top_reference(a, s, lo, top, out):
    out[lo:] = a[lo:] * s
    out[lo:, :, top] = a[lo:, :, top - 1]


STATIC_ARGUMENTS.add("static_int64_domain_start_and_concat_where_level",
    static_domain_start_and_top,
    arguments(a=F(), s=SCALAR(1.5), lo=SCALAR(3), top=SCALAR(SHAPE[2] - 1), out=OUT()),
    static_domain_start_and_top_reference)


@field_operator
def _centered(a: IJK) -> IJK:
    return a(I + 1) - a(I - 1)


@program(static_domains=True)
def static_domain_interior(a: IJK, out: IJK):
    _centered(a, out=out[1:-1, :, 2:])


def static_domain_interior_reference(a, out):
    out[1:-1, :, 2:] = a[2:, :, 2:] - a[:-2, :, 2:]


STATIC_ARGUMENTS.add("static_domains_interior_slice", static_domain_interior,
    arguments(a=F(), out=OUT()), static_domain_interior_reference)


@field_operator
def _top_zeroed(a: IJK, n: int64) -> IJK:
    return concat_where(K == n - 1, 0.0, a * 2.0)


@program(static_params=("n",), static_domains=True)
def static_domains_and_level(a: IJK, n: int64, out: IJK):
    _top_zeroed(a, n, out=out[:, 1:, :])


def static_domains_and_level_reference(a, n, out):
    out[:, 1:] = a[:, 1:] * 2.0
    out[:, 1:, n - 1] = 0.0


STATIC_ARGUMENTS.add("static_domains_with_static_level", static_domains_and_level,
    arguments(a=F(), n=SCALAR(np.int64(SHAPE[2])), out=OUT()),
    static_domains_and_level_reference)
