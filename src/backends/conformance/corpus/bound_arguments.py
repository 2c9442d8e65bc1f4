"""Programs with scalar parameters bound to values (``Program.with_bound_args``): constants
of the parameters' dtypes, folded into the code, no longer arguments of the calls.

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""

import numpy as np

from pipeline.dsl import astype, field_operator, float32, int32, int64, program

from .cases import OUT, F, Feature, arguments, ints
from .grid import IJK32, I, IJKi32, IJKi64

BOUND_ARGUMENTS = Feature("bound arguments")


@field_operator
def _scaled(a: IJK32, s: float32) -> IJK32:
    return a * s


@program
def _scaled_from(a: IJK32, s: float32, lo: int32, out: IJK32):
    _scaled(a, s, out=out, domain={I: (lo, 7)})


scaled_from_bound = _scaled_from.with_bound_args(s=0.1, lo=2)


def scaled_from_bound_reference(a, out):
    out[2:7] = a[2:7] * np.float32(0.1)


BOUND_ARGUMENTS.add("bound_float32_scale_and_domain_start", scaled_from_bound,
    arguments(a=F(dtype=np.float32), out=OUT(np.float32)),
    scaled_from_bound_reference, outputs=("out",))


@field_operator
def _widened(a: IJKi32, n: int64) -> IJKi64:
    # n is an int64 constant (past int32's range), typed as the parameter it replaces.
    return astype(a, int64) + n


@program
def _widened_by(a: IJKi32, n: int64, out: IJKi64):
    _widened(a, n, out=out)


widened_by_bound = _widened_by.with_bound_args(n=2**40)


def widened_by_bound_reference(a, out):
    out[...] = a.astype(np.int64) + 2**40


BOUND_ARGUMENTS.add("bound_int64_keeps_its_dtype", widened_by_bound,
    arguments(a=ints, out=OUT(np.int64)),
    widened_by_bound_reference, outputs=("out",))
